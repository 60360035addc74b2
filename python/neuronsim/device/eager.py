"""Eager mode of the `neuron` device.

Every ATen op that reaches the PrivateUse1 key (the ones with a kernel per backend: arithmetic,
reductions, `.out` variants of structured ops...) lands in `run_op`. It is handled in one of
three ways, decided once per (op, argument shapes, strides, dtypes, scalars) and cached:

- a view (the op's result aliases an argument without writing it): the CPU kernel computes the
  view's geometry on a CPU view of device memory; the result is the same view of the device
  tensor.
- a program: the op is traced to core ATen on fake tensors (in-place and out= forms
  functionalized), compiled by the same pipeline as torch.compile graphs, and run on the
  simulator over device memory; its simulated time advances the device clock.
- the CPU: an op the compiler cannot take (random ops, data-dependent shapes, unsupported ops
  or arguments) runs on the CPU over the same memory, with one warning per op, counted in
  neuronsim.get_fallback_ops() and charged as host transfers of its operands and results.
"""

from __future__ import annotations

import collections
import functools
import logging
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils import _pytree as pytree

from . import adaptive, hbm
from .no_dynamo import outside_dynamo
from ..tracing import like_a_dynamo_compile

log = logging.getLogger("neuronsim")

_MAX_ENTRIES = 4096  # cached decisions; the oldest is dropped beyond this (scalars vary)
# The dispatch-key state of a fresh thread (no keys included, autocast excluded), taken at import.
_CLEAN_DISPATCH_KEYS = (
    torch._C._dispatch_tls_local_include_set(),
    torch._C._dispatch_tls_local_exclude_set(),
)
_no_modes = torch.utils._python_dispatch._disable_current_modes


@dataclass
class EagerStats:
    ops: int = 0  # op calls on neuron tensors
    hits: int = 0  # ... whose decision was cached
    programs_compiled: int = 0
    views: int = 0
    program_runs: int = 0
    cpu_runs: int = 0


STATS = EagerStats()
_lock = threading.Lock()
_device_lock = threading.RLock()
_entries: collections.OrderedDict[Any, Callable[..., Any]] = collections.OrderedDict()
_warned: set[str] = set()
_generator: Callable[[], Any] | None = None  # module.default_generator, set by __init__.py


def clear() -> None:
    """Forgets the cached decisions and one-time warnings; zeroes the counters."""
    global STATS
    adaptive.clear()  # runs pending ops, forgets compiled batches
    with _lock:
        _entries.clear()
        _warned.clear()
        _executed.clear()
        STATS = EagerStats()


_executed: collections.Counter[str] = collections.Counter()  # op schema name -> calls


def executed_ops() -> dict[str, int]:
    """{op ('aten::add'): calls} of the eager ops that ran on the device (as a program or a
    view), since start or clear_executed_ops()."""
    with _lock:
        return dict(_executed)


def clear_executed_ops() -> None:
    with _lock:
        _executed.clear()


def _count_executed(op: torch._ops.OpOverload) -> None:
    with _lock:
        _executed[op._schema.name] += 1


# ---------------------------------------------------------------------------------------------
# Entry point


