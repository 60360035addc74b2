"""Unsupported ops: the error that lists them, and CPU fallback (options={"fallback": "cpu"}).

By default a graph with an op the compiler does not support fails with NeuronCompileError
listing every such op with its source line. With the `fallback` option set to "cpu", the
graph (after AOTAutograd) is split: maximal groups of supported nodes become submodules that
compile and run on the simulator, and the other nodes run in eager PyTorch on the CPU between
them. A supported group that still fails to compile (an op supported by name but not for these
arguments) runs on the CPU too, with a warning that gives the compiler's reason.

neuronsim.get_fallback_ops() counts, per execution of a compiled graph, each ATen op that ran
on the CPU instead of the simulator (one count per node per run).
"""

from __future__ import annotations

import collections
import functools
import logging
import operator
import threading
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase
from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

from . import native
from .compiler import compile_fx_graph
from .complex_lowering import BRIDGE, PROBLEM
from .dtypes import GRAPH_DTYPE_NAMES
from .errors import NeuronCompileError
from .graph_export import target_name
from .linalg import size_problem as linalg_size_problem
from .options import BackendOptions
from .source_info import user_source

log = logging.getLogger("neuronsim")


# Supported ops that only reshape or alias data. A group made of nothing else stays on the CPU
# (between CPU ops it costs nothing there, on the device it would be a round trip of copies).
_SHAPE_OPS = frozenset(
    {
        "aten._unsafe_view.default",
        "aten.alias.default",
        "aten.clone.default",
        "aten.detach.default",
        "aten.expand.default",
        "aten.lift_fresh_copy.default",
        "aten.permute.default",
        "aten.reshape.default",
        "aten.select.int",
        "aten.slice.Tensor",
        "aten.split.Tensor",
        "aten.split_with_sizes.default",
        "aten.squeeze.default",
        "aten.squeeze.dim",
        "aten.squeeze.dims",
        "aten.t.default",
        "aten.transpose.int",
        "aten.unsqueeze.default",
        "aten.view.default",
    }
)


@functools.cache
def _supported() -> dict[str, str]:
    return dict(native.lib().supported_ops())


def supported_ops() -> dict[str, str]:
    """The ATen overloads (as 'aten.add.Tensor') the compiler supports: {name: how it runs}.

    Some can still fail to compile for particular arguments; see compiler/Import/OP_COVERAGE.md.
    """
    return dict(_supported())


# ---------------------------------------------------------------------------------------------
# Which nodes the compiler can take


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item)]
    return []


def _node_tensors(node: torch.fx.Node) -> list[torch.Tensor]:
    """The node's result tensors and its tensor arguments (from the FX metadata)."""
    tensors = _tensors(node.meta.get("val"))
    for arg in node.all_input_nodes:
        tensors.extend(_tensors(arg.meta.get("val")))
    return tensors


# Ops that address their input's storage (size, stride, storage offset), which the compiler
# takes to be the input's elements in row-major order.
_STORAGE_OPS = {
    "aten.as_strided.default",
    "aten.as_strided_copy.default",
    "aten.as_strided_scatter.default",
}


def _reads_storage_of_a_view(node: torch.fx.Node) -> bool:
    """as_strided of a tensor whose storage is not its row-major elements (a transposed or
    offset view in eager): the compiled graph's input is contiguous, so it would differ."""
    if target_name(node.target) not in _STORAGE_OPS or not node.args:
        return False
    base = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
    return isinstance(base, torch.Tensor) and (
        not base.is_contiguous() or base.storage_offset() != 0
    )


