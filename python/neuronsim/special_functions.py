"""Decompositions of special functions (lgamma, digamma, trigamma) into ops the compiler
lowers, computed in fp32 whatever the input's float type (as eager does).

For x > 0 each is shifted up by its recurrence until x >= 8 (masked steps: an element stops
once it is there), then evaluated by its asymptotic (Stirling) series, whose first omitted
term is below 1e-9 at x >= 8. For x <= 0 the reflection formulas apply, with sin(pi x)
computed from x's fractional part (exact) so that large |x| loses nothing. Poles, infinities
and NaN give eager's values. Relative error against eager's fp32 library calls: below 1e-5.
"""

from __future__ import annotations

import math

import torch

from .zeta_gamma import polygamma_from_zeta

aten = torch.ops.aten

_SHIFT = 8.0  # the series are evaluated at z >= _SHIFT
_STEPS = 8  # shifting steps: from any x > 0 to x >= 8


def _sin_pi(x: torch.Tensor) -> torch.Tensor:
    """sin(pi * x) from x's fractional part: exact reduction for any |x|."""
    fraction = x - torch.floor(x)
    return torch.sin(math.pi * fraction) * torch.where(torch.floor(x) % 2 == 0, 1.0, -1.0)


def _shifted(x: torch.Tensor, step) -> tuple[torch.Tensor, torch.Tensor]:
    """(z >= 8, accumulated step terms) with z = x + k for the k steps an element needs."""
    z = x
    total = torch.zeros_like(x)
    for _ in range(_STEPS):
        below = z < _SHIFT
        total = torch.where(below, step(total, z), total)
        z = torch.where(below, z + 1.0, z)
    return z, total


def _lgamma_positive(x: torch.Tensor) -> torch.Tensor:
    # lgamma(x) = lgamma(z) - log(x (x + 1) ... (z - 1)); the product is kept as a sum of logs.
    z, logs = _shifted(x, lambda total, v: total + torch.log(v))
    r = 1.0 / z
    r2 = r * r
    series = r * (1 / 12 - r2 * (1 / 360 - r2 * (1 / 1260 - r2 * (1 / 1680))))
    return (z - 0.5) * torch.log(z) - z + 0.5 * math.log(2 * math.pi) + series - logs


def lgamma(x: torch.Tensor) -> torch.Tensor:
    """aten.lgamma: log|Gamma(x)|; +inf at 0, the negative integers and +-inf."""
    dtype = x.dtype
    if not dtype.is_floating_point:
        x = x.to(torch.float32)
    v = x.to(torch.float32)
    positive = _lgamma_positive(torch.where(v > 0, v, 1.0 - v))
    reflected = math.log(math.pi) - torch.log(torch.abs(_sin_pi(v))) - positive
    y = torch.where(v > 0, positive, reflected)
    y = torch.where(torch.isinf(v), math.inf, y)
    return y.to(x.dtype if dtype.is_floating_point else torch.float32)


def _digamma_positive(x: torch.Tensor) -> torch.Tensor:
    z, reciprocals = _shifted(x, lambda total, v: total + 1.0 / v)
    r2 = 1.0 / (z * z)
    series = r2 * (1 / 12 - r2 * (1 / 120 - r2 * (1 / 252 - r2 * (1 / 240 - r2 * (1 / 132)))))
    return torch.log(z) - 0.5 / z - series - reciprocals


def digamma(x: torch.Tensor) -> torch.Tensor:
    """aten.digamma: -inf at +0, +inf at -0, NaN at the negative integers and -inf."""
    dtype = x.dtype
    v = x.to(torch.float32)
    positive = _digamma_positive(torch.where(v > 0, v, 1.0 - v))
    # psi(x) = psi(1 - x) - pi / tan(pi x), tan from the exactly reduced fraction
    fraction = v - torch.floor(v)
    reflected = positive - math.pi * torch.cos(math.pi * fraction) / torch.sin(math.pi * fraction)
    y = torch.where(v > 0, positive, reflected)
    y = torch.where((v < 0) & (fraction == 0), math.nan, y)
    # +-0 by the sign of 1 / v, an ALU division (which keeps the sign of zero)
    negative_zero = torch.ones_like(v) / v < 0
    y = torch.where(v == 0, torch.where(negative_zero, math.inf, -math.inf), y)
    y = torch.where(v == math.inf, math.inf, torch.where(v == -math.inf, math.nan, y))
    return y.to(dtype if dtype.is_floating_point else torch.float32)


def _trigamma_positive(x: torch.Tensor) -> torch.Tensor:
    z, squares = _shifted(x, lambda total, v: total + 1.0 / (v * v))
    r = 1.0 / z
    r2 = r * r
    series = r * (1 + r * (0.5 + r * (1 / 6 - r2 * (1 / 30 - r2 * (1 / 42 - r2 * (1 / 30))))))
    return series + squares


def polygamma(n: int, x: torch.Tensor) -> torch.Tensor:
    """aten.polygamma: n = 0 is digamma, n = 1 trigamma, n >= 2 from the Hurwitz zeta
    (zeta_gamma.py). Trigamma reflects below 1/2, psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x),
    with sin(pi x) rounded from the fp32 product as eager's kernel does (so near the poles
    both give the same large finite values)."""
    if n < 0:  # eager's check (the op's meta function raises it before this)
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if n == 0:
        return digamma(x)
    if n >= 2:
        return polygamma_from_zeta(n, x)
    dtype = x.dtype
    v = x.to(torch.float32)
    reflect = v < 0.5
    positive = _trigamma_positive(torch.where(reflect, 1.0 - v, v))
    sine = torch.sin(math.pi * v)
    y = torch.where(reflect, (math.pi * math.pi) / (sine * sine) - positive, positive)
    y = torch.where(v == math.inf, 0.0, torch.where(v == -math.inf, math.nan, y))
    return y.to(dtype if dtype.is_floating_point else torch.float32)


SPECIAL_DECOMPOSITIONS = {
    aten.lgamma.default: lgamma,
    aten.digamma.default: digamma,
    aten.polygamma.default: polygamma,
}
