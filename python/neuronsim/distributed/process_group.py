"""The `neuron` torch.distributed backend: gloo moves the data, the cost model times it.

Every collective of a NeuronProcessGroup runs on a gloo process group over the same store
(neuron tensors through CPU views of their device memory, no copy), and advances this rank's
device clock: the ranks first agree on the latest of their clocks (a rank that arrives early
waits for the slowest), then the collective's simulated time (topology.collective_ns) passes.
So a step's simulated time is what the slowest rank sees. Send/recv carry the sender's clock
to the receiver.
"""

from __future__ import annotations

import datetime
import itertools
import os
import zlib
from collections.abc import Callable
from typing import Any

import torch
import torch._C._distributed_c10d as c10d
import torch.distributed as dist
from torch.futures import Future

from ..device import hbm
from . import record, topology


def _max_options() -> c10d.AllreduceOptions:
    options = c10d.AllreduceOptions()
    options.reduceOp = dist.ReduceOp.MAX
    return options


_MAX = _max_options()


def _done(result: Any) -> Any:
    future: Future = Future()
    future.set_result(result)
    return c10d._create_work_from_future(future)


_RED = dist.ReduceOp.RedOpType


class _SumForm:
    """A reduction gloo lacks, done as its SUM: NCCL's AVG (SUM, then divided by the group
    size) and PREMUL_SUM (each rank's input multiplied by a factor, then SUM), which FSDP2
    uses for its gradient reduce-scatters. `options` is a copy of the collective's options
    with SUM; other reductions pass through unchanged."""

    def __init__(self, name: str, opts: Any, group_size: int, in_place: bool) -> None:
        self.name = name
        self.in_place = in_place  # gloo reads and writes the same tensors (all-reduce, reduce)
        self.premul: float | None = None
        self.divide: int | None = None
        self.options = opts
        op = opts.reduceOp
        kind = op.op if isinstance(op, dist.ReduceOp) else op
        if kind == _RED.AVG:
            self.divide = group_size
        elif kind == _RED.PREMUL_SUM:
            factor = getattr(op, "factor", None)
            if not isinstance(factor, (int, float)):
                raise NotImplementedError(
                    f"neuron: {name} with ReduceOp.PREMUL_SUM takes a scalar factor on the "
                    f"neuron backend, got {factor!r}"
                )
            self.premul = float(factor)
        else:
            return
        options = type(opts)()
        for field in ("timeout", "rootRank", "rootTensor", "asyncOp"):
            if hasattr(opts, field):
                setattr(options, field, getattr(opts, field))
        options.reduceOp = dist.ReduceOp.SUM
        self.options = options

    def changes(self) -> bool:
        return self.premul is not None or self.divide is not None

    def check(self, tensor: torch.Tensor) -> None:
        if not (tensor.is_floating_point() or tensor.is_complex()):
            op = "AVG" if self.divide is not None else "PREMUL_SUM"
            raise TypeError(
                f"neuron: {self.name} with ReduceOp.{op} needs floating-point tensors, got "
                f"{tensor.dtype}"
            )


