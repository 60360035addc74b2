"""neuronsim.kernels.language (`nl`): tiles, data movement, loops and tile math, with the
names of NKI's `nki.language` where NKI has the concept (see the README's kernel section)."""

from __future__ import annotations

import math
from typing import Any

import torch

from . import ir, ops
from .ir import Aff, caller_source
from .tracer import error, tracer
from .values import DynSlice, HbmView, TileView, as_hbm, as_tile

# dtypes
float32 = torch.float32
bfloat16 = torch.bfloat16
float16 = torch.float16
int32 = torch.int32
int64 = torch.int64
int8 = torch.int8
bool_ = torch.bool

# memories
sbuf = "sbuf"
psum = "psum"
shared_hbm = "shared_hbm"
hbm = "hbm"


class tile_size:  # noqa: N801 (NKI's name)
    pmax = ir.MAX_PARTITIONS  # partitions of a tile
    psum_fmax = ir.PSUM_BANK_BYTES // 4  # fp32 columns of a matmul's result (one bank)
    psum_bank_fmax = ir.PSUM_BANK_BYTES // 4  # fp32 columns of one PSUM bank
    psum_num_banks = 8  # PSUM banks per partition (a tile may span several)
    gemm_stationary_fmax = ir.MAX_PARTITIONS  # columns of a matmul's stationary operand
    gemm_moving_fmax = ir.PSUM_BANK_BYTES // 4  # columns of a matmul's moving operand


def ds(start: Any, size: int) -> DynSlice:
    """`size` elements from `start` (an int or an expression of loop variables)."""
    return DynSlice(start, size)


# -- allocation ----------------------------------------------------------------------------


def _tile_shape(shape: Any, source: ir.Source) -> tuple[int, int]:
    shape = tuple(int(d) for d in shape)
    if len(shape) == 1:
        shape = (shape[0], 1)
    if len(shape) < 2:
        raise error(f"a tile has shape [partitions, free...], got {list(shape)}", source)
    return shape[0], math.prod(shape[1:])


def ndarray(shape: Any, dtype: torch.dtype, buffer: str = sbuf) -> Any:
    """An uninitialized tile in SBUF/PSUM, or a kernel output in HBM (buffer=nl.shared_hbm)."""
    source = caller_source()
    t = tracer()
    if buffer in (shared_hbm, hbm):
        if t.output_cursor is not None:  # a later SPMD instance: the first one's output
            if t.output_cursor >= len(t.outputs):
                raise error("SPMD instances of a kernel make different HBM outputs", source)
            out = t.outputs[t.output_cursor]
            t.output_cursor += 1
            if out.shape != tuple(int(d) for d in shape):
                raise error("SPMD instances of a kernel make different HBM outputs", source)
            return HbmView(out)
        if t.scope is not t.root:
            raise error("kernel outputs (nl.ndarray(..., buffer=nl.shared_hbm)) are made at "
                        "the kernel's top level, outside loops", source)
        out = ir.HbmTensor(f"out{len(t.outputs)}", tuple(int(d) for d in shape), dtype,
                           is_output=True, source=source)
        t.outputs.append(out)
        return HbmView(out)
    if buffer not in (sbuf, psum):
        raise error(f"unknown buffer {buffer!r}: nl.sbuf, nl.psum or nl.shared_hbm", source)
    p, f = _tile_shape(shape, source)
    tile = t.new_tile(p, f, dtype, buffer, source)
    t.fresh = None
    return TileView.whole(tile)


def full(shape: Any, fill_value: float, dtype: torch.dtype = float32, buffer: str = sbuf
         ) -> TileView:
    """A tile filled with `fill_value` (a DMA from a one-element constant)."""
    source = caller_source()
    t = tracer()
    p, f = _tile_shape(shape, source)
    if buffer not in (sbuf, psum):
        raise error(f"nl.full makes SBUF or PSUM tiles, got buffer={buffer!r}", source)
    tile = TileView.whole(t.new_tile(p, f, dtype, buffer, source))
    ops.fill(tile, fill_value, source)
    return tile


def zeros(shape: Any, dtype: torch.dtype = float32, buffer: str = sbuf) -> TileView:
    return full(shape, 0.0, dtype, buffer)


def ones(shape: Any, dtype: torch.dtype = float32, buffer: str = sbuf) -> TileView:
    return full(shape, 1.0, dtype, buffer)


# -- data movement --------------------------------------------------------------------------


def load(src: Any, dtype: torch.dtype | None = None) -> TileView:
    """HBM -> a new SBUF tile (DMA); the view's first dim goes to the partitions."""
    return ops.load(as_hbm(src, "the source of nl.load"), dtype, caller_source())


