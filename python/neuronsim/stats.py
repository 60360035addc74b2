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

    On the `neuron` device it also reads the device clock, which every compiled graph, eager
    op, host copy and collective advances: device_ns (the block's simulated time on this rank),
    and for torch.distributed with the `neuron` backend, comm_ns (collectives' own time),
    comm_wait_ns (waiting for slower ranks to reach a collective), overlapped_comm_ns (the
    part of both that compute hid: collectives inside compiled programs run on the
    collective engine while other engines work; eager collectives block the timeline),
    exposed_comm_ns (the rest), compute_ns (device_ns minus exposed communication) and
    collectives (each one timed). per_rank() gathers these from every rank.
    """

    def __init__(self) -> None:
        self.sim_ns = 0.0
        self.flops = 0
        self.hbm_bytes = 0
        self.runs: list[dict[str, Any]] = []
        self.device_ns = 0.0
        self.comm_ns = 0.0
        self.comm_wait_ns = 0.0
        self.overlapped_comm_ns = 0.0
        self.collectives: list[Any] = []
        self._clock0: float | None = None
        self._mark = 0

    def add(self, run: dict[str, Any]) -> None:
        self.sim_ns += run.get("sim_ns", 0.0)
        self.flops += run.get("flops", 0)
        self.hbm_bytes += run.get("hbm_bytes", 0)
        self.overlapped_comm_ns += run.get("collective_ns", 0.0) - run.get(
            "exposed_collective_ns", 0.0
        )
        self.runs.append(run)

    @property
    def exposed_comm_ns(self) -> float:
        return self.comm_ns + self.comm_wait_ns - self.overlapped_comm_ns

    @property
    def compute_ns(self) -> float:
        return self.device_ns - self.exposed_comm_ns

    def summary(self) -> dict[str, Any]:
        """The block's numbers as a dict (what per_rank() exchanges)."""
        return {
            "device_ns": self.device_ns,
            "compute_ns": self.compute_ns,
            "comm_ns": self.comm_ns,
            "comm_wait_ns": self.comm_wait_ns,
            "overlapped_comm_ns": self.overlapped_comm_ns,
            "exposed_comm_ns": self.exposed_comm_ns,
            "start_ns": self._clock0 or 0.0,
            "collectives": [c.as_dict() for c in self.collectives],
        }

    def per_rank(self) -> list[dict[str, Any]]:
        """summary() of every rank of the default process group, in rank order (through the
        group's store: no collective, no simulated time). Call it on every rank."""
        from .distributed.gather import gather_summaries

        return gather_summaries(self.summary())

    def __enter__(self) -> Measurement:
        with _lock:
            _measurements.append(self)
        self._clock0 = _device_clock()
        if self._clock0 is not None:
            from .distributed import record

            self._mark = record.position()
        return self

    def __exit__(self, *exc: object) -> None:
        with _lock:
            _measurements.remove(self)
        clock = _device_clock()
        if self._clock0 is not None and clock is not None:
            from .distributed import record

            self.device_ns = clock - self._clock0
            self.collectives = record.since(self._mark)
            self.comm_ns = sum(c.comm_ns for c in self.collectives)
            self.comm_wait_ns = sum(c.wait_ns for c in self.collectives)

    def __repr__(self) -> str:
        return f"Measurement(sim_ns={self.sim_ns:.0f}, runs={len(self.runs)})"


def _device_clock() -> float | None:
    import torch

    neuron = getattr(torch, "neuron", None)
    if neuron is None or not hasattr(neuron, "simulated_time_ns"):
        return None
    return float(neuron.simulated_time_ns())


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
    once), dma_transfers, dma_bytes, matmuls,
    origin_busy_ns ({ATen node: queue time of its instructions, summed over engines and DMA
    queues}, largest first), origin_costs ({ATen node: {busy_ns, engine_ns: {engine: ns},
    hbm_bytes, flops}}, same order; neuronsim.node_bounds() classifies them), graph (its
    name), target, timing_only, trace (the trace file written, or None).
    """
    with _lock:
        return copy.deepcopy(_last)


def clear() -> None:
    global _last
    with _lock:
        _last = None
