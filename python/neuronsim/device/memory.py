"""`torch.neuron.memory`: the memory functions of torch.neuron (as torch.cuda.memory), a
printed summary and snapshots of the simulated HBM.

The device has no caching allocator: a tensor's memory returns to the device when the tensor
goes, so reserved equals allocated and empty_cache() frees nothing. The native allocator counts
bytes and live allocations per device, not each block: a snapshot has one segment per device
with the allocated total, and no allocation history (_record_memory_history says so).
"""

from __future__ import annotations

import pickle
from typing import Any

from . import hbm
from .module import (  # noqa: F401 - torch.neuron.memory.* as torch.cuda.memory.*
    _index,
    device_count,
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    reset_max_memory_allocated,
    reset_peak_memory_stats,
)


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(nbytes) >= scale:
            return f"{nbytes / scale:.2f} {unit}"
    return f"{nbytes} B"


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A printable table of the device's memory (as torch.cuda.memory_summary)."""
    index = _index(device)
    stats = memory_stats(index)
    rows = [
        ("Allocated memory", _size(stats["allocated_bytes.all.current"]),
         _size(stats["allocated_bytes.all.peak"])),
        ("Reserved memory", _size(stats["reserved_bytes.all.current"]),
         _size(stats["reserved_bytes.all.peak"])),
        ("Live allocations", str(stats["allocation.all.current"]), ""),
    ]
    if not abbreviated:
        rows += [
            ("Capacity (simulated HBM)", _size(stats["capacity_bytes"]), ""),
            ("Host to device copies", f"{stats['host_to_device_count']} "
             f"({_size(stats['host_to_device_bytes'])})", ""),
            ("Device to host copies", f"{stats['device_to_host_count']} "
             f"({_size(stats['device_to_host_bytes'])})", ""),
        ]
    width = 75
    lines = [
        "=" * width,
        f" neuron:{index} memory summary (simulated; no caching allocator)".ljust(width),
        "-" * width,
        f" {'Metric':<30}| {'Cur Usage':>20} | {'Peak Usage':>18}",
        "-" * width,
        *(f" {name:<30}| {current:>20} | {peak:>18}" for name, current, peak in rows),
        "=" * width,
    ]
    return "\n".join(lines) + "\n"


def memory_snapshot() -> list[dict[str, Any]]:
    """One segment per device (as torch.cuda.memory_snapshot()'s format): the device's HBM
    with its allocated bytes; the allocator does not keep each block."""
    segments = []
    for index in range(device_count()):
        allocated, _, capacity, count = hbm.memory_stats(index)
        segments.append({
            "device": index,
            "address": 0,
            "total_size": capacity,
            "allocated_size": allocated,
            "active_size": allocated,
            "requested_size": allocated,
            "stream": 0,
            "segment_type": "large",
            "segment_pool_id": (0, 0),
            "is_expandable": False,
            "live_allocations": count,
            "blocks": [],
        })
    return segments


def _snapshot(device: Any = None) -> dict[str, Any]:
    """torch.cuda.memory._snapshot()'s dict: segments and (empty) device traces."""
    return {"segments": memory_snapshot(), "device_traces": [[] for _ in range(device_count())]}


def _dump_snapshot(filename: str = "dump_snapshot.pickle") -> None:
    with open(filename, "wb") as f:
        pickle.dump(_snapshot(), f)


def _record_memory_history(enabled: Any = "all", *args: Any, **kwargs: Any) -> None:
    """Allocation history is not recorded: the simulated allocator counts totals only.
    Turning it off is accepted; turning it on raises NotImplementedError."""
    if enabled not in (None, False):
        raise NotImplementedError(
            "torch.neuron.memory._record_memory_history: NeuronSim's allocator keeps per-device "
            "totals, not each allocation's history; use memory_stats(), memory_summary() or "
            "_snapshot() (one segment per device)"
        )
