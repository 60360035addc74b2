"""The callable AOTAutograd runs: torch tensors in, the simulator, torch tensors out."""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch.utils.dlpack import to_dlpack

from . import profiler, stats
from .cache import CACHE
from .device import hbm as device_memory
from .dtypes import device_dtype
from .errors import NeuronRuntimeError
from .graph_export import graph_outputs

log = logging.getLogger("neuronsim")

_run_counter = itertools.count()  # {run} in profile paths


@dataclass(frozen=True)
class OutputSpec:
    """A graph output the program computes, with the shape and dtype eager gives it."""

    shape: tuple[int, ...] | None  # None: no tensor metadata to check against
    dtype: torch.dtype | None


@dataclass(frozen=True)
class LiteralOutput:
    """A graph output that is not computed (e.g. None for an input without gradient)."""

    value: Any


def output_layout(gm: torch.fx.GraphModule) -> list[OutputSpec | LiteralOutput]:
    """What each graph output is; the program computes the OutputSpec ones, in order."""
    layout: list[OutputSpec | LiteralOutput] = []
    for value in graph_outputs(gm):
        if not isinstance(value, torch.fx.Node):
            layout.append(LiteralOutput(value))
            continue
        meta = value.meta.get("val")
        if isinstance(meta, torch.Tensor):
            layout.append(OutputSpec(tuple(int(d) for d in meta.shape), meta.dtype))
        else:
            layout.append(OutputSpec(None, None))
    return layout


class CompiledGraph:
    """A compiled graph; AOTAutograd calls it with one list of arguments (boxed convention)."""

    def __init__(
        self,
        program: Any,
        name: str,
        outputs: Sequence[OutputSpec | LiteralOutput],
        profile: str | None = None,
        timing_only: bool = False,
        check_hazards: bool = True,
    ) -> None:
        # An instance attribute: AOTAutograd wraps the backward with functools.wraps, which
        # copies __dict__ but not class attributes.
        self._boxed_call = True
        self.program = program
        self.name = name
        self.outputs = list(outputs)
        self.num_computed = sum(isinstance(o, OutputSpec) for o in self.outputs)
        self.profile = profile  # trace path (options["profile"]); {graph}, {run} substituted
        self.timing_only = timing_only
        self.check_hazards = check_hazards
        self.last_sim_ns = 0.0  # simulated time of the latest run

    def _trace_path(self) -> str | None:
        if not self.profile:
            return None
        path = self.profile.replace("{graph}", self.name)
        if "{run}" in path:
            path = path.replace("{run}", str(next(_run_counter)))
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        return path

    def _run(
        self, capsules: list[Any], trace: str | None, collective: Any
    ) -> tuple[list[Any], dict[str, Any]]:
        # Random ops (dropout) draw a new seed from torch's default generator every run:
        # torch.manual_seed makes them reproducible, and consecutive runs differ.
        seed = 0
        if self.program.uses_random:
            seed = int(torch.randint(0, 2**62, (), dtype=torch.int64))
        try:
            return self.program.run(
                capsules,
                timing_only=self.timing_only,
                trace=trace,
                origin_times=True,
                check_hazards=self.check_hazards,
                collective=collective,
                seed=seed,
            )
        except (RuntimeError, ValueError) as error:  # SimulationError is a RuntimeError
            raise NeuronRuntimeError(f"graph {self.name}: {error}") from None

    def __call__(self, args: list[Any]) -> list[Any]:
        device = _neuron_device(args)
        if device is not None:
            # Inputs on the neuron device: the program reads device memory in place.
            args = [device_memory.host_view(a) if isinstance(a, torch.Tensor) else a for a in args]
        capsules = _input_capsules(args, self.name)
        trace = self._trace_path()
        collective = None
        clock = None if device is None else device.index or 0  # the device clock to advance
        if self.program.groups:
            # Collectives move data between the ranks and meet their clocks: the program
            # runs on this rank's device timeline even when its inputs are CPU tensors.
            from .distributed import in_program

            if clock is None:
                clock = torch.neuron.current_device()
            collective = in_program.hook(torch.neuron.simulated_time_ns(clock))
        if trace is None and profiler.profiling():
            with profiler.profiled_run(self.name) as profiled_trace:
                capsules_out, run_stats = self._run(capsules, profiled_trace, collective)
        else:
            capsules_out, run_stats = self._run(capsules, trace, collective)
        if trace:
            log.info("wrote the trace of %s to %s", self.name, trace)
        if len(capsules_out) != self.num_computed:
            raise NeuronRuntimeError(
                f"graph {self.name}: the program returned {len(capsules_out)} outputs, the FX "
                f"graph computes {self.num_computed}"
            )
        computed = iter(capsules_out)
        results = [
            output.value
            if isinstance(output, LiteralOutput)
            else _host_tensor(torch.from_dlpack(next(computed)), output, i, self.name)
            for i, output in enumerate(self.outputs)
        ]
        self.last_sim_ns = float(run_stats["sim_ns"])
        if device is not None:
            # Results stay in device memory; the program's time passes on the device clock.
            results = [
                device_memory.adopt(r, device) if isinstance(r, torch.Tensor) else r
                for r in results
            ]
        if clock is not None:
            device_memory.advance_clock(clock, self.last_sim_ns)
        stats.record_run(
            run_stats,
            graph=self.name,
            target=self.program.target,
            timing_only=self.timing_only,
            trace=trace,
        )
        log.debug("ran %s: %.0f simulated ns", self.name, run_stats["sim_ns"])
        return results