def run_op(op: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
    # One op at a time: the device runs one program after another, and the autograd engine
    # runs backward ops of the neuron device on its own thread.
    with _device_lock:
        return _run_op(op, args, kwargs)


def _run_op(op: torch._ops.OpOverload, args: Any, kwargs: Any) -> Any:
    if _INDICES in _tensor_list_arguments(op):
        args, kwargs = _indices_on_device(op, args, kwargs)
    leaves = _leaves((args, kwargs), [])
    device = _device_of(op, args, kwargs, leaves)
    key = (op, _key_of(args), _key_of(kwargs))
    STATS.ops += 1
    # Adaptive eager records an op whose Python float scalar it lifts into an input (AdamW's
    # step sizes) without deciding it again for each new value: the decision (the op's result
    # shapes and dtypes) does not depend on the value. `lifted` keys that decision.
    lifted = adaptive.lifted_key(op, args, kwargs, key) if adaptive._enabled else None
    if lifted is not None:
        with _lock:
            shape_entry = _entries.get(lifted)
        if type(shape_entry) is _Program and shape_entry.recordable:
            STATS.hits += 1
            try:
                return adaptive.record(op, shape_entry, args, kwargs, device, key, leaves)
            except adaptive.CannotRecord:
                pass
    entry = _entry_for(op, args, kwargs, device, key)
    if lifted is not None and type(entry) is _Program:
        with _lock:
            _entries[lifted] = entry
    if adaptive._enabled and type(entry) is _Program:
        if entry.recordable:
            try:
                return adaptive.record(op, entry, args, kwargs, device, key, leaves)
            except adaptive.CannotRecord:
                pass
        adaptive.STATS.not_recorded += 1
        log.debug("neuron: adaptive eager: %s runs as its own program", op)
    # (a pending batch is run first by whatever reads device memory: host_view, copies, ...)
    return entry(op, args, kwargs, device)


def _entry_for(op: torch._ops.OpOverload, args: Any, kwargs: Any, device: torch.device,
               key: Any) -> Any:
    """The op's entry (a program, a view, a CPU fallback) for these arguments, decided once
    per key."""
    with _lock:
        entry = _entries.get(key)
        if entry is not None:
            _entries.move_to_end(key)
            STATS.hits += 1
            return entry
    entry = _decide(op, args, kwargs, device)
    with _lock:
        _entries[key] = entry
        if len(_entries) > _MAX_ENTRIES:
            _entries.popitem(last=False)
    return entry


def key_of(op: torch._ops.OpOverload, args: Any, kwargs: Any) -> Any:
    return (op, _key_of(args), _key_of(kwargs))


# Composite ops with an autograd formula of their own whose generic kernel would not reach the
# compiler (it calls *_overrideable for backends other than CPU and CUDA).
_ALSO_ROUTED = ("aten.convolution.default", "aten.convolution_backward.default")


def register_kernels(library: torch.library.Library) -> list[str]:
    """Routes the ops the compiler supports straight to run_op at the PrivateUse1 key, so
    that e.g. native_layer_norm compiles as itself instead of through PyTorch's generic
    decomposition for other backends. Only ops with a CPU kernel: they have their own autograd
    formula, which a backend kernel must not hide."""
    from .. import native

    kernel = outside_dynamo(run_op)
    routed = []
    # Convolutions reach other backends as convolution_overrideable: take them before that.
    for name in [*dict(native.lib().supported_ops()), *_ALSO_ROUTED]:
        _, op_name, overload = name.split(".")
        packet = getattr(torch.ops.aten, op_name, None)
        op = getattr(packet, overload, None) if packet is not None else None
        if (
            op is None
            or not (
                torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CPU")
                or name in _ALSO_ROUTED
            )
            or torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "PrivateUse1")
        ):
            continue
        library.impl(op, functools.partial(kernel, op), "PrivateUse1")
        routed.append(name)
    return routed


_INDICES = "indices"


@functools.cache
def _tensor_list_arguments(op: torch._ops.OpOverload) -> frozenset[str]:
    """Names of the op's `Tensor?[]` arguments (index, index_put_'s `indices`)."""
    names = set()
    for argument in op._schema.arguments:
        t = argument.type
        if isinstance(t, torch.ListType) and isinstance(t.getElementType(), torch.OptionalType):
            names.add(argument.name)
    return frozenset(names)


def _indices_on_device(op: torch._ops.OpOverload, args: Sequence[Any], kwargs: dict[str, Any]):
    """CPU index tensors and masks (x[cpu_index], x[cpu_mask] = v) copied to the device of the
    indexed tensor, as CUDA accepts them (a timed host-to-device copy)."""
    position = next(i for i, a in enumerate(op._schema.arguments) if a.name == _INDICES)
    in_kwargs = position >= len(args)
    indices = kwargs.get(_INDICES) if in_kwargs else args[position]
    device = next((t.device for t in _neuron_tensors((args, kwargs))), None)
    if device is None or not indices:
        return args, kwargs
    moved = [
        i.to(device) if isinstance(i, torch.Tensor) and i.device.type == "cpu" else i
        for i in indices
    ]
    if in_kwargs:
        return args, {**kwargs, _INDICES: moved}
    return (*args[:position], moved, *args[position + 1 :]), kwargs


