"""Per-op tests: every supported ATen op, in fp32, bf16 and fp16, on odd shapes, against eager.

Each case is a small function whose graph (after Dynamo, AOTAutograd and the core-ATen
decompositions) contains the op it is named after (checked); it runs once per dtype with all of
its shapes in one compiled graph (e.g. 3x200, 130x7 and 1x1: none a multiple of 128).
Ops that the decompositions never leave in a graph (aten.t becomes aten.permute, ...) are
tested through a one-node FX graph given straight to the compiler (`ATEN_CASES`).

Error measure: max |compiled - eager| / max |eager| per output (models.relative_error), with
eager PyTorch in the same dtype as the reference. Tolerances:
  fp32 1e-5, bf16 1e-2, fp16 2e-3 (TOLERANCE), times `scale` for a few cases that say why;
  exact equality for data movement, comparisons, integer and boolean results (`exact`).
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
import torch.fx
import torch.nn.functional as F

import neuronsim
from models import relative_error
from neuronsim.compiler import compile_fx_graph
from neuronsim.options import resolve_options

A = torch.ops.aten
FP32, BF16, FP16 = torch.float32, torch.bfloat16, torch.float16
FLOATS = (FP32, BF16, FP16)
TOLERANCE = {FP32: 1e-5, BF16: 1e-2, FP16: 2e-3}
DTYPE_IDS = {FP32: "fp32", BF16: "bf16", FP16: "fp16", torch.bool: "bool", torch.int64: "i64"}

S2 = [(3, 200), (130, 7), (1, 1)]  # odd 2-D shapes
S3 = [(2, 3, 200), (1, 130, 7), (1, 1, 1)]
S4 = [(1, 3, 9, 11), (2, 5, 7, 7), (1, 1, 5, 5)]  # [N, C, H, W]
MM = [(3, 200, 5), (130, 7, 129), (1, 1, 1)]  # [M, K, N]
BMM = [(2, 3, 200, 5), (1, 130, 7, 129), (1, 1, 1, 1)]  # [B, M, K, N]


# --- Inputs -------------------------------------------------------------------------------------


def randn(*shape: int, dtype=FP32) -> torch.Tensor:
    return torch.randn(shape).to(dtype)


def positive(*shape: int, dtype=FP32) -> torch.Tensor:
    return (torch.rand(shape) * 2 + 0.1).to(dtype)


def nonzero(*shape: int, dtype=FP32) -> torch.Tensor:
    """|x| in [0.5, 1.5), random sign: safe as a divisor."""
    sign = torch.where(torch.rand(shape) < 0.5, -1.0, 1.0)
    return (sign * (torch.rand(shape) + 0.5)).to(dtype)


def integral(*shape: int, dtype=FP32) -> torch.Tensor:
    """Small integers as floats: comparisons see ties, results are exact in every dtype."""
    return torch.randint(-3, 4, shape).to(dtype)


def boolean(*shape: int, dtype=torch.bool) -> torch.Tensor:
    return torch.rand(shape) < 0.5


# Rounding edge cases: -0.0, halves (ties to even), a large integer, NaN, infinities, the
# largest float below 0.5 (x + 0.5 rounds up to 1.0 in fp32).
SPECIAL = [-0.0, 0.5, -2.5, 1e7, 1.5, -0.5, 2.5, float("nan"), float("inf"), -float("inf"), -0.7]
SPECIAL += [0.49999997]


def special(*shape: int, dtype=FP32) -> torch.Tensor:
    """randn * 4 with the SPECIAL values first (as many as fit)."""
    x = torch.randn(shape) * 4
    n = min(len(SPECIAL), x.numel())
    x.view(-1)[:n] = torch.tensor(SPECIAL[:n])
    return x.to(dtype)


def unit_integral(*shape: int, dtype=FP32) -> torch.Tensor:
    """-1, 0 or 1: products of any length are exact."""
    return torch.randint(-1, 2, shape).to(dtype)


def near_one(*shape: int, dtype=FP32) -> torch.Tensor:
    """[0.9, 1.1): products of a few hundred stay in range."""
    return (torch.rand(shape) * 0.2 + 0.9).to(dtype)


def _int_division_inputs(shape, dtype):
    """Dividends in [-20, 20], divisors +-1..5 (never 0), int64."""
    sign = torch.where(torch.rand(shape) < 0.5, -1, 1)
    return [torch.randint(-20, 21, shape), torch.randint(1, 6, shape) * sign]


def one(make):
    return lambda shape, dtype: [make(*shape, dtype=dtype)]


def two(make_a, make_b=None):
    make_b = make_b or make_a
    return lambda shape, dtype: [make_a(*shape, dtype=dtype), make_b(*shape, dtype=dtype)]


def _mm_inputs(shape, dtype):
    m, k, n = shape
    return [randn(m, k, dtype=dtype), randn(k, n, dtype=dtype)]


def _addmm_inputs(shape, dtype):
    m, k, n = shape
    return [randn(n, dtype=dtype), randn(m, k, dtype=dtype), randn(k, n, dtype=dtype)]


def _bmm_inputs(shape, dtype):
    b, m, k, n = shape
    return [randn(b, m, k, dtype=dtype), randn(b, k, n, dtype=dtype)]


def _conv_inputs(out_channels: int, kernel: int, groups: int = 1, bias: bool = True):
    def make(shape, dtype):
        n, c, h, w = shape
        c_in = c * groups  # channels divisible by groups
        inputs = [
            randn(n, c_in, h, w, dtype=dtype),
            (randn(out_channels * groups, c, kernel, kernel) / (c * kernel) ** 0.5).to(dtype),
        ]
        if bias:
            inputs.append(randn(out_channels * groups, dtype=dtype))
        return inputs

    return make


def _norm_inputs(shape, dtype):
    channels = shape[-1]
    return [
        randn(*shape, dtype=dtype),
        positive(channels, dtype=dtype),
        randn(channels, dtype=dtype),
    ]


def _batch_norm_inputs(shape, dtype):
    c = shape[1]
    return [
        randn(*shape, dtype=dtype),
        (0.5 * randn(c)).to(dtype),  # running mean
        positive(c, dtype=dtype),  # running var
        positive(c, dtype=dtype),  # weight
        randn(c, dtype=dtype),  # bias
    ]


def _gather_inputs(shape, dtype):
    """x [R, C], indices into dim 1 [R, 4] and into dim 0 [2, C] (with repeats)."""
    rows, cols = shape
    return [
        randn(rows, cols, dtype=dtype),
        torch.randint(0, cols, (rows, 4)),
        torch.randint(0, rows, (2, cols)),
    ]


def _group_norm_inputs(shape, dtype):
    c = shape[1]
    return [randn(*shape, dtype=dtype), positive(c, dtype=dtype), randn(c, dtype=dtype)]


def _embedding_inputs(shape, dtype):
    rows, cols = shape
    return [randn(rows, cols, dtype=dtype), torch.randint(0, rows, (2, 5))]


# --- Cases --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    op: str  # the ATen overload the graph must contain
    fn: Callable[..., Any]
    inputs: Callable[[tuple[int, ...], torch.dtype], list[torch.Tensor]]
    shapes: Sequence[tuple[int, ...]] = tuple(S2)
    dtypes: Sequence[torch.dtype] = FLOATS
    exact: bool = False
    scale: float = 1.0  # tolerance multiplier (the case says why)
    why: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def unary(op: str, fn, make=randn, scale=1.0, why="", id=None) -> Case:
    return Case(id or op.split(".")[1], op, fn, one(make), scale=scale, why=why)


def binary(op: str, fn, make_a=randn, make_b=None, id=None, exact=False) -> Case:
    return Case(id or op.removeprefix("aten."), op, fn, two(make_a, make_b), exact=exact)


def compare(name: str) -> list[Case]:
    tensor_fn = getattr(torch, name)
    return [
        Case(f"{name}.Tensor", f"aten.{name}.Tensor", tensor_fn, two(integral), exact=True),
        Case(
            f"{name}.Scalar",
            f"aten.{name}.Scalar",
            lambda x, f=tensor_fn: f(x, 1.0),
            one(integral),
            exact=True,
        ),
    ]


BOOL = (torch.bool,)
INT = (torch.int64,)
S4_GROUPS = [(1, 6, 9, 11), (2, 10, 7, 7), (1, 2, 5, 5)]  # channels split into 2 groups

CASES: list[Case] = [
    # Elementwise unary (Scalar engine activations unless noted)
    unary("aten.abs.default", torch.abs),
    unary("aten.neg.default", torch.neg),
    unary("aten.relu.default", torch.relu),
    unary("aten.sigmoid.default", torch.sigmoid),
    unary("aten.tanh.default", torch.tanh),
    unary("aten.exp.default", torch.exp),
    unary("aten.expm1.default", torch.expm1),
    unary("aten.erf.default", torch.erf),
    unary("aten.erfc.default", torch.erfc),
    unary("aten.sinh.default", torch.sinh),
    unary("aten.cosh.default", torch.cosh),
    unary("aten.tan.default", torch.tan, nonzero),
    unary("aten.log2.default", torch.log2, positive),
    unary("aten.log10.default", torch.log10, positive),
    unary("aten.atanh.default", torch.atanh, lambda *s, dtype=FP32: (torch.rand(s) * 1.8 - 0.9).to(dtype)),
    unary("aten.elu.default", F.elu),
    unary("aten.elu.default", lambda x: F.elu(x, alpha=0.5), id="elu_alpha"),
    unary("aten.sin.default", torch.sin),
    unary("aten.cos.default", torch.cos),
    unary("aten.gelu.default", F.gelu, id="gelu_erf"),
    unary("aten.gelu.default", lambda x: F.gelu(x, approximate="tanh"), id="gelu_tanh"),
    unary("aten.hardtanh.default", lambda x: F.hardtanh(x, -0.5, 0.7)),
    unary("aten.leaky_relu.default", lambda x: F.leaky_relu(x, 0.1)),
    unary("aten.reciprocal.default", torch.reciprocal, nonzero),
    unary("aten.log.default", torch.log, positive),
    unary("aten.log1p.default", torch.log1p, positive),
    unary("aten.sqrt.default", torch.sqrt, positive),
    unary("aten.rsqrt.default", torch.rsqrt, positive),
    unary("aten.clamp.default", lambda x: torch.clamp(x, -0.5, 0.7)),
    unary("aten.pow.Tensor_Scalar", lambda x: x**3, id="pow_cube"),
    unary("aten.pow.Tensor_Scalar", lambda x: x**0.5, positive, id="pow_half"),
    unary("aten.pow.Scalar", lambda x: 2.0**x, id="pow_scalar_base"),
    unary("aten.add.Scalar", lambda x: A.add.Scalar(x, 1.5)),
    unary("aten.sub.Scalar", lambda x: A.sub.Scalar(x, 1.5)),
    unary("aten.mul.Scalar", lambda x: A.mul.Scalar(x, 1.5)),
    unary("aten.div.Scalar", lambda x: A.div.Scalar(x, 1.5)),
    unary("aten.exp2.default", torch.exp2),
    # Rounding, sign, classification: exact, on SPECIAL values (signed zeros compare equal)
    Case("trunc", "aten.trunc.default", torch.trunc, one(special), exact=True),
    Case("floor", "aten.floor.default", torch.floor, one(special), exact=True),
    Case("ceil", "aten.ceil.default", torch.ceil, one(special), exact=True),
    Case("round", "aten.round.default", torch.round, one(special), exact=True),
    Case("sign", "aten.sign.default", torch.sign, one(special), exact=True),
    Case("isnan", "aten.isnan.default", torch.isnan, one(special), exact=True),
    Case("isinf", "aten.isinf.default", torch.isinf, one(special), exact=True),
    Case(
        "copysign.Tensor", "aten.copysign.Tensor", torch.copysign, two(special, randn), exact=True
    ),
    Case(
        "copysign.Scalar",
        "aten.copysign.Scalar",
        lambda x: torch.copysign(x, -1.0),
        one(special),
        exact=True,
    ),
    Case(
        "div_trunc",
        "aten.div.Tensor_mode",
        lambda x, y: (
            torch.div(x, y, rounding_mode="trunc"),
            torch.div(x, 3.7, rounding_mode="trunc"),
        ),
        two(special, nonzero),
        exact=True,
    ),
    # Integer division: floor and trunc, remainder (divisor's sign), fmod (dividend's sign)
    Case(
        "div_floor_int",
        "aten.div.Tensor_mode",
        lambda a, b: (
            a // b,
            torch.div(a, b, rounding_mode="trunc"),
            a // 3,
            torch.div(a, -3, rounding_mode="floor"),
        ),
        _int_division_inputs,
        dtypes=INT,
        exact=True,
    ),
    Case(
        "remainder.Tensor",
        "aten.remainder.Tensor",
        lambda a, b: a % b,
        _int_division_inputs,
        dtypes=INT,
        exact=True,
    ),
    Case(
        "remainder.Scalar",
        "aten.remainder.Scalar",
        lambda a, b: (a % 3, a % -4),
        _int_division_inputs,
        dtypes=INT,
        exact=True,
    ),
    Case(
        "fmod.Tensor",
        "aten.fmod.Tensor",
        torch.fmod,
        _int_division_inputs,
        dtypes=INT,
        exact=True,
    ),
    Case(
        "fmod.Scalar",
        "aten.fmod.Scalar",
        lambda a, b: (torch.fmod(a, 3), torch.fmod(a, -4)),
        _int_division_inputs,
        dtypes=INT,
        exact=True,
    ),
    # roll decomposes into positions (arange + shift) fmod n and an index_select
    Case(
        "roll",
        "aten.fmod.Scalar",
        lambda x: (torch.roll(x, 2, 1), torch.roll(x, -5)),
        one(randn),
        exact=True,
    ),
    # Elementwise binary (Vector engine)
    binary("aten.add.Tensor", lambda x, y: torch.add(x, y, alpha=2)),
    binary("aten.sub.Tensor", torch.sub),
    binary("aten.mul.Tensor", torch.mul),
    Case("mul.Tensor_broadcast", "aten.mul.Tensor", lambda x, y: x * y[:1], two(randn)),
    binary("aten.div.Tensor", torch.div, randn, nonzero),
    binary("aten.maximum.default", torch.maximum),
    binary("aten.minimum.default", torch.minimum),
    binary("aten.pow.Tensor_Tensor", lambda x, y: x ** (y * 0.5), positive, randn),
    binary("aten.clamp.Tensor", lambda x, y: torch.clamp(x, -y.abs(), y.abs())),
    binary("aten.where.self", lambda x, y: torch.where(x > 0, x, y), id="where"),
    binary("aten.copy.default", lambda x, y: A.copy.default(x, y * 2), id="copy"),
    Case(
        "fma",
        "prims.fma.default",
        lambda x, y, z: torch.ops.prims.fma(x, y, z),
        lambda shape, dtype: [randn(*shape, dtype=dtype) for _ in range(3)],
    ),
    # Comparisons (bool results)
    *[c for name in ("eq", "ne", "lt", "le", "gt", "ge") for c in compare(name)],
    # Boolean logic
    Case(
        "logical_and",
        "aten.logical_and.default",
        torch.logical_and,
        two(boolean),
        dtypes=BOOL,
        exact=True,
    ),
    Case(
        "logical_or",
        "aten.logical_or.default",
        torch.logical_or,
        two(boolean),
        dtypes=BOOL,
        exact=True,
    ),
    Case(
        "logical_not",
        "aten.logical_not.default",
        torch.logical_not,
        one(boolean),
        dtypes=BOOL,
        exact=True,
    ),
    Case(
        "bitwise_and",
        "aten.bitwise_and.Tensor",
        lambda a, b: a & b,
        two(boolean),
        dtypes=BOOL,
        exact=True,
    ),
    Case(
        "bitwise_or",
        "aten.bitwise_or.Tensor",
        lambda a, b: a | b,
        two(boolean),
        dtypes=BOOL,
        exact=True,
    ),
    Case(
        "bitwise_not",
        "aten.bitwise_not.default",
        lambda a: ~a,
        one(boolean),
        dtypes=BOOL,
        exact=True,
    ),
    Case(
        "any.dim",
        "aten.any.dim",
        lambda a: (a.any(dim=1), a.any(dim=0)),
        one(boolean),
        dtypes=BOOL,
        exact=True,
    ),
    Case(
        "any.dims",
        "aten.any.dims",
        lambda a: torch.any(a, dim=(0, 1)),
        one(boolean),
        dtypes=BOOL,
        exact=True,
    ),
    Case(
        "any.default",
        "aten.any.default",
        lambda a: a.any(),
        one(boolean),
        dtypes=BOOL,
        exact=True,
    ),
    # Reductions (Vector engine)
    Case(
        "argmax.default",
        "aten.argmax.default",
        lambda x: (x.argmax(dim=-1), x.argmax(dim=0, keepdim=True), x.argmax()),
        one(randn),
        exact=True,
    ),
    Case(
        "max.dim",
        "aten.max.dim",
        lambda x: tuple(x.max(dim=-1)),
        one(randn),
        exact=True,
    ),
    Case(
        "argmin.default",
        "aten.argmin.default",
        lambda x: (x.argmin(dim=-1), x.argmin(dim=0, keepdim=True), x.argmin()),
        one(randn),
        exact=True,
    ),
    Case(
        "min.dim",
        "aten.min.dim",
        lambda x: tuple(x.min(dim=-1)),
        one(randn),
        exact=True,
    ),
    Case(
        "sum.dim_IntList",
        "aten.sum.dim_IntList",
        lambda x: (x.sum(-1), x.sum(0, keepdim=True)),
        one(randn),
        scale=2,
        why="summation order",
    ),
    Case(
        "mean.default",
        "aten.mean.default",
        lambda x: x.mean(),
        one(randn),
        scale=2,
        why="summation order",
    ),
    Case(
        "mean.dim",
        "aten.mean.dim",
        lambda x: (x.mean(-1, keepdim=True), x.mean(0)),
        one(randn),
        scale=2,
        why="summation order",
    ),
    Case(
        "amax",
        "aten.amax.default",
        lambda x: (torch.amax(x, -1), torch.amax(x, 0)),
        one(randn),
        exact=True,
    ),
    Case(
        "amin",
        "aten.amin.default",
        lambda x: (torch.amin(x, -1), torch.amin(x, 0)),
        one(randn),
        exact=True,
    ),
    Case("max", "aten.max.default", lambda x: x.max(), one(randn), exact=True),
    Case("min", "aten.min.default", lambda x: x.min(), one(randn), exact=True),
    Case(
        "var_mean.correction",
        "aten.var_mean.correction",
        lambda x: (*torch.var_mean(x, -1), *torch.var_mean(x, 0, correction=0, keepdim=True)),
        one(randn),
        scale=4,
        why="two-pass variance, summation order",
    ),
    Case(
        "var.correction",
        "aten.var.correction",
        lambda x: (x.var(-1), x.var(0, correction=0)),
        one(randn),
        scale=4,
        why="two-pass variance, summation order",
    ),
    Case(
        "softmax",
        "aten._softmax.default",
        lambda x: (F.softmax(x, -1), F.softmax(x, 0)),
        one(randn),
        scale=2,
        why="exp then normalise",
    ),
    Case(
        "log_softmax",
        "aten._log_softmax.default",
        lambda x: (F.log_softmax(x, -1), F.log_softmax(x, 0)),
        one(randn),
        scale=2,
        why="exp, log and sum",
    ),
    Case(
        "softmax_3d",
        "aten._softmax.default",
        lambda x: F.softmax(x, -1),
        one(randn),
        shapes=S3,
        scale=2,
        why="exp then normalise",
    ),
    Case(
        "cumsum",
        "aten.cumsum.default",
        lambda x: (torch.cumsum(x, -1), torch.cumsum(x, 0)),
        one(randn),
        scale=4,
        why="prefix sums by matmul",
    ),
    Case(
        "prod.dim_int",
        "aten.prod.dim_int",
        lambda x: (x.prod(-1), x.prod(0, keepdim=True)),
        one(unit_integral),
        exact=True,
    ),
    Case("prod.default", "aten.prod.default", lambda x: x.prod(), one(unit_integral), exact=True),
    Case(
        "prod_float",
        "aten.prod.dim_int",
        lambda x: (x.prod(-1), x.prod(0)),
        one(near_one),
        shapes=[(3, 20), (13, 7), (1, 1)],
        scale=4,
        why="product order; eager multiplies bf16 rows in bf16, 6% off over 200 values",
    ),
    Case(
        "prod_int",
        "aten.prod.dim_int",
        lambda x: (x.prod(-1), x.prod()),
        one(integral),
        dtypes=INT,
        exact=True,
    ),
    Case(
        "linalg_vector_norm",
        "aten.linalg_vector_norm.default",
        lambda x: (
            torch.linalg.vector_norm(x, dim=-1),
            torch.linalg.vector_norm(x, 1, dim=0),
            x.norm(),
            torch.linalg.vector_norm(x, float("inf"), dim=-1),
            torch.linalg.vector_norm(x, 3, dim=-1, keepdim=True),
        ),
        one(randn),
        scale=4,
        why="sums of squares or powers, sqrt",
    ),
    # Normalisation
    Case(
        "group_norm",
        "aten.native_group_norm.default",
        lambda x, w, b: (F.group_norm(x, 2, w, b), F.group_norm(x, x.shape[1])),
        _group_norm_inputs,
        shapes=S4_GROUPS,
        scale=4,
        why="mean, variance, rsqrt",
    ),
    Case(
        "layer_norm",
        "aten.native_layer_norm.default",
        lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, 1e-5),
        _norm_inputs,
        shapes=[(3, 200), (130, 7), (2, 3, 5)],
        scale=4,
        why="mean, variance, rsqrt",
    ),
    Case(
        "batch_norm_eval",
        "aten._native_batch_norm_legit_no_training.default",
        lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=False),
        _batch_norm_inputs,
        shapes=S4,
        scale=2,
        why="rsqrt of the variance",
    ),
    Case(
        "batch_norm_train",
        "aten._native_batch_norm_legit_functional.default",
        lambda x, m, v, w, b: F.batch_norm(x, m.clone(), v.clone(), w, b, training=True),
        _batch_norm_inputs,
        shapes=S4,
        scale=4,
        why="batch statistics",
    ),
    # Matmul (Tensor engine, fp32 accumulation)
    Case(
        "mm", "aten.mm.default", torch.mm, _mm_inputs, shapes=MM, scale=4, why="accumulation order"
    ),
    Case(
        "addmm",
        "aten.addmm.default",
        lambda b, x, w: torch.addmm(b, x, w),
        _addmm_inputs,
        shapes=MM,
        scale=4,
        why="accumulation order",
    ),
    Case(
        "bmm",
        "aten.bmm.default",
        torch.bmm,
        _bmm_inputs,
        shapes=BMM,
        scale=4,
        why="accumulation order",
    ),
    # Convolution (implicit GEMM on the Tensor engine) and pooling
    Case(
        "conv3x3_pad1",
        "aten.convolution.default",
        lambda x, w, b: F.conv2d(x, w, b, padding=1),
        _conv_inputs(4, 3),
        shapes=S4,
        scale=4,
        why="accumulation order",
    ),
    Case(
        "conv3x3_stride2",
        "aten.convolution.default",
        lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
        _conv_inputs(6, 3),
        shapes=S4,
        scale=4,
        why="accumulation order",
    ),
    Case(
        "conv1x1_stride2",
        "aten.convolution.default",
        lambda x, w: F.conv2d(x, w, stride=2),
        _conv_inputs(3, 1, bias=False),
        shapes=S4,
        scale=4,
        why="accumulation order",
    ),
    Case(
        "conv_patch",
        "aten.convolution.default",
        lambda x, w, b: F.conv2d(x, w, b, stride=2),
        _conv_inputs(5, 2),
        shapes=S4,
        scale=4,
        why="accumulation order",
    ),
    Case(
        "conv_groups",
        "aten.convolution.default",
        lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=2),
        _conv_inputs(2, 3, groups=2),
        shapes=S4,
        scale=4,
        why="accumulation order",
    ),
    Case(
        "conv_dilation",
        "aten.convolution.default",
        lambda x, w, b: F.conv2d(x, w, b, padding=2, dilation=2),
        _conv_inputs(3, 3),
        shapes=S4,
        scale=4,
        why="accumulation order",
    ),
    Case(
        "max_pool2d",
        "aten.max_pool2d_with_indices.default",
        lambda x: F.max_pool2d(x, 3, stride=2, padding=1),
        one(randn),
        shapes=S4,
        exact=True,
    ),
    Case(
        "max_pool2d_indices",
        "aten.max_pool2d_with_indices.default",
        lambda x: F.max_pool2d(x, 2, return_indices=True),
        one(randn),
        shapes=S4,
        exact=True,
    ),
    Case(
        "avg_pool2d",
        "aten.avg_pool2d.default",
        lambda x: (
            F.avg_pool2d(x, 3, stride=2, padding=1),
            F.avg_pool2d(x, 2, count_include_pad=False),
        ),
        one(randn),
        shapes=S4,
        scale=2,
        why="window sums",
    ),
    # (output sizes that divide the input's: the compiler's documented limit)
    Case(
        "adaptive_avg_pool2d",
        "aten._adaptive_avg_pool2d.default",
        lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
        one(randn),
        shapes=[(1, 3, 9, 12), (2, 5, 6, 6), (1, 1, 3, 4)],
        scale=2,
        why="window sums",
    ),
    # Data movement (DMA): exact
    Case(
        "cat",
        "aten.cat.default",
        lambda x, y: (torch.cat([x, y], 0), torch.cat([y, x, y], 1)),
        two(randn),
        exact=True,
    ),
    Case(
        "constant_pad_nd",
        "aten.constant_pad_nd.default",
        lambda x: F.pad(x, (1, 2, 0, 3), value=0.5),
        one(randn),
        exact=True,
    ),
    Case(
        "expand",
        "aten.expand.default",
        lambda x: x[:, :1].expand(-1, 9) * 2,
        one(randn),
        exact=True,
    ),
    Case(
        "permute",
        "aten.permute.default",
        lambda x: x.permute(2, 0, 1) * 2,
        one(randn),
        shapes=S3,
        exact=True,
    ),
    Case(
        "slice", "aten.slice.Tensor", lambda x: (x[:, 1::2] * 2, x[-2:] * 2), one(randn), exact=True
    ),
    Case("select", "aten.select.int", lambda x: (x[:, 0] * 2, x[-1] * 2), one(randn), exact=True),
    Case(
        "split_with_sizes",
        "aten.split_with_sizes.default",
        lambda x: [t * 2 for t in x.split([1, x.shape[1] - 1], 1)],
        one(randn),
        shapes=[(3, 200), (130, 7)],
        exact=True,
    ),
    Case(
        "squeeze.dims",
        "aten.squeeze.dims",
        lambda x: x[None, :, None].squeeze((0, 2)) * 2,
        one(randn),
        exact=True,
    ),
    Case(
        "unsqueeze", "aten.unsqueeze.default", lambda x: x.unsqueeze(1) * 2, one(randn), exact=True
    ),
    Case("view", "aten.view.default", lambda x: (x * 2).view(-1), one(randn), exact=True),
    Case("clone", "aten.clone.default", lambda x: x.t().contiguous() * 2, one(randn), exact=True),
    Case("alias", "aten.alias.default", lambda x: x.detach() * 2, one(randn), exact=True),
    Case(
        "lift_fresh_copy",
        "aten.lift_fresh_copy.default",
        lambda x: x + torch.tensor([0.5]).to(x.dtype),
        one(integral),
        exact=True,
    ),
    Case(
        "to_copy",
        "aten._to_copy.default",
        lambda x: (
            x.to(torch.float32),
            x.to(torch.bfloat16),
            x.to(torch.int32),
            (x > 0).to(x.dtype),
        ),
        one(integral),
        exact=True,
    ),
    Case(
        "to_copy_round",
        "aten._to_copy.default",
        lambda x: x.to(torch.float16 if x.dtype != torch.float16 else torch.bfloat16),
        one(randn),
        scale=100,
        why="rounding to a narrower type: within one ulp of bf16/fp16",
    ),
    Case(
        "flip",
        "aten.flip.default",
        lambda x: (torch.flip(x, [0, 1]), torch.flip(x, [-1])),
        one(randn),
        exact=True,
    ),
    Case(
        "flip_3d",
        "aten.flip.default",
        lambda x: torch.flip(x, [0, 2]),
        one(randn),
        shapes=S3,
        exact=True,
    ),
    Case("repeat", "aten.repeat.default", lambda x: x.repeat(2, 1, 3), one(randn), exact=True),
    Case(
        "diagonal",
        "aten.diagonal.default",
        lambda x: (torch.diagonal(x) * 2, torch.diagonal(x, 1) * 2, torch.diagonal(x, -1) * 2),
        one(randn),
        shapes=[(3, 200), (130, 7), (2, 2)],
        exact=True,
    ),
    Case(
        "diagonal_3d",
        "aten.diagonal.default",
        lambda x: torch.diagonal(x, 1, 2, 0) * 2,
        one(randn),
        shapes=[(2, 3, 200), (3, 130, 7), (2, 1, 1)],  # non-empty diagonals
        exact=True,
    ),
    # Integer index tensors on the leading dims, negative ones included
    Case(
        "index.Tensor",
        "aten.index.Tensor",
        lambda x: (
            x[torch.tensor([0, -1, 0])],
            x[torch.tensor([[0], [-1]]), torch.tensor([0, -1])],
        ),
        one(randn),
        exact=True,
    ),
    Case(
        "embedding",
        "aten.embedding.default",
        lambda w, i: F.embedding(i, w),
        _embedding_inputs,
        exact=True,
    ),
    Case(
        "index_select",
        "aten.index_select.default",
        lambda x: (
            torch.index_select(x, 0, torch.tensor([0, 0])),
            torch.index_select(x, 1, torch.tensor([0])),
        ),
        one(randn),
        exact=True,
    ),
    # accumulate=True (what embedding backward uses), with a repeated index
    Case(
        "index_put",
        "aten.index_put.default",
        lambda x, y: x.index_put(
            (torch.tensor([0, 0]),), torch.cat([y[:1], 2 * y[:1]]), accumulate=True
        ),
        two(integral),
        exact=True,
    ),
    Case(
        "gather",
        "aten.gather.default",
        lambda x, i, j: (torch.gather(x, 1, i), torch.gather(x, 0, j)),
        _gather_inputs,
        exact=True,
    ),
    Case(
        "scatter.value",
        "aten.scatter.value",
        lambda x, i, j: (x.scatter(1, i, 0.5), x.scatter(0, j, -2.0)),
        _gather_inputs,
        exact=True,
    ),
    # Factories (constants)
    Case(
        "arange",
        "aten.arange.start_step",
        lambda x: x + torch.arange(x.shape[-1], dtype=x.dtype),
        one(integral),
        exact=True,
    ),
    Case(
        "full",
        "aten.full.default",
        lambda x: x + torch.full(x.shape, 2.0, dtype=x.dtype),
        one(integral),
        exact=True,
    ),
    Case(
        "full_like",
        "aten.full_like.default",
        lambda x: torch.full_like(x, 2.0) * x,
        one(integral),
        exact=True,
    ),
    # empty's contents are undefined; fill_ overwrites them
    Case(
        "empty",
        "aten.empty.memory_format",
        lambda x: torch.empty(x.shape, dtype=x.dtype).fill_(0) + x,
        one(randn),
        exact=True,
    ),
    Case(
        "empty_like",
        "aten.empty_permuted.default",
        lambda x: torch.empty_like(x).fill_(1) + x,
        one(randn),
        exact=True,
    ),
    Case(
        "empty_strided",
        "aten.empty_strided.default",
        lambda x: torch.empty_strided(x.shape, x.stride(), dtype=x.dtype).fill_(2) * x,
        one(randn),
        exact=True,
    ),
    Case(
        "scalar_tensor",
        "aten.scalar_tensor.default",
        lambda x: x.masked_fill(x > 0, -1.0),
        one(integral),
        exact=True,
    ),
]


# Ops the decompositions never leave in a graph: a one-node FX graph each, straight to the
# compiler. (target, args builder given the input tensors, inputs)
@dataclass(frozen=True)
class AtenCase:
    op: Any
    args: Callable[..., tuple[Any, ...]]
    inputs: Callable[[tuple[int, ...], torch.dtype], list[torch.Tensor]]
    shapes: Sequence[tuple[int, ...]] = tuple(S2)
    exact: bool = True

    @property
    def id(self) -> str:
        return str(self.op).removeprefix("aten.")


ATEN_CASES = [
    AtenCase(A.silu.default, lambda x: (x,), one(randn), exact=False),
    AtenCase(A.t.default, lambda x: (x,), one(randn)),
    AtenCase(A.transpose.int, lambda x: (x, 0, 1), one(randn)),
    AtenCase(A.reshape.default, lambda x: (x, [-1]), one(randn)),
    AtenCase(A._unsafe_view.default, lambda x: (x, [x.shape[1], x.shape[0]]), one(randn)),
    AtenCase(A.squeeze.default, lambda x: (x,), one(randn), shapes=[(1, 200), (130, 1), (1, 1)]),
    AtenCase(A.squeeze.dim, lambda x: (x, 0), one(randn), shapes=[(1, 200), (1, 7)]),
    AtenCase(A.detach.default, lambda x: (x,), one(randn)),
    AtenCase(A.split.Tensor, lambda x: (x, 2, 0), one(randn), shapes=[(3, 200), (130, 7)]),
    AtenCase(A.clamp_min.default, lambda x: (x, -0.5), one(randn)),
    AtenCase(A.clamp_max.default, lambda x: (x, 0.5), one(randn)),
    AtenCase(A.rsub.Scalar, lambda x: (x, 2.0), one(integral)),
    AtenCase(A.sum.default, lambda x: (x,), one(integral)),
    AtenCase(A.arange.default, lambda x: (x.shape[1],), one(randn)),
    AtenCase(A.arange.start, lambda x: (2, x.shape[1] + 2), one(randn)),
    AtenCase(A.fill.Scalar, lambda x: (x, 2.5), one(randn)),
]

# Ops only backward graphs contain: compiled with a training step, gradients compared.
TRAINING_OPS = {
    "aten.convolution_backward.default",
    "aten.max_pool2d_with_indices_backward.default",
}


# --- Harness ------------------------------------------------------------------------------------


@pytest.fixture
def graph_ops(monkeypatch) -> set[str]:
    """The ATen targets of every graph the backend compiles during the test."""
    import neuronsim.backend as backend

    seen: set[str] = set()
    original = backend.check_supported

    def record(gm):
        seen.update(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
        return original(gm)

    monkeypatch.setattr(backend, "check_supported", record)
    return seen


def _flat(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    return [t for item in value for t in _flat(item)]


def _check(actual: Any, expected: Any, tolerance: float, exact: bool, where: str) -> None:
    actual, expected = _flat(actual), _flat(expected)
    assert len(actual) == len(expected), where
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        what = f"{where}, output {i}"
        assert a.dtype == e.dtype and a.shape == e.shape, (
            f"{what}: {a.dtype}{list(a.shape)} != eager {e.dtype}{list(e.shape)}"
        )
        if e.is_floating_point():
            nan = e.isnan()
            assert torch.equal(a.isnan(), nan), f"{what}: NaN where eager has none, or not NaN"
            a, e = a[~nan], e[~nan]
        if exact or not e.is_floating_point():
            mismatches = int((a != e).sum())
            assert mismatches == 0, f"{what}: {mismatches} of {e.numel()} elements differ"
        elif e.numel():
            error = relative_error(a, e)
            assert error <= tolerance, f"{what}: relative error {error:.3g} > {tolerance:.3g}"


def _params():
    for case in CASES:
        for dtype in case.dtypes:
            yield pytest.param(case, dtype, id=f"{case.id}-{DTYPE_IDS[dtype]}")


@pytest.mark.parametrize(("case", "dtype"), list(_params()))
def test_op(case: Case, dtype: torch.dtype, graph_ops: set[str]):
    inputs = [case.inputs(shape, dtype) for shape in case.shapes]
    counts = [len(i) for i in inputs]

    def all_shapes(*flat):
        results, start = [], 0
        for n in counts:
            results.append(case.fn(*flat[start : start + n]))
            start += n
        return results

    flat = [t for group in inputs for t in group]
    with torch.no_grad(), warnings.catch_warnings():
        # var over one element is NaN (tested); eager warns about it
        warnings.filterwarnings("ignore", message="var\\(\\): degrees of freedom")
        expected = all_shapes(*flat)
        actual = torch.compile(all_shapes, backend="neuron", dynamic=False)(*flat)
    assert case.op in graph_ops, f"the graph has no {case.op}; it has {sorted(graph_ops)}"
    tolerance = TOLERANCE.get(dtype, 0.0) * case.scale
    for shape, a, e in zip(case.shapes, actual, expected, strict=True):
        _check(a, e, tolerance, case.exact, f"{case.id} {DTYPE_IDS[dtype]} shape {list(shape)}")


def _single_op_graph(case: AtenCase, tensors: list[torch.Tensor]) -> torch.fx.GraphModule:
    graph = torch.fx.Graph()
    placeholders = []
    for i, tensor in enumerate(tensors):
        placeholder = graph.placeholder(f"x{i}")
        placeholder.meta["val"] = tensor
        placeholders.append(placeholder)
    by_id = {id(t): p for t, p in zip(tensors, placeholders, strict=True)}
    args = torch.utils._pytree.tree_map_only(
        torch.Tensor, lambda t: by_id[id(t)], case.args(*tensors)
    )
    node = graph.call_function(case.op, args)
    value = case.op(*case.args(*tensors))
    node.meta["val"] = value
    if isinstance(value, (list, tuple)):
        outputs = []
        for i, item in enumerate(value):
            getitem = graph.call_function(operator.getitem, (node, i))
            getitem.meta["val"] = item
            outputs.append(getitem)
        graph.output(tuple(outputs))
    else:
        graph.output((node,))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


@pytest.mark.parametrize("dtype", FLOATS, ids=[DTYPE_IDS[d] for d in FLOATS])
@pytest.mark.parametrize("case", ATEN_CASES, ids=lambda c: c.id)
def test_op_without_decompositions(case: AtenCase, dtype: torch.dtype):
    options = resolve_options(None)
    for shape in case.shapes:
        tensors = case.inputs(shape, dtype)
        gm = _single_op_graph(case, tensors)
        expected = gm(*tensors)
        actual = compile_fx_graph(gm, tensors, options)(list(tensors))
        tolerance = TOLERANCE[dtype] * (1 if case.exact else 2)
        _check(actual, expected, tolerance, case.exact, f"{case.id} {DTYPE_IDS[dtype]} {shape}")


class ConvPool(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.max_pool2d(torch.relu(self.conv(x)), 2, stride=2, padding=1)


class ConvPoolGroupNorm(ConvPool):
    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.GroupNorm(2, 4)
        torch.nn.init.normal_(self.norm.weight)
        torch.nn.init.normal_(self.norm.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(super().forward(x))


def test_training_ops(graph_ops):
    """convolution_backward, max_pool2d_with_indices_backward, and group norm (whose
    backward the core decompositions expand): gradients match eager (fp32)."""
    model, x = ConvPoolGroupNorm(), torch.randn(2, 3, 9, 11)
    reference = ConvPoolGroupNorm()
    reference.load_state_dict(model.state_dict())
    x_ref = x.clone().requires_grad_()
    x.requires_grad_()
    (torch.compile(model, backend="neuron", dynamic=False)(x) ** 2).sum().backward()
    (reference(x_ref) ** 2).sum().backward()
    assert TRAINING_OPS <= graph_ops, sorted(graph_ops)
    assert relative_error(x.grad, x_ref.grad) <= 4 * TOLERANCE[FP32]
    for (name, p), q in zip(model.named_parameters(), reference.parameters(), strict=True):
        assert relative_error(p.grad, q.grad) <= 4 * TOLERANCE[FP32], name


# Ops whose tests need more than one process or a statistical check, in their own files.
TESTED_ELSEWHERE = {
    # test_collective_program.py: every kind across 2 ranks, fp32 and bf16
    "_c10d_functional.all_gather_into_tensor.default",
    "_c10d_functional.all_gather_into_tensor_coalesced.default",
    "_c10d_functional.all_reduce.default",
    "_c10d_functional.all_reduce_coalesced.default",
    "_c10d_functional.all_to_all_single.default",
    "_c10d_functional.reduce_scatter_tensor.default",
    "_c10d_functional.reduce_scatter_tensor_coalesced.default",
    "_c10d_functional.wait_tensor.default",
    # test_round_with_decimals_matches_eager_exactly (this file)
    "aten.round.decimals",
    # test_scan_ops.py: values, indices, NaN, inf and ties; gradients
    "aten.cummax.default",
    "aten.cummin.default",
    "aten.cumprod.default",
    "aten.logcumsumexp.default",
    # test_random_ops.py: distributions, seeds, dropout in training
    "aten.bernoulli.default",
    "aten.bernoulli.p",
    "aten.native_dropout.default",
    "aten.rand.default",
    "aten.rand_like.default",
    "aten.randn.default",
    "aten.randn_like.default",
    "aten.uniform.default",
    # test_sort_ops.py: sorting networks against eager (ties, NaN, dims, dtypes, MoE top-2)
    "aten.kthvalue.default",
    "aten.median.default",
    "aten.median.dim",
    "aten.mode.default",
    "aten.nanmedian.default",
    "aten.nanmedian.dim",
    "aten.sort.default",
    "aten.sort.stable",
    "aten.topk.default",
    # test_more_ops.py: strided views and scatters, inverse trig, hypot, fmin/fmax, xor
    "aten.acos.default",
    "aten.acosh.default",
    "aten.as_strided.default",
    "aten.as_strided_copy.default",
    "aten.as_strided_scatter.default",
    "aten.asin.default",
    "aten.asinh.default",
    "aten.atan.default",
    "aten.atan2.default",
    "aten.diagonal_scatter.default",
    "aten.fmax.default",
    "aten.fmin.default",
    "aten.hypot.default",
    "aten.logical_xor.default",
    "aten.narrow_copy.default",
    "aten.permute_copy.default",
    "aten.select_scatter.default",
    "aten.slice_scatter.default",
    "aten.unbind_copy.int",
    "aten.unfold.default",
    "aten.view_copy.default",
    # test_indexing_ops.py: indirect DMA scatters (index_put's other forms, embedding_bag)
    "aten._embedding_bag.default",
    "aten._embedding_bag_backward.default",
    "aten._embedding_bag_dense_backward.default",
    "aten._embedding_bag_forward_only.default",
    "aten._embedding_bag_per_sample_weights_backward.default",
    "aten.index_reduce.default",
    "aten.put.default",
    "aten.scatter.reduce",
    "aten.scatter.src",
    "aten.scatter.value_reduce",
    "aten.scatter_add.default",
    "aten.scatter_reduce.two",
    "aten.masked_scatter.default",
    "aten.histc.default",
    "aten.searchsorted.Tensor",
    "aten.bucketize.Tensor",
    # test_conv_pool_ops.py: convolutions, pooling and batch norm variants, forward and backward
    "aten._adaptive_avg_pool2d_backward.default",
    "aten._adaptive_avg_pool3d.default",
    "aten._adaptive_avg_pool3d_backward.default",
    "aten._batch_norm_with_update_functional.default",
    "aten._native_batch_norm_legit.no_stats",
    "aten._trilinear.default",
    "aten._upsample_bilinear2d_aa.default",
    "aten._upsample_bilinear2d_aa_backward.default",
    "aten.adaptive_max_pool2d.default",
    "aten.adaptive_max_pool2d_backward.default",
    "aten.adaptive_max_pool3d.default",
    "aten.adaptive_max_pool3d_backward.default",
    "aten.avg_pool2d_backward.default",
    "aten.avg_pool3d.default",
    "aten.avg_pool3d_backward.default",
    "aten.grid_sampler_2d.default",
    "aten.max_pool3d_with_indices.default",
    "aten.max_pool3d_with_indices_backward.default",
    # test_kernels.py: custom tile kernels, eagerly and inside compiled graphs
    "neuronsim.kernel.default",
}


def test_every_supported_op_has_a_test():
    tested = (
        {c.op for c in CASES} | {str(c.op) for c in ATEN_CASES} | TRAINING_OPS | TESTED_ELSEWHERE
    )
    missing = sorted(set(neuronsim.supported_ops()) - tested)
    assert not missing, f"supported ops without a case in test_ops.py: {missing}"


def test_float64_runs_as_float32_with_one_warning():
    """Several graphs and ops in float64: one warning in all; outputs come back as float64."""

    def first(x, y):
        return torch.softmax(x @ y, -1) + torch.tanh(x).sum()

    def second(x):
        return torch.exp(x) * 3.0

    x, y = torch.randn(3, 200, dtype=torch.float64), torch.randn(200, 5, dtype=torch.float64)
    with torch.no_grad(), warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        a = torch.compile(first, backend="neuron", dynamic=False)(x, y)
        b = torch.compile(second, backend="neuron", dynamic=False)(x)
    messages = [str(w.message) for w in record if "float64" in str(w.message)]
    assert len(messages) == 1, messages
    assert "run as float32" in messages[0]
    assert a.dtype == b.dtype == torch.float64
    # float32 accuracy, not float64's
    assert relative_error(a, first(x, y)) <= 1e-5
    assert relative_error(b, second(x)) <= 1e-5


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (
            lambda x, y: x[torch.tensor([0, 1]), :, torch.tensor([1, 2])],
            "indexed dims separated by a skipped dim is not supported",
        ),
    ],
    ids=["index_separated_dims"],
)
def test_unsupported_variants_fail_clearly(fn, message):
    """Variants without an exact lowering fail compilation naming the op, not run wrong."""
    x, y = randn(3, 5), nonzero(3, 5)
    if "separated" in message:
        x = randn(3, 4, 5)
    with pytest.raises(neuronsim.NeuronCompileError, match=message) as info:
        torch.compile(fn, backend="neuron", dynamic=False)(x, y)
    assert "aten." in str(info.value)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_index_with_skipped_dims_and_nearest_upsampling(dtype):
    """x[:, i], x[..., i, j] and nearest F.interpolate (which decomposes into index.Tensor
    with None for the batch and channel dims) match eager exactly."""
    x = torch.randn(2, 7, 5, 6).to(dtype)
    i, j = torch.tensor([3, -1, 0]), torch.tensor([[1], [4]])
    cases = [
        lambda x: x[:, i],
        lambda x: x[:, :, j, torch.tensor([0, 5, 2])],
        lambda x: torch.nn.functional.interpolate(x, scale_factor=2, mode="nearest"),
        lambda x: torch.nn.functional.interpolate(x, size=(9, 4), mode="nearest"),
    ]
    for fn in cases:
        torch._dynamo.reset()
        got = torch.compile(fn, backend="neuron", dynamic=False)(x)
        assert torch.equal(got, fn(x))


def test_index_tensor_checks_each_index():
    """x[i, j] with j out of range for dim 1 while i * 3 + j is inside x: raises on the
    device, as eager raises, instead of reading another row's element."""
    fn = torch.compile(lambda x: x[torch.tensor([1, 0]), torch.tensor([0, 3])], backend="neuron")
    message = r"index 3 .* outside the table's 3 rows"
    with pytest.raises(neuronsim.NeuronRuntimeError, match=message):
        fn(torch.randn(5, 3))


