"""Complex tensors on the neuron backend: an FX pass that rewrites them into real arithmetic.

NeuronCores have no complex dtype. Before a graph (after AOTAutograd, core ATen) is exported,
lower_complex() rewrites every node that produces or consumes a complex tensor into real ops:

- Boundary. A complex graph input becomes a real input with a trailing dimension of 2
  (real, imag): the caller passes torch.view_as_real(x) (ComplexBoundary does it). A complex
  graph output is computed as such a real [..., 2] tensor and rebuilt on the host with
  torch.view_as_complex. complex64 travels as float32 pairs, complex128 as float64 pairs
  (which run as float32 on the device, like every float64 tensor: see dtypes.py), complex32
  (chalf) as float16 pairs.
- Inside the graph a complex value is two real planes of its shape (re, im): a boundary input
  is split by two selects, an output is packed by a cat of the two planes. Planes keep each
  component's elements contiguous for the engines (a trailing 2 would make every access a
  stride-2 one) and let layout ops apply unchanged.
- Layout and linear ops (slice, select, permute, view/reshape, expand, clone, cat, pad, flip,
  index, gather, sum, mean, where, ...) apply to both planes. Complex arithmetic (add, sub, mul,
  div, neg, conj, abs, angle, sgn, reciprocal, exp, mm/bmm, eq/ne, isnan), construction
  (complex, polar, view_as_complex, _to_copy to or from complex, full/scalar_tensor) and the
  views real/imag (view_as_real + select) become their real formulas.
- FFTs (_fft_r2c, _fft_c2c, _fft_c2r, which every torch.fft function and stft reach) are DFTs
  by matrix product, one 1-D transform per transformed dimension: the planes of the input are
  concatenated along that dimension and multiplied by one real block matrix
  [[C, sS], [-sS, C]] (C = cos, S = sin of 2 pi jk / n, s = -1 forward, +1 inverse) built on
  the host in float64 with exact integer reduction of jk mod n, normalization folded in;
  onesided r2c keeps the first n // 2 + 1 columns, c2r weighs the Hermitian half (1 for
  k = 0 and n / 2, 2 otherwise) and ignores the imaginary parts eager ignores. Accuracy: each
  output is one fp32 dot product of length 2n accumulated in fp32 (PSUM); for the sizes of the
  OpInfo samples and the tests (n <= 64) results match eager (pocketfft) to 1e-5 relative.
  Cost: the DFT is O(n^2) per transformed line (an FFT is O(n log n)) and its matrix is a
  constant of 4 n^2 values: fine for small transforms, wasteful for n in the thousands.

A node that produces or consumes a complex tensor and has no rule here stays complex, between
a view_as_complex of its inputs' planes and a view_as_real of its result (bridges). Without
the CPU fallback, check_supported() then names it with its source line ("complex64 tensors:
no real rewrite"); with options={'fallback': 'cpu'} it runs in eager PyTorch on the CPU.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch._guards import detect_fake_mode
from torch._subclasses.fake_tensor import FakeTensorMode, unset_fake_temporarily

from .errors import NeuronCompileError
from .graph_export import graph_outputs, target_name

aten = torch.ops.aten

# Node meta keys: a bridge node (view_as_complex / view_as_real around a complex node with no
# rule), and the reason check_supported() gives for that node.
BRIDGE = "neuron_complex_bridge"
PROBLEM = "neuron_complex_problem"

_REAL_DTYPE = {
    torch.complex32: torch.float16,
    torch.complex64: torch.float32,
    torch.complex128: torch.float64,
}

# Ops whose PyTorch decompositions (torch._refs) write .real / .imag of an empty complex tensor
# in place: AOTAutograd's functional-graph check rejects the copy_ into a select they leave.
# The pass below rewrites them, so the backend does not decompose them.
LOWERED_HERE = frozenset({aten.complex.default, aten.polar.default})


def real_dtype(dtype: torch.dtype) -> torch.dtype:
    return _REAL_DTYPE[dtype]


@dataclass(frozen=True)
class Cx:
    """A complex value inside the pass: its real and imaginary planes (FX nodes)."""

    re: torch.fx.Node
    im: torch.fx.Node


def _is_complex(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.dtype.is_complex


def _flat(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [v for item in value for v in _flat(item)]
    return [value]


def _touches_complex(node: torch.fx.Node) -> bool:
    if any(_is_complex(v) for v in _flat(node.meta.get("val"))):
        return True
    return any(_is_complex(a.meta.get("val")) for a in node.all_input_nodes)


def has_complex(gm: torch.fx.GraphModule) -> bool:
    return any(_touches_complex(n) for n in gm.graph.nodes if n.op != "output")


# ---------------------------------------------------------------------------------------------
# The boundary


class ComplexBoundary:
    """The compiled real graph called with complex inputs, returning complex outputs (boxed)."""

    def __init__(
        self,
        compiled: Callable[[list[Any]], list[Any]],
        complex_inputs: Sequence[bool],
        complex_outputs: Sequence[bool],
    ) -> None:
        self.compiled = compiled
        self.complex_inputs = list(complex_inputs)
        self.complex_outputs = list(complex_outputs)
        self._boxed_call = True

    def __call__(self, args: list[Any]) -> list[Any]:
        real_args = [
            _as_real(a) if i < len(self.complex_inputs) and self.complex_inputs[i] else a
            for i, a in enumerate(args)
        ]
        args.clear()  # the boxed convention: the callee may free the inputs
        outputs = list(self.compiled(real_args))
        return [
            torch.view_as_complex(o.contiguous()) if is_cx and isinstance(o, torch.Tensor) else o
            for o, is_cx in zip(outputs, self.complex_outputs, strict=True)
        ]


def _as_real(value: Any) -> Any:
    if not _is_complex(value):
        return value
    return torch.view_as_real(value.resolve_conj().resolve_neg())


# ---------------------------------------------------------------------------------------------
# The pass


@dataclass(frozen=True)
class LoweredGraph:
    """What lower_complex() did: which inputs and outputs of the graph were complex."""

    complex_inputs: list[bool]
    complex_outputs: list[bool]

    def wrap(self, compiled: Any) -> Any:
        if not any(self.complex_inputs) and not any(self.complex_outputs):
            return compiled
        return ComplexBoundary(compiled, self.complex_inputs, self.complex_outputs)

    def example_inputs(self, inputs: Sequence[Any]) -> list[Any]:
        """The example inputs of the rewritten graph (complex ones as real [..., 2] views)."""
        return [_as_real(v) if c else v for v, c in zip(inputs, self.complex_inputs)] + list(
            inputs[len(self.complex_inputs) :]
        )


def lower_complex(gm: torch.fx.GraphModule) -> LoweredGraph | None:
    """Rewrites `gm` in place so that no node it exports computes on complex tensors (see the
    module docstring); None if it has none."""
    if not has_complex(gm):
        return None
    return _Lowering(gm).run()


Rule = Callable[["_Lowering", torch.fx.Node, tuple[Any, ...], dict[str, Any]], Any]
RULES: dict[Any, Rule] = {}


def _rule(*targets: Any) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for target in targets:
            RULES[target] = fn
        return fn

    return register


class _NoRule(Exception):
    """The node's complex arguments are not handled by its rule (e.g. a complex exponent)."""


