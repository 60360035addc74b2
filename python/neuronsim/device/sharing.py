"""Neuron tensors between processes (a DataLoader worker's batches, torch.multiprocessing
queues): PyTorch's reducer shares a tensor's storage through shared memory, which only CPU
storage has (`_share_fd_: only available on CPU`, raised in the sender's feeder thread, where
the receiver never hears of it and waits forever). A neuron tensor travels as a CPU copy in
shared memory instead (a timed device-to-host copy) and becomes a neuron tensor on the same
device index again in the receiving process (a host-to-device copy there)."""

from __future__ import annotations

from multiprocessing.reduction import ForkingPickler
from typing import Any

import torch
import torch.multiprocessing.reductions as reductions


def _reduce(tensor: torch.Tensor) -> Any:
    if tensor.device.type != "neuron":
        return reductions.reduce_tensor(tensor)
    if tensor.requires_grad and not tensor.is_leaf:
        return reductions.reduce_tensor(tensor)  # PyTorch's own error for that case
    host = tensor.detach().cpu()
    return _rebuild, (host, tensor.device.index or 0, tensor.requires_grad,
                      isinstance(tensor, torch.nn.Parameter))


def _rebuild(host: torch.Tensor, index: int, requires_grad: bool, parameter: bool) -> Any:
    tensor = host.to(torch.device("neuron", index))
    if parameter:
        return torch.nn.Parameter(tensor, requires_grad=requires_grad)
    return tensor.requires_grad_(requires_grad)


def install() -> None:
    """Neuron tensors (and parameters) pickle for other processes as above; every other
    tensor as PyTorch pickles it."""
    for tensor_type in (torch.Tensor, torch.nn.Parameter):
        ForkingPickler.register(tensor_type, _reduce)
