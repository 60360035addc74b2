"""The main job: a Linear-ReLU-Linear MLP on the simulated NeuronCore, compared with eager.

Runs each case in fp32 and bf16 through torch.compile(model, backend="neuron", dynamic=False),
prints the largest difference from eager PyTorch and the simulated report, and exits with 1
if a difference is beyond its tolerance.
"""

from __future__ import annotations

import argparse
import sys

import torch

import neuronsim

# Largest |compiled - eager| / max |eager| allowed: fp32 accumulates like eager up to
# summation order; bf16 rounds intermediates (the hidden activations) to 8 mantissa bits.
TOLERANCE = {torch.float32: 1e-5, torch.bfloat16: 2e-2}
CASES = [(3, 200, 300, 10), (128, 256, 512, 128)]  # (batch, in, hidden, out)
ENGINES = ["tensor", "vector", "scalar", "gpsimd", "dma"]


class MLP(torch.nn.Module):
    def __init__(self, features: int, hidden: int, classes: int) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(features, hidden)
        self.fc2 = torch.nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def run_case(batch: int, features: int, hidden: int, classes: int, dtype: torch.dtype, target):
    torch.manual_seed(0)
    model = MLP(features, hidden, classes).to(dtype).eval()
    x = torch.randn(batch, features, dtype=dtype)
    options = {"target": target} if target else None
    compiled = torch.compile(model, backend="neuron", dynamic=False, options=options)
    with torch.no_grad():
        expected = model(x)
        actual = compiled(x)
    difference = (actual.double() - expected.double()).abs().max().item()
    relative = difference / max(expected.double().abs().max().item(), 1e-30)
    return difference, relative, neuronsim.last_run_stats()


def print_report(name: str, stats: dict) -> None:
    busy = stats["engine_busy_ns"]
    print(f"  simulated report for {name} on {stats['target']} ({stats['graph']}):")
    print(f"    simulated time   {stats['sim_ns'] / 1000:12.3f} us")
    for engine in ENGINES:
        share = 100.0 * busy.get(engine, 0.0) / stats["sim_ns"] if stats["sim_ns"] else 0.0
        print(f"    {engine + ' busy':16} {busy.get(engine, 0.0) / 1000:12.3f} us ({share:5.1f}%)")
    print(f"    instructions     {stats['instructions']:12d}")
    print(f"    flops            {stats['flops']:12d}")
    print(f"    hbm bytes        {stats['hbm_bytes']:12d}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", help="simulated target (default: NEURONSIM_TARGET or trn2)")
    args = parser.parse_args()

    failures = []
    for batch, features, hidden, classes in CASES:
        for dtype in (torch.float32, torch.bfloat16):
            name = f"MLP {batch}x{features} -> {hidden} -> {classes} {str(dtype)[6:]}"
            difference, relative, stats = run_case(
                batch, features, hidden, classes, dtype, args.target
            )
            ok = relative <= TOLERANCE[dtype]
            print(
                f"{name}: max |compiled - eager| {difference:.3e} = {relative:.3e} of max |eager| "
                f"(tolerance {TOLERANCE[dtype]:.0e}) {'OK' if ok else 'FAIL'}"
            )
            print_report(name, stats)
            if not ok:
                failures.append(name)

    cache = neuronsim.cache_stats()
    print(
        f"compile cache: {cache['compiles']} compiles, {cache['hits']} hits, "
        f"{cache['misses']} misses, {cache['compile_s']:.3f} s compiling"
    )
    if failures:
        print(f"FAILED (beyond tolerance): {', '.join(failures)}", file=sys.stderr)
        return 1
    print("all cases match eager within tolerance")
    return 0


if __name__ == "__main__":
    sys.exit(main())
