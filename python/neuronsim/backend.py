"""The `neuron` torch.compile backend: Dynamo graph -> AOTAutograd (core ATen) -> simulator."""

from __future__ import annotations

import functools
import logging
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import torch.fx
from torch._decomp import core_aten_decompositions, decomposition_table
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func

from . import compile_metrics
from .compiler import compile_fx_graph
from .device import placement
from .errors import NeuronCompileError
from .attention import fuse_attention
from .flex_attention import lower_flex_attention
from .complex_lowering import LOWERED_HERE, lower_complex
from .decompositions import NEURON_DECOMPOSITIONS
from .grouped_mm import registered_library_op_decompositions
from .graph_export import target_name
from .options import BackendOptions, resolve_options
from .partition import check_supported, compile_with_fallback, needs_split, supported_ops
from .runtime_asserts import CheckedAsserts, hoist_runtime_asserts, keep_message_free_asserts
from .strided_views import rebase_strided_views
from .specialize import (
    AtenShapeSpecializer,
    ShapeSpecializer,
    dynamic_shapes_requested,
    has_symbolic_shapes,
)
from .static_shapes import check_static_graph, check_static_inputs

log = logging.getLogger("neuronsim")


def _fallback_decompositions() -> dict[Any, Any]:
    """PyTorch's other registered decompositions (torch._decomp.decomposition_table), for the
    ops the compiler does not lower itself: an op it lowers natively keeps its own lowering,
    one it does not is rewritten into ops that may be supported instead of failing."""
    supported = supported_ops()
    return {
        op: fn
        for op, fn in decomposition_table.items()
        if _is_functional(op) and target_name(op) not in supported and op not in LOWERED_HERE
    }


def _is_functional(op: Any) -> bool:
    """An overload that neither mutates nor aliases its inputs (no in-place, out= or view
    forms) and is not one of the ops that bring constants into a traced graph (lift*)."""
    if not isinstance(op, torch._ops.OpOverload) or op._opname.startswith("lift"):
        return False
    schema = op._schema
    return not schema.is_mutable and all(ret.alias_info is None for ret in schema.returns)


@functools.cache
def _builtin_decompositions() -> Any:
    """Core ATen decompositions, PyTorch's decompositions of the ops the compiler does not
    lower, and ours (decompositions.py); building the table takes about 0.2 s, so it is
    built once."""
    return {**_fallback_decompositions(), **core_aten_decompositions(), **NEURON_DECOMPOSITIONS}


def _decompositions() -> Any:
    """The built-in table and the decompositions of other libraries' custom ops registered
    by now (a library imported after the first compile still gets its ops decomposed)."""
    return {**_builtin_decompositions(), **registered_library_op_decompositions()}


def neuron_backend(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    options: Mapping[str, Any] | None = None,
    mode: str | None = None,
) -> Any:
    """torch.compile(model, backend="neuron", dynamic=False, options={...}) lands here."""
    resolved = resolve_options(options)
    if mode not in (None, "default"):
        log.warning("the neuron backend ignores mode=%r", mode)
    symbolic = not dynamic_shapes_requested() and has_symbolic_shapes(gm, example_inputs)
    if symbolic and _rewrites_need_sizes(gm):
        # dynamic=None and a size changed: Dynamo made it symbolic. Compile per concrete shape.
        return ShapeSpecializer(
            gm, example_inputs, lambda graph, inputs: neuron_backend(graph, inputs, options)
        )
    cpu_on_device = placement.runs_cpu_graph_on_device(example_inputs)
    try:
        compiled = _compile_static(gm, example_inputs, resolved, cpu_on_device, symbolic)
    except NeuronCompileError as error:
        if not resolved.fallback_execution:
            raise
        compiled = _eager_fallback(gm, gm, error, resolved, "graph")
    return placement.on_device(compiled) if cpu_on_device else compiled


