"""The orthogonal polynomials of torch.special (Chebyshev T, U, V, W and their shifted forms,
Hermite H and He, Laguerre L, Legendre P) as decompositions, in fp32 like eager's kernels.

Each follows eager's kernel step by step: n is truncated to an integer (NaN, +-inf and
|n| >= 2^63 become negative, so give 0), n < 0 gives 0, then eager's special values of x
(x = +-1, or 0 and 1 for the shifted forms, x = 0 for Laguerre), its trigonometric forms
for n above a threshold and |x| < 1 (cos(n acos x) for T, ...), Hermite's NaN above
n = 128, and otherwise the three-term recurrence, with eager's operations in eager's order
(but for one rounding in Laguerre's step, below).

The degree n is either a Python number, whose recurrence is unrolled exactly (n steps), or a
tensor whose values are only known at run time: then the recurrence is unrolled
MAX_DEGREE = 128 times and each element takes the steps up to its n. An element whose
n > MAX_DEGREE needs more steps unless a closed form covers it (n < 0, eager's special
values, the trigonometric forms, Hermite's n > 128) or its recurrence has already become NaN
(it stays NaN; eager stops there too); if any element needs more, the run fails on the host
after the run with a RuntimeError naming the op (a runtime assert, runtime_asserts.py). A
Python n above MAX_DEGREE is unrolled to the bound with the same check.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from .special_common import unfused

aten = torch.ops.aten

MAX_DEGREE = 128  # recurrence steps unrolled for a degree known only at run time
_HERMITE_LIMIT = 128  # eager's fp32 kernels return NaN above this degree
_INT64_RANGE = 2.0**63
_NAN = float("nan")

Tensor = torch.Tensor


# Steps: P_{k+1} from p = P_{k-1} and q = P_k, with v = factor(y) computed once and k a
# Python number; eager's operations in eager's order.
def _cheb_step(k, v: Tensor, p: Tensor, q: Tensor) -> Tensor:  # v = y + y
    return v * q - p


def _hermite_h_step(k, v: Tensor, p: Tensor, q: Tensor) -> Tensor:  # v = x + x
    return v * q - (k + k) * p


def _hermite_he_step(k, v: Tensor, p: Tensor, q: Tensor) -> Tensor:  # v = x
    return v * q - k * p


def _laguerre_step(k, v: Tensor, p: Tensor, q: Tensor) -> Tensor:  # v = x
    # eager's (2k + (1 - x)) as (2k + 1) - x: one rounding instead of two (an op on x and a
    # number, not on a value computed from x, which would gather every step's in one region)
    return (((k + k + 1.0) - v) * q - k * p) / (k + 1.0)


def _legendre_step(k, v: Tensor, p: Tensor, q: Tensor) -> Tensor:  # v = x
    return ((k + k + 1.0) * v * q - k * p) / (k + 1.0)


def _twice(y: Tensor) -> Tensor:
    return y + y


def _same(y: Tensor) -> Tensor:
    return y


def _signed(even: Tensor, value: Tensor) -> Tensor:
    """value for even n, -value for odd n."""
    return torch.where(even, value, -value)


# Eager's special values of x: (x, y, n, even) -> (mask, value). y is the polynomial's
# variable (x, or 2x - 1 for the shifted forms).
def _ends_t(x, y, n, even):
    return torch.abs(x) == 1.0, torch.where((x > 0) | even, 1.0, -1.0)


def _ends_u(x, y, n, even):
    return torch.abs(x) == 1.0, torch.where((x > 0) | even, n + 1.0, -(n + 1.0))


def _ends_v(x, y, n, even):
    return torch.abs(x) == 1.0, torch.where(x > 0, 1.0, _signed(even, n + n + 1.0))


def _ends_w(x, y, n, even):
    return torch.abs(x) == 1.0, torch.where(x > 0, n + n + 1.0, torch.where(even, 1.0, -1.0))


def _shifted_ends(at_one: Callable, at_zero: Callable):
    def ends(x, y, n, even):
        value = torch.where(x == 1.0, at_one(n), at_zero(n, even))
        return (x == 1.0) | (x == 0.0), value

    return ends


def _ends_zero_one(x, y, n, even):  # Laguerre: L_n(0) = 1
    return x == 0.0, torch.ones_like(x)


# Eager's trigonometric forms for |y| < 1: (y, n, even) -> value.
def _trig_t(y, n, even):
    return torch.cos(n * torch.acos(y))


def _trig_u(y, n, even):
    angle = torch.acos(y)
    sine = torch.sin(angle)
    on_pole = (n + 1.0) * torch.cos((n + 1.0) * angle) / y
    return torch.where(sine != 0.0, torch.sin((n + 1.0) * angle) / sine, on_pole)


def _trig_v(y, n, even):
    angle = torch.acos(y)
    regular = torch.cos((n + 0.5) * angle) / torch.cos(angle / 2.0)
    return torch.where(torch.sin(angle / 2.0) != 1.0, regular, _signed(even, n + n + 1.0))


def _trig_w(y, n, even, positive_end):
    angle = torch.acos(y)
    regular = torch.sin((n + 0.5) * angle) / torch.sin(angle / 2.0)
    end = torch.where(even, 1.0, -1.0)
    if positive_end:  # eager's W tests x > 0 there, its shifted W does not
        end = torch.where(y > 0, n + n + 1.0, end)
    return torch.where(torch.cos(angle / 2.0) != 1.0, regular, end)


@dataclass(frozen=True)
class _Polynomial:
    name: str  # the torch.special function, for messages
    shifted: bool  # variable y = 2x - 1
    first: Callable[[Tensor], Tensor]  # P_1(y)
    step: Callable  # (k, factor, P_{k-1}, P_k) -> P_{k+1}
    factor: Callable[[Tensor], Tensor]  # the step's factor of y, computed once
    ends: Callable | None = None  # eager's special values of x
    trig: Callable | None = None  # eager's trigonometric form for |y| < 1 and n > threshold
    threshold: int = 0
    nan_above: int | None = None  # Hermite: NaN above this degree


_POLYNOMIALS = {
    aten.special_chebyshev_polynomial_t: _Polynomial(
        "chebyshev_polynomial_t", False, lambda y: y, _cheb_step, _twice, _ends_t, _trig_t, 6),
    aten.special_chebyshev_polynomial_u: _Polynomial(
        "chebyshev_polynomial_u", False, lambda y: y + y, _cheb_step, _twice, _ends_u, _trig_u, 8),
    aten.special_chebyshev_polynomial_v: _Polynomial(
        "chebyshev_polynomial_v", False, lambda y: y + y - 1.0, _cheb_step, _twice, _ends_v,
        _trig_v, 8),
    aten.special_chebyshev_polynomial_w: _Polynomial(
        "chebyshev_polynomial_w", False, lambda y: y + y + 1.0, _cheb_step, _twice, _ends_w,
        lambda y, n, even: _trig_w(y, n, even, True), 8),
    aten.special_shifted_chebyshev_polynomial_t: _Polynomial(
        "shifted_chebyshev_polynomial_t", True, lambda y: y, _cheb_step, _twice,
        _shifted_ends(lambda n: 1.0, lambda n, even: torch.where(even, 1.0, -1.0)), _trig_t, 6),
    aten.special_shifted_chebyshev_polynomial_u: _Polynomial(
        "shifted_chebyshev_polynomial_u", True, lambda y: y + y, _cheb_step, _twice,
        _shifted_ends(lambda n: n + 1.0, lambda n, even: _signed(even, n + 1.0)), _trig_u, 6),
    aten.special_shifted_chebyshev_polynomial_v: _Polynomial(
        "shifted_chebyshev_polynomial_v", True, lambda y: y + y - 1.0, _cheb_step, _twice,
        _shifted_ends(lambda n: 1.0, lambda n, even: _signed(even, n + n + 1.0)), _trig_v, 6),
    aten.special_shifted_chebyshev_polynomial_w: _Polynomial(
        "shifted_chebyshev_polynomial_w", True, lambda y: y + y + 1.0, _cheb_step, _twice,
        _shifted_ends(lambda n: n + n + 1.0, lambda n, even: torch.where(even, 1.0, -1.0)),
        lambda y, n, even: _trig_w(y, n, even, False), 4),
    aten.special_hermite_polynomial_h: _Polynomial(
        "hermite_polynomial_h", False, lambda x: x + x, _hermite_h_step, _twice,
        nan_above=_HERMITE_LIMIT),
    aten.special_hermite_polynomial_he: _Polynomial(
        "hermite_polynomial_he", False, lambda x: x, _hermite_he_step, _same,
        nan_above=_HERMITE_LIMIT),
    aten.special_laguerre_polynomial_l: _Polynomial(
        "laguerre_polynomial_l", False, lambda x: 1.0 - x, _laguerre_step, _same,
        _ends_zero_one),
    aten.special_legendre_polynomial_p: _Polynomial(
        "legendre_polynomial_p", False, lambda x: x, _legendre_step, _same, _ends_t),
}  # fmt: skip


def _degree(n: Tensor) -> Tensor:
    """eager's static_cast<int64_t>(n) as fp32: truncation; NaN, +-inf and values outside
    int64 become INT64_MIN (here -1: only n < 0 matters for them)."""
    if not n.dtype.is_floating_point:
        return n.to(torch.float32)
    v = n.to(torch.float32)
    valid = torch.abs(v) < _INT64_RANGE  # False for NaN and +-inf
    return torch.where(valid, torch.trunc(torch.where(valid, v, 0.0)), -1.0)


def _evaluate(spec: _Polynomial, x: Tensor, n: Tensor, steps: int, exact: bool):
    """(P_n(x), covered) in fp32, for x (fp32) and n broadcast tensors and the
    recurrence unrolled `steps` times; `exact`: n == steps everywhere (a Python n). covered:
    the elements whose value needs no more steps than that.

    For a tensor n each step is taken where k < n (p and q stay put elsewhere), so q ends at
    P_n. The steps' ops take an operand of the chain (the count of steps left, p, q) or x
    (a plain input: special_common.unfused) with a number, and what depends on x alone (y,
    the factor, P_1 and P_2) is computed before anything of n: the compiler's elementwise
    fusion then keeps the recurrence in regions with a few live values, instead of regions
    of x alone and of n alone whose MAX_DEGREE results would all be live at once (an SBUF
    overflow on large inputs)."""
    y = x + x - 1.0 if spec.shifted else x
    factor = spec.factor(y)
    p, q = torch.ones_like(y), spec.first(y)
    if exact:
        for k in range(1, steps):
            p, q = q, spec.step(float(k), factor, p, q)
        n = _degree(n)
    else:
        second = spec.step(1.0, factor, p, q)  # P_2, of x alone
        n = _degree(n)
        left = n - 2.0  # steps left after P_2
        active = left >= 0.0
        p, q = torch.where(active, q, p), torch.where(active, second, q)
        for k in range(2, steps):
            left = left - 1.0
            r = spec.step(float(k), factor, p, q)
            active = left >= 0.0
            p, q = torch.where(active, q, p), torch.where(active, r, q)
    result = torch.where(n == 0.0, 1.0, q)
    even = torch.fmod(n, 2.0) == 0.0
    # a NaN recurrence stays NaN (eager stops there and returns it)
    result = torch.where((n > steps) & torch.isnan(q), _NAN, result)
    covered = (n <= steps) | torch.isnan(q)
    if spec.nan_above is not None:
        result = torch.where(n > spec.nan_above, _NAN, result)
        covered = covered | (n > spec.nan_above)
    if spec.trig is not None:
        inside = (n > spec.threshold) & (torch.abs(y) < 1.0)
        result = torch.where(inside, spec.trig(y, n, even), result)
        covered = covered | inside
    if spec.ends is not None:
        mask, value = spec.ends(x, y, n, even)
        result = torch.where(mask, value, result)
        covered = covered | mask
    return torch.where(n < 0, 0.0, result), covered


def _result_dtype(x, n) -> torch.dtype:
    """eager's: the promoted float type of the tensors (a Python x or n does not promote),
    the default float type for integers."""
    tensors = [t for t in (x, n) if isinstance(t, torch.Tensor)]
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    return dtype if dtype.is_floating_point or dtype.is_complex else torch.get_default_dtype()


def _polynomial(spec: _Polynomial, x, n) -> Tensor:
    """One op's decomposition, for its three overloads (x and n tensors, or one of them a
    Python number)."""
    dtype = _result_dtype(x, n)
    if dtype != torch.float32:  # eager computes fp32 and fp64 (fp64 is not lowered)
        return NotImplemented
    like = x if isinstance(x, torch.Tensor) else n
    xf = like.to(torch.float32) if like is x else torch.full_like(like, x, dtype=torch.float32)
    if isinstance(n, torch.Tensor):
        degree, steps, exact = n, MAX_DEGREE, False
    else:
        value = int(n) if math.isfinite(n) and abs(n) < _INT64_RANGE else -1
        degree = torch.full_like(xf, float(value))
        steps, exact = min(max(value, 1), MAX_DEGREE), value <= MAX_DEGREE
    xf, degree = torch.broadcast_tensors(xf, degree)
    if not exact:  # the steps take x (and n) as plain inputs (special_common.unfused)
        xf, degree = unfused(xf), unfused(degree)
    result, covered = _evaluate(spec, xf, degree, steps, exact)
    if not exact:
        torch.ops.aten._assert_async.msg(
            torch.all(covered.reshape(-1, 1)),  # (a column: compiles for any N)
            f"torch.special.{spec.name}: n is above {MAX_DEGREE}, the degree to which the "
            f"neuron backend unrolls the recurrence, for an x that needs the recurrence",
        )
    return result


def _decomposition(spec: _Polynomial) -> Callable:
    def decomposition(x, n):
        return _polynomial(spec, x, n)

    decomposition.__name__ = spec.name
    return decomposition


ORTHOGONAL_POLYNOMIAL_DECOMPOSITIONS = {
    getattr(packet, overload): _decomposition(spec)
    for packet, spec in _POLYNOMIALS.items()
    for overload in ("default", "x_scalar", "n_scalar")
}