def _division_operands(dtype):
    """Dividends and divisors that reach every branch of floor division and the remainders:
    signs, exact multiples, zero and -0.0 dividends, tiny quotients, large quotients whose
    floor is off by one in naive arithmetic, zero divisors and infinities."""
    a = torch.tensor(
        [7.5, -7.5, 7.5, -7.5, 6.0, -6.0, 0.0, -0.0, 1e-30, -1e-30, 1e30, 5.3, -5.3, 1.0,
         -1.0, 0.0, float("inf"), 3.0, -3.0, 0.7],
        dtype=torch.float32,
    )
    b = torch.tensor(
        [2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 2.0, -2.0, 3.0, 3.0, 0.1, 0.1, 0.1, 0.0, 0.0, 0.0,
         2.0, float("inf"), float("inf"), -0.3],
        dtype=torch.float32,
    )
    torch.manual_seed(0)
    a = torch.cat([a, torch.randn(200) * 100])
    b = torch.cat([b, torch.randn(200) * 3])
    return a.to(dtype), b.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize(
    "fn",
    [
        lambda a, b: a // b,
        lambda a, b: torch.div(a, b, rounding_mode="floor"),
        lambda a, b: a % b,
        lambda a, b: torch.fmod(a, b),
        lambda a, b: torch.remainder(a, 0.75),
        lambda a, b: torch.fmod(a, -0.75),
        lambda a, b: torch.div(a, 0.3, rounding_mode="floor"),
    ],
    ids=["floordiv", "div_floor", "remainder", "fmod", "remainder_scalar", "fmod_scalar",
         "div_floor_scalar"],
)
def test_float_floor_division_and_remainders_match_eager_exactly(fn, dtype):
    """Float floor division, remainder and fmod match eager bit for bit (signed zeros, inf
    and NaN included): the Vector engine's remainder ops are exact, and floor division is
    built from fmod the way eager computes it."""
    a, b = _division_operands(dtype)
    expected = fn(a, b)
    actual = torch.compile(fn, backend="neuron", dynamic=False)(a, b)
    assert actual.dtype == expected.dtype
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)
    same_sign = torch.signbit(actual[expected == 0]) == torch.signbit(expected[expected == 0])
    assert bool(same_sign.all())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("decimals", [0, 1, 3, -1, -3])
def test_round_with_decimals_matches_eager_exactly(decimals, dtype):
    """round(x, decimals) scales by the float 10^|decimals| in fp32 as eager does, so halves
    (0.125 at 2 decimals, 250 at -2) round to even the same way."""
    torch.manual_seed(0)
    x = torch.cat([torch.randn(300) * 10 ** (3 - decimals), torch.tensor([0.125, -2.5, 250.0,
                   -0.0, float("inf"), float("nan"), 1e30])]).to(dtype)  # fmt: skip
    fn = lambda t: torch.round(t, decimals=decimals)  # noqa: E731
    torch.testing.assert_close(torch.compile(fn, backend="neuron", dynamic=False)(x), fn(x),
                               rtol=0, atol=0, equal_nan=True)  # fmt: skip