def load_transpose2d(src: Any, dtype: torch.dtype | None = None) -> TileView:
    """A 2-D HBM view [A, B] -> a new SBUF tile [B, A] (a strided DMA)."""
    return ops.load(as_hbm(src, "the source of nl.load_transpose2d"), dtype, caller_source(),
                    transpose=True)


def store(dst: Any, value: Any) -> None:
    """A tile -> HBM (DMA); a tile of another dtype is converted first (Vector engine)."""
    ops.store(as_hbm(dst, "the target of nl.store"), value, caller_source())


def copy(x: Any, dtype: torch.dtype | None = None) -> TileView:
    """A new SBUF tile with x's values (Vector engine; converts to `dtype`)."""
    return ops.copy(x, dtype, caller_source())


# -- loops ----------------------------------------------------------------------------------


class _Range:
    def __init__(self, count: Any, sequential: bool, source: ir.Source) -> None:
        if isinstance(count, Aff) or isinstance(count, bool) or not isinstance(count, int):
            raise error("a kernel loop's trip count is a Python int known when the kernel is "
                        f"traced, got {count!r}", source)
        if count < 0:
            raise error(f"negative trip count {count}", source)
        self.count = count
        self.sequential = sequential
        self.source = source

    def __iter__(self) -> Any:
        if self.count == 0:
            return
        t = tracer()
        loop = ir.Loop(self.count, self.sequential, self.source)
        scope = ir.Scope(t.scope, loop)
        loop.scope = scope
        t.record(ir.LoopOp(self.source, loop, scope))
        t.fresh = None
        t.scope = scope
        yield Aff(0, {loop: 1})
        # (not reached when the body breaks out: the tracer then reports the open loop)
        t.scope = scope.parent
        t.fresh = None


def affine_range(*args: int) -> _Range:
    """A counted loop over tiles whose iterations are independent (NKI's affine_range). The
    loop variable is symbolic: use it in indices (`x[i * 128 : (i + 1) * 128]`)."""
    return _range(args, sequential=False)


def sequential_range(*args: int) -> _Range:
    """A counted loop whose iterations carry state through tiles allocated before it."""
    return _range(args, sequential=True)


def _range(args: tuple[int, ...], sequential: bool) -> _Range:
    source = caller_source()
    if len(args) != 1:
        raise error("kernel loops take one argument, the trip count (start at 0, step 1)",
                    source)
    return _Range(args[0], sequential, source)


static_range = range  # unrolled while tracing


# -- tile math ------------------------------------------------------------------------------


class _Activation:
    """A Scalar-engine function: nl.exp(x) runs it; nisa.activation(op=nl.exp, ...) names it."""

    def __init__(self, fn: str) -> None:
        self.act = fn
        self.__name__ = fn

    def __call__(self, x: Any, dtype: torch.dtype | None = None) -> TileView:
        return ops.activation(self.act, x, 1.0, 0.0, dtype, caller_source())


exp = _Activation("exp")
log = _Activation("log")
tanh = _Activation("tanh")
sigmoid = _Activation("sigmoid")
sqrt = _Activation("sqrt")
rsqrt = _Activation("rsqrt")
square = _Activation("square")
relu = _Activation("relu")
gelu = _Activation("gelu")
gelu_apprx_tanh = _Activation("gelu_tanh")
silu = _Activation("silu")
abs = _Activation("abs")  # noqa: A001 (NKI's name)
negative = _Activation("neg")
reciprocal = _Activation("reciprocal")
sin = _Activation("sin")
cos = _Activation("cos")
erf = _Activation("erf")
softplus = _Activation("softplus")
arctan = _Activation("arctan")
identity = _Activation("identity")


class _Alu:
    """A Vector-engine ALU op: nl.add(x, y) runs it; nisa.tensor_tensor(op=nl.add) names it."""

    def __init__(self, op: str) -> None:
        self.alu = op
        self.__name__ = op

    def __call__(self, x: Any, y: Any, dtype: torch.dtype | None = None) -> TileView:
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            return ops.elementwise(self.alu, y, x, reverse=True, dtype=dtype,
                                   source=caller_source())
        return ops.elementwise(self.alu, x, y, dtype=dtype, source=caller_source())


add = _Alu("add")
subtract = _Alu("sub")
multiply = _Alu("mul")
divide = _Alu("div")
maximum = _Alu("max")
minimum = _Alu("min")
power = _Alu("pow")
equal = _Alu("eq")
not_equal = _Alu("ne")
less = _Alu("lt")
less_equal = _Alu("le")
greater = _Alu("gt")
greater_equal = _Alu("ge")
bitwise_and = _Alu("and")
bitwise_or = _Alu("or")


class _Reduce:
    """A Vector-engine reduction along the free dimension: nl.sum(x, axis=1) -> [P, 1]."""

    def __init__(self, op: str) -> None:
        self.alu = op
        self.__name__ = op

    def __call__(self, x: Any, axis: Any = 1, dtype: torch.dtype | None = None,
                 keepdims: bool = True) -> TileView:
        return ops.reduce(self.alu, x, axis, dtype, caller_source())


