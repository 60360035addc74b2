"""The main job: a Linear-ReLU-Linear MLP on the simulated NeuronCore, compared with eager.

Runs each case in fp32 and bf16 through torch.compile(model, backend="neuron", dynamic=False),
prints the largest difference from eager PyTorch and the simulated report (neuronsim.report()),
saves the engine timeline of the last case as a PNG (needs matplotlib) and exits with 1 if a
difference is beyond its tolerance.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import torch

import neuronsim

# Largest |compiled - eager| / max |eager| allowed: fp32 accumulates like eager up to
# summation order; bf16 rounds intermediates (the hidden activations) to 8 mantissa bits.
TOLERANCE = {torch.float32: 1e-5, torch.bfloat16: 2e-2}
CASES = [(3, 200, 300, 10), (128, 256, 512, 128)]  # (batch, in, hidden, out)


class MLP(torch.nn.Module):
    def __init__(self, features: int, hidden: int, classes: int) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(features, hidden)
        self.fc2 = torch.nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def run_case(
    batch: int, features: int, hidden: int, classes: int, dtype: torch.dtype, target, trace=None
):
    torch.manual_seed(0)
    model = MLP(features, hidden, classes).to(dtype).eval()
    x = torch.randn(batch, features, dtype=dtype)
    options = {}
    if target:
        options["target"] = target
    if trace:
        options["profile"] = trace  # the Chrome trace of the run, for the timeline picture
    compiled = torch.compile(model, backend="neuron", dynamic=False, options=options)
    with torch.no_grad():
        expected = model(x)
        actual = compiled(x).cpu()  # on the neuron device (TorchNeuron's placement)
    difference = (actual.double() - expected.double()).abs().max().item()
    relative = difference / max(expected.double().abs().max().item(), 1e-30)
    return difference, relative, neuronsim.last_run_stats()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", help="simulated target (default: NEURONSIM_TARGET or trn2)")
    parser.add_argument(
        "--png",
        default="neuron_timeline.png",
        help="engine timeline picture of the last case (default: %(default)s; '' for none)",
    )
    parser.add_argument(
        "--trace", help="also keep the last case's Chrome trace (Perfetto JSON) at this path"
    )
    args = parser.parse_args()

    scratch = tempfile.TemporaryDirectory(prefix="neuronsim-demo-")
    trace = args.trace or (os.path.join(scratch.name, "trace.json") if args.png else None)
    failures = []
    cases = [(c, d) for c in CASES for d in (torch.float32, torch.bfloat16)]
    for i, ((batch, features, hidden, classes), dtype) in enumerate(cases):
        last = i == len(cases) - 1
        name = f"MLP {batch}x{features} -> {hidden} -> {classes} {str(dtype)[6:]}"
        difference, relative, stats = run_case(
            batch, features, hidden, classes, dtype, args.target, trace if last else None
        )
        ok = relative <= TOLERANCE[dtype]
        print(
            f"{name}: max |compiled - eager| {difference:.3e} = {relative:.3e} of max |eager| "
            f"(tolerance {TOLERANCE[dtype]:.0e}) {'OK' if ok else 'FAIL'}"
        )
        neuronsim.report(stats)
        print()
        if not ok:
            failures.append(name)

    if args.png:
        if neuronsim.plot_timeline(trace, args.png, title=name):
            print(f"engine timeline of {name}: {os.path.abspath(args.png)}")
        else:
            print("matplotlib is not installed: no timeline picture (pip install matplotlib)")
    if args.trace:
        print(f"Chrome trace (chrome://tracing, ui.perfetto.dev): {os.path.abspath(args.trace)}")
    scratch.cleanup()

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
