"""Collective instructions of compiled programs (functional collectives in a graph).

The compiler turns `_c10d_functional.all_reduce` and its kin into instructions of the
collective-communication engine. When the simulator reaches one (its queue is free and its
semaphore waits hold), it calls the hook made here with this rank's HBM bytes: the hook moves
the data through the group's gloo process group and returns when the collective completes,
after the ranks' clocks meet, as the `neuron` backend times every collective. The program's
other queues go on meanwhile with whatever does not read the result, so compute overlaps
communication where the dependences allow; the run's stats tell how much did not
(exposed_collective_ns).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import torch
import torch._C._distributed_c10d as c10d
import torch.distributed as dist

from . import topology

log = logging.getLogger("neuronsim")

_REDUCE_OPS = {
    "add": dist.ReduceOp.SUM,
    "mul": dist.ReduceOp.PRODUCT,
    "max": dist.ReduceOp.MAX,
    "min": dist.ReduceOp.MIN,
}
_warned_groups: set[str] = set()


def _backend(group_name: str) -> Any:
    """The NeuronProcessGroup behind a group name, or the c10d ProcessGroup itself."""
    from .process_group import NeuronProcessGroup

    group = c10d._resolve_process_group(group_name)
    if isinstance(group, NeuronProcessGroup):
        return group
    try:
        backend = group._get_backend(torch.device("neuron"))
    except (RuntimeError, ValueError):
        backend = None
    return backend if isinstance(backend, NeuronProcessGroup) else group


def _data_mover(kind: str, reduce: str, pg: Any, src: Any, dst: Any) -> Callable[[], Any]:
    """What moves this rank's data through `pg` (a gloo or other c10d process group)."""
    if src is None:  # timing-only run: no data
        return lambda: []
    source, target = torch.from_dlpack(src), torch.from_dlpack(dst)
    if kind == topology.ALL_REDUCE:
        options = c10d.AllreduceOptions()
        options.reduceOp = _REDUCE_OPS[reduce]
        target.copy_(source)
        return lambda: pg.allreduce([target], options)
    if kind == topology.ALL_GATHER:
        return lambda: pg._allgather_base(target, source)
    if kind == topology.REDUCE_SCATTER:
        options = c10d.ReduceScatterOptions()
        options.reduceOp = _REDUCE_OPS[reduce]
        return lambda: pg._reduce_scatter_base(target, source, options)
    if kind == topology.ALL_TO_ALL:
        return lambda: pg.alltoall_base(target, source, [], [], c10d.AllToAllOptions())
    raise ValueError(f"unknown collective kind {kind!r}")


def hook(program_start_ns: float) -> Callable[..., float]:
    """The simulator's collective hook for one run of a program that starts at
    `program_start_ns` on this rank's device clock."""

    def collective(
        kind: str, reduce: str, group_name: str, group_size: int, nbytes: int, src: Any,
        dst: Any, ready_ns: float,
    ) -> float:  # fmt: skip
        backend = _backend(group_name)
        if hasattr(backend, "timed"):  # the neuron backend: timed, clocks aligned
            if backend.size() != group_size:
                raise RuntimeError(
                    f"the program was compiled for {group_size} ranks in group "
                    f"{group_name!r}, which has {backend.size()}"
                )
            move = _data_mover(kind, reduce, backend.gloo, src, dst)
            issued = program_start_ns + ready_ns
            return backend.timed(kind, nbytes, move, issued) - program_start_ns
        # Another backend (gloo on CPU tensors): the data moves, the time is not modeled.
        if group_name not in _warned_groups:
            _warned_groups.add(group_name)
            log.warning(
                "collectives of group %r run over %s, not the neuron backend: their "
                "simulated time is not modeled", group_name, type(backend).__name__,
            )  # fmt: skip
        for work in _as_list(_data_mover(kind, reduce, backend, src, dst)()):
            work.wait()
        return ready_ns

    return collective


def _as_list(works: Any) -> list[Any]:
    return works if isinstance(works, list) else [works]
