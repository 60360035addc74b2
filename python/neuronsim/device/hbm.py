"""The device's native half (python/src/NeuronDevice.cpp), seen from Python: CPU views of
device memory, uncounted moves into device memory, the simulated clock and the counters."""

from __future__ import annotations

import torch

from .. import native


def load() -> None:
    """Loads neuronsim._C, whose static initializers register the PrivateUse1 kernels,
    allocator, guard and hooks."""
    native.lib()


def host_view(tensor: torch.Tensor) -> torch.Tensor:
    """A CPU tensor over the same memory as a neuron tensor (the simulator reads and writes
    device memory through it); other tensors are returned as they are."""
    if tensor.device.type != "neuron":
        return tensor
    alias = torch.ops.neuronsim.host_alias(tensor)
    if alias.is_neg() or alias.is_conj():
        # A negative or conjugate view: the simulator, DLPack and gloo read raw memory, so they
        # get its values, resolved (a copy). Who writes such a view goes through host_alias and
        # copy_, which honour the bits (distributed/process_group.py's staging does).
        return alias.resolve_conj().resolve_neg()
    return alias


def adopt(result: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A neuron tensor holding `result`, a CPU tensor the simulator wrote: the memory becomes
    device memory (no copy, no host transfer counted; it counts against the device's HBM)."""
    return torch.ops.neuronsim.adopt_host(result, device)


def advance_clock(device: int, ns: float) -> float:
    return float(torch.ops.neuronsim.advance_clock(device, float(ns)))


def count_host_transfer(device: int, to_device: bool, nbytes: int) -> None:
    torch.ops.neuronsim.count_host_transfer(device, to_device, int(nbytes))


def memory_stats(device: int) -> tuple[int, int, int, int]:
    """(allocated bytes, peak bytes, capacity bytes, live allocations)"""
    allocated, peak, capacity, count = torch.ops.neuronsim.memory_stats(device)
    return int(allocated), int(peak), int(capacity), int(count)


def reset_peak(device: int) -> None:
    torch.ops.neuronsim.reset_peak_memory(device)


def transfer_stats(device: int) -> dict[str, float]:
    values = torch.ops.neuronsim.transfer_stats(device)
    stats: dict[str, float] = {}
    for index, kind in enumerate(("host_to_device", "device_to_host", "device_to_device")):
        count, nbytes, ns = values[3 * index : 3 * index + 3]
        stats[f"{kind}_count"] = int(count)
        stats[f"{kind}_bytes"] = int(nbytes)
        stats[f"{kind}_ns"] = ns
    stats["clock_ns"] = values[9]
    return stats


def reset_transfer_stats(device: int) -> None:
    torch.ops.neuronsim.reset_transfer_stats(device)


def configure(device_count: int, target: str) -> None:
    facts = native.lib().target_facts(target)
    torch.ops.neuronsim.configure(
        device_count,
        int(facts["hbm_bytes_per_core"]),
        float(facts["host_link_bytes_per_ns"]),
        float(facts["host_link_latency_ns"]),
        float(facts["hbm_bytes_per_ns"]),
    )