class _Lowering:
    def __init__(self, gm: torch.fx.GraphModule) -> None:
        self.gm = gm
        self.graph = torch.fx.Graph()
        self.env: dict[torch.fx.Node, Any] = {}
        vals = [n.meta.get("val") for n in gm.graph.nodes]
        self.fake_mode = detect_fake_mode(_flat(vals)) or FakeTensorMode(
            allow_non_fake_inputs=True
        )
        self.current: torch.fx.Node | None = None
        self.constants = 0
        devices = [v.device for v in _flat(vals) if isinstance(v, torch.Tensor)]
        self.device = devices[0] if devices else torch.device("cpu")

    # -- building nodes -------------------------------------------------------------------

    def emit(self, target: Any, *args: Any, **kwargs: Any) -> torch.fx.Node:
        """A new call_function node; its meta 'val' is computed on the fake arguments."""
        node = self.graph.call_function(target, args, kwargs)

        def fake(a: Any) -> Any:
            return a.meta["val"] if isinstance(a, torch.fx.Node) else a

        fake_args = torch.fx.node.map_aggregate(args, fake)
        fake_kwargs = torch.fx.node.map_aggregate(kwargs, fake)
        with self.fake_mode:
            node.meta["val"] = target(*fake_args, **fake_kwargs)
        if self.current is not None:
            for key in ("stack_trace", "nn_module_stack", "source_fn_stack"):
                if key in self.current.meta:
                    node.meta[key] = self.current.meta[key]
        return node

    def constant(self, value: torch.Tensor) -> torch.fx.Node:
        name = f"_complex_constant{self.constants}"
        while hasattr(self.gm, name):
            self.constants += 1
            name = f"_complex_constant{self.constants}"
        self.constants += 1
        self.gm.register_buffer(name, value, persistent=False)
        node = self.graph.get_attr(name)
        with unset_fake_temporarily():
            node.meta["val"] = self.fake_mode.from_tensor(value, static_shapes=True)
        return node

    @staticmethod
    def val(node: torch.fx.Node) -> torch.Tensor:
        return node.meta["val"]

    def cast(self, node: torch.fx.Node, dtype: torch.dtype) -> torch.fx.Node:
        if self.val(node).dtype == dtype:
            return node
        return self.emit(aten._to_copy.default, node, dtype=dtype)

    def full(self, shape: Sequence[int], value: float, dtype: torch.dtype) -> torch.fx.Node:
        return self.emit(aten.full.default, list(shape), value, dtype=dtype, device=self.device)

    def finish(self, node: torch.fx.Node, re: Any, im: Any) -> Cx:
        """Planes with the complex result's shape and real dtype (re/im: a node, a number or
        None for zero)."""
        value = node.meta["val"]
        return self.planes_like(re, im, tuple(value.shape), real_dtype(value.dtype))

    def planes_like(self, re: Any, im: Any, shape: tuple[int, ...], dtype: torch.dtype) -> Cx:
        return Cx(self.plane(re, shape, dtype), self.plane(im, shape, dtype))

    def plane(self, part: Any, shape: tuple[int, ...], dtype: torch.dtype) -> torch.fx.Node:
        if not isinstance(part, torch.fx.Node):
            return self.full(shape, float(part or 0.0), dtype)
        part = self.cast(part, dtype)
        if tuple(self.val(part).shape) != shape:
            part = self.emit(aten.expand.default, part, list(shape))
        return part

    # arithmetic on parts: each operand is a node, a Python number or None (zero)

    def add(self, a: Any, b: Any) -> Any:
        if a is None or (_number(a) and a == 0):
            return b
        if b is None or (_number(b) and b == 0):
            return a
        if _number(a) and _number(b):
            return a + b
        if _number(a):
            a, b = b, a
        return self.emit(aten.add.Tensor, a, b)

    def neg(self, a: Any) -> Any:
        if a is None:
            return None
        if _number(a):
            return -a
        return self.emit(aten.neg.default, a)

    def sub(self, a: Any, b: Any) -> Any:
        if b is None or (_number(b) and b == 0):
            return a
        if a is None or (_number(a) and a == 0):
            return self.neg(b)
        if _number(a) and _number(b):
            return a - b
        return self.emit(aten.sub.Tensor, a, b)

    def mul(self, a: Any, b: Any) -> Any:
        if a is None or b is None:
            return None
        if _number(a) and _number(b):
            return a * b
        if _number(a):
            a, b = b, a
        if _number(b) and b == 1:
            return a
        return self.emit(aten.mul.Tensor, a, b)

    def div(self, a: Any, b: Any) -> Any:
        if a is None:
            return None
        if _number(a) and _number(b):
            return a / b
        if _number(a):
            a = self.full((), float(a), self.val(b).dtype)
        return self.emit(aten.div.Tensor, a, b)

    def parts(self, value: Any) -> tuple[Any, Any]:
        """(re, im) of an operand: a Cx, a real tensor node or a Python number."""
        if isinstance(value, Cx):
            return value.re, value.im
        if isinstance(value, complex):
            return value.real, value.imag
        if isinstance(value, (torch.fx.Node, int, float, bool)):
            return value, None
        raise _NoRule()

    def pack(self, value: Cx) -> torch.fx.Node:
        """The [..., 2] real tensor of a complex value (view_as_real's layout)."""
        return self.emit(
            aten.cat.default,
            [self.emit(aten.unsqueeze.default, value.re, -1),
             self.emit(aten.unsqueeze.default, value.im, -1)],
            -1,
        )  # fmt: skip

    def unpack(self, packed: torch.fx.Node) -> Cx:
        return Cx(
            self.emit(aten.select.int, packed, -1, 0), self.emit(aten.select.int, packed, -1, 1)
        )

    # -- the walk -------------------------------------------------------------------------

    def run(self) -> LoweredGraph:
        complex_inputs: list[bool] = []
        for node in self.gm.graph.nodes:
            self.current = node
            if node.op == "placeholder":
                complex_inputs.append(_is_complex(node.meta.get("val")))
                self.env[node] = self.placeholder(node)
            elif node.op == "output":
                complex_outputs = self.output(node)
            elif node.op == "call_function" and node.target is operator.getitem:
                source = self.env[node.args[0]]
                if isinstance(source, (list, tuple)):
                    self.env[node] = source[node.args[1]]
                else:
                    self.env[node] = self.copy(node)
            elif node.op == "call_function" and _touches_complex(node):
                self.env[node] = self.lower(node)
            elif node.op == "get_attr" and _is_complex(self.attribute(node)):
                with unset_fake_temporarily():
                    value = torch.view_as_real(self.attribute(node).resolve_conj())
                    re, im = value[..., 0].contiguous(), value[..., 1].contiguous()
                self.env[node] = Cx(self.constant(re), self.constant(im))
            else:
                self.env[node] = self.copy(node)
        self.current = None
        self.gm.graph = self.graph
        self.graph.eliminate_dead_code()
        self.gm.recompile()
        return LoweredGraph(complex_inputs, complex_outputs)

    def attribute(self, node: torch.fx.Node) -> Any:
        value: Any = self.gm
        for part in str(node.target).split("."):
            value = getattr(value, part, None)
        return value

    def copy(self, node: torch.fx.Node) -> torch.fx.Node:
        def mapped(arg: torch.fx.Node) -> torch.fx.Node:
            value = self.env[arg]
            if isinstance(value, Cx):  # a complex value read by a node that takes no complex
                raise NeuronCompileError(f"complex lowering: node '{node.name}' reads {arg}")
            return value

        return self.graph.node_copy(node, mapped)

    def placeholder(self, node: torch.fx.Node) -> Any:
        value = node.meta.get("val")
        new = self.graph.placeholder(node.name)
        new.meta = dict(node.meta)
        if not _is_complex(value):
            return new
        with self.fake_mode:
            new.meta["val"] = torch.view_as_real(value.resolve_conj())
        return self.unpack(new)

    def output(self, node: torch.fx.Node) -> list[bool]:
        flags: list[bool] = []

        def mapped(value: Any) -> Any:
            if not isinstance(value, torch.fx.Node):
                flags.append(False)
                return value
            new = self.env[value]
            flags.append(isinstance(new, Cx))
            return self.pack(new) if isinstance(new, Cx) else new

        outputs = torch.fx.node.map_aggregate(node.args[0], mapped)
        self.graph.output(outputs)
        assert len(flags) == len(graph_outputs(self.gm))
        return flags

    def lower(self, node: torch.fx.Node) -> Any:
        args = torch.fx.node.map_aggregate(node.args, self._mapped)
        kwargs = torch.fx.node.map_aggregate(node.kwargs, self._mapped)
        rule = RULES.get(node.target)
        if rule is not None:
            try:
                return rule(self, node, args, dict(kwargs))
            except _NoRule:
                pass
        return self.bridge(node, args, kwargs)

    def _mapped(self, value: Any) -> Any:
        return self.env[value] if isinstance(value, torch.fx.Node) else value

    def bridge(self, node: torch.fx.Node, args: Any, kwargs: Any) -> Any:
        """Keeps `node` complex: view_as_complex of its complex inputs' planes, view_as_real
        of its complex results; check_supported() reports it."""

        def to_complex(value: Any) -> Any:
            if not isinstance(value, Cx):
                return value
            bridge = self.emit(aten.view_as_complex.default, self.pack(value))
            bridge.meta[BRIDGE] = True
            return bridge

        new_args = torch.fx.node.map_aggregate(args, to_complex)
        new_kwargs = torch.fx.node.map_aggregate(kwargs, to_complex)
        new = self.graph.call_function(node.target, tuple(new_args), dict(new_kwargs))
        new.meta = dict(node.meta)
        dtypes = sorted({str(v.dtype).removeprefix("torch.") for v in _flat(node.meta.get("val"))
                         if _is_complex(v)} | {str(a.meta["val"].dtype).removeprefix("torch.")
                         for a in node.all_input_nodes if _is_complex(a.meta.get("val"))})  # fmt: skip
        new.meta[PROBLEM] = f"{', '.join(dtypes)} tensors: no real rewrite of this complex op"
        value = node.meta.get("val")
        if isinstance(value, (list, tuple)):
            return [
                self._bridge_out(self.emit(operator.getitem, new, i), v)
                for i, v in enumerate(value)
            ]
        return self._bridge_out(new, value)

    def _bridge_out(self, node: torch.fx.Node, value: Any) -> Any:
        if not _is_complex(value):
            return node
        resolved = self.emit(aten.resolve_conj.default, node)
        real = self.emit(aten.view_as_real.default, resolved)
        resolved.meta[BRIDGE] = real.meta[BRIDGE] = True
        return self.unpack(real)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float, bool)) and not isinstance(value, torch.fx.Node)


