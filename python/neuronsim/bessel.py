"""Bessel functions (J0, J1, Y0, Y1, I0, I1, K0, K1 and their scaled forms), the spherical
Bessel function j0 and the Airy function Ai as decompositions, in fp32 like eager.

Each function is split where its behaviour changes: near zero the smooth remainder after
taking out the known singular part (log(x) I0(x) in K0, 2/pi log(x) J0(x) in Y0, 1/x in K1
and Y1) is a Chebyshev series in x^2; far out the exponential or oscillating factor is taken
out (exp(x) / sqrt(x), the Hankel form sqrt(2 / (pi x)) (P cos w - Q sin w)) and the slowly
varying rest is a Chebyshev series in 1/x or 1/x^2. The coefficients are fitted by
tools/special_fits.py (special_coefficients.py holds them with each mapping). Special values
follow eager's kernels: I0(+-inf) and I1(+-inf) are NaN there (exp(inf) / sqrt(inf)), and so
are J0, J1, Y0, Y1 at infinity (cos(inf)); K, Y and the scaled K are NaN below zero and
infinite at zero. Relative error against eager: a few fp32 ulps away from zeros of the
function.
"""

from __future__ import annotations

import math

import torch

from . import special_coefficients as C
from .special_common import chebyshev, in_fp32

aten = torch.ops.aten

_NAN = float("nan")
_INF = float("inf")


def _i0e(a: torch.Tensor) -> torch.Tensor:
    """exp(-a) I0(a) for a = |x| >= 0."""
    small = chebyshev(a * 0.25 - 1.0, C.I0_SMALL)
    large = chebyshev(16.0 / a - 1.0, C.I0_LARGE) / torch.sqrt(a)
    return torch.where(a <= 8.0, small, large)


