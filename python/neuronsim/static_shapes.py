"""Rejects symbolic (dynamic) shapes: the neuron backend compiles static shapes only."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import (
    is_concrete_bool,
    is_concrete_float,
    is_concrete_int,
)

from .errors import NeuronCompileError

_HOW_TO_FIX = (
    "use torch.compile(model, backend='neuron', dynamic=False) (or the default dynamic=None) "
    "instead of dynamic=True; the backend then compiles once per input shape"
)


def is_symbolic(value: Any) -> bool:
    """True for a SymInt/SymFloat/SymBool without a concrete value."""
    if isinstance(value, torch.SymInt):
        return not is_concrete_int(value)
    if isinstance(value, torch.SymFloat):
        return not is_concrete_float(value)
    if isinstance(value, torch.SymBool):
        return not is_concrete_bool(value)
    return False


def _symbolic_tensor(value: Any) -> bool:
    if not isinstance(value, torch.Tensor):
        return False
    return any(is_symbolic(d) for d in value.shape) or any(is_symbolic(s) for s in value.stride())


def _fail(what: str, value: Any) -> None:
    if isinstance(value, torch.Tensor):
        problem = f"{what} has symbolic shape [{', '.join(str(d) for d in value.shape)}]"
    else:
        problem = f"{what} is the symbolic value {value}"
    raise NeuronCompileError(
        f"neuron backend supports only static shapes; {problem}. To get static shapes, "
        f"{_HOW_TO_FIX}."
    )


def check_static_inputs(example_inputs: Iterable[Any]) -> None:
    """Raises NeuronCompileError if any example input is or has a symbolic size."""
    for i, value in enumerate(example_inputs):
        if is_symbolic(value) or _symbolic_tensor(value):
            _fail(f"graph input {i}", value)


def _flat(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [v for item in value for v in _flat(item)]
    return [value]


def check_static_graph(gm: torch.fx.GraphModule) -> None:
    """Raises NeuronCompileError if any node's value (meta 'val' or 'example_value') is symbolic."""
    for node in gm.graph.nodes:
        value = node.meta.get("val", node.meta.get("example_value"))
        for item in _flat(value):
            if is_symbolic(item) or _symbolic_tensor(item):
                _fail(f"node '{node.name}' ({node.op} {node.target})", item)
