"""Per-op cost of eager mode on the `neuron` device, on a cache hit.

For a few ops on neuron tensors: wall time per call once the op's program is compiled and
cached, split into the simulator's run of the one-op program and the rest (dispatch to the
Python fallback, the cache lookup, CPU views of device memory, the result's allocation); the
same op in eager PyTorch on the CPU; and the op's simulated device time.

    python bench/eager_overhead.py [--calls 300]

Writes bench/results/eager.md.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import time

# The benchmarks measure one physical NeuronCore (trn2 unless --target says otherwise) and
# compare outputs where eager puts them: NeuronSim's placement, not TorchNeuron's defaults of
# a two-core logical device and device-resident outputs (README, The neuron device).
os.environ.setdefault("NEURON_LOGICAL_NC_CONFIG", "1")
os.environ.setdefault("TORCH_NEURONX_RETAIN_DEVICE_MODE", "1")

import torch

import neuronsim
from neuronsim.device import eager

CASES = [
    ("add [8]", lambda x: x + 1.0, lambda: [torch.randn(8)]),
    ("add [1024, 1024]", lambda x: x + 1.0, lambda: [torch.randn(1024, 1024)]),
    ("mul_ in place [256, 256]", lambda x: x.mul_(1.0), lambda: [torch.randn(256, 256)]),
    ("mm 128x128 @ 128x128", torch.mm, lambda: [torch.randn(128, 128), torch.randn(128, 128)]),
    ("layer_norm [64, 768]", lambda x: torch.nn.functional.layer_norm(x, (768,)),
     lambda: [torch.randn(64, 768)]),
    ("softmax [64, 1024]", lambda x: torch.softmax(x, -1), lambda: [torch.randn(64, 1024)]),
]  # fmt: skip


def _per_call(fn, args, calls: int) -> float:
    """Best of 3 batches: seconds per call."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def _program_and_inputs(fn, dev_args):
    """The compiled program of the op `fn` runs (if it ran as a program) and the inputs the
    eager path passes it (CPU views of device memory, scalars as 0-d tensors)."""
    entry = next(reversed(eager._entries.values()))
    program = getattr(entry, "compiled", None)
    if program is None:
        return None, None
    captured = []

    class Capture:
        last_sim_ns = 0.0

        def __call__(self, inputs):
            captured.append(list(inputs))
            outputs = program(inputs)
            self.last_sim_ns = program.last_sim_ns
            return outputs

    entry.compiled = Capture()
    try:
        fn(*dev_args)
    finally:
        entry.compiled = program
    return program, captured[0]


def measure(name, fn, make, calls: int) -> dict:
    cpu_args = make()
    dev_args = [a.to("neuron") for a in cpu_args]
    eager.clear()
    fn(*dev_args)  # compile and cache
    program, inputs = _program_and_inputs(fn, dev_args)
    total = _per_call(fn, dev_args, calls)
    simulator = None
    sim_ns = None
    if program is not None:
        simulator = _per_call(lambda: program(inputs), [], calls)
        sim_ns = program.last_sim_ns
    cpu = _per_call(fn, [a.clone() for a in cpu_args], calls)
    return {
        "case": name,
        "total_us": total * 1e6,
        "simulator_us": None if simulator is None else simulator * 1e6,
        "overhead_us": None if simulator is None else (total - simulator) * 1e6,
        "cpu_us": cpu * 1e6,
        "sim_us": None if sim_ns is None else sim_ns / 1e3,
    }


def _fmt(value, digits=1) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def write(rows, calls: int, path: str) -> None:
    torch_threads = torch.get_num_threads()
    lines = [
        "# Eager mode on the neuron device: per-op cost on a cache hit",
        "",
        f"Produced by: `python bench/eager_overhead.py --calls {calls}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, torch {torch.__version__}, torch threads "
        f"{torch_threads}, target {torch.neuron.target()}. "
        f"Date: {datetime.date.today().isoformat()}.",
        "",
        "```",
        "wall / call   wall time of one call of the op on neuron tensors, its program cached",
        "simulator     of which: the simulator running the op's one-op program (functional,",
        "              with hazard checks), called directly",
        "overhead      wall / call - simulator: dispatch to the fallback, cache lookup, CPU views",
        "              of device memory, allocating the result",
        "CPU eager     the same op on CPU tensors in eager PyTorch",
        "sim time      the op's simulated device time (what the device clock advances by)",
        "```",
        "",
        "| op | wall / call (us) | simulator (us) | overhead (us) | CPU eager (us) | "
        "sim time (us) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {_fmt(r['total_us'])} | {_fmt(r['simulator_us'])} | "
            f"{_fmt(r['overhead_us'])} | {_fmt(r['cpu_us'])} | {_fmt(r['sim_us'], 2)} |"
        )
    overheads = [r["overhead_us"] for r in rows if r["overhead_us"] is not None]
    lines += [
        "",
        f"Median overhead per op on a cache hit: {statistics.median(overheads):.0f} us "
        f"(range {min(overheads):.0f} to {max(overheads):.0f} us).",
        "",
    ]
    write_section(path, "\n".join(lines), first=True)
    print("\n".join(lines))


def write_section(path: str, text: str, first: bool = False) -> None:
    """Replaces the section of `path` that starts with text's first line (a markdown
    heading) by `text`, up to the next heading of level 1 or 2; other scripts' sections are
    kept. A new section goes first (`first`) or last."""
    heading = text.splitlines()[0]
    try:
        with open(path) as f:
            old = f.read().splitlines()
    except FileNotFoundError:
        old = []
    new = text.rstrip("\n").splitlines()
    if heading in old:
        start = old.index(heading)
        end = next((i for i in range(start + 1, len(old))
                    if old[i].startswith(("# ", "## "))), len(old))
        lines = old[:start] + new + ([""] if end < len(old) else []) + old[end:]
    elif first:
        lines = new + ([""] if old else []) + old
    else:
        lines = old + ([""] if old else []) + new
    with open(path, "w") as f:
        f.write("\n".join(lines).rstrip("\n") + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                      "eager.md"))
    args = parser.parse_args()
    assert neuronsim.__version__
    rows = [measure(name, fn, make, args.calls) for name, fn, make in CASES]
    write(rows, args.calls, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