def _i1e_magnitude(a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """exp(-|x|) I1(x) (odd in x) for a = |x|."""
    small = x * chebyshev(a * 0.25 - 1.0, C.I1_SMALL)
    large = chebyshev(16.0 / a - 1.0, C.I1_LARGE) / torch.sqrt(a)
    return torch.where(a <= 8.0, small, torch.where(x < 0, -large, large))


@in_fp32
def i0(x: torch.Tensor) -> torch.Tensor:
    a = torch.abs(x)
    return torch.exp(a) * _i0e(a)


@in_fp32
def i0e(x: torch.Tensor) -> torch.Tensor:
    return _i0e(torch.abs(x))


@in_fp32
def i1(x: torch.Tensor) -> torch.Tensor:
    a = torch.abs(x)
    return torch.exp(a) * _i1e_magnitude(a, x)


@in_fp32
def i1e(x: torch.Tensor) -> torch.Tensor:
    return _i1e_magnitude(torch.abs(x), x)


def _k_domain(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """NaN below zero, +inf at +-0 (the poles of K0 and K1)."""
    return torch.where(x < 0, _NAN, torch.where(x == 0, _INF, y))


def _k0_small(x: torch.Tensor) -> torch.Tensor:
    z = torch.where(x <= 2.0, x, 1.0)
    return chebyshev(z * z * 0.5 - 1.0, C.K0_SMALL) - torch.log(z * 0.5) * i0(z)


def _k1_small(x: torch.Tensor) -> torch.Tensor:
    z = torch.where(x <= 2.0, x, 1.0)
    return torch.log(z * 0.5) * i1(z) + 1.0 / z + z * chebyshev(z * z * 0.5 - 1.0, C.K1_SMALL)


def _k_large(x: torch.Tensor, coefficients) -> torch.Tensor:
    """exp(x) K(x) for x > 2."""
    z = torch.where(x > 2.0, x, 4.0)
    return chebyshev(4.0 / z - 1.0, coefficients) / torch.sqrt(z)


@in_fp32
def k0(x: torch.Tensor) -> torch.Tensor:
    large = torch.exp(-x) * _k_large(x, C.K0_LARGE)
    return _k_domain(x, torch.where(x <= 2.0, _k0_small(x), large))


@in_fp32
def k1(x: torch.Tensor) -> torch.Tensor:
    large = torch.exp(-x) * _k_large(x, C.K1_LARGE)
    return _k_domain(x, torch.where(x <= 2.0, _k1_small(x), large))


@in_fp32
def k0e(x: torch.Tensor) -> torch.Tensor:
    small = torch.exp(x) * _k0_small(x)
    return _k_domain(x, torch.where(x <= 2.0, small, _k_large(x, C.K0_LARGE)))


@in_fp32
def k1e(x: torch.Tensor) -> torch.Tensor:
    small = torch.exp(x) * _k1_small(x)
    return _k_domain(x, torch.where(x <= 2.0, small, _k_large(x, C.K1_LARGE)))


def _hankel(a: torch.Tensor, p_coefficients, q_coefficients, order: int):
    """(J, Y) of the given order for a > 8 from the Hankel expansion: the phase
    w = a - (2 order + 1) pi / 4 enters through sin(a) and cos(a) of the exact argument."""
    z = torch.where(a > 8.0, a, 16.0)
    t = 128.0 / (z * z) - 1.0
    p = chebyshev(t, p_coefficients)
    q = chebyshev(t, q_coefficients) / z
    sine, cosine = torch.sin(z), torch.cos(z)
    if order == 0:  # w = a - pi/4
        cos_w, sin_w = cosine + sine, sine - cosine
    else:  # w = a - 3 pi/4
        cos_w, sin_w = sine - cosine, -(sine + cosine)
    scale = torch.sqrt((1.0 / math.pi) / z)  # sqrt(2 / (pi a)) / sqrt(2)
    return scale * (p * cos_w - q * sin_w), scale * (p * sin_w + q * cos_w)


def _small_even(a: torch.Tensor, coefficients) -> torch.Tensor:
    z = torch.where(a <= 8.0, a, 0.0)
    return chebyshev(z * z * (1.0 / 32.0) - 1.0, coefficients)


@in_fp32
def bessel_j0(x: torch.Tensor) -> torch.Tensor:
    a = torch.abs(x)
    large, _ = _hankel(a, C.P0, C.Q0, 0)
    y = torch.where(a <= 8.0, _small_even(a, C.J0_SMALL), large)
    return torch.where(torch.isinf(x), _NAN, y)


@in_fp32
def bessel_j1(x: torch.Tensor) -> torch.Tensor:
    a = torch.abs(x)
    large, _ = _hankel(a, C.P1, C.Q1, 1)
    y = torch.where(a <= 8.0, x * _small_even(a, C.J1_SMALL), torch.where(x < 0, -large, large))
    return torch.where(torch.isinf(x), _NAN, y)


def _y_domain(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """NaN below zero and at infinity, -inf at +-0."""
    y = torch.where(x < 0, _NAN, torch.where(x == 0, -_INF, y))
    return torch.where(torch.isinf(x), _NAN, y)


@in_fp32
def bessel_y0(x: torch.Tensor) -> torch.Tensor:
    z = torch.where(x > 0, x, 1.0)
    _, large = _hankel(z, C.P0, C.Q0, 0)
    small = _small_even(z, C.Y0_SMALL) + (2.0 / math.pi) * torch.log(z) * bessel_j0(z)
    return _y_domain(x, torch.where(z <= 8.0, small, large))


@in_fp32
def bessel_y1(x: torch.Tensor) -> torch.Tensor:
    z = torch.where(x > 0, x, 1.0)
    _, large = _hankel(z, C.P1, C.Q1, 1)
    log_part = (2.0 / math.pi) * torch.log(z) * bessel_j1(z) - (2.0 / math.pi) / z
    small = z * _small_even(z, C.Y1_SMALL) + log_part
    return _y_domain(x, torch.where(z <= 8.0, small, large))


@in_fp32
def spherical_bessel_j0(x: torch.Tensor) -> torch.Tensor:
    """sin(x) / x; below |x| = 1/2 its Taylor series (to x^12), 0 at +-inf."""
    s = x * x
    series = 1.0
    for k in range(6, 0, -1):  # 1 - s/(2*3) (1 - s/(4*5) (1 - ...))
        series = 1.0 - s / ((2 * k) * (2 * k + 1)) * series
    y = torch.where(torch.abs(x) < 0.5, series, torch.sin(x) / x)
    return torch.where(torch.isinf(x), 0.0, y)


@in_fp32
def airy_ai(x: torch.Tensor) -> torch.Tensor:
    """Ai(x): a Chebyshev series on [-5, 2]; beyond, the asymptotic forms in
    z = 2/3 |x|^(3/2) with fitted corrections; NaN at +-inf, 0 above 103.892 (eager)."""
    middle = chebyshev(torch.clamp((2.0 * x + 3.0) * (1.0 / 7.0), -1.0, 1.0), C.AI_MIDDLE)
    y = torch.abs(x)
    root = torch.sqrt(y)
    z = torch.where(y > 1.0, 2.0 * y * root / 3.0, 1.0)  # eager's rounding order
    quartic = torch.sqrt(root)
    t = 2.0 * torch.where(x > 0, C.AIRY_Z_POSITIVE, C.AIRY_Z_NEGATIVE) / z - 1.0
    positive = torch.exp(-z) * chebyshev(t, C.AI_POSITIVE) / ((2.0 * math.sqrt(math.pi)) * quartic)
    phase = z + math.pi / 4
    oscillating = chebyshev(t, C.AI_NEGATIVE_P) * torch.sin(phase) - chebyshev(
        t, C.AI_NEGATIVE_Q
    ) * torch.cos(phase)
    negative = oscillating / (math.sqrt(math.pi) * quartic)
    result = torch.where(x > 2.0, positive, torch.where(x < -5.0, negative, middle))
    result = torch.where(x > 103.892, 0.0, result)
    return torch.where(torch.isinf(x), _NAN, result)


BESSEL_DECOMPOSITIONS = {
    aten.i0.default: i0,
    aten.special_i0e.default: i0e,
    aten.special_i1.default: i1,
    aten.special_i1e.default: i1e,
    aten.special_modified_bessel_i0.default: i0,
    aten.special_modified_bessel_i1.default: i1,
    aten.special_modified_bessel_k0.default: k0,
    aten.special_modified_bessel_k1.default: k1,
    aten.special_scaled_modified_bessel_k0.default: k0e,
    aten.special_scaled_modified_bessel_k1.default: k1e,
    aten.special_bessel_j0.default: bessel_j0,
    aten.special_bessel_j1.default: bessel_j1,
    aten.special_bessel_y0.default: bessel_y0,
    aten.special_bessel_y1.default: bessel_y1,
    aten.special_spherical_bessel_j0.default: spherical_bessel_j0,
    aten.special_airy_ai.default: airy_ai,
}
