"""FX GraphModule (after AOTAutograd, core ATen) -> graph file (compiler/Import/GRAPH_FORMAT.md)."""

from __future__ import annotations

import enum
import hashlib
import json
import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch._subclasses.fake_tensor import unset_fake_temporarily

from .dtypes import graph_dtype
from .errors import NeuronCompileError
from .source_info import user_source
from .static_shapes import is_symbolic

GRAPH_FORMAT = "neuronsim-graph"
GRAPH_VERSION = 1


@dataclass(frozen=True)
class ExportedGraph:
    doc: dict[str, Any]
    text: str  # canonical JSON: the graph file's contents
    hash: str  # sha256 of the canonical JSON without the name; stable across runs

    @property
    def name(self) -> str:
        return self.doc["name"]


def canonical_json(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False)


def export_graph(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any] | None = None,
    name_prefix: str = "graph",
) -> ExportedGraph:
    """Writes `gm` as a graph file. The name is `<name_prefix>_<hash prefix>`."""
    doc = _Exporter(gm, example_inputs).export()
    digest = hashlib.sha256(canonical_json(doc).encode()).hexdigest()
    doc["name"] = f"{name_prefix}_{digest[:12]}"
    return ExportedGraph(doc=doc, text=canonical_json(doc), hash=digest)


def target_name(target: Any) -> str:
    """The ATen overload as str() prints it ('aten.add.Tensor'); module.qualname otherwise."""
    if isinstance(target, (torch._ops.OpOverload, torch._ops.HigherOrderOperator)):
        return str(target)
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    return f"{module}.{name}" if module and name else str(target)


