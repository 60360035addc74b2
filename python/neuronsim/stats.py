"""Statistics of the last simulated run, behind neuronsim.last_run_stats()."""

from __future__ import annotations

import copy
import threading
from typing import Any

_lock = threading.Lock()
_last: dict[str, Any] | None = None


_measurements: list[Measurement] = []


class Measurement:
    """Simulated time of every compiled graph run inside a `neuronsim.measure()` block.

    For a training step (forward, backward and optimizer graphs) this is the step's
    simulated device time: graphs run one after another on the one NeuronCore.
    """

    def __init__(self) -> None:
        self.sim_ns = 0.0
        self.flops = 0
        self.hbm_bytes = 0
        self.runs: list[dict[str, Any]] = []

    def add(self, run: dict[str, Any]) -> None:
        self.sim_ns += run.get("sim_ns", 0.0)
        self.flops += run.get("flops", 0)
        self.hbm_bytes += run.get("hbm_bytes", 0)
        self.runs.append(run)

    def __enter__(self) -> Measurement:
        with _lock:
            _measurements.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        with _lock:
            _measurements.remove(self)

    def __repr__(self) -> str:
        return f"Measurement(sim_ns={self.sim_ns:.0f}, runs={len(self.runs)})"


def measure() -> Measurement:
    """`with neuronsim.measure() as m: ...` sums the simulated time (m.sim_ns), FLOPs and
    HBM bytes of every compiled graph that runs in the block; m.runs has each run's stats."""
    return Measurement()


def record_run(stats: dict[str, Any], graph: str, target: str, **extra: Any) -> None:
    global _last
    with _lock:
        _last = {**stats, "graph": graph, "target": target, **extra}
        for m in _measurements:
            m.add(_last)


def last_run_stats() -> dict[str, Any] | None:
    """Stats of the last executed compiled graph, or None before the first run.

    Keys: sim_ns (simulated device time), flops, hbm_bytes, instructions, engine_busy_ns
    (tensor, vector, scalar, gpsimd, dma: ns the engine was busy; dma: some DMA queue was),
    engine_utilization (same keys: busy / sim_ns), mfu (achieved / peak Tensor-engine FLOPs),
    roofline_ns (max of flops / peak and min_hbm_bytes / HBM bandwidth: the time of an ideal
    implementation bound only by compute or by HBM), peak_tflops (the peak used: fp32 if every
    matmul has an fp32 operand, else bf16), min_hbm_bytes (inputs, outputs and constants, each
    once), dma_transfers, dma_bytes, matmuls, origin_busy_ns ({ATen node: queue time of its
    instructions, summed over engines and DMA queues}, largest first), graph (its name),
    target, timing_only, trace (the trace file written, or None).
    """
    with _lock:
        return copy.deepcopy(_last)


def clear() -> None:
    global _last
    with _lock:
        _last = None
