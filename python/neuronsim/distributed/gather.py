"""Exchanging per-rank measurements through the default group's store (no collective, so no
simulated time), and drawing them as one timeline."""

from __future__ import annotations

import itertools
import json
from typing import Any

_rounds = itertools.count()


def gather_summaries(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Every rank's `summary`, in rank order; every rank must call it the same number of times."""
    import torch.distributed as dist

    if not dist.is_initialized():
        return [summary]
    store = dist.distributed_c10d._get_default_store()
    key = f"neuronsim/measure/{next(_rounds)}"
    store.set(f"{key}/{dist.get_rank()}", json.dumps(summary))
    return [json.loads(store.get(f"{key}/{r}")) for r in range(dist.get_world_size())]


def plot_rank_timeline(per_rank: list[dict[str, Any]], path: str, title: str = "") -> str:
    """A PNG with one row per rank: compute, waiting for slower ranks, and communication, on
    the simulated clock (from neuronsim.measure()'s per_rank())."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    origin = min(r["start_ns"] for r in per_rank)
    fig, ax = plt.subplots(figsize=(10, 1.6 + 0.4 * len(per_rank)))
    colors = {"compute": "#4c72b0", "wait": "#dddddd", "comm": "#dd8452"}
    for row, rank in enumerate(per_rank):
        start = rank["start_ns"]
        end = start + rank["device_ns"]
        cursor = start
        bars: dict[str, list[tuple[float, float]]] = {k: [] for k in colors}
        for c in rank["collectives"]:
            if c["issued_ns"] > cursor:
                bars["compute"].append((cursor, c["issued_ns"] - cursor))
            bars["wait"].append((c["issued_ns"], c["start_ns"] - c["issued_ns"]))
            bars["comm"].append((c["start_ns"], c["end_ns"] - c["start_ns"]))
            cursor = c["end_ns"]
        if end > cursor:
            bars["compute"].append((cursor, end - cursor))
        for kind, spans in bars.items():
            scaled = [((s - origin) / 1e3, d / 1e3) for s, d in spans if d > 0]
            ax.broken_barh(scaled, (row - 0.4, 0.8), color=colors[kind])
    ax.set_yticks(range(len(per_rank)), [f"rank {i}" for i in range(len(per_rank))])
    ax.invert_yaxis()
    ax.set_xlabel("simulated time (us)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colors.values()]
    ax.legend(handles, ["compute", "waiting for slower ranks", "communication"],
              loc="upper center", bbox_to_anchor=(0.5, -0.45), ncol=3, fontsize="small",
              frameon=False)  # fmt: skip
    ax.set_title(title or "simulated step per rank")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
