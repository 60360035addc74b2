"""Statistics of the last simulated run, behind neuronsim.last_run_stats()."""

from __future__ import annotations

import copy
import threading
from typing import Any

_lock = threading.Lock()
_last: dict[str, Any] | None = None


def record_run(stats: dict[str, Any], graph: str, target: str) -> None:
    global _last
    with _lock:
        _last = {**stats, "graph": graph, "target": target}


def last_run_stats() -> dict[str, Any] | None:
    """Stats of the last executed compiled graph, or None before the first run.

    Keys: sim_ns (simulated device time), flops, hbm_bytes, instructions, engine_busy_ns
    (tensor, vector, scalar, gpsimd, dma), graph (its name), target.
    """
    with _lock:
        return copy.deepcopy(_last)


def clear() -> None:
    global _last
    with _lock:
        _last = None