def _neuron_device(args: Sequence[Any]) -> torch.device | None:
    for value in args:
        if isinstance(value, torch.Tensor) and value.device.type == "neuron":
            return value.device
    return None


# Dtypes the simulator takes as they are (float64 is converted, see dtypes.device_dtype).
_DEVICE_DTYPES = frozenset(
    {torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.int32, torch.int8,
     torch.uint8, torch.bool}
)  # fmt: skip


def _input_capsules(args: Sequence[Any], graph: str) -> list[Any]:
    """DLPack capsules of the inputs. Fast path (each call of a compiled model goes through
    here, for every weight too): a contiguous CPU tensor of a device dtype is exported as it
    is (to_dlpack does not mind requires_grad); anything else goes through _device_tensor."""
    capsules = []
    for i, value in enumerate(args):
        if (
            isinstance(value, torch.Tensor)
            and value.is_cpu
            and value.dtype in _DEVICE_DTYPES
            and value.is_contiguous()
        ):
            capsules.append(to_dlpack(value))
        else:
            capsules.append(to_dlpack(_device_tensor(value, i, graph)))
    return capsules


def _device_tensor(value: Any, position: int, graph: str) -> torch.Tensor:
    """The input as the simulator takes it: detached, CPU, contiguous, no float64."""
    if not isinstance(value, torch.Tensor):
        raise NeuronRuntimeError(
            f"graph {graph}: input {position} is a {type(value).__name__}; expected a tensor"
        )
    tensor = value.detach()
    if tensor.device.type != "cpu":
        tensor = tensor.cpu()
    dtype = device_dtype(tensor.dtype)
    if dtype != tensor.dtype:
        tensor = tensor.to(dtype)
    if not tensor.is_contiguous():
        # The simulator takes dense row-major buffers: copy (counted in cache_stats()).
        CACHE.count("noncontiguous_copies")
        tensor = tensor.contiguous()
    return tensor


def _host_tensor(tensor: torch.Tensor, spec: OutputSpec, position: int, graph: str) -> torch.Tensor:
    """The output with the shape and dtype eager PyTorch gives it."""
    if spec.shape is not None and tuple(tensor.shape) != spec.shape:
        raise NeuronRuntimeError(
            f"graph {graph}: output {position} has shape {list(tensor.shape)}, the FX graph "
            f"expects {list(spec.shape)}"
        )
    if spec.dtype is None or tensor.dtype == spec.dtype:
        return tensor
    return tensor.to(spec.dtype)
