"""Compile cache: programs in memory, backed by the disk cache (disk_cache.py), with counters.

A lookup tries memory, then disk, then compiles; a compiled program goes to both. The key is
the same for both: graph hash, input shapes/dtypes/strides, options, compiler version.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from . import disk_cache

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


@dataclass(frozen=True)
class EntryInfo:
    """What cache_stats()['signatures'] says about a program."""

    graph: str  # the graph file's name, e.g. forward_0123456789ab
    inputs: tuple[tuple[tuple[int, ...], str], ...]  # (shape, dtype) per input
    target: str

    @staticmethod
    def of(graph: str, example_inputs: Sequence[Any], target: str) -> EntryInfo:
        inputs = tuple(
            (tuple(int(d) for d in v.shape), str(v.dtype).removeprefix("torch."))
            if isinstance(v, torch.Tensor)
            else ((), type(v).__name__)
            for v in example_inputs
        )
        return EntryInfo(graph, inputs, target)


_COUNTERS = (
    "compiles",  # native compilations
    "hits",  # memory_hits + disk_hits
    "misses",  # lookups that found nothing and compiled
    "memory_hits",
    "disk_hits",
    "disk_writes",  # entries written to the disk cache
    "disk_invalid",  # corrupted, truncated or other-version disk entries (removed)
    "evictions",  # disk entries removed to stay under NEURONSIM_CACHE_MAX_MB
    "noncontiguous_copies",  # non-contiguous inputs copied before a run (runner.py)
)


class CompileCache:
    """Programs by cache key, with counters for cache_stats()."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._programs: dict[str, Any] = {}
        self._signatures: dict[str, dict[str, Any]] = {}
        self._reset_counters()

    def _reset_counters(self) -> None:
        self._counters: dict[str, Any] = {name: 0 for name in _COUNTERS}
        self._counters["compile_s"] = 0.0

    def count(self, name: str, amount: int = 1) -> None:
        with self._lock:
            self._counters[name] += amount

    def get_or_compile(
        self,
        key: str,
        info: EntryInfo,
        compile_program: Callable[[], Any],
        refresh: bool = False,
    ) -> Any:
        """The program of `key`: from memory, else from disk, else compile_program().

        refresh=True compiles even if cached (dumps are written only by a compilation).
        """
        if not refresh:
            with self._lock:
                program = self._programs.get(key)
                if program is not None:
                    self._counters["memory_hits"] += 1
                    self._counters["hits"] += 1
            if program is not None:
                log.debug("compile cache: memory hit for %s (key %s)", info.graph, key[:16])
                return program
        disk = disk_cache.active()
        if disk is not None and not refresh:
            loaded = disk.load(key)
            if loaded.invalid:
                self.count("disk_invalid")
            if loaded.program is not None:
                self._insert(key, loaded.program, info, "disk", counter="disk_hits")
                log.debug("compile cache: disk hit for %s (%s)", info.graph, disk.path(key))
                return loaded.program
        log.debug(
            "compile cache: miss for %s (key %s)%s",
            info.graph,
            key[:16],
            "; dump_dir is set, so it compiles" if refresh else "",
        )
        start = time.perf_counter()
        program = compile_program()
        seconds = time.perf_counter() - start
        with self._lock:
            self._counters["misses"] += 1
            self._counters["compiles"] += 1
            self._counters["compile_s"] += seconds
        self._insert(key, program, info, "compiled", seconds=seconds)
        log.info(
            "compiled %s for %s: %d instructions in %.3f s",
            info.graph,
            info.target,
            program.num_instructions,
            seconds,
        )
        if disk is not None:
            written, evicted = disk.store(key, program, info.graph)
            with self._lock:
                self._counters["disk_writes"] += int(written)
                self._counters["evictions"] += evicted
        return program

    def _insert(
        self,
        key: str,
        program: Any,
        info: EntryInfo,
        source: str,
        counter: str | None = None,
        seconds: float | None = None,
    ) -> None:
        with self._lock:
            self._programs[key] = program
            if counter is not None:
                self._counters[counter] += 1
                self._counters["hits"] += 1
            self._signatures[key] = {
                "graph": info.graph,
                "inputs": [[list(shape), dtype] for shape, dtype in info.inputs],
                "target": info.target,
                "source": source,  # "compiled" or "disk"
                "compile_s": seconds,
            }

    def stats(self) -> dict[str, Any]:
        with self._lock:
            disk = disk_cache.cache_root()
            return {
                **self._counters,
                "entries": len(self._programs),
                "cache_dir": disk,
                "signatures": copy.deepcopy(list(self._signatures.values())),
            }

    def clear(self) -> None:
        with self._lock:
            self._programs.clear()
            self._signatures.clear()
            self._reset_counters()
        disk_cache.reset_warnings()


CACHE = CompileCache()


def cache_stats() -> dict[str, Any]:
    """Counters of the compile cache.

    compiles, hits (= memory_hits + disk_hits), misses, memory_hits, disk_hits, disk_writes,
    disk_invalid, evictions, compile_s (seconds spent compiling), noncontiguous_copies,
    entries (programs in memory), cache_dir (disk cache folder or None) and signatures: one
    dict per program in memory with graph, inputs ([shape, dtype] each), target and source
    ("compiled" or "disk").
    """
    return CACHE.stats()
