"""Graphs with symbolic sizes, compiled once per concrete shape (static shapes only on device).

With torch.compile(dynamic=None), the default, Dynamo compiles a frame with static shapes
first; when a size changes it recompiles the frame with that size symbolic ("automatic dynamic
shapes") and from then on reuses that one graph for every size. The neuron backend compiles
static shapes only, so for such a graph it returns a ShapeSpecializer: at each call it looks at
the concrete sizes, and for sizes it has not seen it substitutes them into a copy of the graph
and compiles that as a static graph (through the compile cache, so a shape compiled before, in
this process or on disk, is not compiled again).

torch.compile(dynamic=True) asks for symbolic shapes from the start: that still raises
NeuronCompileError (static_shapes.py).
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.node import map_arg

from .static_shapes import is_symbolic

log = logging.getLogger("neuronsim")

CompileStatic = Callable[[torch.fx.GraphModule, list[Any]], Callable[..., Any]]


def dynamic_shapes_requested() -> bool:
    """True when the user asked for symbolic shapes: torch.compile(dynamic=True) sets
    torch._dynamo.config.assume_static_by_default=False while Dynamo compiles (as does setting
    it globally). With dynamic=None it is True and symbols come from automatic dynamic shapes
    (or torch._dynamo.mark_dynamic), which the neuron backend specializes per shape."""
    return not torch._dynamo.config.assume_static_by_default


def _symbolic_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and (
        any(is_symbolic(d) for d in value.shape) or any(is_symbolic(s) for s in value.stride())
    )


def has_symbolic_shapes(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> bool:
    if any(is_symbolic(v) or _symbolic_tensor(v) for v in example_inputs):
        return True
    for node in gm.graph.nodes:
        value = node.meta.get("val", node.meta.get("example_value"))
        values = value if isinstance(value, (list, tuple)) else [value]
        if any(is_symbolic(v) or _symbolic_tensor(v) for v in values):
            return True
    return False


def _value_key(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return (tuple(value.shape), value.stride(), value.dtype)
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return type(value).__name__, str(value)
    return type(value).__name__, value


class ShapeSpecializer:
    """What the backend returns for a graph with symbolic sizes: one static compilation per
    distinct set of concrete sizes, picked at each call."""

    def __init__(
        self,
        gm: torch.fx.GraphModule,
        example_inputs: Sequence[Any],
        compile_static: CompileStatic,
    ) -> None:
        self._gm = gm
        self._compile_static = compile_static
        # Only the inputs with symbolic sizes, and the symbols themselves (non-tensor inputs),
        # vary between calls: Dynamo's guards fix everything else.
        self._key_positions = [
            i
            for i, v in enumerate(example_inputs)
            if not isinstance(v, torch.Tensor) or _symbolic_tensor(v)
        ]
        self._tensor_positions = [
            i for i, v in enumerate(example_inputs) if isinstance(v, torch.Tensor)
        ]
        self._all_tensors = len(self._tensor_positions) == len(example_inputs)
        self._compiled: dict[tuple[Any, ...], Callable[..., Any]] = {}
        self._lock = threading.Lock()

    @property
    def shapes(self) -> list[tuple[Any, ...]]:
        """The keys (concrete sizes of the varying inputs) compiled so far."""
        return list(self._compiled)

    def __call__(self, *args: Any) -> Any:
        key = tuple(_value_key(args[i]) for i in self._key_positions)
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._specialize(key, args)
        if not self._all_tensors:
            args = tuple(args[i] for i in self._tensor_positions)
        return compiled(*args)

    def _specialize(self, key: tuple[Any, ...], args: Sequence[Any]) -> Callable[..., Any]:
        # Dynamo's compile lock first: this traces (FakeTensorMode, AOTAutograd's make_fx)
        # at call time, outside Dynamo, while other threads may be compiling frames; tracing
        # concurrently with them corrupts Dynamo's global tracing state.
        from torch._dynamo.convert_frame import compile_lock

        with compile_lock, self._lock:
            compiled = self._compiled.get(key)
            if compiled is not None:
                return compiled
            gm = specialize_graph(self._gm, args)
            tensors = [args[i] for i in self._tensor_positions]
            log.debug("compiling a graph with symbolic sizes for the concrete sizes %s", key)
            compiled = self._compile_static(gm, tensors)
            self._compiled[key] = compiled
            return compiled


def specialize_graph(gm: torch.fx.GraphModule, args: Sequence[Any]) -> torch.fx.GraphModule:
    """A copy of `gm` with each non-tensor input replaced by its value in `args` (and removed
    from the inputs), and with node metadata recomputed for the concrete tensor shapes."""
    graph = copy.deepcopy(gm.graph)  # copies nodes; meta dicts are shallow copies
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(args):
        raise RuntimeError(
            f"neuronsim: graph has {len(placeholders)} inputs, called with {len(args)}"
        )
    for node, value in zip(placeholders, args, strict=True):
        if isinstance(value, torch.Tensor):
            continue
        concrete = _concrete(value)
        for user in list(node.users):
            user.args = map_arg(user.args, lambda n, node=node, c=concrete: c if n is node else n)
            user.kwargs = map_arg(
                user.kwargs, lambda n, node=node, c=concrete: c if n is node else n
            )
        graph.erase_node(node)
    specialized = torch.fx.GraphModule(gm, graph, class_name=type(gm).__name__)
    _refresh_meta(specialized, [a for a in args if isinstance(a, torch.Tensor)])
    return specialized


def _concrete(value: Any) -> Any:
    if isinstance(value, torch.SymInt):
        return int(value)
    if isinstance(value, torch.SymFloat):
        return float(value)
    if isinstance(value, torch.SymBool):
        return bool(value)
    return value


_META_KEYS = ("example_value", "val")


class _MetaRecorder(torch.fx.Interpreter):
    def run_node(self, n: torch.fx.Node) -> Any:
        result = super().run_node(n)
        for name in _META_KEYS:
            if name in n.meta:
                n.meta[name] = result
        return result


def _refresh_meta(gm: torch.fx.GraphModule, tensors: Sequence[torch.Tensor]) -> None:
    """Replaces the symbolic example values of the nodes by fake tensors of concrete shapes."""
    try:
        mode = FakeTensorMode(allow_non_fake_inputs=True)
        with mode:
            fakes = [mode.from_tensor(t, static_shapes=True) for t in tensors]
            _MetaRecorder(gm).run(*fakes)
    except Exception as error:  # noqa: BLE001 - metadata is a convenience; AOTAutograd retraces
        log.debug("could not recompute node metadata of a specialized graph: %s", error)
        for node in gm.graph.nodes:
            for name in _META_KEYS:
                node.meta.pop(name, None)
