"""Compiles one AOTAutograd graph: export, compile-cache lookup, native compile, runner."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any

import torch.fx

from . import native
from .cache import CACHE, EntryInfo, cache_key
from .graph_export import export_graph
from .options import BackendOptions
from .runner import CompiledGraph, output_layout
from .static_shapes import check_static_graph, check_static_inputs

log = logging.getLogger("neuronsim")


def compile_fx_graph(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    options: BackendOptions,
    kind: str = "forward",
) -> CompiledGraph:
    """An FX graph of core ATen ops -> a callable that runs it on the simulator."""
    check_static_inputs(example_inputs)
    check_static_graph(gm)
    exported = export_graph(gm, example_inputs, name_prefix=kind)
    key = cache_key(exported.hash, example_inputs, options.key(), native.compiler_version())
    program = CACHE.get_or_compile(
        key,
        EntryInfo.of(exported.name, example_inputs, options.target),
        lambda: native.compile_program(exported.text, _native_options(options, exported.name)),
        # Dumps are written by a compilation: with dump_dir set, compile even when cached.
        refresh=options.dump_dir is not None,
    )
    return CompiledGraph(
        program,
        exported.name,
        output_layout(gm),
        profile=options.profile,
        timing_only=options.timing_only,
        check_hazards=options.check_hazards,
    )


def _native_options(options: BackendOptions, graph_name: str) -> dict[str, Any]:
    native_options: dict[str, Any] = {"target": options.target}
    if options.dump_dir:
        directory = os.path.join(options.dump_dir, graph_name)
        os.makedirs(directory, exist_ok=True)
        native_options["dump_dir"] = directory
    return native_options
