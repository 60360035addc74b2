"""Engine-timeline pictures from the Chrome traces that options={"profile": path} writes."""

from __future__ import annotations

import json
import os
from typing import Any

# Colors by event category (the engine).
_COLORS = {
    "tensor": "#d62728",
    "vector": "#1f77b4",
    "scalar": "#2ca02c",
    "gpsimd": "#9467bd",
    "dma": "#ff7f0e",
}


def load_trace(path: str | os.PathLike) -> dict[str, Any]:
    """Reads a trace file: {"lanes": {tid: name}, "events": [(tid, start_us, dur_us, name,
    category)], "other": otherData}."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    lanes: dict[int, str] = {}
    events = []
    for event in data.get("traceEvents", []):
        if event.get("ph") == "M" and event.get("name") == "thread_name":
            lanes[int(event["tid"])] = str(event["args"]["name"])
        elif event.get("ph") == "X":
            events.append(
                (
                    int(event["tid"]),
                    float(event["ts"]),
                    float(event["dur"]),
                    str(event.get("name", "")),
                    str(event.get("cat", "")),
                )
            )
    return {"lanes": lanes, "events": events, "other": data.get("otherData", {})}


def plot_timeline(
    trace_path: str | os.PathLike,
    png_path: str | os.PathLike,
    title: str | None = None,
) -> bool:
    """Draws the engine timeline of a trace file (one row per engine and used DMA queue) into
    a PNG. Returns False, drawing nothing, if matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        return False
    trace = load_trace(trace_path)
    used = sorted({tid for tid, *_ in trace["events"]})
    rows = {tid: i for i, tid in enumerate(used)}
    fig, ax = plt.subplots(figsize=(12, 1.0 + 0.35 * max(len(used), 1)))
    by_lane: dict[int, list[tuple[float, float]]] = {tid: [] for tid in used}
    colors: dict[int, str] = {}
    for tid, start, dur, _name, category in trace["events"]:
        by_lane[tid].append((start, max(dur, 1e-4)))
        colors[tid] = _COLORS.get(category, "#7f7f7f")
    for tid in used:
        ax.broken_barh(by_lane[tid], (rows[tid] - 0.4, 0.8), facecolors=colors[tid])
    ax.set_yticks(range(len(used)))
    ax.set_yticklabels([trace["lanes"].get(tid, str(tid)) for tid in used])
    ax.invert_yaxis()
    ax.set_xlabel("simulated time (us)")
    ax.set_xlim(left=0)
    other = trace["other"]
    heading = title or "NeuronSim engine timeline"
    if other.get("target"):
        heading += f" ({other['target']})"
    ax.set_title(heading)
    ax.legend(
        handles=[Patch(color=c, label=e) for e, c in _COLORS.items()],
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        fontsize="small",
    )
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)
    plt.close(fig)
    return True
