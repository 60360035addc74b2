"""@jit kernels: traced per input signature, run eagerly on the simulator (compiled as a graph
of one `neuronsim.kernel.default` node), and registered as PyTorch ops through torch.library."""

from __future__ import annotations

import functools
import hashlib
import inspect
from typing import Any, Callable

import torch

from ..errors import NeuronCompileError
from .ir import Source
from .tracer import Traced, _current, trace

_KERNEL_OPS: dict[str, tuple[Kernel, list[str], Any]] = {}


class Kernel:
    """A kernel function; calling it on CPU tensors runs it on the simulator."""

    def __init__(self, fn: Callable[..., Any], name: str | None = None) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        self._traces: dict[Any, Traced] = {}
        functools.update_wrapper(self, fn)

    def trace(self, *args: Any, target: str = "trn2", **kwargs: Any) -> Traced:
        """The kernel traced for these inputs (tensors give shapes and dtypes only)."""
        key = (target, _signature(args), _signature(tuple(sorted(kwargs.items()))))
        traced = self._traces.get(key)
        if traced is None:
            from torch._subclasses.fake_tensor import unset_fake_temporarily

            # (called by the fake implementation under Dynamo's FakeTensorMode: the constant
            # tiles a kernel makes are real tensors)
            with unset_fake_temporarily():
                traced = trace(self.fn, self.name, list(args), kwargs, target)
            self._traces[key] = traced
        return traced

    def ir(self, *args: Any, **kwargs: Any) -> str:
        """The kernel's ntile IR for these inputs (what neuron-opt reads)."""
        return self.trace(*args, **kwargs).ir

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _current:
            raise NeuronCompileError(f"kernel '{self.name}' is called inside another kernel; "
                                     "call a plain Python helper instead")
        outputs = run_eager(self, list(args), kwargs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


def jit(fn: Callable[..., Any] | None = None, *, name: str | None = None) -> Any:
    """Decorates a kernel function (NKI's @nki.jit)."""
    if fn is None:
        return lambda f: Kernel(f, name)
    return Kernel(fn, name)


def _signature(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), value.dtype)
    if isinstance(value, (tuple, list)):
        return tuple(_signature(v) for v in value)
    return value


def graph_node(traced: Traced, name: str, args: list[Any], outputs: list[Any],
               source: str, flops: int | None = None) -> dict[str, Any]:
    """The graph-file node of a kernel call (compiler/Import/AtenKernel.cpp reads it); with
    `flops`, the kernel's useful FLOPs count instead of its matmuls'."""
    kwargs: dict[str, Any] = {"kernel_name": traced.name, "ir": traced.ir}
    if flops is not None:
        kwargs["flops"] = int(flops)
    return {
        "name": name,
        "target": "neuronsim.kernel.default",
        "args": args,
        "kwargs": kwargs,
        "outputs": outputs,
        "source": source,
    }


def _source_text(s: Source) -> str:
    import os

    return f"{os.path.basename(s.file)}:{s.line} in kernel"


def run_eager(kernel: Kernel, args: list[Any], kwargs: dict[str, Any],
              options: Any = None) -> list[torch.Tensor]:
    """Runs a kernel on CPU tensors: a graph of one kernel node, compiled (through the
    compile cache) and run on the simulator; last_run_stats() / report() describe the run."""
    from .. import native
    from ..cache import CACHE, EntryInfo, cache_key
    from ..dtypes import graph_dtype
    from ..graph_export import canonical_json
    from ..options import resolve_options
    from ..runner import CompiledGraph, OutputSpec

    options = options or resolve_options(None)
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    for t in tensors:
        if t.device.type not in ("cpu", "neuron"):
            raise NeuronCompileError(f"kernel '{kernel.name}' takes CPU (or neuron) tensors, "
                                     f"got one on {t.device}")
    traced = kernel.trace(*args, target=options.target, **kwargs)
    inputs, refs = [], []
    for i, t in enumerate(tensors):
        inputs.append({"name": f"in{i}", "shape": list(t.shape),
                       "dtype": graph_dtype(t.dtype, f"input {i} of kernel '{kernel.name}'",
                                            kernel=True)})
        refs.append({"node": f"in{i}"})
    specs = [{"shape": list(s), "dtype": graph_dtype(d, f"output of kernel '{kernel.name}'",
                                                     kernel=True)}
             for s, d in traced.outputs]
    node = graph_node(traced, "kernel", refs, specs, _source_text(traced.source))
    many = len(specs) > 1
    doc = {"format": "neuronsim-graph", "version": 1, "name": "", "inputs": inputs,
           "constants": [], "nodes": [node],
           "outputs": [{"node": "kernel", "index": i} if many else {"node": "kernel"}
                       for i in range(len(specs))]}
    digest = hashlib.sha256(canonical_json(doc).encode()).hexdigest()
    doc["name"] = f"kernel_{traced.name}_{digest[:12]}"
    text = canonical_json(doc)
    key = cache_key(digest, tensors, options.key(), native.compiler_version())
    native_options: dict[str, Any] = {"target": options.target}
    if options.dump_dir:
        import os

        directory = os.path.join(options.dump_dir, doc["name"])
        os.makedirs(directory, exist_ok=True)
        native_options["dump_dir"] = directory
    program = CACHE.get_or_compile(
        key, EntryInfo.of(doc["name"], tensors, options.target),
        lambda: native.compile_program(text, native_options),
        refresh=options.dump_dir is not None,
    )
    graph = CompiledGraph(program, doc["name"], [OutputSpec(tuple(s), d) for s, d in
                                                  traced.outputs],
                          profile=options.profile, timing_only=options.timing_only,
                          check_hazards=options.check_hazards)
    outputs = graph([t.contiguous() for t in tensors])
    for arg, out in traced.inplace:  # an argument the kernel wrote: the caller's tensor too
        with torch.no_grad():
            tensors[arg].copy_(outputs[out].to(tensors[arg].device))
    return outputs[:len(outputs) - traced.scratch] if traced.scratch else outputs