def _float(value: float) -> Any:
    if math.isfinite(value):
        return float(value)
    return {"float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}


class _Exporter:
    def __init__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any] | None) -> None:
        self.gm = gm
        self.example_inputs = list(example_inputs) if example_inputs is not None else None
        self.multi_output: set[str] = set()

    def export(self) -> dict[str, Any]:
        inputs, constants, nodes, outputs = [], [], [], []
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                inputs.append(self._input(node, len(inputs)))
            elif node.op == "get_attr":
                constants.append(self._constant(node))
            elif node.op == "call_function":
                if node.target is operator.getitem:
                    self._check_getitem(node)
                    continue
                nodes.append(self._node(node))
            elif node.op == "output":
                # Non-node outputs (None for an input without gradient) are not computed on
                # the device: the runner puts them back (runner.output_layout).
                outputs = [
                    self._ref(v) for v in graph_outputs(self.gm) if isinstance(v, torch.fx.Node)
                ]
            else:
                raise NeuronCompileError(
                    f"FX node '{node.name}' has kind {node.op!r}; the neuron backend expects "
                    "graphs after AOTAutograd (placeholder, get_attr, call_function, output)"
                )
        return {
            "format": GRAPH_FORMAT,
            "version": GRAPH_VERSION,
            "name": "",
            "inputs": inputs,
            "constants": constants,
            "nodes": nodes,
            "outputs": outputs,
        }

    def _input(self, node: torch.fx.Node, position: int) -> dict[str, Any]:
        value = node.meta.get("val", node.meta.get("example_value"))
        if (
            value is None
            and self.example_inputs is not None
            and position < len(self.example_inputs)
        ):
            value = self.example_inputs[position]
        if not isinstance(value, torch.Tensor):
            raise NeuronCompileError(
                f"graph input '{node.name}' is a {type(value).__name__}, not a tensor; the "
                "neuron backend takes tensor inputs only"
            )
        return {"name": node.name, **self._tensor_spec(value, f"graph input '{node.name}'")}

    def _constant(self, node: torch.fx.Node) -> dict[str, Any]:
        value: Any = self.gm
        for part in str(node.target).split("."):
            value = getattr(value, part)
        if not isinstance(value, torch.Tensor):
            raise NeuronCompileError(
                f"get_attr '{node.target}' is a {type(value).__name__}, not a tensor constant "
                "(higher-order operators are not supported)"
            )
        context = f"constant '{node.target}' ({user_source(node) or 'no source line'})"
        spec = self._tensor_spec(value, context)
        # AOTAutograd calls its compilers under a FakeTensorMode; constants are real tensors.
        with unset_fake_temporarily():
            flat = value.detach().to("cpu").reshape(-1)
            if flat.is_floating_point():
                data = [_float(v) for v in flat.to(torch.float32).tolist()]
            else:
                data = [int(v) for v in flat.tolist()]
        return {"name": node.name, **spec, "data": data}

    def _node(self, node: torch.fx.Node) -> dict[str, Any]:
        value = node.meta.get("val")
        if isinstance(value, (tuple, list)):
            self.multi_output.add(node.name)
            results = [self._result_spec(v, node, i) for i, v in enumerate(value)]
        else:
            results = [self._result_spec(value, node, 0)]
        from .kernels.kernel import export_node  # a custom tile kernel's call

        kernel_node = export_node(node, self._ref, results, user_source(node))
        if kernel_node is not None:
            return kernel_node
        kwargs = {str(k): self._arg(v, node) for k, v in node.kwargs.items()}
        target = target_name(node.target)
        if target.startswith(_COLLECTIVES):
            kwargs["group_size"] = _group_size(node)
        return {
            "name": node.name,
            "target": target,
            "args": [self._arg(a, node) for a in node.args],
            "kwargs": kwargs,
            "outputs": results,
            "source": user_source(node),
        }

    def _result_spec(self, value: Any, node: torch.fx.Node, i: int) -> dict[str, Any] | None:
        if not isinstance(value, torch.Tensor):
            return None
        return self._tensor_spec(value, f"result {i} of node '{node.name}' ({node.target})")

    def _tensor_spec(self, value: torch.Tensor, context: str) -> dict[str, Any]:
        if any(is_symbolic(d) for d in value.shape):
            shape = ", ".join(str(d) for d in value.shape)
            raise NeuronCompileError(
                f"neuron backend supports only static shapes; {context} has symbolic shape "
                f"[{shape}]. Use torch.compile(..., dynamic=False)."
            )
        return {"shape": [int(d) for d in value.shape], "dtype": graph_dtype(value.dtype, context)}

    def _check_getitem(self, node: torch.fx.Node) -> None:
        source = node.args[0]
        if not isinstance(source, torch.fx.Node) or source.name not in self.multi_output:
            raise NeuronCompileError(
                f"getitem node '{node.name}' does not index a multi-output ATen node "
                f"({user_source(node) or 'no source line'})"
            )

    def _ref(self, node: torch.fx.Node) -> dict[str, Any]:
        if node.op == "call_function" and node.target is operator.getitem:
            source, index = node.args
            return {"node": source.name, "index": int(index)}
        return {"node": node.name}

    def _arg(self, value: Any, user: torch.fx.Node) -> Any:
        if isinstance(value, torch.fx.Node):
            return self._ref(value)
        if is_symbolic(value):
            raise NeuronCompileError(
                f"neuron backend supports only static shapes; node '{user.name}' has symbolic "
                f"argument {value}. Use torch.compile(..., dynamic=False)."
            )
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, torch.SymBool):
            return bool(value)
        if isinstance(value, (int, torch.SymInt)):
            return int(value)
        if isinstance(value, (float, torch.SymFloat)):
            return _float(float(value))
        if isinstance(value, (list, tuple)):
            return [self._arg(v, user) for v in value]
        if isinstance(value, torch.dtype):
            return {"dtype": graph_dtype(value, f"an argument of '{user.name}'")}
        if isinstance(value, torch.device):
            return {"device": str(value)}
        if isinstance(value, (torch.layout, torch.memory_format, enum.Enum)):
            return {"enum": str(value)}
        raise NeuronCompileError(
            f"cannot write argument {value!r} (type {type(value).__name__}) of node "
            f"'{user.name}' ({target_name(user.target)}) to the graph file "
            f"({user_source(user) or 'no source line'})"
        )


_COLLECTIVES = "_c10d_functional."


def _group_size(node: torch.fx.Node) -> int:
    """The ranks of a functional collective's process group (its last string argument names
    the group); the importer needs it for the collectives whose arguments do not carry it."""
    names = [a for a in (*node.args, *node.kwargs.values()) if isinstance(a, str)]
    if not names:
        return 1  # wait_tensor: no group
    import torch.distributed.distributed_c10d as c10d

    try:
        return int(c10d._resolve_process_group(names[-1]).size())
    except (KeyError, RuntimeError, ValueError) as error:
        raise NeuronCompileError(
            f"node '{node.name}' ({target_name(node.target)}) runs over process group "
            f"{names[-1]!r}, which this process does not know ({error}) "
            f"({user_source(node) or 'no source line'})"
        ) from None


def graph_outputs(gm: torch.fx.GraphModule) -> list[Any]:
    """The values the graph returns, flattened, in order."""
    output = next(n for n in gm.graph.nodes if n.op == "output")
    return _flatten(output.args[0])


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [v for item in value for v in _flatten(item)]
    return [value]