def _leaves(value: Any, out: list[Any]) -> list[Any]:
    """The leaves of an op's arguments in pytree's order (tuples and lists in order, dicts in
    insertion order, None skipped), without pytree's cost."""
    kind = type(value)
    if kind is tuple or kind is list:
        for item in value:
            _leaves(item, out)
    elif kind is dict:
        for item in value.values():
            _leaves(item, out)
    elif value is not None:
        if isinstance(value, (tuple, list, dict)):  # a namedtuple, OrderedDict, ...
            out.extend(pytree.tree_leaves(value))
        else:
            out.append(value)
    return out


def _device_of(op: torch._ops.OpOverload, args: Sequence[Any], kwargs: dict[str, Any],
               leaves: list[Any] | None = None):
    """The neuron device the op runs on; a non-scalar CPU tensor among its arguments is the
    error PyTorch gives for tensors on two devices."""
    device: torch.device | None = None
    other: torch.device | None = None
    for value in leaves if leaves is not None else _leaves((args, kwargs), []):
        if isinstance(value, torch.Tensor):
            if value.device.type == "neuron":
                if device is not None and device != value.device:
                    other = value.device
                device = device or value.device
            elif value.dim() > 0 or value.device.type != "cpu":
                other = value.device
        elif isinstance(value, torch.device) and value.type == "neuron":
            device = device or value
    if device is None:
        device = torch.device("neuron", torch.neuron.current_device())
    if device.index is None:
        device = torch.device("neuron", torch.neuron.current_device())
    if other is not None:
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two devices, "
            f"{device} and {other}! (in {op.name()}; move them with .to('{device}') first)"
        )
    return device


def _key_of(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return (tuple(value.shape), value.stride(), value.dtype, value.device.type)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, *(_key_of(v) for v in value))
    if isinstance(value, dict):
        return tuple((k, _key_of(v)) for k, v in sorted(value.items()))
    if isinstance(value, float):
        return ("float", repr(value))  # NaN equals itself as a string
    if isinstance(value, torch.Generator):
        return ("generator",)
    return (type(value).__name__, value)


# ---------------------------------------------------------------------------------------------
# Deciding how an op runs


def _decide(op: torch._ops.OpOverload, args: Any, kwargs: Any, device: torch.device):
    schema = op._schema
    returns = schema.returns
    if any(r.alias_info is not None and not r.alias_info.is_write for r in returns):
        return _run_view
    if not returns or any(not _is_tensor_type(r.type) for r in returns):
        return _cpu_entry(op, "it returns a non-tensor value")
    try:
        return _program_entry(op, args, kwargs)
    except _NotForTheDevice as reason:
        return _cpu_entry(op, str(reason))


class _NotForTheDevice(Exception):
    pass


def _is_tensor_type(t: Any) -> bool:
    return isinstance(t, torch.TensorType) or (
        isinstance(t, torch.ListType) and isinstance(t.getElementType(), torch.TensorType)
    )


def _aliased_arguments(op: torch._ops.OpOverload, args: Sequence[Any], kwargs: dict[str, Any]):
    """(schema argument, its value) for each argument the op's schema marks as aliased."""
    for index, argument in enumerate(op._schema.arguments):
        if argument.alias_info is None:
            continue
        if argument.kwarg_only or index >= len(args):
            yield argument, kwargs.get(argument.name)
        else:
            yield argument, args[index]


@functools.cache
def _written_arguments(op: torch._ops.OpOverload) -> tuple[tuple[int, str, bool], ...]:
    """(position, name, keyword-only) of each argument the op's schema marks as written."""
    return tuple(
        (index, argument.name, argument.kwarg_only)
        for index, argument in enumerate(op._schema.arguments)
        if argument.alias_info is not None and argument.alias_info.is_write
    )


def _mutated_tensors(op: torch._ops.OpOverload, args: Sequence[Any], kwargs: dict[str, Any]):
    """The tensors the op writes (in-place self, out=), in schema order."""
    written: list[torch.Tensor] = []
    for index, name, kwarg_only in _written_arguments(op):
        value = kwargs.get(name) if kwarg_only or index >= len(args) else args[index]
        if isinstance(value, torch.Tensor):
            written.append(value)
        elif value is not None:
            written.extend(v for v in pytree.tree_leaves(value) if isinstance(v, torch.Tensor))
    return written


