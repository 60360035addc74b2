"""nki.compiler: the compiler directives kernels name. Scheduling directives (no_reorder,
skip_middle_end_transformations) are accepted and change nothing here: NeuronSim's compiler
keeps a kernel's instruction order within each engine. Explicit tile allocation (sbuf/psum
mod_alloc and friends) is not supported yet: calling it is a KernelError naming the line."""

from __future__ import annotations

from typing import Any

from ..kernels.ir import caller_source
from ..kernels.tracer import error


def skip_middle_end_transformations(fn: Any) -> Any:
    """A decorator NKI's compiler reads; the kernel is traced as it is."""
    return fn


class no_reorder:  # noqa: N801 (NKI's name)
    """A loop directive (`nl.sequential_range(n, directives=no_reorder())`): accepted."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass


def _allocator(name: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise error(f"nki.compiler.{name}: explicit tile allocation is not supported by "
                    "NeuronSim's NKI yet (its compiler allocates SBUF and PSUM)", caller_source())

    call.__name__ = name
    return call


class _Space:
    def __init__(self, space: str) -> None:
        self.space = space

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _allocator(f"{self.space}.{name}")


sbuf = _Space("sbuf")
psum = _Space("psum")
