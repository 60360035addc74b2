"""TorchNeuron's `torch_neuronx` module (torch-neuronx 2.13, the native PyTorch backend for
AWS Trainium) over NeuronSim's simulated device, so that scripts written for TorchNeuron, and
libraries that detect it (HF transformers and Accelerate look for `torch_neuronx` and
`torch.neuron.is_available()`), run unchanged. README "TorchNeuron compatibility" lists each
name, its status and how it differs.

NeuronSim ships it for machines without AWS's package: where torch-neuronx is installed, that
one owns `torch_neuronx` and the `neuron` device. It never runs beside torch_xla (the older
torch-neuronx is built on torch_xla, and libraries take `torch_neuronx` + `torch_xla` for it).
"""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("torch_xla") is not None:
    raise ImportError(
        "NeuronSim's torch_neuronx stands in for TorchNeuron (the native backend) and does not "
        "run beside torch_xla, which the XLA-based torch-neuronx uses: uninstall torch_xla, or "
        "use neuronsim directly (import neuronsim; device 'neuron', backend='neuronsim')"
    )

import collections
from typing import Any

import torch

import neuronsim
from neuronsim.device import eager as _eager

from . import profiling
from ._nki import nki_op, wrap_nki
from .profiling import NeuronProfiler

__version__ = "2.13.3+neuronsim"
__all__ = [
    "NeuronProfiler",
    "clear_op_tracking",
    "get_dynamo_metrics",
    "get_executed_ops",
    "get_fallback_ops",
    "memory_stats",
    "nki_op",
    "profiling",
    "reset_dynamo_metrics",
    "synchronize",
    "wrap_nki",
]


def _autoload() -> None:
    """TorchNeuron's `torch.backends` entry point. NeuronSim registers the device from its
    own entry point (neuronsim:_autoload); this one exists for code that calls it."""


def _schema_name(name: str) -> str:
    """'aten.add.Tensor' (neuronsim's counters) -> 'aten::add' (TorchNeuron's op names)."""
    namespace, _, rest = name.partition(".")
    return f"{namespace}::{rest.rpartition('.')[0] or rest}"


def _expanded(counts: dict[str, int]) -> list[str]:
    return list(collections.Counter(counts).elements())


def get_executed_ops() -> list[str]:
    """The eager ops that ran on the device, one entry per call ('aten::add', ...), since
    start or clear_op_tracking(). Copies between host and device and tensor creation, which the
    device's native code runs, are not listed; nor are compiled graphs (get_dynamo_metrics)."""
    return _expanded(_eager.executed_ops())


def get_fallback_ops() -> list[str]:
    """The ops that ran on the CPU instead of the device, one entry per call: eager ops the
    compiler cannot take, and nodes of compiled graphs with options={"fallback": "cpu"}."""
    counts: collections.Counter[str] = collections.Counter()
    for name, count in neuronsim.get_fallback_ops().items():
        counts[_schema_name(name)] += count
    return _expanded(counts)


def clear_op_tracking() -> None:
    """Empties get_executed_ops() and get_fallback_ops()."""
    _eager.clear_executed_ops()
    neuronsim.clear_op_tracking()


def get_dynamo_metrics() -> list[Any]:
    """torch.neuron.get_dynamo_metrics(): one record per compiled graph."""
    return torch.neuron.get_dynamo_metrics()


def reset_dynamo_metrics() -> None:
    torch.neuron.reset_dynamo_metrics()


def synchronize(device: Any = None) -> None:
    """Returns at once: the simulator has finished every program when its call returns."""
    torch.neuron.synchronize(device)


def memory_stats(device: Any = None) -> dict[str, Any]:
    """torch.neuron.memory_stats()."""
    return torch.neuron.memory_stats(device)
