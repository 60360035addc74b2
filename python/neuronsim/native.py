"""Access to the native module neuronsim._C, with compiler failures as NeuronCompileError."""

from __future__ import annotations

import functools
import json
from types import ModuleType
from typing import Any


@functools.cache
def lib() -> ModuleType:
    """The native module, imported on first use so pure-Python parts work without it."""
    try:
        from . import _C
    except ImportError as error:
        raise ImportError(
            "neuronsim's native module neuronsim._C is missing or failed to load "
            f"({error}); build and install the package with `pip install --no-build-isolation .`"
        ) from error
    return _C


def compile_program(graph_json: str, options: dict[str, Any]) -> Any:
    """Compiles a graph file's text to a neuronsim._C.Program."""
    from .errors import NeuronCompileError  # imports torch._dynamo: only when compiling

    native = lib()
    try:
        return native.compile(graph_json, json.dumps(options))
    except native.CompileError as error:
        raise NeuronCompileError(str(error)) from None


def targets() -> list[str]:
    """Names of the targets the simulator knows."""
    return list(lib().targets())


def default_target() -> str:
    return str(lib().default_target())


def compiler_version() -> str:
    return str(lib().version())