def _compile_static(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    resolved: BackendOptions,
    cpu_on_device: bool,
    symbolic: bool = False,
) -> Any:
    """A graph with static shapes through AOTAutograd to one program per forward/backward.
    A graph with symbolic sizes (dynamic=None after a size changed) goes through AOTAutograd
    once; each of its forward/backward graphs is compiled per concrete shape at call time."""
    if not symbolic:
        check_static_inputs(example_inputs)
        check_static_graph(gm)
    keep_message_free_asserts(gm)
    fuse_attention(gm)  # scaled_dot_product_attention -> one fused kernel where exact
    lower_flex_attention(gm)  # flex_attention -> its dense ATen form
    prefix = f"{resolved.model_name}_" if resolved.model_name else ""

    def compile_graph(graph: torch.fx.GraphModule, inputs: Sequence[Any], kind: str) -> Any:
        start = time.perf_counter()
        nodes = len(graph.graph.nodes)
        collectives = any(
            n.op == "call_function" and "_c10d_functional" in str(n.target)
            for n in graph.graph.nodes
        )
        try:
            compiled = lower_graph(graph, inputs, f"{prefix}{kind}")
        except NeuronCompileError as error:
            if not resolved.fallback_execution:
                raise
            return _eager_fallback(graph, graph, error, resolved, kind, boxed=True)
        compile_metrics.record(
            compile_metrics.NeuronCompilationMetrics(
                graph_id=compile_metrics.next_graph_id(),
                graph_name=getattr(compiled, "name", f"{prefix}{kind}"),
                kind=kind,
                graph_node_count=nodes,
                has_collectives=collectives,
                torch_neuronx_compile_us=(time.perf_counter() - start) * 1e6,
            )
        )
        return placement.outputs_on_their_devices(compiled, graph, cpu_on_device)

    def lower_graph(graph: torch.fx.GraphModule, inputs: Sequence[Any], kind: str) -> Any:
        # Complex tensors become real planes; the boundary converts complex inputs/outputs.
        lowered = lower_complex(graph)
        if lowered is not None:
            inputs = lowered.example_inputs(inputs)
        rebase_strided_views(graph)  # as_strided of a view addresses the view's base
        asserts = hoist_runtime_asserts(graph)  # checked on the host after each run
        inputs = asserts.graph_inputs(inputs)
        if resolved.fallback != "cpu":
            check_supported(graph)  # every unsupported op with its source line, before export
        if resolved.fallback == "cpu" or needs_split(graph):
            compiled = compile_with_fallback(graph, inputs, resolved, kind=kind)
        else:
            compiled = compile_fx_graph(graph, inputs, resolved, kind=kind)
        compiled = CheckedAsserts(compiled, asserts) if asserts else compiled
        return lowered.wrap(compiled) if lowered is not None else compiled

    def compiler_for(kind: str) -> Any:
        def compile_kind(graph: torch.fx.GraphModule, inputs: Sequence[Any]) -> Any:
            if symbolic:
                return AtenShapeSpecializer(
                    graph, inputs, lambda static, tensors: compile_graph(static, tensors, kind)
                )
            return compile_graph(graph, inputs, kind)

        return compile_kind

    forward_compiler, backward_compiler = compiler_for("forward"), compiler_for("backward")

    compile_with_aot = aot_autograd(
        fw_compiler=forward_compiler,
        bw_compiler=backward_compiler,
        decompositions=_decompositions(),
    )
    return compile_with_aot(gm, example_inputs)


def _rewrites_need_sizes(gm: torch.fx.GraphModule) -> bool:
    """Attention rewrites pick their form from concrete sizes: a graph with attention is
    specialized before AOTAutograd (ShapeSpecializer), any other after it."""
    return any(
        n.op == "call_function"
        and any(name in str(n.target) for name in ("scaled_dot_product", "flex_attention"))
        for n in gm.graph.nodes
    )


def _eager_fallback(
    graph: torch.fx.GraphModule,
    gm: torch.fx.GraphModule,
    error: Exception,
    resolved: BackendOptions,
    kind: str,
    boxed: bool = False,
) -> Any:
    """options["fallback_execution"]: the graph that failed to compile runs op by op in eager
    mode (neuron tensors on the device's eager path), with a warning naming the failure."""
    first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
    warnings.warn(
        f"neuron: a {kind} graph{f' of {resolved.model_name}' if resolved.model_name else ''} "
        f"failed to compile and runs in eager mode instead (fallback_execution): {first_line}",
        UserWarning,
        stacklevel=2,
    )
    compile_metrics.record(
        compile_metrics.NeuronCompilationMetrics(
            graph_id=compile_metrics.next_graph_id(),
            graph_name=f"{resolved.model_name or 'graph'}_{kind}",
            kind=kind,
            graph_node_count=len(graph.graph.nodes),
            has_collectives=False,
            torch_neuronx_compile_us=0.0,
            fell_back_to_eager=True,
        )
    )
    if boxed:
        return make_boxed_func(gm.forward)
    return gm.forward


def _register_names() -> None:
    from .registration import register

    register(neuron_backend)


_register_names()  # `neuron` and `neuronsim`, whichever way this module was first imported