# Ops whose int16 results are int16 values of their inputs (moved, selected, compared) or a
# conversion into int16 (which the host's int32 -> int16 conversion wraps as eager does): exact
# with int16 held as int32 on the device. Arithmetic could leave the int16 range there.
_INT16_EXACT = _SHAPE_OPS | {
    "aten._to_copy.default", "aten.cat.default", "aten.constant_pad_nd.default",
    "aten.copy.default", "aten.flip.default", "aten.full.default", "aten.full_like.default",
    "aten.gather.default", "aten.index.Tensor", "aten.index_select.default",
    "aten.masked_fill.Scalar", "aten.scalar_tensor.default", "aten.select_scatter.default",
    "aten.slice_scatter.default", "aten.where.self", "aten.zeros_like.default",
    "aten.amax.default", "aten.amin.default", "aten.maximum.default", "aten.minimum.default",
}  # fmt: skip


def _int16_arithmetic(node: torch.fx.Node) -> bool:
    results = _tensors(node.meta.get("val"))
    return any(t.dtype == torch.int16 for t in results) and (
        target_name(node.target) not in _INT16_EXACT
    )


def _is_kernel(node: torch.fx.Node) -> bool:
    """A call of a custom tile kernel (neuronsim.kernels.torch_op)."""
    from .kernels.kernel import kernel_op

    return kernel_op(target_name(node.target)) is not None


def support_problem(node: torch.fx.Node) -> str | None:
    """Why the compiler cannot take this call_function node, or None if it can.

    "" means: the op itself is not supported; otherwise the text names the unsupported
    dtype or layout of one of its tensors (the op is supported for other tensors).
    """
    if PROBLEM in node.meta:  # a complex node the complex lowering kept (complex_lowering.py)
        return node.meta[PROBLEM]
    if target_name(node.target) not in _supported() and not _is_kernel(node):
        return linalg_size_problem(node)
    for tensor in _node_tensors(node):
        if tensor.layout != torch.strided:
            return f"{str(tensor.layout).removeprefix('torch.')} tensors"
        if tensor.dtype not in GRAPH_DTYPE_NAMES:
            return f"{str(tensor.dtype).removeprefix('torch.')} tensors"
    if _reads_storage_of_a_view(node):
        return "an input that is a non-contiguous or offset view"
    if _int16_arithmetic(node):
        return "int16 arithmetic: int16 is held as int32 on the device, without wraparound"
    return None


def _compute_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    return [
        n for n in gm.graph.nodes if n.op == "call_function" and n.target is not operator.getitem
    ]


def _describe(node: torch.fx.Node, problem: str) -> str:
    """'aten.x.y at file.py:12 in forward: code', as the C++ importer writes it."""
    text = target_name(node.target)
    if problem:
        text += f" ({problem})"
    elif text.startswith("prims."):
        text += " (from PyTorch's decomposition of an ATen op the compiler does not lower)"
    source = user_source(node)
    return f"{text} at {source}" if source else text


def is_collective(node: torch.fx.Node) -> bool:
    """A functional collective (DTensor, compiled FSDP2) that the compiler does not take: it
    runs through the process group between the graph's compiled parts, and is not a fallback.
    (The ones it takes become instructions of the program's collective engine.)"""
    if node.op != "call_function":
        return False
    name = target_name(node.target)
    return name.startswith("_c10d_functional.") and name not in _supported()


def has_collectives(gm: torch.fx.GraphModule) -> bool:
    return any(is_collective(n) for n in gm.graph.nodes)


def has_opaque_inputs(gm: torch.fx.GraphModule) -> bool:
    """Graph inputs that are not tensors (a script object a compiled DTensor graph passes from
    forward to backward): the program takes tensors, so such a graph is split and the objects
    stay outside its compiled parts."""
    return any(
        n.op == "placeholder" and not isinstance(n.meta.get("val"), (torch.Tensor, type(None)))
        for n in gm.graph.nodes
    )


def needs_split(gm: torch.fx.GraphModule) -> bool:
    """Whether `gm` runs as compiled parts with eager steps between them even when every op
    is supported: for collectives the compiler does not take, or non-tensor inputs."""
    return has_collectives(gm) or has_opaque_inputs(gm)


