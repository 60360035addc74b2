"""Rank programs for test_collective_program.py: compiled graphs whose functional collectives
become instructions of the program's collective engine (one process per rank, the `neuron`
backend over gloo on loopback)."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

import neuronsim


def _init(rank: int, world: int, port: int) -> torch.device:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("neuron", rank=rank, world_size=world)
    return torch.device("neuron")


def _finish(out: str, rank: int, result: dict) -> None:
    torch.save(result, os.path.join(out, f"rank{rank}.pt"))
    dist.destroy_process_group()


def _rank_input(rank: int, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """What rank `rank` holds: the same on every process, so each can compute the expected
    result of a collective over all ranks."""
    n = 1
    for d in shape:
        n *= d
    return (torch.arange(n, dtype=torch.float32).reshape(shape) * 0.5 + 100 * rank).to(dtype)


def kinds(rank: int, world: int, port: int, out: str, dtype_name: str) -> None:
    """Every collective kind in one compiled graph, next to what it must compute."""
    device = _init(rank, world, port)
    dtype = getattr(torch, dtype_name)
    group = dist.group.WORLD

    def f(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        total = funcol.all_reduce(x, "sum", group)
        biggest = funcol.all_reduce(x * 2, "max", group)
        mean = funcol.all_reduce(x, "avg", group)
        gathered = funcol.all_gather_tensor(x, 0, group)
        scattered = funcol.reduce_scatter_tensor(x, "sum", 0, group)
        swapped = funcol.all_to_all_single(x, None, None, group)
        pair = funcol.all_reduce_coalesced([x, x * 3], "sum", group)
        gathers = funcol.all_gather_into_tensor_coalesced([x, x + 1], group)
        scatters = funcol.reduce_scatter_tensor_coalesced([x, x * 2], "sum", [0, 0], group)
        return (total + 1, biggest, mean, gathered, scattered, swapped, *pair, *gathers,
                *scatters)  # fmt: skip

    x = _rank_input(rank, (4 * world, 8), dtype)
    compiled = torch.compile(f, backend="neuron", dynamic=False, fullgraph=True)
    got = compiled(x.to(device))
    stats = neuronsim.last_run_stats()
    every = [_rank_input(r, (4 * world, 8), torch.float32) for r in range(world)]
    stacked = torch.stack(every)
    block = 4
    mine = slice(rank * block, (rank + 1) * block)
    expected = (
        stacked.sum(0) + 1,
        (stacked * 2).amax(0),
        stacked.mean(0),
        torch.cat(every),
        stacked.sum(0)[mine],
        torch.cat([e[mine] for e in every]),
        stacked.sum(0),
        (stacked * 3).sum(0),
        torch.cat(every),
        torch.cat([e + 1 for e in every]),
        stacked.sum(0)[mine],
        (stacked * 2).sum(0)[mine],
    )
    _finish(out, rank, {
        "got": [g.cpu().float() for g in got],
        "expected": [e.to(dtype).float() for e in expected],
        "collectives": stats["collectives"],
        "fallbacks": dict(neuronsim.get_fallback_ops()),
    })  # fmt: skip


def overlap(rank: int, world: int, port: int, out: str, dependent: bool, timing_only: bool) -> None:
    """An all-reduce of gradients beside an independent matmul (or one that needs it)."""
    device = _init(rank, world, port)
    group = dist.group.WORLD

    def f(g: torch.Tensor, x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
        reduced = funcol.all_reduce(g, "sum", group)
        if dependent:
            x = x + reduced[: x.numel()].reshape(x.shape)
        return reduced * 0.5, x @ w

    torch.manual_seed(0)
    g = torch.full((1 << 20,), float(rank + 1))
    x, w = torch.randn(1024, 1024), torch.randn(1024, 4096)
    options = {"timing_only": True} if timing_only else {}
    compiled = torch.compile(f, backend="neuron", dynamic=False, options=options)
    args = [t.to(device) for t in (g, x, w)]
    compiled(*args)  # compile outside the measurement
    with neuronsim.measure() as m:
        reduced, y = compiled(*args)
    stats = neuronsim.last_run_stats()
    expected_x = x + float(sum(range(1, world + 1))) if dependent else x
    _finish(out, rank, {
        "reduced": reduced.cpu(), "y": y.cpu(), "expected_y": expected_x @ w,
        "sim_ns": stats["sim_ns"], "collective_ns": stats["collective_ns"],
        "exposed_ns": stats["exposed_collective_ns"], "collectives": stats["collectives"],
        "summary": m.summary(),
    })  # fmt: skip
