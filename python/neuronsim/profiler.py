"""torch.profiler and the simulated device: the engine and DMA activity of every program run
inside a torch.profiler session (eager ops on the `neuron` device and compiled graphs alike),
merged into the profiler's exported Chrome trace beside the host ops.

    with torch.profiler.profile() as prof:
        model(x.to("neuron"))
    neuronsim.profiler.export_chrome_trace(prof, "trace.json")   # open in Perfetto

Each run is marked on the host timeline by a `neuron::<graph>#<n>` range (record_function);
its simulated instructions are placed from that range's start, on one lane per engine and DMA
queue of a "neuron (simulated)" process. Host time and simulated time are different clocks:
the lanes show what the device would do, drawn where the host asked for it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

import torch

_SIMULATED_PID = 0x6E65_7572  # "neur": a pid no host process uses in the exported trace

_lock = threading.Lock()
_runs: dict[str, str] = {}  # marker -> simulator trace file of that run
_counter = itertools.count()
_directory: str | None = None


def profiling() -> bool:
    """True inside a torch.profiler (or autograd profiler) session."""
    return torch.autograd.profiler._is_profiler_enabled


@contextlib.contextmanager
def profiled_run(graph: str) -> Iterator[str]:
    """Marks one program run on the host timeline; yields the path its simulator trace goes to."""
    global _directory
    with _lock:
        if _directory is None:
            _directory = tempfile.mkdtemp(prefix="neuronsim-profile-")
        marker = f"neuron::{graph}#{next(_counter)}"
        path = os.path.join(_directory, f"{len(_runs)}.json")
        _runs[marker] = path
    with torch.profiler.record_function(marker):
        yield path


def clear() -> None:
    """Forgets the recorded runs and deletes their traces."""
    global _directory
    with _lock:
        _runs.clear()
        if _directory is not None:
            shutil.rmtree(_directory, ignore_errors=True)
        _directory = None


def merge(torch_trace: dict[str, Any]) -> dict[str, Any]:
    """The profiler's Chrome trace with the simulated device lanes of its marked runs added."""
    events = torch_trace.setdefault("traceEvents", [])
    with _lock:
        runs = dict(_runs)
    marks = [e for e in events if e.get("ph") == "X" and e.get("name") in runs]
    lanes: dict[int, str] = {}
    added = []
    for mark in marks:
        path = runs[mark["name"]]
        if not os.path.exists(path):
            continue
        with open(path) as f:
            simulated = json.load(f)["traceEvents"]
        for event in simulated:
            if event.get("ph") == "M" and event.get("name") == "thread_name":
                lanes[event["tid"]] = event["args"]["name"]
            elif event.get("ph") == "X":
                placed = dict(event, pid=_SIMULATED_PID, ts=float(mark["ts"]) + float(event["ts"]))
                placed.setdefault("args", {})["run"] = mark["name"]
                added.append(placed)
    busy = {e["tid"] for e in added}
    metadata = [{"ph": "M", "pid": _SIMULATED_PID, "name": "process_name",
                 "args": {"name": "neuron (simulated NeuronCore)"}}]  # fmt: skip
    metadata += [
        {"ph": "M", "pid": _SIMULATED_PID, "tid": tid, "name": "thread_name",
         "args": {"name": name}}
        for tid, name in sorted(lanes.items()) if tid in busy
    ]  # fmt: skip
    events.extend(metadata + added)
    return torch_trace


def export_chrome_trace(prof: torch.profiler.profile, path: str) -> str:
    """Exports `prof` (a finished torch.profiler.profile) with the simulated device lanes
    merged in; returns `path`."""
    with tempfile.TemporaryDirectory(prefix="neuronsim-export-") as tmp:
        host = os.path.join(tmp, "host.json")
        prof.export_chrome_trace(host)
        with open(host) as f:
            trace = json.load(f)
    with open(path, "w") as f:
        json.dump(merge(trace), f)
    return path
