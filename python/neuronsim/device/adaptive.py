"""Adaptive eager execution: consecutive eager ops on the `neuron` device batched into one
program, with eager semantics kept (issue 28; TorchNeuron's "Adaptive Eager Execution").

Switched on with NEURONSIM_ADAPTIVE_EAGER=1 (or set_enabled(True)); op by op stays the default.

How it works. eager.run_op decides how an op runs as it always did (a view, a one-op program
or the CPU; cached per op, shapes, strides, dtypes and scalars). In adaptive mode an op that
would run as a program is recorded instead: its one-op program was traced on fake tensors when
it was decided, so its shape and dtype errors were raised at the op, and its results' metadata
is known; the results are allocated (device memory, not yet written) and returned at once.
Each recorded op keeps which device storages it reads and writes, and where in them (size,
stride, offset). A flush runs the recorded ops as one program:

- the batch is replayed on fake tensors over the whole storages it touches (each argument a
  view of its storage; in-place ops, out= and views resolved by functionalization), traced to
  core ATen and compiled by the same pipeline as torch.compile graphs. Its inputs are the
  storages the batch reads from outside, its outputs the new contents of the storages it
  writes (its own results and the tensors written in place); they are copied into device
  memory and the batch's simulated time advances the device clock.
- compiled batches are cached by the batch's structure: the ops with their decision keys,
  which storage and what view of it each argument is, and the storages' sizes; a training
  loop's steps repeat the same batches and hit the cache.
- a float32 tensor op a Python float (add/sub/mul/div) and addcdiv/addcmul's float value= take
  the float as a 0-d float32 input of the batch instead of a constant, so that batches with
  per-step scalars (AdamW's bias corrections and step size) are the same program every step
  (NEURONSIM_ADAPTIVE_EAGER_LIFT_SCALARS=0 keeps them constants: one compile per new value).
- a batch that cannot be compiled as a whole (an op the batch's graph cannot express) runs op
  by op, as without adaptive mode, with the same results.

A batch is flushed before anything reads or writes device memory outside the recorded ops: a
copy to or from the device (.cpu(), .to(), print, .numpy(), copy_), `.item()` and other scalar
reads, a CPU view of device memory (hbm.host_view / neuronsim::host_alias: compiled graphs,
collectives, DLPack), resize_/set_ of a device tensor, an op that runs on the CPU (random ops,
unsupported ops) or as a view, an op that cannot be recorded (complex tensors, negative or
conjugate bits, a device argument, an out= tensor the op resizes), torch.neuron.synchronize(),
the device clock and memory statistics, a change of device, and at interpreter exit; and when
NEURONSIM_ADAPTIVE_EAGER_MAX_OPS (default 128) ops are recorded.
"""

from __future__ import annotations

import atexit
import collections
import logging
import math
import os
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils import _pytree as pytree

log = logging.getLogger("neuronsim")

_FALSE = ("", "0", "false", "no", "off")


def _env_enabled() -> bool:
    return os.environ.get("NEURONSIM_ADAPTIVE_EAGER", "0").strip().lower() not in _FALSE


def _env_max_ops() -> int:
    try:
        return max(1, int(os.environ.get("NEURONSIM_ADAPTIVE_EAGER_MAX_OPS", "128")))
    except ValueError:
        return 128


_enabled = False
max_ops = _env_max_ops()
# Per-call float scalars as batch inputs (see record()): steady state without recompiles, at
# the cost of one 0-d input per scalar in the program's simulated time.
lift_scalars = os.environ.get("NEURONSIM_ADAPTIVE_EAGER_LIFT_SCALARS", "1").strip().lower() \
    not in _FALSE
_MAX_CACHED = 512  # compiled batches kept (the oldest is dropped beyond this)


@dataclass
class AdaptiveStats:
    recorded: int = 0  # ops recorded into a batch
    flushes: int = 0  # batches run
    batch_programs: int = 0  # ... as one program
    batch_compiles: int = 0  # batches traced and compiled (cache misses)
    op_by_op: int = 0  # ... op by op (could not be compiled as one program)
    not_recorded: int = 0  # program ops run on their own (could not be recorded)


STATS = AdaptiveStats()


def enabled() -> bool:
    return _enabled


def set_enabled(on: bool) -> None:
    """Turns adaptive eager execution on or off (pending ops are run first)."""
    global _enabled
    flush()
    if on:
        _install()
    _enabled = bool(on)


