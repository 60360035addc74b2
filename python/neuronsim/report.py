"""neuronsim.report(): a readable table of a run's simulated stats (default: the last run)."""

from __future__ import annotations

import sys
from typing import Any, TextIO

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
        lines.append("")
        lines.append("  top ATen nodes by busy time (summed over engines and DMA queues):")
        total = sum(origins.values()) or 1.0
        for name, ns in list(origins.items())[:top]:
            lines.append(f"  {_us(ns):>14} {100 * ns / total:5.1f}%  {name}")
        if len(origins) > top:
            rest = sum(list(origins.values())[top:])
            lines.append(
                f"  {_us(rest):>14} {100 * rest / total:5.1f}%  ({len(origins) - top} more)"
            )
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