sum = _Reduce("add")  # noqa: A001 (NKI's name)
max = _Reduce("max")  # noqa: A001
min = _Reduce("min")  # noqa: A001


def matmul(x: Any, y: Any, transpose_x: bool = False) -> TileView:
    """x @ y into a PSUM tile; with transpose_x, x is given as [K, M] (the Tensor engine's
    stationary layout). Without it, x [M, K] is transposed first (nc_transpose)."""
    source = caller_source()
    if not transpose_x:
        from . import isa

        xt = isa.nc_transpose(x)
        x = ops.copy(xt, as_tile(x, "x").dtype, source)
    return ops.matmul(x, y, source)


def transpose(x: Any) -> TileView:
    from . import isa

    return isa.nc_transpose(x)


# -- index grids for iota and affine_select --------------------------------------------------


class IndexExpr:
    """cp * partition + cf * column + const (NKI's mgrid indices), evaluated over a tile."""

    def __init__(self, cp: int, cf: int, const: int) -> None:
        self.cp, self.cf, self.const = cp, cf, const

    def _lift(self, o: Any) -> IndexExpr:
        if isinstance(o, IndexExpr):
            return o
        if isinstance(o, Aff):
            if not o.is_const():
                raise error("iota / affine_select patterns are evaluated when the kernel is "
                            "traced: they take ints, not loop variables (unroll with range())")
            o = o.const
        if isinstance(o, bool) or not isinstance(o, int):
            raise error(f"an index expression takes ints, got {o!r}")
        return IndexExpr(0, 0, o)

    def __add__(self, o: Any) -> IndexExpr:
        o = self._lift(o)
        return IndexExpr(self.cp + o.cp, self.cf + o.cf, self.const + o.const)

    __radd__ = __add__

    def __sub__(self, o: Any) -> IndexExpr:
        o = self._lift(o)
        return IndexExpr(self.cp - o.cp, self.cf - o.cf, self.const - o.const)

    def __rsub__(self, o: Any) -> IndexExpr:
        return self._lift(o) - self

    def __mul__(self, o: Any) -> IndexExpr:
        k = self._lift(o)
        if k.cp or k.cf:
            raise error("a product of two index expressions is not affine")
        return IndexExpr(self.cp * k.const, self.cf * k.const, self.const * k.const)

    __rmul__ = __mul__

    def values(self, p: int, f: int) -> torch.Tensor:
        rows = torch.arange(p, dtype=torch.int64).unsqueeze(1)
        cols = torch.arange(f, dtype=torch.int64).unsqueeze(0)
        return self.cp * rows + self.cf * cols + self.const

    def _cmp(self, o: Any, op: str) -> Predicate:
        return Predicate(self - self._lift(o), op)

    def __ge__(self, o: Any) -> Predicate:  # type: ignore[override]
        return self._cmp(o, "ge")

    def __gt__(self, o: Any) -> Predicate:  # type: ignore[override]
        return self._cmp(o, "gt")

    def __le__(self, o: Any) -> Predicate:  # type: ignore[override]
        return self._cmp(o, "le")

    def __lt__(self, o: Any) -> Predicate:  # type: ignore[override]
        return self._cmp(o, "lt")

    def __eq__(self, o: Any) -> Predicate:  # type: ignore[override]
        return self._cmp(o, "eq")

    def __ne__(self, o: Any) -> Predicate:  # type: ignore[override]
        return self._cmp(o, "ne")

    __hash__ = None  # type: ignore[assignment]


class Predicate:
    """expr <op> 0 over a tile's partitions and columns."""

    def __init__(self, expr: IndexExpr, op: str) -> None:
        self.expr, self.op = expr, op

    def mask(self, p: int, f: int) -> torch.Tensor:
        v = self.expr.values(p, f)
        return {"ge": v >= 0, "gt": v > 0, "le": v <= 0, "lt": v < 0, "eq": v == 0,
                "ne": v != 0}[self.op]

    def key(self) -> tuple[int, int, int, str]:
        return (self.expr.cp, self.expr.cf, self.expr.const, self.op)


class _Grid:
    def __getitem__(self, key: Any) -> tuple[IndexExpr, IndexExpr]:
        if not isinstance(key, tuple) or len(key) != 2:
            raise error("nl.mgrid takes two ranges: nl.mgrid[0:P, 0:F]")
        for k in key:
            if not isinstance(k, slice) or k.start not in (None, 0) or k.step not in (None, 1):
                raise error("nl.mgrid ranges start at 0 with step 1")
        return IndexExpr(1, 0, 0), IndexExpr(0, 1, 0)


mgrid = _Grid()
