"""Rank programs for test_distributed.py: each runs in its own process (one per simulated
logical NeuronCore), initializes torch.distributed with the `neuron` backend over a TCP store on
loopback, trains a few steps and saves what the test compares with a single-process run."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

import neuronsim

STEPS = 3
LR = 0.05


def init(rank: int, world: int, port: int) -> torch.device:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("neuron", rank=rank, world_size=world)
    return torch.device("neuron")


def mlp(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 16), torch.nn.GELU(),
        torch.nn.Linear(16, 1),
    )  # fmt: skip


def data(world: int, per_rank: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(world * per_rank, 16, generator=g)
    return x, x.sum(1, keepdim=True).sin()


def reference(steps: int = STEPS, world: int = 2) -> dict:
    """One process, the whole batch: what every data-parallel run must reproduce."""
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    x, y = data(world)
    losses = []
    for _ in range(steps):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return {"losses": losses, "params": [p.detach().clone() for p in model.parameters()]}


def _finish(out: str, rank: int, result: dict) -> None:
    torch.save(result, os.path.join(out, f"rank{rank}.pt"))
    dist.destroy_process_group()


def ddp(rank: int, world: int, port: int, out: str, compiled: bool) -> None:
    device = init(rank, world, port)
    model = mlp().to(device)
    ddp_model = torch.nn.parallel.DistributedDataParallel(model)
    run = torch.compile(ddp_model, backend="neuron", dynamic=False) if compiled else ddp_model
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=LR)
    x, y = data(world)
    xs, ys = x.chunk(world)[rank].to(device), y.chunk(world)[rank].to(device)
    losses = []
    with neuronsim.measure() as m:
        for _ in range(STEPS):
            loss = torch.nn.functional.mse_loss(run(xs), ys)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            total = loss.detach().clone()
            dist.all_reduce(total)
            losses.append(total.item() / world)
    per_rank = m.per_rank()
    params = [p.detach().cpu() for p in model.parameters()]
    _finish(out, rank, {"losses": losses, "params": params, "per_rank": per_rank})


def fsdp2(rank: int, world: int, port: int, out: str, compiled: bool = False) -> None:
    from torch.distributed.fsdp import fully_shard

    device = init(rank, world, port)
    model = mlp().to(device)
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    x, y = data(world)
    xs, ys = x.chunk(world)[rank].to(device), y.chunk(world)[rank].to(device)
    run = torch.compile(model, backend="neuron", dynamic=False) if compiled else model
    losses = []
    for _ in range(STEPS):
        loss = torch.nn.functional.mse_loss(run(xs), ys)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        total = loss.detach().clone()
        dist.all_reduce(total)
        losses.append(total.item() / world)
    params = [p.full_tensor().detach().cpu() for p in model.parameters()]
    _finish(out, rank, {"losses": losses, "params": params})


class Block(torch.nn.Module):
    """A GPT-style block: pre-norm causal self-attention and MLP, residuals."""

    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(d)
        self.q = torch.nn.Linear(d, d)
        self.k = torch.nn.Linear(d, d)
        self.v = torch.nn.Linear(d, d)
        self.proj = torch.nn.Linear(d, d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc = torch.nn.Linear(d, 4 * d)
        self.out = torch.nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        h = self.ln1(x)
        # heads of this rank (all of them, or heads / world under tensor parallelism)
        q, k, v = (z(h).view(b, t, self.heads, -1).transpose(1, 2) for z in (self.q, self.k, self.v))
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, -1))
        return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x))))


def block_data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(2)
    return torch.randn(2, 8, 32, generator=g), torch.randn(2, 8, 32, generator=g)


def block_reference(steps: int = STEPS) -> dict:
    torch.manual_seed(0)
    model = Block()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    x, y = block_data()
    losses = []
    for _ in range(steps):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return {"losses": losses, "params": [p.detach().clone() for p in model.parameters()]}


def tensor_parallel(rank: int, world: int, port: int, out: str, compiled: bool = False) -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    init(rank, world, port)
    mesh = init_device_mesh("neuron", (world,))
    torch.manual_seed(0)
    model = Block().to("neuron")
    plan = {
        "q": ColwiseParallel(), "k": ColwiseParallel(), "v": ColwiseParallel(),
        "proj": RowwiseParallel(), "fc": ColwiseParallel(), "out": RowwiseParallel(),
    }  # fmt: skip
    parallelize_module(model, mesh, plan)
    # Each rank holds heads / world of the attention: its view() must see the local width.
    model.heads //= world
    # LayerNorm parameters stay plain tensors beside the DTensors: no foreach over the mix
    # (the same on any device).
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, foreach=False)
    x, y = (t.to("neuron") for t in block_data())
    # Compiled, the DTensor collectives are functional collectives inside the graphs.
    run = torch.compile(model, backend="neuron", dynamic=False) if compiled else model
    losses = []
    for _ in range(STEPS):
        loss = torch.nn.functional.mse_loss(run(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    params = [
        (p.full_tensor() if hasattr(p, "full_tensor") else p).detach().cpu()
        for p in model.parameters()
    ]
    _finish(out, rank, {"losses": losses, "params": params,
                        "fallbacks": neuronsim.get_fallback_ops()})  # fmt: skip


def pipeline(rank: int, world: int, port: int, out: str) -> None:
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

    device = init(rank, world, port)
    full = mlp()
    # contiguous layer ranges, one per stage (2 stages: Linear, GELU | Linear, GELU, Linear)
    bounds = [round(i * len(full) / world) for i in range(world + 1)]
    stage_module = full[bounds[rank] : bounds[rank + 1]].to(device)
    stage = PipelineStage(stage_module, rank, world, device)

    def loss_fn(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.mse_loss(output, target)

    schedule = ScheduleGPipe(stage, n_microbatches=2, loss_fn=loss_fn)
    params = list(stage_module.parameters())  # a stage may hold only an activation
    optimizer = torch.optim.SGD(params, lr=LR) if params else None
    x, y = data(world)
    losses = []
    for _ in range(STEPS):
        if rank == 0:
            schedule.step(x.to(device))
            losses.append(None)
        elif rank < world - 1:
            schedule.step()
            losses.append(None)
        else:
            micro: list[torch.Tensor] = []
            schedule.step(target=y.to(device), losses=micro)
            losses.append(sum(m.item() for m in micro) / len(micro))
        if optimizer is not None:
            optimizer.step()
            optimizer.zero_grad()
    params = [p.detach().cpu() for p in stage_module.parameters()]
    _finish(out, rank, {"losses": losses, "params": params})


def clock_alignment(rank: int, world: int, port: int, out: str) -> None:
    device = init(rank, world, port)
    t = torch.ones(1024, device=device)
    if rank == 1:  # rank 1 computes more before the collective
        for _ in range(20):
            t = t * 1.0001
    with neuronsim.measure() as m:
        before = torch.neuron.simulated_time_ns()
        dist.all_reduce(t)
        after = torch.neuron.simulated_time_ns()
    _finish(out, rank, {
        "before": before, "after": after, "wait": m.comm_wait_ns, "comm": m.comm_ns,
        "value": t.cpu(),
    })  # fmt: skip


def avg_and_premul_sum(rank: int, world: int, port: int, out: str) -> None:
    """NCCL's AVG and PREMUL_SUM reductions (gloo has neither; FSDP2 reduce-scatters gradients
    with PREMUL_SUM) on neuron tensors, each form; a strided output too."""
    device = init(rank, world, port)
    x = torch.arange(8.0) * (rank + 1) + 0.5
    result = {}
    for name, op in (("avg", dist.ReduceOp.AVG), ("premul", dist._make_nccl_premul_sum(0.25))):
        t = x.to(device)
        dist.all_reduce(t, op=op)
        result[f"all_reduce_{name}"] = t.cpu()
        t = x.to(device)
        dist.all_reduce_coalesced([t], op=op)
        result[f"all_reduce_coalesced_{name}"] = t.cpu()
        source = x.to(device)
        o = torch.empty(8 // world, device=device)
        dist.reduce_scatter_tensor(o, source, op=op)
        result[f"reduce_scatter_tensor_{name}"] = o.cpu()
        torch.testing.assert_close(source.cpu(), x)  # the input is not changed
        big = torch.zeros(8 // world, 2, device=device)
        dist.reduce_scatter(big[:, 0], list(x.to(device).chunk(world)), op=op)  # strided
        result[f"reduce_scatter_{name}"] = big.cpu()
        t = x.to(device)
        dist.reduce(t, dst=0, op=op)
        result[f"reduce_{name}"] = t.cpu()
    try:
        dist.all_reduce(torch.ones(2, dtype=torch.int64, device=device), op=dist.ReduceOp.AVG)
        result["int_error"] = None
    except TypeError as e:
        result["int_error"] = str(e)
    _finish(out, rank, result)


def neg_view_collectives(rank: int, world: int, port: int, out: str) -> None:
    """Collectives over negative views of neuron tensors: gloo reads and writes raw memory,
    the views mean the negated values."""
    device = init(rank, world, port)
    x = torch.arange(4.0) + rank
    base = x.to(device)
    t = base._neg_view()
    dist.all_reduce(t)  # reads -x, writes the sum through the view
    received = torch.empty(4 * world, device=device)
    dist.all_gather_into_tensor(received, (x.to(device))._neg_view())
    _finish(out, rank, {"view": t.cpu(), "base": base.cpu(), "gathered": received.cpu()})
