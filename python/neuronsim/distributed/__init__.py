"""torch.distributed on simulated NeuronCores: the `neuron` backend (process_group.py), its
topology and cost model (topology.py), and per-rank measurement (neuronsim.measure(),
gather.py). One process per rank, launched with torchrun as on the real machine."""

from __future__ import annotations

from .gather import plot_rank_timeline
from .topology import Topology, collective_ns

_registered = False


def register() -> None:
    """Registers "neuron" as a torch.distributed backend for neuron and CPU tensors."""
    global _registered
    if _registered:
        return
    import torch.distributed as dist

    if not dist.is_available():
        return
    if "neuron" not in dist.Backend.backend_list:
        dist.Backend.register_backend("neuron", _create, devices=["neuron", "cpu"])
    _registered = True


def _create(*args, **kwargs):
    """process_group.create, imported on first use: it imports torch._dynamo, which `import
    torch` (the device's autoload registers this backend) must not."""
    from .process_group import create

    return create(*args, **kwargs)


__all__ = ["Topology", "collective_ns", "plot_rank_timeline", "register"]
