"""In-memory compile cache: one program per graph, input signature, options, target, version."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Sequence
from typing import Any

import torch

log = logging.getLogger("neuronsim")


def input_signature(example_inputs: Sequence[Any]) -> list[Any]:
    """Shape, dtype and strides of each input (strides are part of the key)."""
    signature: list[Any] = []
    for value in example_inputs:
        if isinstance(value, torch.Tensor):
            signature.append(
                [[int(d) for d in value.shape], str(value.dtype), [int(s) for s in value.stride()]]
            )
        else:
            signature.append(repr(value))
    return signature


def cache_key(
    graph_hash: str,
    example_inputs: Sequence[Any],
    options_key: dict[str, Any],
    compiler_version: str,
) -> str:
    material = {
        "graph": graph_hash,
        "inputs": input_signature(example_inputs),
        "options": options_key,
        "compiler": compiler_version,
    }
    text = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


class CompileCache:
    """Programs by cache key, with counters for cache_stats()."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._programs: dict[str, Any] = {}
        self._counters = {"compiles": 0, "hits": 0, "misses": 0, "compile_s": 0.0}

    def lookup(self, key: str) -> Any | None:
        with self._lock:
            program = self._programs.get(key)
            self._counters["hits" if program is not None else "misses"] += 1
        log.debug("compile cache %s for key %s", "hit" if program else "miss", key[:16])
        return program

    def store(self, key: str, program: Any, compile_seconds: float) -> None:
        with self._lock:
            self._programs[key] = program
            self._counters["compiles"] += 1
            self._counters["compile_s"] += compile_seconds

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {**self._counters, "entries": len(self._programs)}

    def clear(self) -> None:
        with self._lock:
            self._programs.clear()
            self._counters = {"compiles": 0, "hits": 0, "misses": 0, "compile_s": 0.0}


CACHE = CompileCache()


def cache_stats() -> dict[str, Any]:
    """Counters of the compile cache: compiles, hits, misses, compile_s, entries."""
    return CACHE.stats()
