"""torch.compile(model) without a backend compiles a graph of neuron tensors with the neuron
backend, as TorchNeuron does ("auto-selected when running on a Neuron device"): TorchInductor,
the default backend, has no code generator for the device. Graphs of other tensors still go to
TorchInductor."""

from __future__ import annotations

from typing import Any

import torch

_patched = False


def _has_neuron_tensor(inputs: Any) -> bool:
    return any(isinstance(v, torch.Tensor) and v.device.type == "neuron" for v in inputs)


def _makes_neuron_tensor(model: Any) -> bool:
    """A graph without neuron inputs that makes neuron tensors (torch.arange(n,
    device="neuron"): compiled create_block_mask) is the device's too."""
    graph = getattr(model, "graph", None)
    if graph is None:
        return False
    for node in graph.nodes:
        value = node.meta.get("example_value")
        values = value if isinstance(value, (tuple, list)) else [value]
        if _has_neuron_tensor(values):
            return True
    return False


def install() -> None:
    """Routes TorchInductor's entry (torch.compile's default backend) to the neuron backend
    for graphs with a neuron input (idempotent)."""
    global _patched
    if _patched:
        return
    wrapper = torch._TorchCompileInductorWrapper
    inductor_call = wrapper.__call__

    def __call__(self: Any, model_: Any, inputs_: Any, **kwargs: Any) -> Any:  # noqa: N807
        if _has_neuron_tensor(inputs_) or _makes_neuron_tensor(model_):
            from ..backend import neuron_backend

            return neuron_backend(model_, inputs_)
        return inductor_call(self, model_, inputs_, **kwargs)

    wrapper.__call__ = __call__
    _patched = True
