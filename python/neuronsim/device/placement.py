"""Where the inputs and outputs of compiled graphs live, as in TorchNeuron.

TorchNeuron's default: a graph compiled for CPU tensors runs on the neuron device anyway. Its
CPU inputs are copied to the current neuron device at each call (timed host transfers; an
input the graph writes, such as a BatchNorm buffer, is copied back) and its outputs stay
there. TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY=1 makes a CPU input an error instead.

TORCH_NEURONX_RETAIN_DEVICE_MODE=1 (NeuronSim's own behaviour before): a graph runs where its
inputs are, so CPU inputs give CPU outputs, neuron inputs neuron outputs.

Either way, an output the graph itself puts on a device (`.cpu()`, `.to("neuron")` inside the
compiled code) is returned on that device, as in eager mode (outputs_on_their_devices).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx

RETAIN_ENV = "TORCH_NEURONX_RETAIN_DEVICE_MODE"
NO_AUTOCOPY_ENV = "TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY"


def _env_flag(name: str) -> bool:
    text = os.environ.get(name, "").strip().lower()
    if text in ("", "0", "false", "no", "off"):
        return False
    if text in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"{name} must be 1 or 0 (true/false), got {os.environ[name]!r}")


def runs_cpu_graph_on_device(example_inputs: Sequence[Any]) -> bool:
    """True when a graph with these example inputs runs on the neuron device though they are
    CPU tensors: TorchNeuron's default for graphs without a neuron input."""
    if _env_flag(RETAIN_ENV) or torch._C._get_privateuse1_backend_name() != "neuron":
        return False
    tensors = [v for v in example_inputs if isinstance(v, torch.Tensor)]
    return bool(tensors) and all(t.device.type == "cpu" for t in tensors)


def on_device(compiled: Callable[..., Any]) -> Callable[..., Any]:
    """`compiled` (Dynamo's calling convention: compiled(*args)) with its CPU tensor inputs
    copied to the current neuron device, and copied back where the graph wrote them."""
    refuse = _env_flag(NO_AUTOCOPY_ENV)

    def run_on_device(*args: Any) -> Any:
        device = torch.device("neuron", torch.neuron.current_device())
        moved = list(args)
        copies = []
        for index, value in enumerate(args):
            if isinstance(value, torch.Tensor) and value.device.type == "cpu":
                if refuse:
                    raise RuntimeError(
                        f"Input tensor at index {index} is on cpu device: the neuron backend "
                        f"takes neuron tensors while {NO_AUTOCOPY_ENV}=1 (unset it to copy CPU "
                        f"inputs to the device); move it with .to('neuron')"
                    )
                copy = value.to(device)
                moved[index] = copy
                copies.append((value, copy, copy._version))
        result = compiled(*moved)
        for original, copy, version in copies:
            if copy._version != version:  # the graph wrote this input
                with torch.no_grad():
                    original.copy_(copy)
        return result

    return run_on_device


def output_devices(gm: torch.fx.GraphModule) -> list[torch.device | None]:
    """The device of each output of `gm` (an AOTAutograd graph) by its metadata."""
    output = next(n for n in gm.graph.nodes if n.op == "output")
    values = output.args[0]
    values = values if isinstance(values, (list, tuple)) else [values]
    devices = []
    for value in values:
        meta = value.meta.get("val") if isinstance(value, torch.fx.Node) else None
        devices.append(meta.device if isinstance(meta, torch.Tensor) else None)
    return devices


def outputs_on_their_devices(
    compiled: Callable[[list[Any]], list[Any]], gm: torch.fx.GraphModule, cpu_on_device: bool
) -> Callable[[list[Any]], list[Any]]:
    """`compiled` (boxed: compiled(args) -> outputs) with each output moved to the device the
    graph gives it, where the program's results (on its inputs' device) differ. With
    `cpu_on_device` (a CPU graph run on the device) CPU outputs stay on the device."""
    from torch._functorch.aot_autograd import make_boxed_func

    wanted = output_devices(gm)
    if cpu_on_device:
        wanted = [None if d is not None and d.type == "cpu" else d for d in wanted]
    if all(d is None for d in wanted):
        return compiled
    if not getattr(compiled, "_boxed_call", False):
        compiled = make_boxed_func(compiled)

    def placed(args: list[Any]) -> list[Any]:
        outputs = list(compiled(args))
        for index, device in enumerate(wanted[: len(outputs)]):
            value = outputs[index]
            if (
                device is not None
                and isinstance(value, torch.Tensor)
                and value.device.type != device.type
            ):
                outputs[index] = value.to(device)
        return outputs

    placed._boxed_call = True  # type: ignore[attr-defined]
    return placed
