"""`torch_neuronx.profiling`: TorchNeuron's torch.profiler configuration and trace exporter.

    config = NeuronConfig(modes=[ProfileMode.RUNTIME], profile_output_dir="out")
    exporter = NeuronProfiler(config)
    with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1],
                                experimental_config=config, on_trace_ready=exporter.export_trace):
        model(x)

writes out/trace.json (out/trace_<n>.json for later traces): the profiler's host events with
the simulated NeuronCore's engine and DMA lanes of every program run
(neuronsim.profiler.export_chrome_trace), for Perfetto or chrome://tracing. There is no
device-side NTFF: ProfileMode.DEVICE gives the same simulated lanes; CPU_UTIL and HOST_MEMORY
add nothing (a warning says so).
"""

from __future__ import annotations

import enum
import itertools
import os
import warnings
from collections.abc import Sequence
from typing import Any

import torch


class ProfileMode(enum.Enum):
    DEVICE = "device"  # the simulated engines' instructions
    RUNTIME = "runtime"  # program runs on the host timeline
    CPU_UTIL = "cpu_util"
    HOST_MEMORY = "host_memory"


class NeuronConfig(torch._C._profiler._ExperimentalConfig):
    """What torch.profiler.profile(experimental_config=...) takes; the output directory and
    modes are read by NeuronProfiler.export_trace."""

    def __init__(
        self,
        modes: Sequence[ProfileMode] = (ProfileMode.RUNTIME,),
        profile_output_dir: str | os.PathLike = "./neuron_profile",
        capture_enabled_for_nc: str | None = None,
        **unsupported: Any,
    ) -> None:
        super().__init__()
        if unsupported:
            raise TypeError(
                f"NeuronConfig: {', '.join(sorted(unsupported))} not supported by NeuronSim "
                f"(it takes modes, profile_output_dir, capture_enabled_for_nc)"
            )
        modes = list(modes)
        bad = [m for m in modes if not isinstance(m, ProfileMode)]
        if bad:
            raise TypeError(f"NeuronConfig: modes must be ProfileMode values, got {bad!r}")
        ignored = [m.name for m in modes if m in (ProfileMode.CPU_UTIL, ProfileMode.HOST_MEMORY)]
        if ignored:
            warnings.warn(
                f"NeuronConfig: NeuronSim records no host counters; {', '.join(ignored)} add "
                f"nothing to the trace (it has the profiler's host events and the simulated "
                f"NeuronCore lanes)",
                UserWarning,
                stacklevel=2,
            )
        self.modes = modes
        self.profile_output_dir = os.fspath(profile_output_dir)
        self.capture_enabled_for_nc = capture_enabled_for_nc


class NeuronProfiler:
    """Exports each finished torch.profiler session (on_trace_ready=exporter.export_trace)."""

    def __init__(self, config: NeuronConfig | None = None) -> None:
        self.config = config or NeuronConfig()
        self._count = itertools.count()
        self.traces: list[str] = []  # the files written, oldest first

    def export_trace(self, prof: torch.profiler.profile) -> str:
        from neuronsim.profiler import export_chrome_trace

        directory = self.config.profile_output_dir
        os.makedirs(directory, exist_ok=True)
        n = next(self._count)
        path = os.path.join(directory, "trace.json" if n == 0 else f"trace_{n}.json")
        export_chrome_trace(prof, path)
        self.traces.append(path)
        return path