def clear() -> None:
    """Runs pending ops, forgets compiled batches, zeroes the counters."""
    global STATS
    flush()
    _cache.clear()
    STATS = AdaptiveStats()


class CannotRecord(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# The pending batch


@dataclass
class _Store:
    """A device storage the batch reads or writes, as a 1-D tensor of its dtype."""

    index: int
    flat: torch.Tensor  # a neuron tensor over the whole storage
    external: bool  # holds data from before the batch (else: a result of a recorded op)
    written: bool = False
    dead_count: int = 0  # a result's storage use count once nothing outside the batch holds it

    def alive(self) -> bool:
        """A result something can still read (a tensor, a view, autograd's saved tensors);
        the batch does not return the others (the compiler drops what only they need)."""
        return _use_count(self.flat) > self.dead_count


@dataclass
class _Record:
    """A recorded op. It holds no tensor of the caller's: its arguments are templates whose
    tensors are slots, bound to views of the batch's storages."""

    op: torch._ops.OpOverload
    entry: Any  # the op's eager._Program (runs it op by op)
    args: Any  # templates: the arguments with _SLOT for each tensor
    kwargs: Any
    slots: list[tuple]  # the binding of each tensor slot, in order
    fresh_stores: list[int | None]
    fresh_meta: list[Any]
    fallback_args: Any = None  # a lifted scalar's op: its arguments as called
    fallback_kwargs: Any = None
    lifted: str | None = None  # "other" (slot 1) or "value" (the last slot) lifted


_SLOT = object()

_LIFTABLE = frozenset(
    getattr(torch.ops.aten, name).Tensor
    for name in ("add", "sub", "mul", "div", "add_", "sub_", "mul_", "div_")
)


_VALUE_OPS = {
    torch.ops.aten.addcdiv.default: ("div", None),
    torch.ops.aten.addcdiv_.default: ("div", "self"),
    torch.ops.aten.addcdiv.out: ("div", "out"),
    torch.ops.aten.addcmul.default: ("mul", None),
    torch.ops.aten.addcmul_.default: ("mul", "self"),
    torch.ops.aten.addcmul.out: ("mul", "out"),
}


def _value_liftable(args: Any, kwargs: dict[str, Any]) -> bool:
    return (
        len(args) == 3 and type(kwargs.get("value")) is float
        and set(kwargs) <= {"value", "out"}
        and all(isinstance(a, torch.Tensor) and a.dtype == torch.float32 for a in args)
    )


def _replay_value_op(op: Any, args: Any, kwargs: dict[str, Any]) -> Any:
    aten = torch.ops.aten
    kind, writes = _VALUE_OPS[op]
    self, t1, t2 = args
    combined = (aten.div.Tensor if kind == "div" else aten.mul.Tensor)(t1, t2)
    result = aten.add.Tensor(self, aten.mul.Tensor(combined, kwargs["value"]))
    if writes == "self":
        return self.copy_(result)
    if writes == "out":
        return kwargs["out"].copy_(result)
    return result


def _liftable(args: Any) -> bool:
    return (
        len(args) == 2 and type(args[1]) is float and isinstance(args[0], torch.Tensor)
        and args[0].dtype == torch.float32 and args[0].device.type == "neuron"
    )


def lifted_key(op: Any, args: Any, kwargs: dict[str, Any], key: Any) -> Any:
    """The eager entry key of an op whose float scalar record() lifts, without the scalar's
    value; None for other ops."""
    from . import eager

    if not lift_scalars:
        return None
    if op in _VALUE_OPS and _value_liftable(args, kwargs):
        rest = {k: v for k, v in kwargs.items() if k != "value"}
        return ("lifted value", op, key[1], eager._key_of(rest))
    if op in _LIFTABLE and _liftable(args):
        return ("lifted other", op, eager._key_of(args[:1]), key[2])
    return None


def _use_count(tensor: torch.Tensor) -> int:
    return torch._C._storage_Use_Count(tensor.untyped_storage()._cdata)


def _template(value: Any) -> Any:
    kind = type(value)
    if kind is tuple:
        return tuple(_template(v) for v in value)
    if kind is list:
        return [_template(v) for v in value]
    if kind is dict:
        return {k: _template(v) for k, v in value.items()}
    if isinstance(value, torch.Tensor):
        return _SLOT
    if isinstance(value, (tuple, list, dict)):  # a namedtuple, OrderedDict, ...
        raise CannotRecord
    return value


def _fill(template: Any, tensors: Any) -> Any:
    kind = type(template)
    if kind is tuple:
        return tuple(_fill(v, tensors) for v in template)
    if kind is list:
        return [_fill(v, tensors) for v in template]
    if kind is dict:
        return {k: _fill(v, tensors) for k, v in template.items()}
    if template is _SLOT:
        return next(tensors)
    return template


@dataclass
class _Batch:
    records: list[_Record] = field(default_factory=list)
    stores: dict[int, _Store] = field(default_factory=dict)  # by storage address
    store_list: list[_Store] = field(default_factory=list)
    cpu_inputs: list[torch.Tensor] = field(default_factory=list)
    key: list[Any] = field(default_factory=list)
    device: torch.device | None = None


_batch = _Batch()
_flushing = False


def pending() -> bool:
    return bool(_batch.records)


def _contiguous_strides(size: tuple[int, ...]) -> tuple[int, ...]:
    strides, running = [], 1
    for s in reversed(size):
        strides.append(running)
        running *= max(s, 1)
    return tuple(reversed(strides))


def record(op, entry, args, kwargs, device: torch.device, key: Any,
           leaves: list[Any] | None = None) -> Any:
    """Records a program op into the pending batch and returns its (pending) results; raises
    CannotRecord (having recorded nothing) if the op must run on its own."""
    from . import eager

    batch = _batch
    if batch.records and batch.device != device:
        flush()
        batch = _batch
    fallback_args = fallback_kwargs = lifted = None
    if not lift_scalars:
        pass
    elif op in _VALUE_OPS and _value_liftable(args, kwargs):
        # addcdiv / addcmul with a Python float value= that changes from call to call
        # (AdamW's step size): replayed as self + value * (t1 / t2) with value a 0-d float32
        # input (PyTorch's own decomposition of these ops).
        fallback_args = _template(args)
        fallback_kwargs = _template(kwargs)
        kwargs = {**kwargs, "value": torch.tensor(kwargs["value"], dtype=torch.float32)}
        leaves = None
        key = (op, key[1], eager._key_of(kwargs))
        lifted = "value"
    elif op in _LIFTABLE and _liftable(args):
        # x / s with a Python float s that changes from call to call (AdamW's bias
        # corrections): s becomes a 0-d float32 input of the batch (the same dtype and the
        # same float32 arithmetic), so that the batch's program does not depend on its value.
        fallback_args = _template(args)
        args = (args[0], torch.tensor(args[1], dtype=torch.float32))
        leaves = None
        key = (op, eager._key_of(args), key[2])
        lifted = "other"
    flat = leaves if leaves is not None else eager._leaves((args, kwargs), [])
    # First pass: check every argument, bind nothing.
    new: dict[int, tuple[torch.Tensor, torch.dtype]] = {}
    tensors = []
    position = -1
    for value in flat:
        if isinstance(value, torch.Tensor):
            position += 1
            if value.device.type != "neuron":
                if value.dim() > 0:
                    raise CannotRecord
                tensors.append((position, value, None))
                continue
            if value.dtype.is_complex or value.is_neg() or value.is_conj():
                raise CannotRecord
            storage = value.untyped_storage()
            address, nbytes = storage.data_ptr(), storage.nbytes()
            if address == 0 or nbytes == 0 or nbytes % value.element_size():
                raise CannotRecord
            store = batch.stores.get(address)
            known = store.flat.dtype if store is not None else new.get(address, (None, None))[1]
            if known is not None and known != value.dtype:
                raise CannotRecord
            if store is None and address not in new:
                new[address] = (value, value.dtype)
            tensors.append((position, value, address))
        elif isinstance(value, (torch.device, torch.Generator, torch.Stream)):
            raise CannotRecord
    written = eager._mutated_tensors(op, args, kwargs)
    for target, shape in zip(written, entry.written_shapes):
        if tuple(target.shape) != shape:  # an out= tensor the op resizes
            raise CannotRecord
    template_args, template_kwargs = _template(args), _template(kwargs)
    # Second pass: bind.
    below = torch._C._AutoDispatchBelowADInplaceOrView  # flat: no view of the caller's tensor
    for address, (value, dtype) in new.items():
        count = value.untyped_storage().nbytes() // value.element_size()
        with below():
            flat = value.as_strided((count,), (1,), 0)
        store = _Store(len(batch.store_list), flat, True)
        batch.stores[address] = store
        batch.store_list.append(store)
    slots = []
    for position, value, address in tensors:
        if address is None:  # a CPU scalar: its value now (it may change before the flush)
            slots.append(("cpu", len(batch.cpu_inputs), value.dtype))
            batch.cpu_inputs.append(value.clone())
        else:
            store = batch.stores[address]
            slots.append((store.index, tuple(value.shape), tuple(value.stride()),
                          value.storage_offset()))
    for target in written:
        batch.stores[target.untyped_storage().data_ptr()].written = True
    fresh: list[torch.Tensor | None] = []
    fresh_stores: list[int | None] = []
    for meta in entry.fresh_meta:
        if meta is None:
            fresh.append(None)
            fresh_stores.append(None)
            continue
        shape, dtype = meta
        tensor = torch.empty(shape, dtype=dtype, device=device)
        fresh.append(tensor)
        if tensor.numel() == 0:
            fresh_stores.append(None)
            continue
        with below():
            flat = tensor.as_strided((tensor.numel(),), (1,), 0)
        store = _Store(len(batch.store_list), flat, False)
        store.dead_count = _use_count(flat) - 1  # less the result itself
        batch.stores[tensor.untyped_storage().data_ptr()] = store
        batch.store_list.append(store)
        fresh_stores.append(store.index)
    batch.records.append(_Record(op, entry, template_args, template_kwargs, slots,
                                 fresh_stores, entry.fresh_meta, fallback_args,
                                 fallback_kwargs, lifted))
    batch.key.append((key, tuple(slots), tuple(fresh_stores)))
    batch.device = device
    STATS.recorded += 1
    eager._count_executed(op)
    result = eager._assemble(op, args, kwargs, fresh)
    if len(batch.records) >= max_ops:
        flush()
    return result


# ---------------------------------------------------------------------------------------------
# Flushing


@dataclass
class _Compiled:
    compiled: Any  # a CompiledGraph
    external: list[int]  # store indices of the inputs, in order
    outputs: list[int]  # store indices of the outputs, in order


_OP_BY_OP = object()
_cache: collections.OrderedDict[Any, Any] = collections.OrderedDict()


def flush() -> None:
    """Runs the pending batch (if any)."""
    global _batch, _flushing
    if not _batch.records or _flushing:
        return
    from . import eager

    with eager._device_lock:
        if not _batch.records or _flushing:
            return
        batch, _batch = _batch, _Batch()
        _flushing = True
        try:
            _run(batch)
        finally:
            _flushing = False


def _batch_key(batch: _Batch) -> Any:
    stores = tuple(
        (s.flat.dtype, s.flat.numel(), s.external, s.written, s.external or s.alive())
        for s in batch.store_list
    )
    cpu = tuple((t.dtype, tuple(t.shape)) for t in batch.cpu_inputs)
    return (tuple(batch.key), stores, cpu)


def _run(batch: _Batch) -> None:
    from . import eager

    STATS.flushes += 1
    key = _batch_key(batch)
    program = _cache.get(key)
    if program is None:
        program = _build(batch)
        _cache[key] = program
        if len(_cache) > _MAX_CACHED:
            _cache.popitem(last=False)
    else:
        _cache.move_to_end(key)
    if program is _OP_BY_OP:
        _run_op_by_op(batch)
        return
    stores = batch.store_list
    inputs = [_raw_host(stores[i].flat) for i in program.external] + batch.cpu_inputs
    outputs = program.compiled(inputs)
    device = batch.device
    from . import hbm

    hbm.advance_clock(device.index or 0, program.compiled.last_sim_ns)
    eager.STATS.program_runs += 1
    STATS.batch_programs += 1
    for index, value in zip(program.outputs, outputs, strict=True):
        _raw_host(stores[index].flat).copy_(value.reshape(-1))


def _run_op_by_op(batch: _Batch) -> None:
    """The batch's ops one after another, each as its one-op program (results copied into the
    tensors already returned)."""
    from . import eager

    STATS.op_by_op += 1
    stores = batch.store_list

    def argument(binding: tuple) -> torch.Tensor:
        if binding[0] == "cpu":
            return batch.cpu_inputs[binding[1]]
        index, size, stride, offset = binding
        return stores[index].flat.as_strided(size, stride, offset)

    for rec in batch.records:
        if rec.lifted is not None:  # the scalar as called (the entry compiled it in)
            bindings = [argument(b) for b in rec.slots]
            del bindings[1 if rec.lifted == "other" else 3]  # other: slot 1; value: after 3
            tensors = iter(bindings)
            a = _fill(rec.fallback_args, tensors)
            k = _fill(rec.fallback_kwargs if rec.fallback_kwargs is not None else rec.kwargs,
                      tensors)
        else:
            tensors = iter([argument(binding) for binding in rec.slots])
            a, k = _fill(rec.args, tensors), _fill(rec.kwargs, tensors)
        entry = rec.entry
        if rec.lifted is not None:  # the entry of the scalar as called, not of the first one
            entry = eager._entry_for(rec.op, a, k, batch.device, eager.key_of(rec.op, a, k))
        result = entry(rec.op, a, k, batch.device)
        results = result if isinstance(result, (tuple, list)) else (result,)
        fresh = []
        for value, r in zip(results, rec.op._schema.returns):
            if r.alias_info is None:
                fresh.extend(pytree.tree_leaves(value) if value is not None else [None])
        for index, value in zip(rec.fresh_stores, fresh):
            if index is not None and value is not None:
                _raw_host(stores[index].flat).copy_(_raw_host(value).reshape(-1))


def _build(batch: _Batch) -> Any:
    from torch.fx.experimental.proxy_tensor import make_fx

    from ..backend import _decompositions
    from ..compiler import compile_fx_graph
    from ..options import resolve_options
    from ..partition import unsupported_nodes
    from ..tracing import like_a_dynamo_compile
    from . import eager

    STATS.batch_compiles += 1
    stores = batch.store_list
    external = [s.index for s in stores if s.external]
    # The results still held and the external storages written, as they are at the flush.
    outputs = [s.index for s in stores if s.written if s.external] + \
        [s.index for s in stores if not s.external and s.alive()]
    outputs.sort()
    written_external = {s.index for s in stores if s.external and s.written}
    records = batch.records
    n_external = len(external)

    def replay(*inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        bases: dict[int, torch.Tensor] = {}
        for index, value in zip(external, inputs):
            bases[index] = value.clone() if index in written_external else value
        cpu = inputs[n_external:]

        def argument(binding: tuple) -> torch.Tensor:
            if binding[0] == "cpu":
                return cpu[binding[1]]
            index, size, stride, offset = binding
            base = bases[index]
            if offset == 0 and math.prod(size) == base.numel() and \
                    stride == _contiguous_strides(size):
                return base.view(size)
            return base.as_strided(size, stride, offset)

        for rec in records:
            tensors = iter([argument(binding) for binding in rec.slots])
            a, k = _fill(rec.args, tensors), _fill(rec.kwargs, tensors)
            if rec.lifted == "value":
                result = _replay_value_op(rec.op, a, k)
            else:
                result = rec.op(*a, **k)
            results = result if isinstance(result, (tuple, list)) else (result,)
            fresh = []
            for value, r in zip(results, rec.op._schema.returns):
                if r.alias_info is None:
                    fresh.extend(pytree.tree_leaves(value) if value is not None else [None])
            if len(fresh) != len(rec.fresh_stores):
                raise _Mismatch(f"{rec.op}: {len(fresh)} results, {len(rec.fresh_stores)} expected")
            for value, index, meta in zip(fresh, rec.fresh_stores, rec.fresh_meta):
                if index is None:
                    continue
                if value is None or (tuple(value.shape), value.dtype) != meta:
                    raise _Mismatch(f"{rec.op}: result {value} is not {meta}")
                bases[index] = value.contiguous().view(-1)
        return tuple(bases[i] for i in outputs)

    inputs = [_raw_host(stores[i].flat) for i in external] + batch.cpu_inputs
    try:
        with like_a_dynamo_compile(), torch._C._ForceDispatchKeyGuard(*eager._CLEAN_DISPATCH_KEYS), \
                eager._no_modes(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gm = make_fx(
                torch.func.functionalize(replay, remove="mutations_and_views"),
                tracing_mode="fake",
                decomposition_table=_decompositions(),
            )(*inputs)
        if unsupported_nodes(gm):
            raise _Mismatch("unsupported nodes in the batch graph")
        compiled = compile_fx_graph(gm, inputs, resolve_options(None), kind="eager")
    except Exception as error:  # noqa: BLE001 - the batch then runs op by op, as without it
        log.debug("neuron: adaptive eager batch of %d ops runs op by op: %s: %s",
                  len(records), type(error).__name__, error)
        return _OP_BY_OP
    return _Compiled(compiled, external, outputs)


class _Mismatch(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Reads and writes of device memory outside recorded ops flush the batch first.

_installed = False
_libraries: list[torch.library.Library] = []
_host_alias_kernel: Any = None
_KEYS = None


def _raw_host(tensor: torch.Tensor) -> torch.Tensor:
    """A CPU view of a neuron tensor's memory, without flushing."""
    if tensor.device.type != "neuron":
        return tensor
    if _host_alias_kernel is None:
        return torch.ops.neuronsim.host_alias(tensor)
    return _host_alias_kernel.call_boxed(_KEYS, tensor)


_COPIES = ("_copy_from", "_copy_from_and_resize")


class _CopyEntry:
    """A copy between two neuron tensors of the same device, recorded as dst.copy_(src);
    op by op it is the device's own copy kernel."""

    fresh_meta: list[Any] = []
    recordable = True

    def __init__(self, kernel: Any, dst: torch.Tensor) -> None:
        self.kernel = kernel
        self.written_shapes = [tuple(dst.shape)]

    def __call__(self, op, args, kwargs, device):
        dst, src = args
        self.kernel.call_boxed(_KEYS, src, dst, False)
        return dst


def _record_copy(kernel: Any, src: Any, dst: Any, non_blocking: bool = False) -> Any:
    """Records a device-to-device copy (copy_, clone, contiguous, .to() of a dtype) into the
    batch; None if it is not one (it then runs as itself)."""
    if not (
        isinstance(src, torch.Tensor) and isinstance(dst, torch.Tensor)
        and src.device.type == "neuron" and src.device == dst.device
    ):
        return None
    try:
        torch.broadcast_shapes(src.shape, dst.shape)
    except RuntimeError:
        return None
    if torch.broadcast_shapes(src.shape, dst.shape) != dst.shape:
        return None
    from . import eager

    op = torch.ops.aten.copy_.default
    args = (dst, src)
    key = (op, eager._key_of(args), ())
    with eager._device_lock:
        eager.STATS.ops += 1
        try:
            return record(op, _CopyEntry(kernel, dst), args, {}, dst.device, key)
        except CannotRecord:
            return None


def _touches_batch(args: Any) -> bool:
    """True if a tensor or storage among `args` is one the pending batch reads or writes."""
    stores = _batch.stores
    for value in args:
        if isinstance(value, torch.Tensor):
            if value.device.type == "neuron" and value.untyped_storage().data_ptr() in stores:
                return True
        elif isinstance(value, (torch.UntypedStorage, torch.TypedStorage)):
            if value.data_ptr() in stores:
                return True
    return False


_FLUSHING_KERNELS = (
    ("aten", "_copy_from"),
    ("aten", "_copy_from_and_resize"),
    ("aten", "_local_scalar_dense"),
    ("aten", "resize_"),
    ("aten", "set_.source_Tensor"),
    ("aten", "set_.source_Storage"),
    ("aten", "set_.source_Storage_storage_offset"),
    ("neuronsim", "host_alias"),
)


def _install() -> None:
    """Wraps the device's native kernels that read or write memory so that they flush first."""
    global _installed, _host_alias_kernel, _KEYS
    if _installed:
        return
    _KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.PrivateUse1)
    for namespace, name in _FLUSHING_KERNELS:
        kernel = torch.library.get_kernel(f"{namespace}::{name}", "PrivateUse1")
        if name == "host_alias":
            _host_alias_kernel = kernel

        def wrapper(keys, *args, _kernel=kernel, _name=name, **kwargs):
            if _enabled and not _flushing and _name in _COPIES:
                recorded = _record_copy(_kernel, *args, **kwargs)
                if recorded is not None:
                    return recorded
            if _batch.records and not _flushing and _touches_batch(args):
                log.debug("neuron: adaptive eager: %s flushes the batch", _name)
                flush()
            return _kernel.call_boxed(keys, *args, **kwargs)

        library = torch.library.Library(namespace, "IMPL")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            library.impl(name, wrapper, "PrivateUse1", with_keyset=True)
        _libraries.append(library)
    atexit.register(_flush_at_exit)
    _installed = True


def _flush_at_exit() -> None:
    try:
        flush()
    except Exception as error:  # noqa: BLE001 - nothing can observe the results any more
        log.debug("neuron: adaptive eager: the batch pending at exit failed: %s", error)


def configure_from_environment() -> None:
    """At registration: NEURONSIM_ADAPTIVE_EAGER switches adaptive mode on."""
    if _env_enabled():
        set_enabled(True)
