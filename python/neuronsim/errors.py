"""Exceptions raised by neuronsim."""

from __future__ import annotations

try:
    # Dynamo wraps backend exceptions in BackendCompilerFailed, except ShortenTraceback
    # subclasses, which it re-raises unchanged: deriving from it lets
    # `except neuronsim.NeuronCompileError` work around torch.compile. It is a RuntimeError.
    from torch._dynamo.exc import ShortenTraceback as _CompileErrorBase

    _PASSES_THROUGH_DYNAMO = True
except ImportError:  # pragma: no cover - other torch versions
    _CompileErrorBase = RuntimeError
    _PASSES_THROUGH_DYNAMO = False


class NeuronCompileError(_CompileErrorBase):
    """A graph or option the neuron backend cannot compile; the message names the problem."""

    def __init__(self, message: str) -> None:
        if _PASSES_THROUGH_DYNAMO:
            super().__init__(message, first_useful_frame=None)
        else:
            super().__init__(message)

    def __reduce__(self):
        return (type(self), (str(self),))


class NeuronRuntimeError(RuntimeError):
    """A compiled graph failed to run on the simulator (illegal program or bad inputs)."""
