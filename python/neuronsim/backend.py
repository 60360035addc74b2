"""The `neuron` torch.compile backend: Dynamo graph -> AOTAutograd (core ATen) -> simulator."""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import torch.fx
from torch._decomp import core_aten_decompositions
from torch._dynamo.backends.common import aot_autograd

from .compiler import compile_fx_graph
from .decompositions import NEURON_DECOMPOSITIONS
from .options import resolve_options
from .partition import check_supported, compile_with_fallback, needs_split
from .specialize import ShapeSpecializer, dynamic_shapes_requested, has_symbolic_shapes
from .static_shapes import check_static_graph, check_static_inputs

log = logging.getLogger("neuronsim")


@functools.cache
def _decompositions() -> Any:
    """Core ATen decompositions and ours (decompositions.py); building the table takes about
    0.15 s, so it is built once."""
    return {**core_aten_decompositions(), **NEURON_DECOMPOSITIONS}


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
    if not dynamic_shapes_requested() and has_symbolic_shapes(gm, example_inputs):
        # dynamic=None and a size changed: Dynamo made it symbolic. Compile per concrete shape.
        return ShapeSpecializer(
            gm, example_inputs, lambda graph, inputs: neuron_backend(graph, inputs, options)
        )
    check_static_inputs(example_inputs)
    check_static_graph(gm)

    def compile_graph(graph: torch.fx.GraphModule, inputs: Sequence[Any], kind: str) -> Any:
        if resolved.fallback != "cpu":
            check_supported(graph)  # every unsupported op with its source line, before export
        if resolved.fallback == "cpu" or needs_split(graph):
            return compile_with_fallback(graph, inputs, resolved, kind=kind)
        return compile_fx_graph(graph, inputs, resolved, kind=kind)

    def forward_compiler(fw_gm: torch.fx.GraphModule, inputs: Sequence[Any]) -> Any:
        return compile_graph(fw_gm, inputs, "forward")

    def backward_compiler(bw_gm: torch.fx.GraphModule, inputs: Sequence[Any]) -> Any:
        return compile_graph(bw_gm, inputs, "backward")

    compile_with_aot = aot_autograd(
        fw_compiler=forward_compiler,
        bw_compiler=backward_compiler,
        decompositions=_decompositions(),
    )
    return compile_with_aot(gm, example_inputs)