# ---------------------------------------------------------------------------------------------
# Rules: layout and linear ops apply to both planes


def _componentwise(*data: int) -> Rule:
    """A rule for an op that acts on the real and the imaginary part alike; `data` are the
    positions of its tensor arguments that carry values (a list position: each element).
    Real tensors there count as complex with a zero imaginary part."""

    def rule(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Any:
        value = node.meta["val"]
        planes: list[Any] = []
        for part in (0, 1):
            new_args = list(args)
            for position in data:
                if position >= len(new_args):
                    continue
                item = new_args[position]
                if isinstance(item, (list, tuple)):
                    new_args[position] = [low_part(low, node, x, part) for x in item]
                else:
                    new_args[position] = low_part(low, node, item, part)
            if any(isinstance(a, Cx) for a in _flat(new_args)) or any(
                isinstance(v, Cx) for v in _flat(list(kwargs.values()))
            ):
                raise _NoRule()
            planes.append(low.emit(node.target, *new_args, **kwargs))
        if isinstance(value, (list, tuple)):
            return [
                Cx(low.emit(operator.getitem, planes[0], i), low.emit(operator.getitem, planes[1], i))
                for i in range(len(value))
            ]
        if not _is_complex(value):
            raise _NoRule()
        return Cx(planes[0], planes[1])

    return rule


def low_part(low: _Lowering, node: torch.fx.Node, value: Any, part: int) -> Any:
    """Part `part` (0 re, 1 im) of a data argument, in the result's real dtype."""
    result = _flat(node.meta["val"])[0]
    dtype = real_dtype(result.dtype) if _is_complex(result) else None
    if isinstance(value, Cx):
        plane = value.re if part == 0 else value.im
        return low.cast(plane, dtype) if dtype is not None else plane
    if isinstance(value, torch.fx.Node):
        if part == 0:
            return low.cast(value, dtype) if dtype is not None else value
        return low.emit(aten.zeros_like.default, low.cast(value, dtype or low.val(value).dtype))
    if isinstance(value, complex):
        return value.real if part == 0 else value.imag
    return value if part == 0 else 0


for _target, _positions in [
    (aten.clone.default, (0,)), (aten.alias.default, (0,)), (aten.detach.default, (0,)),
    (aten.lift_fresh_copy.default, (0,)), (aten.slice.Tensor, (0,)), (aten.select.int, (0,)),
    (aten.permute.default, (0,)), (aten.view.default, (0,)), (aten._unsafe_view.default, (0,)),
    (aten.reshape.default, (0,)), (aten.expand.default, (0,)), (aten.squeeze.default, (0,)),
    (aten.squeeze.dim, (0,)), (aten.squeeze.dims, (0,)), (aten.unsqueeze.default, (0,)),
    (aten.transpose.int, (0,)), (aten.t.default, (0,)), (aten.flip.default, (0,)),
    (aten.roll.default, (0,)), (aten.repeat.default, (0,)), (aten.unfold.default, (0,)),
    (aten.index_select.default, (0,)), (aten.index.Tensor, (0,)), (aten.gather.default, (0,)),
    (aten.sum.dim_IntList, (0,)), (aten.sum.default, (0,)), (aten.mean.dim, (0,)),
    (aten.mean.default, (0,)), (aten.narrow.default, (0,)), (aten.diagonal.default, (0,)),
    (aten.split.Tensor, (0,)), (aten.split_with_sizes.default, (0,)), (aten.unbind.int, (0,)),
    (aten.as_strided.default, (0,)), (aten.cat.default, (0,)), (aten.stack.default, (0,)),
    (aten.where.self, (1, 2)), (aten.slice_scatter.default, (0, 1)),
    (aten.select_scatter.default, (0, 1)), (aten.index_put.default, (0, 2)),
    (aten.copy.default, (0, 1)), (aten.masked_fill.Scalar, (0, 2)),
    (aten.masked_fill.Tensor, (0, 2)), (aten.constant_pad_nd.default, (0, 2)),
    (aten.tril.default, (0,)), (aten.triu.default, (0,)), (aten.repeat_interleave.self_int, (0,)),
    (aten.expand_copy.default, (0,)), (aten.permute_copy.default, (0,)),
    (aten.view_copy.default, (0,)), (aten.slice_copy.Tensor, (0,)),
    (aten.select_copy.int, (0,)), (aten.unsqueeze_copy.default, (0,)),
    (aten.resolve_conj.default, (0,)), (aten.resolve_neg.default, (0,)),
]:  # fmt: skip
    RULES[_target] = _componentwise(*_positions)


# ---------------------------------------------------------------------------------------------
# Rules: arithmetic


@_rule(aten.add.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub.Scalar, aten.rsub.Tensor,
       aten.rsub.Scalar)  # fmt: skip
def _add(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    ar, ai = low.parts(args[0])
    br, bi = low.parts(args[1])
    alpha = kwargs.get("alpha", args[2] if len(args) > 2 else 1)
    if isinstance(alpha, complex):
        br, bi = low.sub(low.mul(br, alpha.real), low.mul(bi, alpha.imag)), low.add(
            low.mul(br, alpha.imag), low.mul(bi, alpha.real)
        )
    elif alpha != 1:
        br, bi = low.mul(br, alpha), low.mul(bi, alpha)
    name = node.target._opname
    if name == "rsub":
        (ar, ai), (br, bi) = (br, bi), (ar, ai)
    if name == "add":
        return low.finish(node, low.add(ar, br), low.add(ai, bi))
    return low.finish(node, low.sub(ar, br), low.sub(ai, bi))


def _complex_product(low: _Lowering, a: tuple[Any, Any], b: tuple[Any, Any]) -> tuple[Any, Any]:
    (ar, ai), (br, bi) = a, b
    return low.sub(low.mul(ar, br), low.mul(ai, bi)), low.add(low.mul(ar, bi), low.mul(ai, br))


@_rule(aten.mul.Tensor, aten.mul.Scalar)
def _mul(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    return low.finish(node, *_complex_product(low, low.parts(args[0]), low.parts(args[1])))


@_rule(aten.mm.default, aten.bmm.default)
def _matmul(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    value = node.meta["val"]
    dtype = real_dtype(value.dtype)

    def product(x: Any, y: Any) -> Any:
        if x is None or y is None:
            return None
        return low.emit(node.target, low.cast(x, dtype), low.cast(y, dtype))

    (ar, ai), (br, bi) = low.parts(args[0]), low.parts(args[1])
    re = low.sub(product(ar, br), product(ai, bi))
    im = low.add(product(ar, bi), product(ai, br))
    return low.finish(node, re, im)


@_rule(aten.div.Tensor, aten.div.Scalar)
def _div(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    if kwargs.get("rounding_mode") is not None:
        raise _NoRule()
    (ar, ai), (br, bi) = low.parts(args[0]), low.parts(args[1])
    dtype = real_dtype(node.meta["val"].dtype)
    if bi is None or (_number(bi) and bi == 0):
        if _number(br):
            return low.finish(node, low.mul(ar, 1.0 / br), low.mul(ai, 1.0 / br))
        br = low.cast(br, dtype)
        return low.finish(node, low.div(ar, br), low.div(ai, br))
    if _number(br) and _number(bi):  # a complex Python scalar divisor
        inverse = 1.0 / complex(br, bi)
        return low.finish(node, *_complex_product(low, (ar, ai), (inverse.real, inverse.imag)))
    # (a / b) with b scaled by max(|br|, |bi|) first, as c10::complex does, so |b|^2 does not
    # overflow or underflow: a * conj(b') / (|b'|^2 * scale), b' = b / scale.
    br, bi = (low.plane(p, tuple(node.meta["val"].shape), dtype) for p in (br, bi))
    scale = low.emit(
        aten.maximum.default, low.emit(aten.abs.default, br), low.emit(aten.abs.default, bi)
    )
    br, bi = low.div(br, scale), low.div(bi, scale)
    denominator = low.mul(low.add(low.mul(br, br), low.mul(bi, bi)), scale)
    re = low.add(low.mul(ar, br), low.mul(ai, bi))
    im = low.sub(low.mul(ai, br), low.mul(ar, bi))
    return low.finish(node, low.div(re, denominator), low.div(im, denominator))


@_rule(aten.reciprocal.default)
def _reciprocal(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    one = low.full((), 1.0, real_dtype(node.meta["val"].dtype))
    return _div(low, node, (one, args[0]), {})


@_rule(aten.neg.default, aten._neg_view.default)
def _neg(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    re, im = low.parts(args[0])
    return low.finish(node, low.neg(re), low.neg(im))


@_rule(aten._conj.default, aten.conj.default, aten._conj_physical.default,
       aten.conj_physical.default, aten._conj_copy.default)  # fmt: skip
def _conj(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    re, im = low.parts(args[0])
    return low.finish(node, re, low.neg(im))


@_rule(aten.abs.default)
def _abs(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> torch.fx.Node:
    if not isinstance(args[0], Cx):
        raise _NoRule()
    return low.emit(aten.hypot.default, args[0].re, args[0].im)


@_rule(aten.angle.default)
def _angle(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> torch.fx.Node:
    if not isinstance(args[0], Cx):
        raise _NoRule()
    return low.emit(aten.atan2.default, args[0].im, args[0].re)


@_rule(aten.sgn.default)
def _sgn(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    if not isinstance(args[0], Cx):
        raise _NoRule()
    x = args[0]
    magnitude = low.emit(aten.hypot.default, x.re, x.im)
    zero = low.emit(aten.eq.Scalar, magnitude, 0)
    safe = low.emit(aten.where.self, zero, low.full((), 1.0, low.val(magnitude).dtype), magnitude)
    re, im = (low.emit(aten.where.self, zero, low.full((), 0.0, low.val(magnitude).dtype),
                       low.div(p, safe)) for p in (x.re, x.im))  # fmt: skip
    return low.finish(node, re, im)


@_rule(aten.exp.default)
def _exp(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    if not isinstance(args[0], Cx):
        raise _NoRule()
    magnitude = low.emit(aten.exp.default, args[0].re)
    re = low.mul(magnitude, low.emit(aten.cos.default, args[0].im))
    im = low.mul(magnitude, low.emit(aten.sin.default, args[0].im))
    return low.finish(node, re, im)


@_rule(aten.eq.Tensor, aten.eq.Scalar, aten.ne.Tensor, aten.ne.Scalar)
def _eq(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> torch.fx.Node:
    (ar, ai), (br, bi) = low.parts(args[0]), low.parts(args[1])
    shape = tuple(node.meta["val"].shape)
    dtype = low.val(args[0].re if isinstance(args[0], Cx) else args[1].re).dtype

    def compare(x: Any, y: Any) -> torch.fx.Node:
        x = low.plane(x, shape, dtype)
        y = y if _number(y) else low.plane(y, shape, dtype)
        return low.emit(aten.eq.Tensor if isinstance(y, torch.fx.Node) else aten.eq.Scalar, x, y)

    equal = low.emit(aten.logical_and.default, compare(ar, br or 0), compare(ai, bi or 0))
    if node.target._opname == "ne":
        return low.emit(aten.logical_not.default, equal)
    return equal


@_rule(aten.isnan.default)
def _isnan(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> torch.fx.Node:
    x = args[0]
    return low.emit(
        aten.logical_or.default,
        low.emit(aten.isnan.default, x.re),
        low.emit(aten.isnan.default, x.im),
    )


# ---------------------------------------------------------------------------------------------
# Rules: construction and conversion


@_rule(aten.view_as_real.default)
def _view_as_real(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Any:
    return low.pack(args[0])


@_rule(aten.view_as_complex.default)
def _view_as_complex(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    return low.unpack(args[0])


@_rule(aten.complex.default)
def _complex(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    return low.finish(node, args[0], args[1])


@_rule(aten.polar.default)
def _polar(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    magnitude, angle = args
    re = low.mul(magnitude, low.emit(aten.cos.default, angle))
    im = low.mul(magnitude, low.emit(aten.sin.default, angle))
    return low.finish(node, re, im)


@_rule(aten._to_copy.default)
def _to_copy(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Any:
    value = node.meta["val"]
    kwargs.pop("dtype", None)
    kwargs.pop("memory_format", None)
    if kwargs.get("device") is not None and torch.device(kwargs["device"]) != value.device:
        raise _NoRule()
    re, im = low.parts(args[0])
    if _is_complex(value):
        return low.finish(node, re, im)
    if value.dtype == torch.bool:  # nonzero in either part
        return low.emit(
            aten.logical_or.default, low.emit(aten.ne.Scalar, re, 0), low.emit(aten.ne.Scalar, im, 0)
        )
    return low.cast(re, value.dtype)  # eager discards the imaginary part


@_rule(aten.full.default, aten.scalar_tensor.default, aten.full_like.default,
       aten.zeros_like.default, aten.ones_like.default, aten.zeros.default, aten.ones.default,
       aten.empty.memory_format, aten.empty_like.default, aten.fill.Scalar)  # fmt: skip
def _creation(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    value = node.meta["val"]
    if not _is_complex(value):
        raise _NoRule()
    name = node.target._opname
    fill: Any = 0
    if name in ("full", "full_like", "fill"):
        fill = args[1] if len(args) > 1 else kwargs["fill_value"]
    elif name == "scalar_tensor":
        fill = args[0]
    elif name.startswith("ones"):
        fill = 1
    if not isinstance(fill, (int, float, bool, complex)):
        raise _NoRule()
    fill = complex(fill)
    dtype = real_dtype(value.dtype)
    return low.planes_like(fill.real, fill.imag, tuple(value.shape), dtype)


# ---------------------------------------------------------------------------------------------
# Rules: FFTs as DFT matrix products

_NORM = {0: "none", 1: "by_root_n", 2: "by_n"}  # ATen's fft_norm_mode


def _scale(normalization: int, n: int) -> float:
    if normalization not in _NORM:
        raise NeuronCompileError(f"unknown FFT normalization mode {normalization}")
    return {0: 1.0, 1: 1.0 / math.sqrt(n), 2: 1.0 / n}[normalization]


def _cos_sin(n: int, rows: int, columns: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of 2 pi j k / n for j < rows, k < columns, in float64: j k is reduced mod n
    in integers first, and values within 1e-15 of zero are zero (sin(pi) is 0 here). The
    matrices are real tensors, also when built under AOTAutograd's fake mode (the callers
    unset it)."""
    j = torch.arange(rows, dtype=torch.int64).unsqueeze(1)
    k = torch.arange(columns, dtype=torch.int64).unsqueeze(0)
    angle = (j * k % n).to(torch.float64) * (2 * math.pi / n)
    cos, sin = torch.cos(angle), torch.sin(angle)
    cos[cos.abs() < 1e-15] = 0.0
    sin[sin.abs() < 1e-15] = 0.0
    return cos, sin


@unset_fake_temporarily()
def _dft_matrix(n: int, n_out: int, sign: int, scale: float, real_input: bool) -> torch.Tensor:
    """The [2 n, 2 n_out] (or [n, 2 n_out] for a real input) matrix taking [re | im] rows of a
    length-n signal to [re | im] of its first n_out DFT coefficients, e^(sign i 2 pi jk / n)."""
    cos, sin = _cos_sin(n, n, n_out)
    top = torch.cat([cos, sign * sin], dim=1)
    if real_input:
        return top * scale
    bottom = torch.cat([-sign * sin, cos], dim=1)
    return torch.cat([top, bottom], dim=0) * scale


@unset_fake_temporarily()
def _c2r_matrix(n: int, m: int, scale: float) -> torch.Tensor:
    """The [2 m, n] matrix of a real inverse DFT of length n from the first m = n // 2 + 1
    coefficients of a Hermitian signal: out_t = sum_k w_k (re_k cos - im_k sin)(2 pi k t / n),
    w_k = 1 for k = 0 and k = n / 2, else 2 (the imaginary parts of those terms drop out)."""
    cos, sin = _cos_sin(n, m, n)
    weights = torch.full((m, 1), 2.0, dtype=torch.float64)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[n // 2] = 1.0
    return torch.cat([weights * cos, -weights * sin], dim=0) * scale


class _Transform:
    """Applies a [K, N] matrix along one dimension of planes: x [..., K/p, ...] -> [..., N/q]
    with the planes concatenated along that dimension first."""

    def __init__(self, low: _Lowering) -> None:
        self.low = low

    def apply(self, planes: list[Any], dim: int, matrix: torch.Tensor) -> torch.fx.Node:
        low = self.low
        x = planes[0] if len(planes) == 1 else low.emit(aten.cat.default, planes, dim)
        dtype = low.val(x).dtype
        shape = list(low.val(x).shape)
        outer = math.prod(shape[:dim])
        inner = math.prod(shape[dim + 1 :])
        k, n = matrix.shape
        if shape[dim] != k:
            raise NeuronCompileError(f"DFT: dimension of size {shape[dim]} for a [{k}, {n}] matrix")
        with unset_fake_temporarily():
            matrix = matrix.to(dtype)
        if inner == 1:  # rows of the signal: [outer, k] @ [k, n]
            flat = low.emit(aten.reshape.default, x, [outer, k])
            result = low.emit(aten.mm.default, flat, low.constant(matrix))
        else:  # columns: matrix^T [n, k] @ [k, inner] for each of the outer blocks
            with unset_fake_temporarily():
                left = matrix.t().contiguous()
            if outer == 1:
                flat = low.emit(aten.reshape.default, x, [k, inner])
                result = low.emit(aten.mm.default, low.constant(left), flat)
            else:
                flat = low.emit(aten.reshape.default, x, [outer, k, inner])
                batched = low.emit(aten.expand.default, low.constant(left), [outer, n, k])
                result = low.emit(aten.bmm.default, batched, flat)
        shape[dim] = n
        return low.emit(aten.reshape.default, result, shape)

    def split(self, x: torch.fx.Node, dim: int) -> Cx:
        half = self.low.val(x).shape[dim] // 2
        low = self.low
        return Cx(
            low.emit(aten.slice.Tensor, x, dim, 0, half),
            low.emit(aten.slice.Tensor, x, dim, half, 2 * half),
        )


def _fft_dims(low: _Lowering, node: torch.fx.Node, x: Any, dims: Any) -> list[int]:
    rank = low.val(x.re if isinstance(x, Cx) else x).dim()
    if not isinstance(dims, (list, tuple)) or not dims:
        raise NeuronCompileError(f"{target_name(node.target)}: dims {dims!r}")
    return [int(d) % rank for d in dims]


def _c2c(low: _Lowering, x: Cx, dims: Sequence[int], normalization: int, sign: int) -> Cx:
    transform = _Transform(low)
    for dim in dims:
        n = low.val(x.re).shape[dim]
        matrix = _dft_matrix(n, n, sign, _scale(normalization, n), real_input=False)
        x = transform.split(transform.apply([x.re, x.im], dim, matrix), dim)
    return x


@_rule(aten._fft_r2c.default)
def _fft_r2c(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    x, dims, normalization, onesided = args
    if isinstance(x, Cx):
        raise _NoRule()
    dims = _fft_dims(low, node, x, dims)
    last = dims[-1]
    n = low.val(x).shape[last]
    n_out = n // 2 + 1 if onesided else n
    matrix = _dft_matrix(n, n_out, -1, _scale(normalization, n), real_input=True)
    transform = _Transform(low)
    result = transform.split(transform.apply([x], last, matrix), last)
    result = _c2c(low, result, dims[:-1], normalization, -1)
    return low.finish(node, result.re, result.im)


@_rule(aten._fft_c2c.default)
def _fft_c2c(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    x, dims, normalization, forward = args
    if not isinstance(x, Cx):
        raise _NoRule()
    result = _c2c(low, x, _fft_dims(low, node, x, dims), normalization, -1 if forward else 1)
    return low.finish(node, result.re, result.im)


@_rule(aten._fft_c2r.default)
def _fft_c2r(low: _Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> torch.fx.Node:
    x, dims, normalization, last_dim_size = args
    if not isinstance(x, Cx):
        raise _NoRule()
    dims = _fft_dims(low, node, x, dims)
    x = _c2c(low, x, dims[:-1], normalization, 1)
    last, n = dims[-1], int(last_dim_size)
    m = n // 2 + 1
    size = low.val(x.re).shape[last]
    if size < m:
        raise NeuronCompileError(
            f"{target_name(node.target)}: {size} coefficients along dim {last} for a real "
            f"output of size {n} (needs {m}) ({node.name})"
        )
    planes = [low.emit(aten.slice.Tensor, p, last, 0, m) if size > m else p for p in (x.re, x.im)]
    matrix = _c2r_matrix(n, m, _scale(normalization, n))
    result = _Transform(low).apply(planes, last, matrix)
    return low.cast(result, node.meta["val"].dtype)
