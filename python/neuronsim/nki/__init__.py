"""neuronsim.nki: AWS's Neuron Kernel Interface on NeuronSim (README: "NKI kernels").

Both dialects run unchanged: NKI 0.2+ (`import nki`, dst-first ISA calls, Python-semantics
loops) and legacy (`import neuronxcc.nki`, return-value calls, index grids, masks, block
dimensions, symbolic affine_range loops). `import nki` / `import neuronxcc.nki` resolve here
when no real NKI is installed (neuronsim/nki/_hook.py). Kernels are traced by NeuronSim's
kernel tracer into ntile loop nests, compiled, and run on the simulator: real numbers and a
simulated device time (`nki.benchmark`).
"""

from __future__ import annotations

from typing import Any

from . import compiler, isa, language, typing  # noqa: A004
from ._kernel import (
    BenchmarkResult,
    NkiKernel,
    TensorSpec,
    baremetal,
    benchmark,
    profile,
    simulate,
    simulate_kernel,
)
from ._kernel import jit as _jit

tensor = typing.tensor
Kernel = NkiKernel
dtype = Any  # annotations of kernel helpers (`dtype: nki.dtype`)


def jit(fn: Any = None, **kwargs: Any) -> Any:
    """@nki.jit (NKI 0.2+ semantics: dst-first ISA calls, Python loops)."""
    kwargs.setdefault("dialect", "nki")
    return _jit(fn, **kwargs)


def trace(fn: Any = None, **kwargs: Any) -> Any:
    kwargs.setdefault("dialect", "legacy")
    return _jit(fn, **kwargs)


__all__ = ["BenchmarkResult", "compiler", "Kernel", "NkiKernel", "TensorSpec", "baremetal", "benchmark",
           "isa", "jit", "language", "profile", "simulate", "simulate_kernel", "tensor",
           "typing"]
