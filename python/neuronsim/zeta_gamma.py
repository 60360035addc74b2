"""The Hurwitz zeta function and polygamma of order n >= 2 as decompositions, in fp32.

zeta(x, q) = sum_{k >= 0} (q + k)^-x follows eager's kernel (Cephes' Euler-Maclaurin
summation, which eager runs in fp64 for fp32 inputs): the first ten terms summed directly,
then with w = q + 9 the tail w^(1-x) / (x - 1) - w^-x / 2 and twelve Bernoulli terms
B_2j / (2j)! x (x + 1) ... (x + 2j - 2) w^(1 - x - 2j); past w = 9 the terms fall by at least
(x + 2j)^2 / (2 pi w)^2 each, so the result is exact at fp32 for the x where the fp32 terms do
not underflow (beyond, the omitted part is below fp32's range). Eager's special values:
x = 1 gives inf, x < 1 NaN, q <= 0 an integer inf, q < 0 and x not an integer NaN, q = +inf
NaN, and x = +inf NaN, 1 or inf for q > 1, q = 1, q < 1.

For q < 0 (not an integer; x an integer) eager sums from q upwards; here the negative terms
are regrouped so that every zeta is taken at a positive q: with r = -q - floor(-q) in (0, 1)
the terms q, q + 1, ..., q + floor(-q) are -(r + j) for j = floor(-q), ..., 0, so
    zeta(x, q) = (-1)^x (zeta(x, r) - zeta(x, 1 - q)) + zeta(x, 1 - r),
for any |q|. The two terms nearest 0, (-r)^-x and (1 - r)^-x, are taken out of the zetas and
added first: for odd x they cancel as r nears 1/2, and their difference is computed as
r^-x expm1(x log1p((2r - 1) / (1 - r))), accurate where the plain fp32 difference is not
(eager sums in fp64).

polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 2 (eager's formula); n = 0 and 1 are
digamma and trigamma (special_functions.py).
"""

from __future__ import annotations

import math

import torch

from .special_common import result_dtype

aten = torch.ops.aten
prims = torch.ops.prims

_INF = float("inf")
_NAN = float("nan")

_DIRECT_TERMS = 9  # terms after the first summed directly (eager: while i < 9 or a <= 9)
# Cephes' A[i] = (2i + 2)! / B_(2i+2): the Euler-Maclaurin terms are x^(2i+1 rising) w^.. / A[i]
_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
      -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
      1.8152105401943546773e17, -7.1661652561756670113e18)  # fmt: skip
_RATIO_CAP = 1e30  # a term ratio's bound, so that an underflowed term times it stays 0


def _zeta_positive(x: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """zeta(x, q) for x > 1 and q > 0 (finite): eager's Euler-Maclaurin sum in fp32."""
    a = q
    total = torch.pow(a, -x)
    b = total
    for _ in range(_DIRECT_TERMS):
        a = a + 1.0
        b = torch.pow(a, -x)
        total = total + b
    w = a
    total = total + b * w / (x - 1.0) - 0.5 * b
    term = x * (b / w) / _A[0]
    for i in range(len(_A)):
        total = total + term
        if i + 1 < len(_A):
            ratio = ((x + (2 * i + 1)) / w) * ((x + (2 * i + 2)) / w) * (_A[i] / _A[i + 1])
            term = term * torch.clamp(ratio, -_RATIO_CAP, _RATIO_CAP)
    return total


def _zeta_fp32(x: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """zeta(x, q) with eager's special values, x and q fp32 tensors of one shape."""
    integer_q = q == torch.floor(q)
    negative = q < 0
    # every evaluation at a positive, finite q (the unused branch gets q = 1)
    r = torch.where(negative & ~integer_q, -q - torch.floor(-q), 1.0)
    xs = torch.where(x > 1.0, x, 2.0)
    positive = _zeta_positive(xs, torch.where((q > 0) & (q < _INF), q, 1.0))
    odd = torch.fmod(x, 2.0) != 0.0
    # the terms nearest 0, -r and 1 - r: (1 - r)^-x + (-1)^x r^-x; for odd x their
    # difference as r^-x ((r / (1 - r))^x - 1), exact where they nearly cancel (r near 1/2)
    r_power = torch.pow(r, -xs)
    gap = 2.0 * r - 1.0  # exact
    difference = r_power * torch.expm1(xs * torch.log1p(gap / (1.0 - r)))
    difference = torch.where(gap == 0.0, 0.0, difference)
    nearest = torch.where(odd, difference, torch.pow(1.0 - r, -xs) + r_power)
    # the other negative terms, -(r + j) for j = 1 .. floor(-q), and positive ones, 2 - r, ...
    others = _zeta_positive(xs, r + 1.0) - _zeta_positive(xs, torch.where(negative, 1.0 - q, 1.0))
    rest = _zeta_positive(xs, 2.0 - r)
    reflected = nearest + torch.where(odd, rest - others, rest + others)
    y = torch.where(negative, reflected, positive)
    y = torch.where(negative & (x != torch.floor(x)), _NAN, y)
    y = torch.where((q <= 0) & integer_q, _INF, y)  # the poles, and q = -inf
    y = torch.where(q == _INF, _NAN, y)
    at_infinity = torch.where(q > 1.0, _NAN, torch.where(q == 1.0, 1.0, _INF))
    y = torch.where((x == _INF) & ~((q <= 0) & integer_q), at_infinity, y)
    y = torch.where(x < 1.0, _NAN, torch.where(x == 1.0, _INF, y))
    return torch.where(torch.isnan(x) | torch.isnan(q), _NAN, y)


def zeta(x, q) -> torch.Tensor:
    """aten.special_zeta (and prims.zeta): x and q tensors, or one of them a Python number."""
    tensors = [t for t in (x, q) if isinstance(t, torch.Tensor)]
    dtype = result_dtype(*tensors)
    if dtype != torch.float32:  # eager's CPU kernel takes fp32 and fp64 (fp64 is not lowered)
        return NotImplemented
    like = tensors[0]
    xf, qf = (t.to(torch.float32) if isinstance(t, torch.Tensor)
              else torch.full_like(like, t, dtype=torch.float32) for t in (x, q))  # fmt: skip
    xf, qf = torch.broadcast_tensors(xf, qf)
    return _zeta_fp32(xf, qf).to(dtype)


def polygamma_from_zeta(n: int, x: torch.Tensor) -> torch.Tensor:
    """polygamma(n, x) for n >= 2: (-1)^(n+1) n! zeta(n + 1, x), in fp32 (n! overflows fp32
    from n = 35 on, as eager's exp(lgamma(n + 1)) does)."""
    dtype = x.dtype if x.dtype.is_floating_point else torch.float32
    v = x.to(torch.float32)
    factorial = float(math.factorial(n)) if n < 35 else _INF
    sign = 1.0 if n % 2 else -1.0
    y = (sign * factorial) * _zeta_fp32(torch.full_like(v, float(n + 1)), v)
    return y.to(dtype)


ZETA_DECOMPOSITIONS = {
    aten.special_zeta.default: zeta,
    aten.special_zeta.self_scalar: zeta,
    aten.special_zeta.other_scalar: zeta,
    prims.zeta.default: zeta,
}
