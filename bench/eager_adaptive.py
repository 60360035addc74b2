"""Eager training of a tiny GPT-2 step on the `neuron` device: programs run, wall time and
simulated time per step (issue 28, adaptive eager).

One step is forward + backward + AdamW step of the GPT-style model of bench/train_step.py
(tied embeddings, causal attention, GELU MLP), on neuron tensors in eager mode. The first
steps compile each op's program; the step is then timed with every program cached. Losses are
compared with the same steps in CPU eager PyTorch.

Today this measures the op-by-op mode (each eager op runs as its own one-op program): the
baseline that adaptive eager (consecutive ops batched into one program) is measured against.

    python bench/eager_adaptive.py [--steps 3] [--layers 2] [--d 64] [--seq 16]

Prints a markdown section (to append to bench/results/eager.md with --out).
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import sys
import time

os.environ.setdefault("NEURON_LOGICAL_NC_CONFIG", "1")
os.environ.setdefault("TORCH_NEURONX_RETAIN_DEVICE_MODE", "1")

import torch

import neuronsim  # noqa: F401  (registers the device)
from neuronsim.device import eager

sys.path.insert(0, os.path.dirname(__file__))
from train_step import GPT  # noqa: E402


def make(args):
    torch.manual_seed(0)
    model = GPT(args.vocab, args.d, args.heads, args.seq, args.layers)
    g = torch.Generator().manual_seed(1)
    batches = [
        (torch.randint(0, args.vocab, (args.batch, args.seq), generator=g),
         torch.randint(0, args.vocab, (args.batch, args.seq), generator=g))
        for _ in range(args.steps)
    ]  # fmt: skip
    return model, batches


def train(model, batches, device: str):
    model = copy.deepcopy(model).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    losses, walls, programs, sims, cpu_runs = [], [], [], [], []
    for idx, targets in batches:
        idx, targets = idx.to(device), targets.to(device)
        runs0, cpu0 = eager.STATS.program_runs, eager.STATS.cpu_runs
        sim0 = torch.neuron.simulated_time_ns() if device == "neuron" else 0.0
        start = time.perf_counter()
        with torch.device(device):
            loss = model(idx, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        value = loss.item()  # an observation point: the step's results are needed here
        walls.append(time.perf_counter() - start)
        losses.append(value)
        programs.append(eager.STATS.program_runs - runs0)
        cpu_runs.append(eager.STATS.cpu_runs - cpu0)
        if device == "neuron":
            sims.append(torch.neuron.simulated_time_ns() - sim0)
    params = {n: p.detach().cpu() for n, p in model.named_parameters()}
    return {"losses": losses, "walls": walls, "programs": programs, "sims": sims,
            "cpu_runs": cpu_runs, "params": params}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seq", type=int, default=16)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=128)
    parser.add_argument("--out", default=None, help="append the section to this file")
    args = parser.parse_args()

    model, batches = make(args)
    cpu = train(model, batches, "cpu")
    dev = train(model, batches, "neuron")
    loss_diff = max(abs(a - b) for a, b in zip(cpu["losses"], dev["losses"]))
    param_diff = max(
        (cpu["params"][n] - dev["params"][n]).abs().max().item() for n in cpu["params"]
    )
    # Steps after the first run with every program cached.
    warm = slice(1, None) if args.steps > 1 else slice(0, None)
    wall = min(dev["walls"][warm])
    lines = [
        "## Eager training step of a tiny GPT-2 (op by op)",
        "",
        f"Produced by: `python bench/eager_adaptive.py --steps {args.steps} --layers "
        f"{args.layers} --d {args.d} --seq {args.seq}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
        f"target {torch.neuron.target()}. Model: {args.layers} layers, d_model {args.d}, "
        f"{args.heads} heads, seq {args.seq}, batch {args.batch}, vocab {args.vocab}; "
        "forward + backward + AdamW step, eager on the neuron device.",
        "",
        "| mode | programs run / step | CPU-fallback ops / step | wall / step, cached (s) | "
        "simulated / step (us) | CPU eager wall / step (s) |",
        "|---|---|---|---|---|---|",
        f"| op by op | {dev['programs'][-1]} | {dev['cpu_runs'][-1]} | {wall:.3f} | "
        f"{dev['sims'][-1] / 1e3:.1f} | {min(cpu['walls'][warm]):.4f} |",
        "",
        f"Losses (neuron): {', '.join(f'{v:.5f}' for v in dev['losses'])}; CPU eager: "
        f"{', '.join(f'{v:.5f}' for v in cpu['losses'])}; max |loss diff| {loss_diff:.2e}, "
        f"max |param diff| after {args.steps} steps {param_diff:.2e}.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
