"""The rewrite rules of the complex lowering (complex_lowering.py) for layout, arithmetic and
construction ops: each takes the node and its arguments, complex ones as Cx (two real planes),
and returns the result's planes (or a real node), built with the pass's helpers."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.fx

if TYPE_CHECKING:
    from .complex_lowering import Lowering

aten = torch.ops.aten

_REAL_DTYPE = {
    torch.complex32: torch.float16,
    torch.complex64: torch.float32,
    torch.complex128: torch.float64,
}


def real_dtype(dtype: torch.dtype) -> torch.dtype:
    return _REAL_DTYPE[dtype]


@dataclass(frozen=True)
class Cx:
    """A complex value inside the pass: its real and imaginary planes (FX nodes)."""

    re: torch.fx.Node
    im: torch.fx.Node


def is_complex(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.dtype.is_complex


def is_complex_dtype(dtype: Any) -> bool:
    return isinstance(dtype, torch.dtype) and dtype.is_complex


def flat(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [v for item in value for v in flat(item)]
    return [value]


Rule = Callable[["Lowering", torch.fx.Node, tuple[Any, ...], dict[str, Any]], Any]
RULES: dict[Any, Rule] = {}


def rule(*targets: Any) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for target in targets:
            RULES[target] = fn
        return fn

    return register


class NoRule(Exception):
    """The node's complex arguments are not handled by its rule (e.g. a complex exponent)."""


def number(value: Any) -> bool:
    return isinstance(value, (int, float, bool)) and not isinstance(value, torch.fx.Node)


# ---------------------------------------------------------------------------------------------
# Rules: layout and linear ops apply to both planes


def _componentwise(*data: int) -> Rule:
    """A rule for an op that acts on the real and the imaginary part alike; `data` are the
    positions of its tensor arguments that carry values (a list position: each element).
    Real tensors there count as complex with a zero imaginary part."""

    def rule(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Any:
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
            if any(isinstance(a, Cx) for a in flat(new_args)) or any(
                isinstance(v, Cx) for v in flat(list(kwargs.values()))
            ):
                raise NoRule()
            if is_complex_dtype(kwargs.get("dtype")):  # sum(..., dtype=complex64) and alike
                kwargs = {**kwargs, "dtype": real_dtype(kwargs["dtype"])}
            planes.append(low.emit(node.target, *new_args, **kwargs))
        if isinstance(value, (list, tuple)):
            return [
                Cx(
                    low.emit(operator.getitem, planes[0], i),
                    low.emit(operator.getitem, planes[1], i),
                )
                for i in range(len(value))
            ]
        if not is_complex(value):
            raise NoRule()
        return Cx(planes[0], planes[1])

    return rule


def low_part(low: Lowering, node: torch.fx.Node, value: Any, part: int) -> Any:
    """Part `part` (0 re, 1 im) of a data argument, in the result's real dtype."""
    result = flat(node.meta["val"])[0]
    dtype = real_dtype(result.dtype) if is_complex(result) else None
    if isinstance(value, Cx):
        plane = value.re if part == 0 else value.im
        return low.cast(plane, dtype) if dtype is not None else plane
    if isinstance(value, torch.fx.Node):
        if part == 0:
            return low.cast(value, dtype) if dtype is not None else value
        real = low.val(value)
        return low.full(tuple(real.shape), 0.0, dtype or real.dtype)
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
    (aten.cumsum.default, (0,)), (aten.scatter.src, (0, 3)), (aten.scatter.value, (0, 3)),
    (aten.scatter_add.default, (0, 3)), (aten.put.default, (0, 2)),
    (aten.masked_scatter.default, (0, 2)), (aten.narrow_copy.default, (0,)),
    (aten.unbind_copy.int, (0,)),
]:  # fmt: skip
    RULES[_target] = _componentwise(*_positions)


# ---------------------------------------------------------------------------------------------
# Rules: arithmetic


@rule(aten.add.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub.Scalar, aten.rsub.Tensor,
       aten.rsub.Scalar)  # fmt: skip
