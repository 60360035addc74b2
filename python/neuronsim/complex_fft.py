"""The complex lowering's FFT rules (complex_lowering.py): _fft_r2c, _fft_c2c and _fft_c2r as
DFT matrix products over the transformed dimensions. See the module docstring of
complex_lowering.py for the construction, its accuracy and its O(n^2) cost."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
import torch.fx
from torch._subclasses.fake_tensor import unset_fake_temporarily

from .complex_rules import Cx, NoRule, rule
from .errors import NeuronCompileError
from .graph_export import target_name

if TYPE_CHECKING:
    from .complex_lowering import Lowering

aten = torch.ops.aten

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

    def __init__(self, low: Lowering) -> None:
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


def _fft_dims(low: Lowering, node: torch.fx.Node, x: Any, dims: Any) -> list[int]:
    rank = low.val(x.re if isinstance(x, Cx) else x).dim()
    if not isinstance(dims, (list, tuple)) or not dims:
        raise NeuronCompileError(f"{target_name(node.target)}: dims {dims!r}")
    return [int(d) % rank for d in dims]


def _c2c(low: Lowering, x: Cx, dims: Sequence[int], normalization: int, sign: int) -> Cx:
    transform = _Transform(low)
    for dim in dims:
        n = low.val(x.re).shape[dim]
        matrix = _dft_matrix(n, n, sign, _scale(normalization, n), real_input=False)
        x = transform.split(transform.apply([x.re, x.im], dim, matrix), dim)
    return x


@rule(aten._fft_r2c.default)
def _fft_r2c(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    x, dims, normalization, onesided = args
    if isinstance(x, Cx):
        raise NoRule()
    dims = _fft_dims(low, node, x, dims)
    last = dims[-1]
    n = low.val(x).shape[last]
    n_out = n // 2 + 1 if onesided else n
    matrix = _dft_matrix(n, n_out, -1, _scale(normalization, n), real_input=True)
    transform = _Transform(low)
    result = transform.split(transform.apply([x], last, matrix), last)
    result = _c2c(low, result, dims[:-1], normalization, -1)
    return low.finish(node, result.re, result.im)


@rule(aten._fft_c2c.default)
def _fft_c2c(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> Cx:
    x, dims, normalization, forward = args
    if not isinstance(x, Cx):
        raise NoRule()
    result = _c2c(low, x, _fft_dims(low, node, x, dims), normalization, -1 if forward else 1)
    return low.finish(node, result.re, result.im)


@rule(aten._fft_c2r.default)
def _fft_c2r(low: Lowering, node: torch.fx.Node, args: tuple, kwargs: dict) -> torch.fx.Node:
    x, dims, normalization, last_dim_size = args
    if not isinstance(x, Cx):
        raise NoRule()
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