@dataclass
class _Program:
    """An op compiled to a program. Its graph takes the op's tensor arguments (flattened) and
    returns the op's fresh results, then the new values of the tensors it writes."""

    compiled: Any
    fresh_results: int
    written_positions: list[int]  # in the flattened arguments, as the graph returns them
    timed: Any  # the CompiledGraph inside `compiled` (complex ops: a boundary around it)
    # For adaptive eager (adaptive.py): (shape, dtype) of each fresh result (None: undefined),
    # the shapes of the written tensors, and whether the op can be recorded into a batch.
    fresh_meta: list[Any]
    written_shapes: list[tuple[int, ...]]
    recordable: bool

    def __call__(self, op, args, kwargs, device: torch.device) -> Any:
        flat = pytree.tree_leaves((args, kwargs))
        tensors = [v for v in flat if isinstance(v, torch.Tensor)]
        outputs = self.compiled([hbm.host_view(t) for t in tensors])
        index = device.index or 0
        hbm.advance_clock(index, self.timed.last_sim_ns)
        STATS.program_runs += 1
        _count_executed(op)
        fresh = outputs[: self.fresh_results]
        targets = [flat[p] for p in self.written_positions]
        for target, value in zip(targets, outputs[self.fresh_results :], strict=True):
            if target.shape != value.shape:  # an out= tensor the op resizes
                target.resize_(value.shape)
            hbm.host_view(target).copy_(value)
        # (an output mask can leave some of a backward op's results undefined: None)
        adopted = [hbm.adopt(t, device) if isinstance(t, torch.Tensor) else t for t in fresh]
        return _assemble(op, args, kwargs, adopted)


