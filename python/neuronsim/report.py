"""neuronsim.report(): a readable table of a run's simulated stats (default: the last run)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, TextIO

from . import calibration, native
from .stats import last_run_stats

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")


def _us(ns: float) -> str:
    return f"{ns / 1000:,.3f} us"


def _bytes(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:,.2f} {unit}"
    return f"{int(n)} B"


def _flops(n: float) -> str:
    for unit, size in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("KFLOP", 1e3)):
        if n >= size:
            return f"{n / size:,.2f} {unit}"
    return f"{int(n)} FLOP"


@dataclass(frozen=True)
class NodeBound:
    """Where one ATen node's time goes (see node_bounds)."""

    node: str
    busy_ns: float  # its instructions' queue time, summed over engines and DMA queues
    bound: str  # "compute", "memory" or "overhead"
    bottleneck: str  # the resource with the most time: tensor, vector, scalar, gpsimd or dma
    bottleneck_ns: float  # that resource's time
    roofline_ns: float  # max(its FLOPs / peak, its HBM bytes / HBM bandwidth)

    @property
    def of_roofline(self) -> float:
        """roofline_ns / bottleneck_ns: 1.0 runs at the node's own roofline."""
        return self.roofline_ns / self.bottleneck_ns if self.bottleneck_ns > 0 else 0.0


def node_bounds(stats: dict[str, Any] | None = None) -> list[NodeBound]:
    """Classifies each ATen node of a run (default: the last one), largest busy time first.

    A node's resources are the Tensor, Vector, Scalar and GpSimd engines (their busy time on
    its instructions) and the DMA side: the larger of its HBM bytes at the HBM bandwidth and
    its DMA queue time spread over the target's DMA queues. The resource with the most time
    is its bottleneck: the Tensor engine makes it compute-bound, DMA memory-bound, the Vector,
    Scalar or GpSimd engine overhead-bound (time on elementwise work, copies and fixed
    instruction costs, which neither its FLOPs nor its bytes account for). Its own roofline
    is max(FLOPs / peak, HBM bytes / bandwidth); of_roofline = roofline / bottleneck time."""
    if stats is None:
        stats = last_run_stats()
    if not stats or not stats.get("origin_costs") or "target" not in stats:
        return []
    facts = native.lib().target_facts(stats["target"])
    peak = float(stats.get("peak_tflops") or 0.0) * 1e3  # FLOP per ns
    bandwidth = float(facts["hbm_bytes_per_ns"])
    out = []
    for node, cost in (stats.get("origin_costs") or {}).items():
        engines = cost.get("engine_ns", {})
        memory_ns = cost["hbm_bytes"] / bandwidth if bandwidth else 0.0
        compute_ns = cost["flops"] / peak if peak else 0.0
        times = {e: float(engines.get(e, 0.0)) for e in ENGINES[:4]}
        times["dma"] = max(memory_ns, float(engines.get("dma", 0.0)) / facts["dma_queues"])
        bottleneck = max(times, key=lambda e: times[e])
        bound = {"tensor": "compute", "dma": "memory"}.get(bottleneck, "overhead")
        out.append(
            NodeBound(node, float(cost["busy_ns"]), bound, bottleneck, times[bottleneck],
                      max(compute_ns, memory_ns))
        )  # fmt: skip
    return out


