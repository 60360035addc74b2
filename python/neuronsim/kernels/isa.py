"""neuronsim.kernels.isa (`nisa`): one engine instruction per call, with the names of NKI's
`nki.isa` where NKI has the instruction."""

from __future__ import annotations

from typing import Any

import torch

from . import ops
from .ir import caller_source
from .language import Predicate, IndexExpr, _Activation, _Alu, _Reduce
from .tracer import error, tracer
from .values import TileView, as_tile


class engine:  # noqa: N801 (NKI's name)
    """Engines for the `engine=` argument of the Vector-class instructions."""

    vector = "vector"
    gpsimd = "gpsimd"
    scalar = "scalar"  # tensor_copy only (activation always runs on it)


def nc_matmul(stationary: Any, moving: Any) -> TileView:
    """Tensor engine: stationary[K, M]^T @ moving[K, N] into a new fp32 PSUM tile [M, N]
    (K, M <= 128, N <= 512). `acc += nisa.nc_matmul(...)` accumulates into the PSUM tile
    `acc` instead; `acc[...] = nisa.nc_matmul(...)` overwrites it."""
    return ops.matmul(stationary, moving, caller_source())


def nc_transpose(data: Any) -> TileView:
    """Tensor engine: data [P, F] (F <= 128) transposed into a new fp32 PSUM tile [F, P]
    (a matmul with an identity matrix, which is loaded once per kernel)."""
    source = caller_source()
    x = as_tile(data, "the data of nc_transpose")
    p, f = x.shape
    if f > 128:
        raise error(f"nc_transpose of a tile with {f} columns: at most 128", source)
    if x.dtype not in ops.MATMUL_DTYPES:
        raise error(f"the Tensor engine does not take {str(x.dtype).removeprefix('torch.')} "
                    "tiles", source)
    if x.buffer != "sbuf":
        raise error("nc_transpose reads an SBUF tile (copy PSUM to SBUF first)", source)
    identity = tracer().constant_tile(("identity", p, x.dtype),
                                      torch.eye(p, dtype=x.dtype), source)
    return ops.matmul(x, TileView.whole(identity), source)


def activation(op: Any, data: Any, bias: Any = None, scale: Any = 1.0,
               reduce_op: Any = None, reduce_res: Any = None,
               dtype: torch.dtype | None = None) -> TileView:
    """Scalar engine: op(data * scale + bias), `op` an nl function such as nl.exp. `scale`
    and `bias` are floats or [P, 1] tiles (one value per partition, as NKI's). With
    reduce_op=nl.add and reduce_res (a [P, 1] float32 SBUF tile) the same instruction also
    writes the sum of each row of the result there (NKI's activation_reduce)."""
    source = caller_source()
    if not isinstance(op, _Activation):
        raise error(f"activation takes a Scalar-engine function such as nl.exp, got {op!r}",
                    source)
    if (reduce_op is None) != (reduce_res is None):
        raise error("activation takes reduce_op and reduce_res together", source)
    if reduce_op is not None and getattr(reduce_op, "alu", None) != "add":
        raise error(f"the Scalar engine reduces its rows with nl.add only, got {reduce_op!r}",
                    source)
    return ops.activation(op.act, data, scale, bias, dtype, source, reduce_res=reduce_res)


def activation_reduce(op: Any, data: Any, reduce_op: Any, reduce_res: Any, bias: Any = None,
                      scale: Any = 1.0, dtype: torch.dtype | None = None) -> TileView:
    """activation whose row sums go to reduce_res (NKI's nki.isa.activation_reduce)."""
    return activation(op, data, bias=bias, scale=scale, reduce_op=reduce_op,
                      reduce_res=reduce_res, dtype=dtype)


def _alu(op: Any, what: str) -> str:
    if not isinstance(op, (_Alu, _Reduce)):
        raise error(f"{what} takes an ALU op such as nl.add or nl.maximum, got {op!r}")
    return op.alu