def _program_entry(op: torch._ops.OpOverload, args: Any, kwargs: Any) -> _Program:
    from ..backend import _decompositions
    from ..compiler import compile_fx_graph
    from ..complex_lowering import lower_complex
    from ..errors import NeuronCompileError
    from ..graph_export import target_name
    from ..options import resolve_options
    from ..partition import unsupported_nodes

    flat, spec = pytree.tree_flatten((args, kwargs))
    positions = [i for i, v in enumerate(flat) if isinstance(v, torch.Tensor)]
    written_ids = {id(t) for t in _mutated_tensors(op, args, kwargs)}
    # Each written tensor once, at its first position (out= may alias self).
    written_positions: list[int] = []
    for i in positions:
        if id(flat[i]) in written_ids and all(flat[j] is not flat[i] for j in written_positions):
            written_positions.append(i)
    aliased_returns = [r.alias_info is not None for r in op._schema.returns]

    def functional(*tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        values = list(flat)
        for position, tensor in zip(positions, tensors):
            values[position] = tensor
        copies = {}
        for position in written_positions:
            copies[position] = values[position].clone()
        for position in positions:
            for original in written_positions:
                if flat[position] is flat[original]:
                    values[position] = copies[original]
        a, k = pytree.tree_unflatten(values, spec)
        result = op(*a, **k)
        results = result if isinstance(result, (tuple, list)) else (result,)
        fresh = []
        for value, aliased in zip(results, aliased_returns):
            if not aliased:
                fresh.extend(pytree.tree_leaves(value))
        return (*fresh, *(copies[p] for p in written_positions))

    # (CPU views only for their metadata: a pending adaptive batch need not run first)
    host_inputs = [adaptive._raw_host(flat[i]) for i in positions]
    if any(t.is_neg() or t.is_conj() for t in host_inputs):
        host_inputs = [hbm.host_view(flat[i]) for i in positions]
    _check_compute_dtypes(t.dtype for t in host_inputs)
    try:
        # Traced in a clean dispatch state: the op may come from inside a __torch_dispatch__
        # (DTensor), where the Python key the tracer's tensor subclasses need is excluded.
        # And like a Dynamo compile (tracing.py): other threads may run compiled functions.
        with like_a_dynamo_compile(), torch._C._ForceDispatchKeyGuard(*_CLEAN_DISPATCH_KEYS), \
                _no_modes():
            gm = make_fx(
                torch.func.functionalize(functional, remove="mutations_and_views"),
                tracing_mode="fake",
                decomposition_table=_decompositions(),
            )(*host_inputs)
    except Exception as error:  # data-dependent shapes, ops without fake kernels, ...
        raise _NotForTheDevice(f"it cannot be traced ({type(error).__name__}: {error})") from None
    _check_compute_dtypes(
        v.dtype for v in pytree.tree_leaves(_fresh_outputs_meta(gm)) if isinstance(v, torch.Tensor)
    )
    fresh_results = len(_fresh_outputs(gm)) - len(written_positions)
    metas = _fresh_outputs_meta(gm)
    fresh_meta = [
        (tuple(v.shape), v.dtype) if isinstance(v, torch.Tensor) else None
        for v in metas[:fresh_results]
    ]
    written_shapes = [tuple(v.shape) for v in metas[fresh_results:]]
    # Complex tensors: real arithmetic on [..., 2] planes, as in compiled graphs.
    lowered = lower_complex(gm)
    graph_inputs = lowered.example_inputs(host_inputs) if lowered is not None else host_inputs
    problems = unsupported_nodes(gm)
    if problems:
        described = sorted({target_name(n.target) + (f" on {p}" if p else "") for n, p in problems})
        raise _NotForTheDevice(f"the compiler does not support {', '.join(described)}")
    try:
        timed = compile_fx_graph(gm, graph_inputs, resolve_options(None), kind="eager")
    except NeuronCompileError as error:
        raise _NotForTheDevice(str(error).splitlines()[0]) from None
    STATS.programs_compiled += 1
    compiled = lowered.wrap(timed) if lowered is not None else timed
    return _Program(compiled, fresh_results, written_positions, timed, fresh_meta,
                    written_shapes, recordable=lowered is None and not _is_random(op))


def _is_random(op: torch._ops.OpOverload) -> bool:
    """Random ops run on their own in adaptive eager mode: each draws as it does op by op."""
    return torch.Tag.nondeterministic_seeded in op.tags


# Dtypes eager programs compute in as others: float64 as float32, complex as real planes.
_AS_OTHER_DTYPES = (torch.float64, torch.complex64, torch.complex128)


def _check_compute_dtypes(dtypes: Any) -> None:
    """Eager ops compute in their dtype, except complex (real arithmetic on planes) and
    float64, which runs as float32 on the device as in compiled graphs and TorchNeuron (device
    memory holds float64; the program reads its inputs as float32 and its float64 results are
    float32 values; one warning per process). Other dtypes the simulator lacks (int16, ...)
    run exactly on the CPU instead."""
    from ..runner import _DEVICE_DTYPES

    for dtype in dtypes:
        if dtype not in _DEVICE_DTYPES and dtype not in _AS_OTHER_DTYPES:
            raise _NotForTheDevice(f"the simulator does not compute in {str(dtype)[6:]}")


def _fresh_outputs_meta(gm: torch.fx.GraphModule) -> list[Any]:
    return [n.meta.get("val") if isinstance(n, torch.fx.Node) else n for n in _fresh_outputs(gm)]


def _fresh_outputs(gm: torch.fx.GraphModule) -> list[Any]:
    output = next(n for n in gm.graph.nodes if n.op == "output")
    return list(pytree.tree_leaves(output.args[0]))


def _assemble(op, args, kwargs, fresh: list[torch.Tensor]) -> Any:
    """The op's return value: written arguments as themselves, fresh results in order."""
    results = []
    fresh_iter = iter(fresh)
    written = iter(_returned_written(op, args, kwargs))
    for r in op._schema.returns:
        if r.alias_info is not None:
            results.append(next(written))
        elif isinstance(r.type, torch.ListType):
            results.append(list(fresh_iter))
        else:
            results.append(next(fresh_iter))
    return results[0] if len(results) == 1 else tuple(results)


def _returned_written(op, args, kwargs) -> list[Any]:
    """The arguments the op returns as itself (its `Tensor(a!)` returns), in return order."""
    by_set: dict[str, Any] = {}
    for argument, value in _aliased_arguments(op, args, kwargs):
        for name in argument.alias_info.before_set:
            by_set.setdefault(name, value)
    out = []
    for r in op._schema.returns:
        if r.alias_info is not None:
            out.append(by_set[next(iter(r.alias_info.before_set))])
    return out


# ---------------------------------------------------------------------------------------------
# Views


def _run_view(op, args, kwargs, device: torch.device) -> Any:
    STATS.views += 1
    _count_executed(op)
    bases = _neuron_tensors((args, kwargs))
    host_args, host_kwargs = pytree.tree_map_only(torch.Tensor, hbm.host_view, (args, kwargs))
    result = op(*host_args, **host_kwargs)
    return pytree.tree_map_only(torch.Tensor, lambda v: _device_view(v, bases, device), result)


def _device_view(view: torch.Tensor, bases: Sequence[torch.Tensor], device: torch.device):
    """The device tensor whose memory `view` (a CPU view of device memory) covers."""
    for base in bases:
        if _covers(base, view) and view.dtype == base.dtype:
            offset = (view.data_ptr() - base.untyped_storage().data_ptr()) // base.element_size()
            return base.as_strided(view.shape, view.stride(), offset)
    return hbm.adopt(view, device)  # a fresh tensor after all


# ---------------------------------------------------------------------------------------------
# The CPU


def _cpu_entry(op: torch._ops.OpOverload, reason: str):
    name = op.name()
    with _lock:
        first = name not in _warned
        _warned.add(name)
    if first:
        warnings.warn(
            f"neuron: {name} runs on the CPU, not on the simulated device: {reason}. "
            f"Its operands and results are charged as host transfers; "
            f"neuronsim.get_fallback_ops() counts its calls.",
            UserWarning,
            stacklevel=5,  # the user's line (run_op, _decide, _cpu_entry, warn in between)
        )
    generator_arg = next(
        (a.name for a in op._schema.arguments if a.name == "generator"), None
    )

    from ..partition import _FALLBACKS

    def run_on_cpu(op, args, kwargs, device: torch.device) -> Any:
        STATS.cpu_runs += 1
        _FALLBACKS.add({_fallback_name(op): 1})
        index = device.index or 0
        operands = _neuron_tensors((args, kwargs))
        for tensor in operands:
            hbm.count_host_transfer(index, False, tensor.numel() * tensor.element_size())
        host_args, host_kwargs = pytree.tree_map_only(torch.Tensor, hbm.host_view, (args, kwargs))
        device_generator = default = None
        if generator_arg and host_kwargs.get(generator_arg) is None and _generator is not None:
            default = _generator()
            host_kwargs = {**host_kwargs, generator_arg: default.host_generator()}
        elif generator_arg and _on_device(host_kwargs.get(generator_arg)):
            # torch.Generator(device="neuron"): the CPU kernel draws from a CPU generator in
            # its state, whose new state goes back to it.
            device_generator = host_kwargs[generator_arg]
            host_generator = torch.Generator()
            host_generator.set_state(device_generator.get_state())
            host_kwargs = {**host_kwargs, generator_arg: host_generator}
        result = op(*host_args, **host_kwargs)
        if device_generator is not None:
            device_generator.set_state(host_kwargs[generator_arg].get_state())
        if default is not None:  # the (seed, offset) generator moves past what the op drew
            default.advance(sum(t.numel() for t in pytree.tree_leaves(result)
                                if isinstance(t, torch.Tensor)))
        for tensor in _mutated_tensors(op, args, kwargs):
            hbm.count_host_transfer(index, True, tensor.numel() * tensor.element_size())
        # An argument the op returns as itself (in-place, out=) comes back as the device tensor.
        device_of_host = {
            id(host): original
            for host, original in zip(
                pytree.tree_leaves((host_args, host_kwargs)), pytree.tree_leaves((args, kwargs))
            )
            if isinstance(original, torch.Tensor)
        }

        def back(value: Any) -> Any:
            if not isinstance(value, torch.Tensor):
                return value
            if id(value) in device_of_host:
                return device_of_host[id(value)]
            if any(_covers(base, value) for base in operands):
                return _device_view(value, operands, device)
            return value.to(device)  # counted as a host-to-device copy

        return pytree.tree_map(back, result)

    return run_on_cpu


def _on_device(generator: Any) -> bool:
    return isinstance(generator, torch.Generator) and generator.device.type == "neuron"


def _neuron_tensors(tree: Any) -> list[torch.Tensor]:
    leaves = pytree.tree_leaves(tree)
    return [v for v in leaves if isinstance(v, torch.Tensor) and v.device.type == "neuron"]


def _covers(base: torch.Tensor, view: torch.Tensor) -> bool:
    """True if `view` (a CPU tensor) points into the device memory of `base`."""
    storage = base.untyped_storage()
    return storage.data_ptr() <= view.data_ptr() < storage.data_ptr() + storage.nbytes()


def _fallback_name(op: torch._ops.OpOverload) -> str:
    return f"aten.{op._opname}.{op._overloadname}" if op.namespace == "aten" else op.name()
