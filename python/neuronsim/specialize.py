"""Graphs with symbolic sizes, compiled once per concrete shape (static shapes only on device).

With torch.compile(dynamic=None), the default, Dynamo compiles a frame with static shapes
first; when a size changes it recompiles the frame with that size symbolic ("automatic dynamic
shapes") and from then on reuses that one graph for every size. The neuron backend compiles
static shapes only, so it specializes such a graph per shape, at the first call with sizes it
has not seen, through the compile cache (a shape compiled before, in this process or on disk,
is not compiled again). Two ways, both here:

- AtenShapeSpecializer (the usual one): AOTAutograd runs once, while Dynamo compiles, on the
  symbolic graph; each forward/backward ATen graph is specialized at call time by substituting
  the concrete sizes and folding the size arithmetic (an fx.Interpreter over fake tensors).
  Nothing is traced at call time: tracing sets FX's process-wide "symbolic tracing" flag, and
  another thread entering a compiled function while it is set fails in Dynamo ("Detected that
  you are using FX to symbolically trace a dynamo-optimized function").
- ShapeSpecializer: the Dynamo graph itself is specialized and then goes through AOTAutograd,
  for graphs whose rewrites before AOTAutograd need concrete sizes (fused attention, dense
  flex attention). It traces at call time, under Dynamo's compile lock.

torch.compile(dynamic=True) asks for symbolic shapes from the start: that still raises
NeuronCompileError (static_shapes.py).
"""

from __future__ import annotations

import copy
import logging
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.node import map_arg

from .static_shapes import is_symbolic
from .tracing import like_a_dynamo_compile

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


class _PerShape:
    """One static compilation of a graph with symbolic sizes per distinct set of concrete
    sizes, made at the first call with them (under tracing.py's lock) and then reused."""

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
        self._compiled: dict[tuple[Any, ...], Any] = {}
        self._lock = threading.Lock()

    @property
    def shapes(self) -> list[tuple[Any, ...]]:
        """The keys (concrete sizes of the varying inputs) compiled so far."""
        return list(self._compiled)

    def _entry(self, args: Sequence[Any]) -> Any:
        """What `_build` made for the concrete sizes of `args`, built at the first call."""
        key = tuple(_value_key(args[i]) for i in self._key_positions)
        entry = self._compiled.get(key)
        if entry is not None:
            return entry
        # Fake tensors, tracing and the compiler's FX passes at call time: see tracing.py.
        with like_a_dynamo_compile(), self._lock:
            entry = self._compiled.get(key)
            if entry is None:
                log.debug("compiling a graph with symbolic sizes for the concrete sizes %s", key)
                entry = self._compiled[key] = self._build(args)
            return entry

    def _build(self, args: Sequence[Any]) -> Any:
        raise NotImplementedError


class ShapeSpecializer(_PerShape):
    """What the backend returns for a Dynamo graph with symbolic sizes that must be
    specialized before AOTAutograd: called like the graph."""

    def __call__(self, *args: Any) -> Any:
        compiled = self._entry(args)
        if len(self._tensor_positions) != len(args):
            args = tuple(args[i] for i in self._tensor_positions)
        return compiled(*args)

    def _build(self, args: Sequence[Any]) -> Callable[..., Any]:
        gm = specialize_graph(self._gm, args)  # then AOTAutograd traces it
        return self._compile_static(gm, [args[i] for i in self._tensor_positions])


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


class AtenShapeSpecializer(_PerShape):
    """What the neuron backend's forward/backward compiler returns for an ATen graph (from
    AOTAutograd) with symbolic sizes. Its entries: the static program and the graph's outputs
    that are sizes (AOTAutograd's forward returns the sizes the backward needs), as
    (position, value)."""

    def __init__(
        self,
        gm: torch.fx.GraphModule,
        example_inputs: Sequence[Any],
        compile_static: CompileStatic,
    ) -> None:
        super().__init__(gm, example_inputs, compile_static)
        # On the instance: torch._dynamo.disable, which AOTAutograd wraps the backward in,
        # copies the instance's __dict__ onto its wrapper, not class attributes.
        self._boxed_call = True

    def __call__(self, *call_args: Any) -> Any:
        # Boxed (one list, which the callee clears), as AOTAutograd calls it; unboxed calls
        # also work (graph inputs are never lists).
        boxed = len(call_args) == 1 and isinstance(call_args[0], list)
        args = call_args[0] if boxed else list(call_args)
        compiled, size_outputs = self._entry(args)
        tensors = [args[i] for i in self._tensor_positions]
        if boxed:
            args.clear()  # the boxed convention: the callee owns the arguments
        outputs = list(compiled(tensors) if getattr(compiled, "_boxed_call", False)
                       else compiled(*tensors))
        for position, value in size_outputs:
            outputs.insert(position, value)
        return outputs

    def _build(self, args: Sequence[Any]) -> tuple[Callable[..., Any], list[tuple[int, Any]]]:
        gm, size_outputs = specialize_aten_graph(self._gm, args)  # nothing traced
        return self._compile_static(gm, [args[i] for i in self._tensor_positions]), size_outputs


