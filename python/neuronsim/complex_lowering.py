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
  index, gather, scatter, sum, mean, cumsum, where, ...) apply to both planes. Complex
  arithmetic (add, sub, mul, div, neg, conj, abs, angle, sgn, reciprocal, exp, log, sin, cos,
  sinh, cosh, pow by 1-3, mm/bmm/addmm/baddbmm as one real matmul, var, vector norms, eq/ne,
  logical ops, any/all, isnan), construction (complex, polar, view_as_complex, _to_copy to or
  from complex, full/scalar_tensor) and the views real/imag (view_as_real + select) become
  their real formulas (complex_rules.py).
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

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch._guards import detect_fake_mode
from torch._subclasses.fake_tensor import FakeTensorMode, unset_fake_temporarily

from . import complex_fft  # noqa: F401 - registers the FFT rules
from .complex_rules import RULES, Cx, NoRule, flat, is_complex, number, real_dtype
from .errors import NeuronCompileError
from .graph_export import graph_outputs

aten = torch.ops.aten

# Node meta keys: a bridge node (view_as_complex / view_as_real around a complex node with no
# rule), and the reason check_supported() gives for that node.
BRIDGE = "neuron_complex_bridge"
PROBLEM = "neuron_complex_problem"

# Ops whose PyTorch decompositions (torch._refs) write .real / .imag of an empty complex tensor
# in place: AOTAutograd's functional-graph check rejects the copy_ into a select they leave.
# The pass below rewrites them, so the backend does not decompose them.
LOWERED_HERE = frozenset({aten.complex.default, aten.polar.default})


def _touches_complex(node: torch.fx.Node) -> bool:
    if any(is_complex(v) for v in flat(node.meta.get("val"))):
        return True
    return any(is_complex(a.meta.get("val")) for a in node.all_input_nodes)


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
    if not is_complex(value):
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
        flags = self.complex_inputs
        return [_as_real(v) if i < len(flags) and flags[i] else v for i, v in enumerate(inputs)]


def lower_complex(gm: torch.fx.GraphModule) -> LoweredGraph | None:
    """Rewrites `gm` in place so that no node it exports computes on complex tensors (see the
    module docstring); None if it has none."""
    if not has_complex(gm):
        return None
    return Lowering(gm).run()


class Lowering:
    def __init__(self, gm: torch.fx.GraphModule) -> None:
        self.gm = gm
        self.graph = torch.fx.Graph()
        self.env: dict[torch.fx.Node, Any] = {}
        vals = [n.meta.get("val") for n in gm.graph.nodes]
        self.fake_mode = detect_fake_mode(flat(vals)) or FakeTensorMode(allow_non_fake_inputs=True)
        self.current: torch.fx.Node | None = None
        self.constants = 0
        devices = [v.device for v in flat(vals) if isinstance(v, torch.Tensor)]
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
        if a is None or (number(a) and a == 0):
            return b
        if b is None or (number(b) and b == 0):
            return a
        if number(a) and number(b):
            return a + b
        if number(a):
            a, b = b, a
        return self.emit(aten.add.Tensor, a, b)

    def neg(self, a: Any) -> Any:
        if a is None:
            return None
        if number(a):
            return -a
        return self.emit(aten.neg.default, a)

    def sub(self, a: Any, b: Any) -> Any:
        if b is None or (number(b) and b == 0):
            return a
        if a is None or (number(a) and a == 0):
            return self.neg(b)
        if number(a) and number(b):
            return a - b
        return self.emit(aten.sub.Tensor, a, b)

    def mul(self, a: Any, b: Any) -> Any:
        if a is None or b is None:
            return None
        if number(a) and number(b):
            return a * b
        if number(a):
            a, b = b, a
        if number(b) and b == 1:
            return a
        return self.emit(aten.mul.Tensor, a, b)

    def div(self, a: Any, b: Any) -> Any:
        if a is None:
            return None
        if number(a) and number(b):
            return a / b
        if number(a):
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
        raise NoRule()

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
                complex_inputs.append(is_complex(node.meta.get("val")))
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
            elif node.op == "get_attr" and is_complex(self.attribute(node)):
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
        if not is_complex(value):
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
            except NoRule:
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
        values = flat(node.meta.get("val")) + [a.meta.get("val") for a in node.all_input_nodes]
        dtypes = sorted({str(v.dtype).removeprefix("torch.") for v in values if is_complex(v)})
        new.meta[PROBLEM] = f"{', '.join(dtypes)} tensors: no real rewrite of this complex op"
        value = node.meta.get("val")
        if isinstance(value, (list, tuple)):
            return [
                self._bridge_out(self.emit(operator.getitem, new, i), v)
                for i, v in enumerate(value)
            ]
        return self._bridge_out(new, value)

    def _bridge_out(self, node: torch.fx.Node, value: Any) -> Any:
        if not is_complex(value):
            return node
        resolved = self.emit(aten.resolve_conj.default, node)
        real = self.emit(aten.view_as_real.default, resolved)
        resolved.meta[BRIDGE] = real.meta[BRIDGE] = True
        return self.unpack(real)
