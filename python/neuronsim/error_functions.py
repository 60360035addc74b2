"""Inverse and scaled error functions as decompositions: erfinv, ndtri, erfcx and log_ndtr,
in fp32 like eager.

erfinv(x) is x times a Chebyshev series in x^2 for |x| <= 0.7 and, beyond, a series in
y = sqrt(-log((1 - |x|) / 2)) (two pieces, y in [1.38, 3] and [3, 10.7]); 1 - |x| is exact
there, so the tail keeps full relative accuracy up to |x| = 1 - 2^-24. ndtri(p) is
sqrt(2) erfinv(2p - 1) with the tail variable taken from min(p, 1 - p) directly, exact down
to the smallest subnormal p. erfcx(x) = exp(x^2) erfc(x) is a series on [0, 2], x erfcx(x) a
series in 1/x on [2, 8], its asymptotic expansion (six terms, error below 3e-9) beyond, and
2 exp(x^2) - erfcx(-x) for x < 0. log_ndtr follows eager's formula: log(erfcx(-t) / 2) - t^2
below x = -1 (t = x / sqrt(2)), log1p(-erfc(t) / 2) above. Coefficients: special_coefficients.py
(fitted by tools/special_fits.py).
"""

from __future__ import annotations

import math

import torch

from . import special_coefficients as C
from .special_common import chebyshev, in_fp32

aten = torch.ops.aten

_INF = float("inf")
_NAN = float("nan")


def _erfinv_central(x: torch.Tensor) -> torch.Tensor:
    z = torch.clamp(x, -0.7, 0.7)
    return z * chebyshev(z * z * (1.0 / 0.245) - 1.0, C.ERFINV_CENTRAL)


def _erfinv_tail(half_gap: torch.Tensor) -> torch.Tensor:
    """erfinv(1 - 2 g) for g = (1 - |x|) / 2 in (0, 0.15] (positive)."""
    y = torch.sqrt(-torch.log(torch.clamp(half_gap, min=1e-45, max=0.15)))
    near = chebyshev(2.0 * (y - C.ERFINV_Y0) / (3.0 - C.ERFINV_Y0) - 1.0, C.ERFINV_TAIL)
    far = chebyshev(torch.clamp(2.0 * (y - 3.0) / 7.7 - 1.0, max=1.0), C.ERFINV_FAR)
    return torch.where(y <= 3.0, near, far)


@in_fp32
def erfinv(x: torch.Tensor) -> torch.Tensor:
    a = torch.abs(x)
    tail = _erfinv_tail((1.0 - a) * 0.5)
    y = torch.where(a <= 0.7, _erfinv_central(x), torch.where(x < 0, -tail, tail))
    y = torch.where(a == 1.0, torch.where(x < 0, -_INF, _INF), y)
    return torch.where(a > 1.0, _NAN, y)


@in_fp32
def ndtri(p: torch.Tensor) -> torch.Tensor:
    lower = p < 0.5
    smaller = torch.where(lower, p, 1.0 - p)  # 1 - p is exact for p >= 1/2
    tail = _erfinv_tail(smaller)
    central = _erfinv_central(2.0 * p - 1.0)
    y = math.sqrt(2.0) * torch.where(smaller >= 0.15, central, torch.where(lower, -tail, tail))
    y = torch.where(p == 0, -_INF, torch.where(p == 1, _INF, y))
    return torch.where((p < 0) | (p > 1), _NAN, y)


def _erfcx_positive(a: torch.Tensor) -> torch.Tensor:
    """erfcx(a) for a >= 0 (+inf gives 0)."""
    small = chebyshev(torch.clamp(a, max=2.0) - 1.0, C.ERFCX_SMALL)
    z = torch.clamp(a, min=2.0)
    middle = chebyshev(torch.clamp(4.0 / z - 1.5, min=-1.0), C.ERFCX_MIDDLE) / z
    r = 1.0 / (2.0 * z * z)  # asymptotic series: sum_k (-1)^k (2k-1)!! r^k
    series = 1.0
    for k in range(6, 0, -1):
        series = 1.0 - (2 * k - 1) * r * series
    far = series / (math.sqrt(math.pi) * z)
    return torch.where(a <= 2.0, small, torch.where(a <= 8.0, middle, far))


def _erfcx(x: torch.Tensor) -> torch.Tensor:
    positive = _erfcx_positive(torch.abs(x))
    return torch.where(x < 0, 2.0 * torch.exp(x * x) - positive, positive)


@in_fp32
def erfcx(x: torch.Tensor) -> torch.Tensor:
    return _erfcx(x)


@in_fp32
def log_ndtr(x: torch.Tensor) -> torch.Tensor:
    t = x * math.sqrt(0.5)
    low = torch.log(_erfcx(-t) * 0.5) - t * t
    high = torch.log1p(-torch.erfc(t) * 0.5)
    return torch.where(x < -1.0, low, high)


ERROR_FUNCTION_DECOMPOSITIONS = {
    aten.erfinv.default: erfinv,
    aten.special_ndtri.default: ndtri,
    aten.special_erfcx.default: erfcx,
    aten.special_log_ndtr.default: log_ndtr,
}
