"""nki.collectives: names that kernels import at module level. NeuronSim's NKI runs one
NeuronCore's kernel; collectives inside a kernel are not supported yet, and calling one is a
KernelError naming the kernel line (module-level imports and type annotations work)."""

from __future__ import annotations

from typing import Any

from ..kernels.ir import caller_source
from ..kernels.tracer import error


class ReplicaGroup:
    """A group of ranks (NKI's nki.collectives.ReplicaGroup): kept, not used."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)

    def unsupported(*args: Any, **kwargs: Any) -> Any:
        raise error(f"nki.collectives.{name}: collectives inside a kernel are not supported by "
                    "NeuronSim's NKI yet", caller_source())

    unsupported.__name__ = name
    return unsupported
