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
    if not hasattr(dist, "set_timeout"):
        dist.set_timeout = set_timeout
    _registered = True


def set_timeout(timeout, group=None) -> None:
    """`torch.distributed.set_timeout(timeout, group=None)`, installed where torch lacks it
    (PyTorch 2.13 has only the private `_set_pg_timeout`; torchtitan 0.3 calls the public
    name after its first step): sets the timeout of a `neuron` group's collectives (its gloo
    transport), and of other groups through `_set_pg_timeout`."""
    import torch.distributed.distributed_c10d as c10d

    from .process_group import NeuronProcessGroup

    if group is None:
        group = c10d._get_default_group()
    if isinstance(group, NeuronProcessGroup):
        group._set_default_timeout(timeout)
    else:
        c10d._set_pg_timeout(timeout, group)


def _create(*args, **kwargs):
    """process_group.create, imported on first use: it imports torch._dynamo, which `import
    torch` (the device's autoload registers this backend) must not."""
    from .process_group import create

    return create(*args, **kwargs)


__all__ = ["Topology", "collective_ns", "plot_rank_timeline", "register", "set_timeout"]