def format_report(stats: dict[str, Any], top: int = 8) -> str:
    """The report of one run's stats dict (as neuronsim.last_run_stats() returns it)."""
    sim = float(stats.get("sim_ns", 0.0))
    roofline = float(stats.get("roofline_ns", 0.0))
    lines = []
    mode = " (timing only: outputs not computed)" if stats.get("timing_only") else ""
    lines.append(f"NeuronSim run of {stats.get('graph', '?')} on {stats.get('target', '?')}{mode}")
    rows = [("simulated time", _us(sim))]
    if roofline > 0 and sim > 0:
        rows.append(
            ("roofline", f"{_us(roofline)}  (simulated / roofline = {sim / roofline:,.2f}x)")
        )
    peak = stats.get("peak_tflops")
    mfu = stats.get("mfu")
    if mfu is not None:
        peak_text = f"  (of {peak:g} TFLOP/s peak)" if peak else ""
        rows.append(("MFU", f"{100 * mfu:.2f} %{peak_text}"))
    flops = stats.get("flops", 0)
    rows.append(("FLOPs", _flops(flops)))
    if sim > 0 and flops:
        rows.append(("achieved", f"{flops / sim / 1000:,.2f} TFLOP/s"))
    hbm = stats.get("hbm_bytes", 0)
    minimal = stats.get("min_hbm_bytes")
    hbm_text = _bytes(hbm)
    if minimal:
        hbm_text += f"  (minimal {_bytes(minimal)})"
    if sim > 0 and hbm:
        hbm_text += f", {hbm / sim:,.1f} GB/s"
    rows.append(("HBM traffic", hbm_text))
    counts = f"{stats.get('instructions', 0):,}"
    extras = []
    if "matmuls" in stats:
        extras.append(f"{stats['matmuls']:,} matmuls")
    if "dma_transfers" in stats:
        extras.append(f"{stats['dma_transfers']:,} DMA transfers")
    if extras:
        counts += f"  ({', '.join(extras)})"
    rows.append(("instructions", counts))
    width = max(len(name) for name, _ in rows)
    lines += [f"  {name:<{width}}  {value}" for name, value in rows]

    busy = stats.get("engine_busy_ns", {})
    utilization = stats.get("engine_utilization", {})
    lines.append("")
    lines.append(f"  {'engine':<8} {'busy':>14} {'utilization':>12}")
    for engine in ENGINES:
        ns = float(busy.get(engine, 0.0))
        share = utilization.get(engine, ns / sim if sim else 0.0)
        bar = "#" * round(20 * min(max(share, 0.0), 1.0))
        lines.append(f"  {engine:<8} {_us(ns):>14} {100 * share:>11.1f}%  {bar}")

    origins = stats.get("origin_busy_ns") or {}
    if origins and top > 0:
        bounds = {b.node: b for b in node_bounds(stats)}
        lines.append("")
        lines.append("  top ATen nodes by busy time (summed over engines and DMA queues),")
        lines.append("  with what bounds each and its fraction of its own roofline:")
        total = sum(origins.values()) or 1.0
        for name, ns in list(origins.items())[:top]:
            b = bounds.get(name)
            why = f"{b.bound:<8} {b.bottleneck:<6} {b.of_roofline:5.2f}" if b else " " * 21
            lines.append(f"  {_us(ns):>14} {100 * ns / total:5.1f}%  {why}  {name}")
        if len(origins) > top:
            rest = sum(list(origins.values())[top:])
            lines.append(
                f"  {_us(rest):>14} {100 * rest / total:5.1f}%  {'':21}  "
                f"({len(origins) - top} more)"
            )
    if stats.get("target"):
        lines.append("")
        lines += calibration.describe(stats["target"])
    if stats.get("trace"):
        lines.append("")
        lines.append(f"  trace: {stats['trace']}")
    return "\n".join(lines)


def report(stats: dict[str, Any] | None = None, file: TextIO | None = None, top: int = 8) -> str:
    """Prints (to `file`, default stdout) and returns a table of `stats` (default: the last
    run's, neuronsim.last_run_stats()): simulated time, roofline, MFU, FLOPs, HBM traffic,
    instructions, per-engine busy time and utilization, and the `top` ATen nodes by time."""
    if stats is None:
        stats = last_run_stats()
    text = (
        "NeuronSim: no compiled graph has run yet" if stats is None else format_report(stats, top)
    )
    print(text, file=file if file is not None else sys.stdout)
    return text
