"""neuronxcc.nki (the legacy NKI dialect) on NeuronSim: the same language and isa modules,
with @jit kernels traced with legacy semantics (symbolic affine_range loops, index grids,
masks, block dimensions, return-value ISA calls)."""

from __future__ import annotations

from typing import Any

from . import compiler, isa, language, typing  # noqa: A004
from ._kernel import baremetal, benchmark, profile, simulate_kernel
from ._kernel import jit as _jit
from ._kernel import simulate as _simulate

tensor = typing.tensor


def jit(fn: Any = None, **kwargs: Any) -> Any:
    kwargs.setdefault("dialect", "legacy")
    return _jit(fn, **kwargs)


trace = jit


def simulate(kernel: Any) -> Any:
    return _simulate(kernel)


__all__ = ["baremetal", "compiler", "benchmark", "isa", "jit", "language", "profile", "simulate",
           "simulate_kernel", "tensor", "trace", "typing"]
