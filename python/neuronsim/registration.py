"""Registers the backend with Dynamo as `neuron` and `neuronsim`."""

from __future__ import annotations

import logging
import warnings
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from torch._dynamo.backends import registry

log = logging.getLogger("neuronsim")

BACKEND_NAME = "neuron"
ALIAS = "neuronsim"
ENTRY_POINT_GROUP = "torch_dynamo_backends"
ENTRY_POINT_VALUE = "neuronsim.backend:neuron_backend"


def _is_ours(entry: Any) -> bool:
    return isinstance(entry, EntryPoint) and entry.value == ENTRY_POINT_VALUE


def _foreign_claim(backend: Any) -> str | None:
    """Who else claims the name `neuron`, or None if nobody (or only our entry point) does."""
    registered = registry._COMPILER_FNS.get(BACKEND_NAME)
    if registered is not None:
        if registered is backend:
            return None
        return f"{getattr(registered, '__module__', '?')}.{getattr(registered, '__name__', '?')}"
    discovered = registry._BACKENDS.get(BACKEND_NAME)
    if isinstance(discovered, EntryPoint) and not _is_ours(discovered):
        return f"entry point {discovered.value}"
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name == BACKEND_NAME and not _is_ours(entry):
            return f"entry point {entry.value}"
    return None


def register(backend: Any) -> list[str]:
    """Registers `backend` under `neuron` (unless another package has it) and `neuronsim`.

    Returns the names this call registered.
    """
    names = []
    # A name whose entry point Dynamo has discovered, Dynamo registers itself as it loads it
    # (possibly right now, while importing this package): doing it here too would make Dynamo
    # fail with "duplicate name".
    if ALIAS not in registry._COMPILER_FNS and not _is_ours(registry._BACKENDS.get(ALIAS)):
        registry.register_backend(backend, name=ALIAS)
        names.append(ALIAS)
    claim = _foreign_claim(backend)
    if claim is not None:
        warnings.warn(
            f"neuronsim: the torch.compile backend name '{BACKEND_NAME}' is already taken by "
            f"{claim}; use backend='{ALIAS}' for NeuronSim",
            UserWarning,
            stacklevel=3,
        )
    elif BACKEND_NAME not in registry._COMPILER_FNS and not _is_ours(
        registry._BACKENDS.get(BACKEND_NAME)
    ):
        registry.register_backend(backend, name=BACKEND_NAME)
        names.append(BACKEND_NAME)
    log.debug("registered torch.compile backends: %s", names)
    return names
