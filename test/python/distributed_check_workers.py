"""Rank programs for test_distributed_checks.py (one process per rank, the `neuron` backend
over a TCP store on loopback): collectives on strided views, and collectives whose ranks pass
different shapes or dtypes."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

import neuronsim  # noqa: F401 - registers the neuron device and backend


def _init(rank: int, world: int, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("neuron", rank=rank, world_size=world)


def _finish(out: str, rank: int, result: dict) -> None:
    torch.save(result, os.path.join(out, f"rank{rank}.pt"))
    dist.destroy_process_group()


def strided(rank: int, world: int, port: int, out: str) -> None:
    """broadcast, all_reduce and all_gather into every other element of a neuron tensor."""
    _init(rank, world, port)
    device = torch.device("neuron")
    result = {}
    base = torch.zeros(8, device=device)
    if rank == 0:
        base[::2] = torch.tensor([1.0, 2.0, 3.0, 4.0], device=device)
    dist.broadcast(base[::2], src=0)
    result["broadcast"] = base.cpu()
    summed = (torch.arange(8.0) * (rank + 1)).to(device)
    dist.all_reduce(summed[1::2])
    result["all_reduce"] = summed.cpu()
    gathered = torch.full((4, world), -1.0, device=device)
    mine = torch.full((4,), float(rank + 1), device=device)
    dist.all_gather([gathered[:, r] for r in range(world)], mine)  # columns: strided
    result["all_gather"] = gathered.cpu()
    cpu = torch.zeros(6)
    if rank == 0:
        cpu[::3] = torch.tensor([5.0, 6.0])
    dist.broadcast(cpu[::3], src=0)
    result["cpu_broadcast"] = cpu
    _finish(out, rank, result)


def mismatched(rank: int, world: int, port: int, out: str) -> None:
    """all_reduce with a shape and with a dtype that differ on rank 1; then a good one."""
    _init(rank, world, port)
    device = torch.device("neuron")
    errors = []
    for tensor in (
        torch.ones(4 if rank == 0 else 5, device=device),
        torch.ones(4, device=device, dtype=torch.float32 if rank == 0 else torch.int64),
    ):
        try:
            dist.all_reduce(tensor)
            errors.append(None)
        except ValueError as e:
            errors.append(str(e))
    good = torch.full((3,), float(rank + 1), device=device)
    dist.all_reduce(good)
    _finish(out, rank, {"errors": errors, "good": good.cpu()})
