"""The callable AOTAutograd runs: torch tensors in, the simulator, torch tensors out."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch.utils.dlpack import to_dlpack

from . import stats
from .dtypes import device_dtype
from .errors import NeuronRuntimeError
from .graph_export import graph_outputs

log = logging.getLogger("neuronsim")


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
        self, program: Any, name: str, outputs: Sequence[OutputSpec | LiteralOutput]
    ) -> None:
        # An instance attribute: AOTAutograd wraps the backward with functools.wraps, which
        # copies __dict__ but not class attributes.
        self._boxed_call = True
        self.program = program
        self.name = name
        self.outputs = list(outputs)
        self.num_computed = sum(isinstance(o, OutputSpec) for o in self.outputs)

    def __call__(self, args: list[Any]) -> list[Any]:
        capsules = [to_dlpack(_device_tensor(value, i, self.name)) for i, value in enumerate(args)]
        try:
            capsules_out, run_stats = self.program.run(capsules)
        except (RuntimeError, ValueError) as error:  # SimulationError is a RuntimeError
            raise NeuronRuntimeError(f"graph {self.name}: {error}") from None
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
        stats.record_run(run_stats, graph=self.name, target=self.program.target)
        log.debug("ran %s: %.0f simulated ns", self.name, run_stats["sim_ns"])
        return results


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
    return tensor.contiguous()


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