def unsupported_nodes(gm: torch.fx.GraphModule) -> list[tuple[torch.fx.Node, str]]:
    """Every call_function node the compiler cannot take, with support_problem()'s reason
    (collectives are not among them: they run through the process group)."""
    found = []
    for node in _compute_nodes(gm):
        if is_collective(node) or node.meta.get(BRIDGE):
            continue  # bridges to a complex node that is reported: not reported themselves
        problem = support_problem(node)
        if problem is not None:
            found.append((node, problem))
    return found


def check_supported(gm: torch.fx.GraphModule) -> None:
    """Raises NeuronCompileError listing every unsupported op of `gm` with its source line.

    The first lines have the format of the C++ importer's diagnostic, so the message is the same
    whichever side finds the op.
    """
    found = unsupported_nodes(gm)
    if not found:
        return
    lines = [f"unsupported operators ({len(found)}):"]
    lines += [f"  {_describe(node, problem)}" for node, problem in found]
    lines.append(
        "To run them in eager PyTorch on the CPU and the rest on the simulator, pass "
        "options={'fallback': 'cpu'}; neuronsim.supported_ops() lists the supported ops."
    )
    raise NeuronCompileError("\n".join(lines))


class _NeuronSupport(OperatorSupportBase):
    def is_node_supported(self, submodules: Mapping[str, torch.nn.Module], node: torch.fx.Node):
        if node.op != "call_function":
            return False
        if node.target is operator.getitem:
            source = node.args[0]
            return isinstance(source, torch.fx.Node) and self.is_node_supported(submodules, source)
        return support_problem(node) is None


# ---------------------------------------------------------------------------------------------
# Fallback counters


class _FallbackCounter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: collections.Counter[str] = collections.Counter()

    def add(self, counts: Mapping[str, int]) -> None:
        if counts:
            with self._lock:
                self._counts.update(counts)

    def get(self) -> dict[str, int]:
        with self._lock:
            return dict(sorted(self._counts.items()))

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()


_FALLBACKS = _FallbackCounter()


def get_fallback_ops() -> dict[str, int]:
    """{ATen op: count} of the ops that ran on the CPU instead of the simulator.

    Counted per execution: each run of a compiled graph adds one per node that ran on the CPU
    (unsupported ops, and every op of a group that failed to compile). Ops that only reshape
    data between CPU ops are not counted. Empty unless options={"fallback": "cpu"} is used.
    neuronsim.clear_op_tracking() (or neuronsim.reset()) empties it.
    """
    return _FALLBACKS.get()


def clear_op_tracking() -> None:
    """Empties get_fallback_ops()."""
    _FALLBACKS.clear()


# ---------------------------------------------------------------------------------------------
# Partitioned graphs


class _SimulatorPartition(torch.nn.Module):
    """A call_module target in the partitioned graph: runs a compiled group on the simulator."""

    def __init__(self, compiled: Any) -> None:
        super().__init__()
        self.compiled = compiled

    def forward(self, *args: Any) -> tuple[Any, ...]:
        return tuple(self.compiled(list(args)))


class _CpuGraph:
    """The compiled form of a graph with CPU parts; AOTAutograd calls it boxed (one list)."""

    def __init__(self, gm: torch.fx.GraphModule, fallback_counts: Mapping[str, int]) -> None:
        self._boxed_call = True  # an instance attribute (see runner.CompiledGraph)
        self.gm = gm
        self.fallback_counts = dict(fallback_counts)

    def __call__(self, args: list[Any]) -> list[Any]:
        outputs = self.gm(*args)
        _FALLBACKS.add(self.fallback_counts)
        return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


def _op_counts(nodes: Sequence[torch.fx.Node]) -> collections.Counter[str]:
    return collections.Counter(target_name(n.target) for n in nodes if n.op == "call_function")