def _evaluate(gm: torch.fx.GraphModule, inputs: Sequence[Any]) -> dict[torch.fx.Node, Any]:
    """Each node's value for `inputs` (under the caller's FakeTensorMode), and its metadata
    updated to it. Not an fx.Interpreter: that sets fx.traceback's process-wide current node
    metadata, which a graph traced at the same time in another thread would pick up."""
    values: dict[torch.fx.Node, Any] = {}
    placeholders = iter(inputs)
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            value = next(placeholders)
        elif node.op == "get_attr":
            value = gm
            for part in str(node.target).split("."):
                value = getattr(value, part)
        elif node.op == "call_function":
            args = map_arg(node.args, values.__getitem__)
            kwargs = map_arg(node.kwargs, values.__getitem__)
            value = node.target(*args, **kwargs)
        elif node.op == "output":
            break
        else:
            raise RuntimeError(f"neuronsim: unexpected {node.op} node {node} in an ATen graph")
        values[node] = value
        for name in _META_KEYS:
            if name in node.meta:
                node.meta[name] = value
    return values


_SIZE_TYPES = (int, float, bool, torch.SymInt, torch.SymFloat, torch.SymBool)


def _replace_uses(node: torch.fx.Node, value: Any) -> None:
    for user in list(node.users):
        user.args = map_arg(user.args, lambda n, node=node, v=value: v if n is node else n)
        user.kwargs = map_arg(user.kwargs, lambda n, node=node, v=value: v if n is node else n)


def specialize_aten_graph(
    gm: torch.fx.GraphModule, args: Sequence[Any]
) -> tuple[torch.fx.GraphModule, list[tuple[int, Any]]]:
    """A static copy of the ATen graph `gm` for the concrete `args`: size inputs and size
    arithmetic replaced by their values, checks on sizes evaluated (a failing one raises here,
    as it would have in the symbolic graph) and removed, node metadata recomputed. Returns
    it with the outputs that are sizes, removed from the graph, as (position, value)."""
    graph = copy.deepcopy(gm.graph)
    specialized = torch.fx.GraphModule(gm, graph, class_name=type(gm).__name__)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(args):
        raise RuntimeError(
            f"neuronsim: graph has {len(placeholders)} inputs, called with {len(args)}"
        )
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    with mode:
        inputs = [
            mode.from_tensor(a, static_shapes=True) if isinstance(a, torch.Tensor)
            else _concrete(a)
            for a in args
        ]
        values = _evaluate(specialized, inputs)
    output = next(n for n in graph.nodes if n.op == "output")
    for node in reversed(list(graph.nodes)):
        if node.op not in ("placeholder", "call_function"):
            continue
        value = values.get(node)
        if isinstance(value, torch.Tensor):
            continue
        if node.op == "call_function" and value is not None and not isinstance(
            value, _SIZE_TYPES
        ):
            continue  # a tuple of tensors (getitem reads it) or the like
        if value is None and node.users:
            continue
        _replace_uses(node, _concrete(value))
        graph.erase_node(node)
    results = output.args[0]
    results = list(results) if isinstance(results, (list, tuple)) else [results]
    size_outputs = [(i, r) for i, r in enumerate(results) if not isinstance(r, torch.fx.Node)]
    output.args = (tuple(r for r in results if isinstance(r, torch.fx.Node)),)
    graph = _renumbered_inputs(graph)
    graph.lint()
    specialized = torch.fx.GraphModule(gm, graph, class_name=type(gm).__name__)
    return specialized, size_outputs


_NUMBERED_INPUT = re.compile(r"^(arg)(\d+)_1$|^(primals|tangents)_(\d+)$")


def _renumbered_inputs(graph: torch.fx.Graph) -> torch.fx.Graph:
    """A copy of `graph` with AOTAutograd's numbered inputs (arg<i>_1, primals_<i>,
    tangents_<i>) renumbered after the size inputs were removed, as AOTAutograd names the
    inputs of the static graph: the compile cache keys on the graph, so a shape that was also
    compiled statically (before its size became symbolic) is found again."""
    counters = {"arg": 0, "primals": 1, "tangents": 1}
    renamed = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for node in graph.nodes:
        match = _NUMBERED_INPUT.match(node.name) if node.op == "placeholder" else None
        if match is None:
            env[node] = renamed.node_copy(node, env.__getitem__)
            continue
        prefix = match.group(1) or match.group(3)
        number = counters[prefix]
        counters[prefix] += 1
        name = f"arg{number}_1" if prefix == "arg" else f"{prefix}_{number}"
        env[node] = renamed.placeholder(name, type_expr=node.type)
        env[node].meta = dict(node.meta)
    return renamed