class _Staging:
    """The host tensors gloo moves for one collective. Gloo reads and writes a tensor's
    storage as if it were contiguous, so a non-contiguous tensor (a strided view) goes
    through a contiguous copy; an output's copy is written back after the collective."""

    def __init__(self) -> None:
        self._write_back: list[tuple[torch.Tensor, torch.Tensor]] = []
        self._after: list[Callable[[], Any]] = []

    def inputs(self, value: Any, reduction: _SumForm | None = None) -> Any:
        """Host views of `value` (a tensor or nested lists of them) that gloo only reads;
        with a `reduction` that pre-multiplies (PREMUL_SUM), scaled copies."""
        return self._map(value, output=False, reduction=reduction)

    def outputs(self, value: Any, reduction: _SumForm | None = None,
                write_back: bool = True) -> Any:
        """Host views of `value` that gloo writes (or reads and writes). With a `reduction`
        (AVG or PREMUL_SUM done as SUM), copies that are pre-multiplied (tensors gloo reads
        and writes: all-reduce, reduce) and divided by the group size after the collective
        (AVG), then written back (`write_back`: not on a reduce's other ranks)."""
        return self._map(value, output=True, reduction=reduction, write_back=write_back)

    def _map(self, value: Any, output: bool, reduction: _SumForm | None = None,
             write_back: bool = True) -> Any:
        if isinstance(value, torch.Tensor):
            host = hbm.host_view(value)  # values resolved (a copy) for a negative/conj view
            if output and (value.is_neg() or value.is_conj()):
                # Written back through the alias that keeps the bits (copy_ honours them).
                alias = torch.ops.neuronsim.host_alias(value) if value.device.type == "neuron" \
                    else value
                staged = host.contiguous().clone()
                if reduction is not None and reduction.changes():
                    reduction.check(value)
                    if reduction.premul is not None and reduction.in_place:
                        staged.mul_(reduction.premul)
                    if reduction.divide is not None:
                        self._after.append(lambda t=staged, d=reduction.divide: t.div_(d))
                if write_back:
                    self._write_back.append((alias, staged))
                return staged
            if reduction is not None and reduction.changes():
                reduction.check(value)
                staged = host.contiguous().clone()
                if reduction.premul is not None and (not output or reduction.in_place):
                    staged.mul_(reduction.premul)
                if output:
                    if reduction.divide is not None:
                        self._after.append(lambda t=staged, d=reduction.divide: t.div_(d))
                    if write_back:
                        self._write_back.append((host, staged))
                return staged
            if host.is_contiguous():
                return host
            staged = host.contiguous()
            if output:
                self._write_back.append((host, staged))
            return staged
        if isinstance(value, (list, tuple)):
            return [self._map(v, output, reduction, write_back) for v in value]
        return value

    def finish(self) -> None:
        for step in self._after:
            step()
        self._after.clear()
        for host, staged in self._write_back:
            host.copy_(staged)
        self._write_back.clear()


def _describe(value: Any) -> str:
    """dtype and shape of every tensor of `value`, e.g. 'float32[2, 3]'."""
    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).removeprefix('torch.')}{list(value.shape)}"
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_describe(v) for v in value) + ")"
    return repr(value)


def _nbytes(value: Any) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    return 0