def tensor_tensor(data1: Any, data2: Any, op: Any, dtype: torch.dtype | None = None,
                  engine: str | None = None) -> TileView:
    """Vector engine (or engine=nisa.engine.gpsimd): data1 <op> data2 (data2 may be a [P, 1]
    column broadcast along rows)."""
    return ops.elementwise(_alu(op, "tensor_tensor"), data1, data2, dtype=dtype,
                           source=caller_source(), engine=engine)


def tensor_scalar(data: Any, op0: Any, operand0: Any, reverse0: bool = False,
                  op1: Any = None, operand1: Any = None, reverse1: bool = False,
                  dtype: torch.dtype | None = None, engine: str | None = None) -> TileView:
    """Vector engine: (data <op0> operand0) <op1> operand1; an operand is a float or a
    [P, 1] column."""
    source = caller_source()
    r = ops.elementwise(_alu(op0, "tensor_scalar"), data, operand0, reverse=reverse0,
                        dtype=None if op1 is not None else dtype, source=source, engine=engine)
    if op1 is not None:
        r = ops.elementwise(_alu(op1, "tensor_scalar"), r, operand1, reverse=reverse1,
                            dtype=dtype, source=source, engine=engine)
    return r


def tensor_reduce(op: Any, data: Any, axis: Any = 1, dtype: torch.dtype | None = None,
                  negate: bool = False, engine: str | None = None) -> TileView:
    """Vector engine (or GpSimd): reduce along the free dimension into a [P, 1] tile."""
    source = caller_source()
    r = ops.reduce(_alu(op, "tensor_reduce"), data, axis, dtype, source, engine=engine)
    if negate:
        r = ops.elementwise("mul", r, -1.0, source=source, engine=engine)
    return r


def tensor_copy(src: Any, dtype: torch.dtype | None = None, engine: str | None = None
                ) -> TileView:
    """A copy (PSUM -> SBUF, or a dtype conversion) on the Vector engine, or on the Scalar or
    GpSimd engine with engine=..."""
    return ops.copy(src, dtype, caller_source(), engine=engine)


def memset(shape: Any, value: float, dtype: torch.dtype) -> TileView:
    from . import language as nl

    return nl.full(shape, value, dtype)


def iota(expr: Any, dtype: torch.dtype = torch.int32, shape: Any = None) -> TileView:
    """A tile of the affine values `expr` (from nl.mgrid) over `shape` [P, F]; computed when
    the kernel is traced and loaded once (a constant tile)."""
    source = caller_source()
    if not isinstance(expr, IndexExpr) or shape is None:
        raise error("iota takes an nl.mgrid expression and shape=[P, F]", source)
    p, f = (int(d) for d in shape)
    value = expr.values(p, f).to(dtype)
    return TileView.whole(tracer().constant_tile(("iota", expr.cp, expr.cf, expr.const, p, f,
                                                  dtype), value, source))


def affine_select(pred: Any, on_true_tile: Any, on_false_value: float,
                  dtype: torch.dtype | None = None, engine: str | None = None) -> TileView:
    """on_true_tile where the affine predicate over (partition, column) holds, else
    on_false_value. The predicate (from nl.mgrid indices and ints) is evaluated when the
    kernel is traced into a constant mask loaded once; the select runs on the Vector engine."""
    source = caller_source()
    if not isinstance(pred, Predicate):
        raise error("affine_select takes a predicate of nl.mgrid indices such as "
                    "(i_p >= i_f)", source)
    x = as_tile(on_true_tile, "on_true_tile")
    p, f = x.shape
    t = tracer()
    mask_dtype = x.dtype if x.dtype.is_floating_point else torch.float32
    mask = t.constant_tile(("mask", pred.key(), p, f, mask_dtype),
                           pred.mask(p, f).to(mask_dtype), source)
    fill = t.constant_tile(("fill", float(on_false_value), p, mask_dtype),
                           torch.full((p, 1), float(on_false_value), dtype=mask_dtype), source)
    return ops.select(TileView.whole(mask), x, TileView.whole(fill), source, dtype, engine)