def _warn_compile_failure(what: str, ops: Mapping[str, int], error: Exception) -> None:
    names = ", ".join(sorted(ops))
    warnings.warn(
        f"neuronsim: {what} ({names}) failed to compile for the simulator and runs in eager "
        f"PyTorch on the CPU instead (options['fallback'] == 'cpu'). Reason: {error}",
        UserWarning,
        stacklevel=2,
    )


def _inline_constants(parent: torch.fx.GraphModule, call: torch.fx.Node, sub: torch.fx.GraphModule):
    """Turns the group's inputs that are parent constants (get_attr) back into constants."""
    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    kept_args = []
    for index, (arg, placeholder) in enumerate(zip(call.args, placeholders, strict=True)):
        if not (isinstance(arg, torch.fx.Node) and arg.op == "get_attr"):
            kept_args.append(arg)
            continue
        value: Any = parent
        for part in str(arg.target).split("."):
            value = getattr(value, part)
        name = f"_constant{index}"
        if isinstance(value, torch.nn.Parameter):
            sub.register_parameter(name, value)
        else:
            sub.register_buffer(name, value, persistent=False)
        with sub.graph.inserting_before(placeholder):
            constant = sub.graph.get_attr(name)
        constant.meta = dict(placeholder.meta)
        placeholder.replace_all_uses_with(constant)
        sub.graph.erase_node(placeholder)
    call.args = tuple(kept_args)
    sub.recompile()


def _placeholder_values(sub: torch.fx.GraphModule) -> list[Any]:
    return [n.meta.get("val") for n in sub.graph.nodes if n.op == "placeholder"]


def compile_with_fallback(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    options: BackendOptions,
    kind: str,
) -> Any:
    """Compiles `gm`, running what the simulator cannot run in eager PyTorch on the CPU, and
    its functional collectives through the process group, between the compiled parts."""
    unsupported = unsupported_nodes(gm)
    if not unsupported and not needs_split(gm):
        try:
            return compile_fx_graph(gm, example_inputs, options, kind=kind)
        except NeuronCompileError as error:
            ops = _op_counts(_compute_nodes(gm))
            _warn_compile_failure(f"the {kind} graph", ops, error)
            return _CpuGraph(gm, ops)

    if unsupported:
        log.info(
            "%s graph: %d unsupported node(s) run on the CPU: %s",
            kind,
            len(unsupported),
            "; ".join(_describe(node, problem) for node, problem in unsupported),
        )
    fallback_counts = _op_counts([node for node, _ in unsupported])
    partitioner = CapabilityBasedPartitioner(
        gm, _NeuronSupport(), allows_single_node_partition=True
    )
    position = {node: i for i, node in enumerate(gm.graph.nodes)}
    groups = [
        p.nodes
        for p in sorted(
            partitioner.propose_partitions(), key=lambda p: min(position[n] for n in p.nodes)
        )
        if any(
            n.op == "call_function"
            and n.target is not operator.getitem
            and target_name(n.target) not in _SHAPE_OPS
            for n in p.nodes
        )
    ]
    prefix = "_neuron_partition_"
    fuse_by_partitions(gm, groups, prefix=prefix, always_return_tuple=True)

    for node in list(gm.graph.nodes):
        if node.op != "call_module" or not str(node.target).startswith(prefix):
            continue
        sub = gm.get_submodule(str(node.target))
        _inline_constants(gm, node, sub)
        index = str(node.target).removeprefix(prefix)
        try:
            compiled = compile_fx_graph(
                sub, _placeholder_values(sub), options, kind=f"{kind}_p{index}"
            )
        except NeuronCompileError as error:
            ops = _op_counts(_compute_nodes(sub))
            _warn_compile_failure(f"a group of {sum(ops.values())} supported op(s)", ops, error)
            fallback_counts.update(ops)
            continue  # the fused GraphModule stays: it runs its ATen ops eagerly
        setattr(gm, str(node.target), _SimulatorPartition(compiled))
    gm.recompile()
    log.debug("%s graph after partitioning:\n%s", kind, gm.code)
    return _CpuGraph(gm, fallback_counts)