class NeuronProcessGroup(dist.ProcessGroup):
    def __init__(
        self,
        store: Any,
        rank: int,
        size: int,
        timeout: datetime.timedelta,
        simulated_world: int | None = None,
    ) -> None:
        super().__init__(rank, size)
        self._gloo = dist.ProcessGroupGloo(store, rank, size, timeout)
        self._store = store
        self._mismatches = itertools.count()
        self._global_ranks: list[int] | None = None
        self._topology: topology.Topology | None = None
        # Representative-rank mode: this one process stands for every rank of a world of
        # `simulated_world` ranks running the same program; collectives are timed for it.
        self._simulated_world = simulated_world

    def getBackendName(self) -> str:  # noqa: N802 - the ProcessGroup API
        return "neuron"

    def _set_default_timeout(self, timeout: datetime.timedelta) -> None:
        """The timeout of later collectives (torch.distributed.set_timeout): gloo's."""
        self._gloo._set_default_timeout(timeout)

    # A Python process group keeps its own name (the C++ one reads it from a backend).
    def _set_group_name(self, name: str) -> None:
        self._name = name

    @property
    def group_name(self) -> str:
        return getattr(self, "_name", "")

    @property
    def group_desc(self) -> str:
        return getattr(self, "_desc", "")

    def _set_group_desc(self, desc: str) -> None:
        self._desc = desc

    def __repr__(self) -> str:
        return f"NeuronProcessGroup(rank={self.rank()}, size={self.size()})"

    # --- timing -----------------------------------------------------------------------------

    def _ranks(self) -> list[int]:
        if self._simulated_world is not None:
            return list(range(self._simulated_world))
        if self._global_ranks is None:
            try:
                self._global_ranks = dist.get_process_group_ranks(self)
            except (ValueError, RuntimeError):  # not registered in the world (yet)
                self._global_ranks = list(range(self.size()))
        return self._global_ranks

    def _topo(self) -> topology.Topology:
        if self._topology is None:
            # torchrun's processes per host are the ranks of one simulated instance.
            local = os.environ.get("LOCAL_WORLD_SIZE")
            self._topology = topology.Topology.of_target(
                torch.neuron.target(), int(local) if local else None
            )
        return self._topology

    def timed(
        self, kind: str, nbytes: int, run: Callable[[], Any], issued: float,
        layout: str | None = None,
    ) -> float:  # fmt: skip
        """Runs a collective that this rank reaches at simulated time `issued` (ns on its
        device clock): the ranks agree on the latest of their arrival times, `run` moves
        the data through gloo, and the collective's modeled time passes. Returns when it
        completes on this rank (the device clock is not advanced).

        `layout` (the dtypes and shapes of this rank's tensors) must be the same on every
        rank: where it is not, every rank raises ValueError before gloo sees the tensors
        (gloo aborts the process on a size mismatch)."""
        signature = zlib.crc32(layout.encode()) if layout is not None else 0
        # [clock, signature, -signature]: one MAX all-reduce gives the latest clock and
        # tells whether the signatures agree (max == min).
        clocks = torch.tensor([issued, signature, -signature], dtype=torch.float64)
        self._gloo.allreduce([clocks], _MAX).wait()
        start = float(clocks[0].item())
        if clocks[1].item() != -clocks[2].item():
            self._raise_layout_mismatch(kind, layout or "")
        works = run()
        for work in works if isinstance(works, list) else [works]:
            work.wait()
        cost = topology.collective_ns(self._topo(), kind, nbytes, self._ranks())
        record.collective(kind, nbytes, self.size(), issued, start, start + cost)
        return start + cost

    def _raise_layout_mismatch(self, kind: str, layout: str) -> None:
        """Every rank is here (the signatures they all-reduced differ): they exchange
        their layouts through the store and raise the same error."""
        store = self._store
        key = f"neuronsim/layout/{next(self._mismatches)}"
        store.set(f"{key}/{self.rank()}", layout)
        layouts = [store.get(f"{key}/{r}").decode() for r in range(self.size())]
        ranks = "; ".join(f"rank {r}: {text}" for r, text in enumerate(layouts))
        raise ValueError(
            f"{kind}: every rank must pass tensors of the same dtypes and shapes, got {ranks}"
        )

    def _collective(
        self, kind: str, nbytes: int, run: Callable[[_Staging], Any], result: Any,
        layout: Any = None,
    ) -> Any:  # fmt: skip
        """Runs run(staging) (the gloo collective on staged host tensors) timed; `layout`,
        when given, are the tensors whose dtypes and shapes every rank must agree on."""
        device = torch.neuron.current_device()
        issued = torch.neuron.simulated_time_ns(device)
        staging = _Staging()
        described = _describe(layout) if layout is not None else None
        end = self.timed(kind, nbytes, lambda: run(staging), issued, described)
        staging.finish()
        hbm.advance_clock(device, end - issued)
        return _done(result)

    @property
    def gloo(self) -> dist.ProcessGroup:
        """The gloo process group that moves this group's data."""
        return self._gloo

    # --- collectives --------------------------------------------------------------------------
    # Each runs on staged host tensors (s.inputs / s.outputs); the last argument of
    # _collective, where given, is what every rank must pass alike.

    def allreduce(self, tensors, opts=c10d.AllreduceOptions()):  # noqa: B008
        r = _SumForm("allreduce", opts, self.size(), in_place=True)
        return self._collective(
            topology.ALL_REDUCE, _nbytes(tensors),
            lambda s: self._gloo.allreduce(s.outputs(tensors, r), r.options), tensors, tensors,
        )  # fmt: skip

    def allreduce_coalesced(self, tensors, opts=c10d.AllreduceCoalescedOptions()):  # noqa: B008
        r = _SumForm("allreduce_coalesced", opts, self.size(), in_place=True)
        return self._collective(
            topology.ALL_REDUCE, _nbytes(tensors),
            lambda s: self._gloo.allreduce_coalesced(s.outputs(tensors, r), r.options), tensors,
            tensors,
        )  # fmt: skip

    def broadcast(self, tensors, opts=c10d.BroadcastOptions()):  # noqa: B008
        return self._collective(
            topology.BROADCAST, _nbytes(tensors),
            lambda s: self._gloo.broadcast(s.outputs(tensors), opts), tensors, tensors,
        )  # fmt: skip

    def allgather(self, outputs, inputs, opts=c10d.AllgatherOptions()):  # noqa: B008
        return self._collective(
            topology.ALL_GATHER, _nbytes(outputs),
            lambda s: self._gloo.allgather(s.outputs(outputs), s.inputs(inputs), opts), outputs,
            (outputs, inputs),
        )  # fmt: skip

    def all_gather_single(self, output, input, opts=c10d.AllgatherOptions()):  # noqa: A002, B008
        return self._collective(
            topology.ALL_GATHER, _nbytes(output),
            lambda s: self._gloo._allgather_base(s.outputs(output), s.inputs(input), opts),
            output, (output, input),
        )  # fmt: skip

    _allgather_base = all_gather_single  # the older name

    def all_gather_single_coalesced(self, outputs, inputs, opts=c10d.AllgatherOptions()):  # noqa: B008
        return self._collective(
            topology.ALL_GATHER, _nbytes(outputs),
            lambda s: [
                self._gloo._allgather_base(s.outputs(o), s.inputs(i), opts)
                for o, i in zip(outputs, inputs, strict=True)
            ],
            outputs, (outputs, inputs),
        )  # fmt: skip

    allgather_into_tensor_coalesced = all_gather_single_coalesced  # the older name

    def allgather_coalesced(self, output_lists, inputs, opts=c10d.AllgatherOptions()):  # noqa: B008
        return self._collective(
            topology.ALL_GATHER, _nbytes(output_lists),
            lambda s: self._gloo.allgather_coalesced(
                s.outputs(output_lists), s.inputs(inputs), opts
            ),
            output_lists, (output_lists, inputs),
        )  # fmt: skip

    def reduce_scatter(self, outputs, inputs, opts=c10d.ReduceScatterOptions()):  # noqa: B008
        r = _SumForm("reduce_scatter", opts, self.size(), in_place=False)
        return self._collective(
            topology.REDUCE_SCATTER, _nbytes(inputs),
            lambda s: self._gloo.reduce_scatter(
                s.outputs(outputs, r), s.inputs(inputs, r), r.options
            ),
            outputs, (outputs, inputs),
        )  # fmt: skip

    def reduce_scatter_single(self, output, input, opts=c10d.ReduceScatterOptions()):  # noqa: A002, B008
        r = _SumForm("reduce_scatter_single", opts, self.size(), in_place=False)
        return self._collective(
            topology.REDUCE_SCATTER, _nbytes(input),
            lambda s: self._gloo._reduce_scatter_base(
                s.outputs(output, r), s.inputs(input, r), r.options
            ),
            output, (output, input),
        )  # fmt: skip

    _reduce_scatter_base = reduce_scatter_single  # the older name

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=c10d.ReduceScatterOptions()):  # noqa: B008
        r = _SumForm("reduce_scatter_single_coalesced", opts, self.size(), in_place=False)
        return self._collective(
            topology.REDUCE_SCATTER, _nbytes(inputs),
            lambda s: [
                self._gloo._reduce_scatter_base(s.outputs(o, r), s.inputs(i, r), r.options)
                for o, i in zip(outputs, inputs, strict=True)
            ],
            outputs, (outputs, inputs),
        )  # fmt: skip

    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced  # the older name

    # The shapes of all-to-all (its splits), gather and scatter (their root) may differ.
    def all_to_all_single(self, output, input, output_splits, input_splits, opts=c10d.AllToAllOptions()):  # noqa: A002, B008, E501
        return self._collective(
            topology.ALL_TO_ALL, _nbytes(input),
            lambda s: self._gloo.alltoall_base(
                s.outputs(output), s.inputs(input), output_splits, input_splits, opts
            ),
            output,
        )  # fmt: skip

    alltoall_base = all_to_all_single  # the older name

    def alltoall(self, outputs, inputs, opts=c10d.AllToAllOptions()):  # noqa: B008
        return self._collective(
            topology.ALL_TO_ALL, _nbytes(inputs),
            lambda s: self._gloo.alltoall(s.outputs(outputs), s.inputs(inputs), opts), outputs,
        )  # fmt: skip

    def gather(self, outputs, inputs, opts=c10d.GatherOptions()):  # noqa: B008
        return self._collective(
            topology.ALL_GATHER, _nbytes(inputs) * self.size(),
            lambda s: self._gloo.gather(s.outputs(outputs), s.inputs(inputs), opts), outputs,
        )  # fmt: skip

    def scatter(self, outputs, inputs, opts=c10d.ScatterOptions()):  # noqa: B008
        return self._collective(
            topology.ALL_GATHER, _nbytes(outputs) * self.size(),
            lambda s: self._gloo.scatter(s.outputs(outputs), s.inputs(inputs), opts), outputs,
        )  # fmt: skip

    def reduce(self, tensors, opts=c10d.ReduceOptions()):  # noqa: B008
        r = _SumForm("reduce", opts, self.size(), in_place=True)
        return self._collective(
            topology.ALL_REDUCE, _nbytes(tensors),
            lambda s: self._gloo.reduce(
                s.outputs(tensors, r, write_back=self.rank() == opts.rootRank), r.options
            ),
            tensors, tensors,
        )  # fmt: skip

    def barrier(self, opts=c10d.BarrierOptions()):  # noqa: B008
        return self._collective(topology.BARRIER, 0, lambda s: self._gloo.barrier(opts), None)

    # --- point to point: the receiver's clock waits for the sender's -------------------------

    def send(self, tensors, dst: int, tag: int = 0):
        device = torch.neuron.current_device()
        issued = torch.neuron.simulated_time_ns(device)
        self._gloo.send([torch.tensor([issued], dtype=torch.float64)], dst, tag).wait()
        self._gloo.send(_Staging().inputs(tensors), dst, tag).wait()
        nbytes = _nbytes(tensors)
        cost = self._pair_ns(nbytes, dst)
        hbm.advance_clock(device, cost)
        record.collective("send", nbytes, 2, issued, issued, issued + cost)
        return _done(tensors)

    def recv(self, tensors, src: int, tag: int = 0):
        device = torch.neuron.current_device()
        issued = torch.neuron.simulated_time_ns(device)
        sent = torch.zeros(1, dtype=torch.float64)
        self._gloo.recv([sent], src, tag).wait()
        staging = _Staging()
        self._gloo.recv(staging.outputs(tensors), src, tag).wait()
        staging.finish()
        nbytes = _nbytes(tensors)
        start = max(issued, float(sent.item()))
        cost = self._pair_ns(nbytes, src)
        hbm.advance_clock(device, start + cost - issued)
        record.collective("recv", nbytes, 2, issued, start, start + cost)
        return _done(tensors)

    def _pair_ns(self, nbytes: int, peer: int) -> float:
        ranks = self._ranks()
        pair = [ranks[self.rank()], ranks[peer]]
        return topology.collective_ns(self._topo(), topology.SEND_RECV, nbytes, pair)