def _add(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    """a + alpha b, a - alpha b, and rsub: b - alpha a."""
    name = node.target._opname
    first, second = (args[1], args[0]) if name == "rsub" else (args[0], args[1])
    ar, ai = low.parts(first)
    br, bi = low.parts(second)
    alpha = kwargs.get("alpha", args[2] if len(args) > 2 else 1)
    br, bi = _scaled(low, (br, bi), alpha)
    if name == "add":
        return low.finish(node, low.add(ar, br), low.add(ai, bi))
    return low.finish(node, low.sub(ar, br), low.sub(ai, bi))


def _scaled(low: Lowering, parts: tuple[Any, Any], factor: Any) -> tuple[Any, Any]:
    """parts times a Python scalar factor (alpha, beta): a complex product for a complex one."""
    if isinstance(factor, complex):
        return _complex_product(low, parts, (factor.real, factor.imag))
    if factor == 1:
        return parts
    return low.mul(parts[0], factor), low.mul(parts[1], factor)


def _complex_product(low: Lowering, a: tuple[Any, Any], b: tuple[Any, Any]) -> tuple[Any, Any]:
    (ar, ai), (br, bi) = a, b
    return low.sub(low.mul(ar, br), low.mul(ai, bi)), low.add(low.mul(ar, bi), low.mul(ai, br))


@rule(aten.mul.Tensor, aten.mul.Scalar)
def _mul(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    return low.finish(node, *_complex_product(low, low.parts(args[0]), low.parts(args[1])))


@rule(aten.mm.default, aten.bmm.default)
def _matmul(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    re, im = _product_planes(low, node.target, args[0], args[1], node.meta["val"].dtype)
    return low.finish(node, re, im)


@rule(aten.addmm.default, aten.baddbmm.default)
def _addmm(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    """beta self + alpha (m1 @ m2); beta = 0 ignores self (NaN included), as eager."""
    beta = kwargs.get("beta", args[3] if len(args) > 3 else 1)
    alpha = kwargs.get("alpha", args[4] if len(args) > 4 else 1)
    target = aten.mm.default if node.target == aten.addmm.default else aten.bmm.default
    product = _product_planes(low, target, args[1], args[2], node.meta["val"].dtype)
    product = _scaled(low, product, alpha)
    if beta == 0:
        return low.finish(node, *product)
    shifted = _scaled(low, low.parts(args[0]), beta)
    return low.finish(node, low.add(shifted[0], product[0]), low.add(shifted[1], product[1]))


def _product_planes(low: Lowering, target: Any, a: Any, b: Any, dtype: torch.dtype) -> tuple:
    """One real matmul: [ar | ai] @ [[br, bi], [-bi, br]] = [re | im] (K and N doubled).
    (Eager's matmuls take operands of one dtype: both are complex here.)"""
    if not (isinstance(a, Cx) and isinstance(b, Cx)):
        raise NoRule()
    dtype = real_dtype(dtype)
    ar, ai, br, bi = (low.cast(p, dtype) for p in (a.re, a.im, b.re, b.im))
    n = low.val(br).shape[-1]
    left = low.emit(aten.cat.default, [ar, ai], -1)
    top = low.emit(aten.cat.default, [br, bi], -1)
    bottom = low.emit(aten.cat.default, [low.neg(bi), br], -1)
    out = low.emit(target, left, low.emit(aten.cat.default, [top, bottom], -2))
    return tuple(low.emit(aten.slice.Tensor, out, -1, i * n, (i + 1) * n) for i in (0, 1))


@rule(aten.div.Tensor, aten.div.Scalar)
def _div(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    if kwargs.get("rounding_mode") is not None:
        raise NoRule()
    (ar, ai), (br, bi) = low.parts(args[0]), low.parts(args[1])
    dtype = real_dtype(node.meta["val"].dtype)
    if bi is None or (number(bi) and bi == 0):
        if number(br):
            return low.finish(node, low.mul(ar, 1.0 / br), low.mul(ai, 1.0 / br))
        br = low.cast(br, dtype)
        return low.finish(node, low.div(ar, br), low.div(ai, br))
    if number(br) and number(bi):  # a complex Python scalar divisor
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


@rule(aten.reciprocal.default)
def _reciprocal(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    one = low.full((), 1.0, real_dtype(node.meta["val"].dtype))
    return _div(low, node, (one, args[0]), {})


@rule(aten.neg.default, aten._neg_view.default)
def _neg(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    re, im = low.parts(args[0])
    return low.finish(node, low.neg(re), low.neg(im))


@rule(aten._conj.default, aten.conj.default, aten._conj_physical.default,
       aten.conj_physical.default, aten._conj_copy.default)  # fmt: skip
def _conj(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    re, im = low.parts(args[0])
    return low.finish(node, re, low.neg(im))


@rule(aten.abs.default)
def _abs(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> torch.fx.Node:
    if not isinstance(args[0], Cx):
        raise NoRule()
    return low.emit(aten.hypot.default, args[0].re, args[0].im)


@rule(aten.angle.default)
def _angle(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> torch.fx.Node:
    if not isinstance(args[0], Cx):
        raise NoRule()
    return low.emit(aten.atan2.default, args[0].im, args[0].re)


@rule(aten.sgn.default)
def _sgn(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    if not isinstance(args[0], Cx):
        raise NoRule()
    x = args[0]
    magnitude = low.emit(aten.hypot.default, x.re, x.im)
    zero = low.emit(aten.eq.Scalar, magnitude, 0)
    safe = low.emit(aten.where.self, zero, low.full((), 1.0, low.val(magnitude).dtype), magnitude)
    re, im = (low.emit(aten.where.self, zero, low.full((), 0.0, low.val(magnitude).dtype),
                       low.div(p, safe)) for p in (x.re, x.im))  # fmt: skip
    return low.finish(node, re, im)


@rule(aten.exp.default)
def _exp(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    if not isinstance(args[0], Cx):
        raise NoRule()
    magnitude = low.emit(aten.exp.default, args[0].re)
    re = low.mul(magnitude, low.emit(aten.cos.default, args[0].im))
    im = low.mul(magnitude, low.emit(aten.sin.default, args[0].im))
    return low.finish(node, re, im)


@rule(aten.eq.Tensor, aten.eq.Scalar, aten.ne.Tensor, aten.ne.Scalar)
def _eq(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> torch.fx.Node:
    (ar, ai), (br, bi) = low.parts(args[0]), low.parts(args[1])
    shape = tuple(node.meta["val"].shape)
    dtype = low.val(args[0].re if isinstance(args[0], Cx) else args[1].re).dtype

    def compare(x: Any, y: Any) -> torch.fx.Node:
        x = low.plane(x, shape, dtype)
        y = y if number(y) else low.plane(y, shape, dtype)
        return low.emit(aten.eq.Tensor if isinstance(y, torch.fx.Node) else aten.eq.Scalar, x, y)

    equal = low.emit(aten.logical_and.default, compare(ar, br or 0), compare(ai, bi or 0))
    if node.target._opname == "ne":
        return low.emit(aten.logical_not.default, equal)
    return equal


def _nonzero(low: Lowering, value: Any) -> Any:
    """The truth value of a complex operand: either part nonzero."""
    if not isinstance(value, Cx):
        return value
    return low.emit(
        aten.logical_or.default,
        low.emit(aten.ne.Scalar, value.re, 0),
        low.emit(aten.ne.Scalar, value.im, 0),
    )


@rule(aten.logical_not.default, aten.logical_and.default, aten.logical_or.default,
      aten.logical_xor.default, aten.any.default, aten.any.dim, aten.any.dims,
      aten.all.default, aten.all.dim, aten.all.dims)  # fmt: skip
def _logical(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> torch.fx.Node:
    """Logical ops and any/all read a complex operand as nonzero in either part."""
    if isinstance(node.meta["val"], torch.Tensor) and node.meta["val"].dtype.is_complex:
        raise NoRule()
    return low.emit(node.target, *(_nonzero(low, a) for a in args), **kwargs)


@rule(aten.linalg_vector_norm.default)
def _vector_norm(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Any:
    """The norm of a complex vector is the norm of its magnitudes."""
    if not isinstance(args[0], Cx) or is_complex_dtype(kwargs.get("dtype")):
        raise NoRule()
    magnitude = low.emit(aten.hypot.default, args[0].re, args[0].im)
    return low.emit(node.target, magnitude, *args[1:], **kwargs)


@rule(aten.var.correction, aten.var_mean.correction)
def _var(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Any:
    """var(z) = var(re) + var(im): |z - mean|^2 is the sum of the parts' squared deviations."""
    x = args[0]
    if not isinstance(x, Cx):
        raise NoRule()
    parts = [low.emit(node.target, plane, *args[1:], **kwargs) for plane in (x.re, x.im)]
    if node.target == aten.var.correction:
        return low.add(parts[0], parts[1])
    var = [low.emit(operator.getitem, p, 0) for p in parts]
    mean = [low.emit(operator.getitem, p, 1) for p in parts]
    return [low.add(var[0], var[1]), Cx(mean[0], mean[1])]


@rule(aten.log.default)
def _log(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    """log z = log |z| + i arg z."""
    x = args[0]
    if not isinstance(x, Cx):
        raise NoRule()
    magnitude = low.emit(aten.log.default, low.emit(aten.hypot.default, x.re, x.im))
    return low.finish(node, magnitude, low.emit(aten.atan2.default, x.im, x.re))


@rule(aten.sin.default, aten.cos.default, aten.sinh.default, aten.cosh.default)
def _trig(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    """sin(a + ib) = sin a cosh b + i cos a sinh b, cos(a + ib) = cos a cosh b - i sin a sinh b,
    sinh(a + ib) = sinh a cos b + i cosh a sin b, cosh(a + ib) = cosh a cos b + i sinh a sin b."""
    x = args[0]
    if not isinstance(x, Cx):
        raise NoRule()
    name = node.target._opname

    def f(op: Any, plane: torch.fx.Node) -> torch.fx.Node:
        return low.emit(op.default, plane)

    if name in ("sin", "cos"):
        sin, cos = f(aten.sin, x.re), f(aten.cos, x.re)
        sinh, cosh = f(aten.sinh, x.im), f(aten.cosh, x.im)
        if name == "sin":
            return low.finish(node, low.mul(sin, cosh), low.mul(cos, sinh))
        return low.finish(node, low.mul(cos, cosh), low.neg(low.mul(sin, sinh)))
    sinh, cosh = f(aten.sinh, x.re), f(aten.cosh, x.re)
    sin, cos = f(aten.sin, x.im), f(aten.cos, x.im)
    if name == "sinh":
        return low.finish(node, low.mul(sinh, cos), low.mul(cosh, sin))
    return low.finish(node, low.mul(cosh, cos), low.mul(sinh, sin))


@rule(aten.pow.Tensor_Scalar)
def _pow(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    """Integer powers 1 to 3 as products (eager's pow special-cases them the same way)."""
    x, exponent = args
    if not isinstance(x, Cx) or exponent not in (1, 2, 3) or isinstance(exponent, bool):
        raise NoRule()
    result = (x.re, x.im)
    for _ in range(int(exponent) - 1):
        result = _complex_product(low, result, (x.re, x.im))
    return low.finish(node, *result)


@rule(aten.isnan.default)
def _isnan(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> torch.fx.Node:
    x = args[0]
    return low.emit(
        aten.logical_or.default,
        low.emit(aten.isnan.default, x.re),
        low.emit(aten.isnan.default, x.im),
    )


# ---------------------------------------------------------------------------------------------
# Rules: construction and conversion


@rule(aten.view_as_real.default)
def _view_as_real(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Any:
    return low.pack(args[0])


@rule(aten.view_as_complex.default)
def _view_as_complex(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    return low.unpack(args[0])


@rule(aten.complex.default)
def _complex(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    return low.finish(node, args[0], args[1])


@rule(aten.polar.default)
def _polar(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    magnitude, angle = args
    re = low.mul(magnitude, low.emit(aten.cos.default, angle))
    im = low.mul(magnitude, low.emit(aten.sin.default, angle))
    return low.finish(node, re, im)


@rule(aten._to_copy.default)
def _to_copy(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Any:
    value = node.meta["val"]
    kwargs.pop("dtype", None)
    kwargs.pop("memory_format", None)
    if kwargs.get("device") is not None and torch.device(kwargs["device"]) != value.device:
        raise NoRule()
    re, im = low.parts(args[0])
    if is_complex(value):
        return low.finish(node, re, im)
    if value.dtype == torch.bool:  # nonzero in either part
        return low.emit(
            aten.logical_or.default,
            low.emit(aten.ne.Scalar, re, 0),
            low.emit(aten.ne.Scalar, im, 0),
        )
    return low.cast(re, value.dtype)  # eager discards the imaginary part


@rule(aten.full.default, aten.scalar_tensor.default, aten.full_like.default,
       aten.zeros_like.default, aten.ones_like.default, aten.zeros.default, aten.ones.default,
       aten.empty.memory_format, aten.empty_like.default, aten.fill.Scalar)  # fmt: skip
def _creation(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    value = node.meta["val"]
    if not is_complex(value):
        raise NoRule()
    name = node.target._opname
    fill: Any = 0
    if name in ("full", "full_like", "fill"):
        fill = args[1] if len(args) > 1 else kwargs["fill_value"]
    elif name == "scalar_tensor":
        fill = args[0]
    elif name.startswith("ones"):
        fill = 1
    if not isinstance(fill, (int, float, bool, complex)):
        raise NoRule()
    fill = complex(fill)
    dtype = real_dtype(value.dtype)
    return low.planes_like(fill.real, fill.imag, tuple(value.shape), dtype)
