"""Eager training of a tiny GPT-2 step on the `neuron` device: programs run, wall time and
simulated time per step, op by op and with adaptive eager (issue 28).

One step is forward + backward + AdamW step of the GPT-style model of bench/train_step.py
(tied embeddings, causal attention, GELU MLP), on neuron tensors in eager mode. The first
steps compile each op's program (op by op) or each batch's program (adaptive); the steps are
then timed with every program cached. Losses are compared with the same steps in CPU eager
PyTorch.

Two modes, in the same process, on the same model and batches:
- op by op: each eager op runs as its own one-op program (the default);
- adaptive: consecutive eager ops are recorded and run as one program per batch
  (NEURONSIM_ADAPTIVE_EAGER=1; neuronsim/device/adaptive.py).
The modes alternate for --rounds rounds; the wall time per step is the best cached step.

    python bench/eager_adaptive.py [--steps 4] [--rounds 2] [--layers 2] [--d 64] [--seq 16]

Prints a markdown section; --out FILE rewrites that section of FILE (other sections kept).
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
from neuronsim.device import adaptive, eager

sys.path.insert(0, os.path.dirname(__file__))
from eager_overhead import write_section  # noqa: E402
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
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seq", type=int, default=16)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=128)
    parser.add_argument("--out", default=None, help="rewrite this section of this file")
    args = parser.parse_args()

    model, batches = make(args)
    cpu = train(model, batches, "cpu")
    # Steps after the first run with every program cached.
    warm = slice(1, None) if args.steps > 1 else slice(0, None)
    modes = {"op by op": False, f"adaptive (max {adaptive.max_ops} ops / batch)": True}
    runs: dict[str, list] = {name: [] for name in modes}
    for _ in range(args.rounds):
        for name, on in modes.items():
            adaptive.set_enabled(on)
            runs[name].append(train(model, batches, "neuron"))
    # Training goes on: steps past the cached ones, where AdamW's step sizes and bias
    # corrections take values no earlier step had (what every step of a real run sees).
    more = make(argparse.Namespace(**{**vars(args), "steps": 2 * args.steps}))[1]
    fresh_walls: dict[str, float] = {}
    for name, on in modes.items():
        adaptive.set_enabled(on)
        fresh_walls[name] = min(train(model, more, "neuron")["walls"][args.steps:])
    adaptive.set_enabled(False)
    rows, notes = [], []
    base_fresh = None
    base_wall = base_programs = None
    for name, results in runs.items():
        dev = results[-1]
        wall = min(min(r["walls"][warm]) for r in results)
        loss_diff = max(abs(a - b) for r in results for a, b in zip(cpu["losses"], r["losses"]))
        param_diff = max(
            (cpu["params"][n] - dev["params"][n]).abs().max().item() for n in cpu["params"]
        )
        if base_wall is None:
            base_wall, base_programs = wall, dev["programs"][-1]
        speedup = base_wall / wall
        fresh = fresh_walls[name]
        base_fresh = base_fresh or fresh
        fewer = base_programs / max(dev["programs"][-1], 1)
        rows.append(
            f"| {name} | {dev['programs'][-1]} ({fewer:.1f}x fewer) | {dev['cpu_runs'][-1]} | "
            f"{wall:.3f} ({speedup:.2f}x) | {fresh:.3f} ({base_fresh / fresh:.2f}x) | "
            f"{dev['sims'][-1] / 1e3:.1f} | {loss_diff:.2e} | "
            f"{param_diff:.2e} |"
        )
        notes.append(f"{name}: losses {', '.join(f'{v:.5f}' for v in dev['losses'])}")
    lines = [
        "## Eager training step of a tiny GPT-2 (op by op and adaptive eager)",
        "",
        f"Produced by: `python bench/eager_adaptive.py --steps {args.steps} --rounds "
        f"{args.rounds} --layers {args.layers} --d {args.d} --seq {args.seq}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
        f"target {torch.neuron.target()}. Date: {time.strftime('%Y-%m-%d')}. Model: "
        f"{args.layers} layers, d_model {args.d}, {args.heads} heads, seq {args.seq}, batch "
        f"{args.batch}, vocab {args.vocab}; forward + backward + AdamW step, eager on the "
        f"neuron device. Wall: the best cached step over {args.rounds} rounds of both modes "
        "(alternating, so that load from other processes hits both alike); CPU eager: "
        f"{min(cpu['walls'][warm]):.4f} s / step. Training on: the best of steps "
        f"{args.steps + 1}-{2 * args.steps} of one run of {2 * args.steps} steps, whose "
        "optimizer scalars no earlier step had (every step of a real training run is such a "
        "step: op by op compiles the optimizer's ops anew for each value, adaptive lifts the "
        "values into inputs).",
        "",
        "| mode | programs run / step | CPU-fallback ops / step | wall / step, cached (s) | "
        "wall / step, training on (s) | "
        "simulated / step (us) | max \\|loss diff\\| vs CPU | max \\|param diff\\| vs CPU |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"CPU eager: losses {', '.join(f'{v:.5f}' for v in cpu['losses'])}; "
        + "; ".join(notes) + f" (param diffs after {args.steps} steps).",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        write_section(args.out, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