def _outside_dynamo(cls: type) -> type:
    """Collectives reach these methods from C++ (DDP's reducer, functional collectives) while a
    compiled function runs; Dynamo must not try to trace them as user code."""
    import torch._dynamo

    for name, value in list(vars(cls).items()):
        if callable(value) and not name.startswith("__"):
            setattr(cls, name, torch._dynamo.disable(value, recursive=True))
    return cls


_outside_dynamo(NeuronProcessGroup)


SIMULATED_WORLD_ENV = "NEURONSIM_SIMULATED_WORLD_SIZE"


def create(store: Any, rank: int, size: int, timeout: datetime.timedelta) -> NeuronProcessGroup:
    """torch.distributed calls this for init_process_group(backend="neuron")."""
    simulated = os.environ.get(SIMULATED_WORLD_ENV)
    if not simulated:
        return NeuronProcessGroup(store, rank, size, timeout)
    if size != 1:
        raise ValueError(
            f"{SIMULATED_WORLD_ENV}={simulated} makes one process stand for every rank "
            f"(representative-rank mode), but this group has {size} processes; run one process "
            f"(world size 1) or unset {SIMULATED_WORLD_ENV}"
        )
    if not simulated.isdigit() or int(simulated) < 1:
        raise ValueError(f"{SIMULATED_WORLD_ENV} must be a positive rank count, got {simulated!r}")
    return NeuronProcessGroup(store, rank, size, timeout, simulated_world=int(simulated))