# -- PyTorch ops ----------------------------------------------------------------------------

_SCALAR_TYPES = {float: "float", int: "int", bool: "bool"}


def _schema(kernel: Kernel, num_outputs: int) -> tuple[str, list[str]]:
    params = []
    names = []
    for p in inspect.signature(kernel.fn).parameters.values():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise NeuronCompileError(f"kernel '{kernel.name}': torch ops take positional "
                                     f"parameters only, not {p.name}")
        kind = _SCALAR_TYPES.get(p.annotation) if not isinstance(p.annotation, str) else (
            {"float": "float", "int": "int", "bool": "bool"}.get(p.annotation))
        text = f"{kind or 'Tensor'} {p.name}"
        if kind and p.default is not inspect.Parameter.empty:
            text += f"={p.default!r}"
        params.append(text)
        names.append(p.name)
    returns = "Tensor" if num_outputs == 1 else "(" + ", ".join(["Tensor"] * num_outputs) + ")"
    return f"({', '.join(params)}) -> {returns}", names


def torch_op(qualname: str, kernel: Kernel, num_outputs: int = 1,
             backward: Callable[..., Any] | None = None,
             setup_context: Callable[..., Any] | None = None,
             flops: Callable[..., int] | None = None) -> Any:
    """Registers `kernel` as the PyTorch op `qualname` ("namespace::name"): eager calls run it
    on the simulator, a fake implementation traces it for output shapes, and inside
    torch.compile(backend="neuron") its instructions are inlined into the graph's program.
    Parameters annotated float / int / bool are scalars of the op, the others tensors.
    `backward` and `setup_context` (torch.library.register_autograd's) make it differentiable.
    `flops(*args)` (args as the op's: tensors with shapes, scalars) gives the useful FLOPs of
    a call, which compiled graphs count instead of the kernel's matmuls (whose transposes
    or masked blocks are no useful work). Returns the op (torch.ops.namespace.name)."""
    namespace, _, name = qualname.partition("::")
    if not namespace or not name:
        raise ValueError(f"qualname must be 'namespace::name', got {qualname!r}")
    schema, names = _schema(kernel, num_outputs)
    lib = torch.library.Library(namespace, "FRAGMENT")
    lib.define(f"{name}{schema}")
    _LIBRARIES.append(lib)

    def cpu_impl(*args: Any) -> Any:
        outputs = run_eager(kernel, list(args), {})
        return outputs[0] if num_outputs == 1 else tuple(outputs)

    def fake_impl(*args: Any) -> Any:
        traced = kernel.trace(*args)
        if len(traced.returned) != num_outputs:
            raise NeuronCompileError(f"kernel '{kernel.name}' returns {len(traced.returned)} "
                                     f"tensors; torch_op declared num_outputs={num_outputs}")
        device = next((a.device for a in args if isinstance(a, torch.Tensor)), None)
        out = [torch.empty(s, dtype=d, device=device) for s, d in traced.returned]
        return out[0] if num_outputs == 1 else tuple(out)

    lib.impl(name, cpu_impl, "CPU")
    torch.library.register_fake(qualname, fake_impl, lib=lib)
    if backward is not None:
        torch.library.register_autograd(qualname, backward, setup_context=setup_context,
                                        lib=lib)
    op = getattr(getattr(torch.ops, namespace), name)
    _KERNEL_OPS[f"{namespace}.{name}.default"] = (kernel, names, flops)
    return op


_LIBRARIES: list[Any] = []


def kernel_op(target: str) -> tuple[Kernel, list[str], Any] | None:
    """The kernel behind a registered op's overload name ('ns.name.default'), if any."""
    return _KERNEL_OPS.get(target)


def export_node(node: torch.fx.Node, ref: Callable[[Any], Any], results: list[Any],
                source: str) -> dict[str, Any] | None:
    """The graph-file node of an FX call of a kernel op (None for other nodes): the kernel is
    traced for the node's input shapes and scalar arguments, its IR goes into the node."""
    from ..graph_export import target_name

    found = kernel_op(target_name(node.target))
    if found is None:
        return None
    kernel, names, flops = found
    schema = node.target._schema  # type: ignore[union-attr]
    values = []
    for i, arg in enumerate(schema.arguments):
        if i < len(node.args):
            values.append(node.args[i])
        elif arg.name in node.kwargs:
            values.append(node.kwargs[arg.name])
        elif arg.has_default_value():
            values.append(arg.default_value)
        else:
            raise NeuronCompileError(f"kernel op {node.target} misses argument {arg.name}")
    traced_args, refs = [], []
    for v in values:
        if isinstance(v, torch.fx.Node):
            meta = v.meta.get("val")
            if not isinstance(meta, torch.Tensor):
                raise NeuronCompileError(f"argument {v.name} of kernel op {node.target} has "
                                         "no tensor metadata")
            traced_args.append(meta)
            refs.append(ref(v))
        else:
            traced_args.append(v)
    traced = kernel.trace(*traced_args)
    if traced.inplace:
        raise NeuronCompileError(f"kernel '{kernel.name}' writes its argument(s) "
                                 f"{[a for a, _ in traced.inplace]} in place: such kernels run "
                                 "eagerly, not yet inside compiled graphs")
    if traced.scratch:
        raise NeuronCompileError(f"kernel '{kernel.name}' keeps HBM scratch (nl.private_hbm): "
                                 "such kernels run eagerly, not yet inside compiled graphs")
    return graph_node(traced, node.name, refs, results, source,
                      None if flops is None else flops(*traced_args))
