"""The regularized incomplete gamma functions igamma (P) and igammac (Q) as decompositions,
in fp32 like eager's kernels.

Eager's region choice (after its boundary values: NaN for a < 0 or x < 0, a = 0, x = 0 and
infinities as eager) picks per element, for Q:
  x > 1.1:        1 - P by the power series (x < a), else Q by the continued fraction;
  x <= 1.1:       1 - P by the series where a is large against x (a > -0.4 / log x below
                  0.5, a > 1.1 x above), else Q by the series DLMF 8.7.3 in (-x)^n / n!;
and P = 1 - Q for x > 1 and x > a, the series otherwise. Where eager uses Temme's uniform
asymptotic expansion (20 < a < 200 and |x - a| < 0.3 a; a > 200 and |x - a| < 4.5 sqrt(a))
the series (x < a) or the continued fraction (x >= a) serve, with enough terms there.

Every branch runs a fixed number of steps (SERIES_TERMS, FRACTION_STEPS, SMALL_X_TERMS) on
every element and the branch is selected per element. Where the selected branch has not
converged to fp32 precision within its steps (a large and x near a: the series needs about
6 sqrt(a) terms), the run fails on the host after the run with a RuntimeError naming the op
(a runtime assert, runtime_asserts.py), instead of returning an inexact value.

The common factor x^a e^-x / Gamma(a) is exp(a log x - x - lgamma(a)) for a < 8 and, above,
Stirling's form exp(-a (s - log1p(s)) + log(a / 2 pi) / 2 - mu(a)) with s = (x - a) / a
(s - log1p(s) by its atanh series for |s| < 0.3), which keeps full precision at large a.
"""

from __future__ import annotations

import math

import torch

from .special_common import result_dtype, unfused
from .special_functions import lgamma

aten = torch.ops.aten
prims = torch.ops.prims

SERIES_TERMS = 160  # power series DLMF 8.11.4
FRACTION_STEPS = 160  # continued fraction DLMF 8.9.2
SMALL_X_TERMS = 24  # series DLMF 8.7.3, for x <= 1.1
_EPS = 5.9604644775390625e-8  # eager's fp32 MACHEP (its stopping test)
_BIG = 16777216.0  # eager's rescaling of the continued fraction
_NAN = float("nan")
_INF = float("inf")


def _log1pmx_negated(s: torch.Tensor) -> torch.Tensor:
    """s - log1p(s) (>= 0), accurate for small |s| through u = s / (2 + s):
    s - log1p(s) = s u - 2 (u^3 / 3 + u^5 / 5 + ...)."""
    u = s / (2.0 + s)
    u2 = u * u
    tail = 1 / 3 + u2 * (1 / 5 + u2 * (1 / 7 + u2 * (1 / 9 + u2 * (1 / 11 + u2 * (1 / 13)))))
    small = s * u - 2.0 * u * u2 * tail
    return torch.where(torch.abs(s) < 0.3, small, s - torch.log1p(s))


def _log_factor(a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """log(x^a e^-x / Gamma(a)) for a, x > 0 (finite)."""
    direct = a * torch.log(x) - x - lgamma(a)
    big = torch.where(a >= 8.0, a, 8.0)
    s = (x - big) / big
    r2 = 1.0 / (big * big)
    mu = (1.0 / 12.0 - r2 * (1.0 / 360.0 - r2 * (1.0 / 1260.0 - r2 * (1.0 / 1680.0)))) / big
    stirling = -big * _log1pmx_negated(s) + 0.5 * torch.log(big * (0.5 / math.pi)) - mu
    return torch.where(a >= 8.0, stirling, direct)


def _series_p(a, x, factor):
    """(P by DLMF 8.11.4, converged): P = factor / a sum_k x^k / ((a + 1) ... (a + k))."""
    c = torch.ones_like(a)
    total = torch.ones_like(a)
    done = torch.zeros_like(a, dtype=torch.bool)
    for k in range(1, SERIES_TERMS + 1):  # eager stops once a term is below MACHEP of the sum
        c = c * (x / (a + float(k)))
        total = torch.where(done, total, total + c)
        done = done | (c <= _EPS * total)
    return total * factor / a, done


def _fraction_q(a, x, factor):
    """(Q by the continued fraction DLMF 8.9.2 in eager's form, converged)."""
    z = x + (2.0 - a)
    p_before, q_before = torch.ones_like(x), x
    p_last, q_last = x + 1.0, z * x
    answer = p_last / q_last
    done = torch.zeros_like(x, dtype=torch.bool)
    for step in range(1, FRACTION_STEPS + 1):  # eager stops once a step changes < MACHEP
        # eager's y = 1 - a + step and z = x + y + 1 + step, from a and x at each step
        yc = (float(step + 1) - a) * float(step)
        z = x + (float(2 * step + 2) - a)
        p = p_last * z - p_before * yc
        q = q_last * z - q_before * yc
        nonzero = q != 0.0
        ratio = p / torch.where(nonzero, q, 1.0)
        change = torch.where(nonzero, torch.abs((answer - ratio) / ratio), 1.0)
        # (no op on `done` alone: each op takes an operand of this step, which keeps the
        # whole fraction in one fused region; see orthogonal_polynomials._evaluate)
        answer = torch.where(done, answer, torch.where(nonzero, ratio, answer))
        done = done | (change <= _EPS)
        scale = torch.where(torch.abs(p) > _BIG, 1.0 / _BIG, 1.0)
        p_before, p_last = p_last * scale, p * scale
        q_before, q_last = q_last * scale, q * scale
    return answer * factor, done


def _small_x_q(a, x):
    """Q by DLMF 8.7.3 for x <= 1.1: -expm1(a log x - lgamma(1 + a))
    - exp(a log x - lgamma(a)) sum_n (-x)^n / (n! (a + n))."""
    fac = torch.ones_like(x)
    total = torch.zeros_like(x)
    for n in range(1, SMALL_X_TERMS + 1):
        fac = fac * (-x / float(n))
        total = total + fac / (a + float(n))
    log_x = torch.log(x)
    return -torch.expm1(a * log_x - lgamma(1.0 + a)) - torch.exp(a * log_x - lgamma(a)) * total


def _incomplete_gamma(a: torch.Tensor, x: torch.Tensor, upper: bool):
    """(P or Q, converged) for fp32 a and x of one shape, with eager's boundary values."""
    inside = (a > 0) & (x > 0) & (a < _INF) & (x < _INF)
    # The branches take a and x themselves, plain inputs (special_common.unfused); elements
    # outside give NaN or inf there, replaced by the boundary values below.
    factor = torch.exp(_log_factor(a, x))
    series, series_done = _series_p(a, x, factor)
    fraction, fraction_done = _fraction_q(a, x, factor)
    small = _small_x_q(a, torch.clamp(x, max=1.1))
    # eager's choice for Q (the asymptotic regions take the series or the fraction by x < a)
    x_small = x <= 0.5
    log_x = torch.log(torch.where(x_small, x, 0.5))
    series_for_small = torch.where(x_small, -0.4 / log_x < a, x * 1.1 < a)
    use_series = torch.where(x > 1.1, x < a, series_for_small)
    use_fraction = (x > 1.1) & ~use_series
    q = torch.where(use_series, 1.0 - series, torch.where(use_fraction, fraction, small))
    if not upper:  # P: 1 - Q where x > 1 and x > a, else the series
        complement = (x > 1.0) & (x > a)
        use_series = ~complement
        use_fraction = complement & use_fraction
        value = torch.where(complement, 1.0 - q, series)
    else:
        value = q
    converged = torch.where(use_series, series_done,
                            torch.where(use_fraction, fraction_done, True))  # fmt: skip
    converged = converged | ~inside
    # boundary values (eager's order, last applied wins)
    at_a_infinite = torch.where(x == _INF, _NAN, 1.0 if upper else 0.0)
    value = torch.where((x == _INF) & (a < _INF), 0.0 if upper else 1.0, value)
    value = torch.where(a == _INF, at_a_infinite, value)
    value = torch.where(x == 0, 1.0 if upper else 0.0, value)
    value = torch.where(a == 0, torch.where(x > 0, 0.0 if upper else 1.0, _NAN), value)
    value = torch.where((x < 0) | (a < 0), _NAN, value)
    value = torch.where(torch.isnan(a) | torch.isnan(x), _NAN, value)
    return value, converged


def _decomposition(upper: bool):
    name = "igammac" if upper else "igamma"

    def decomposition(a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        dtype = result_dtype(a, x)
        if dtype not in (torch.float32, torch.bfloat16, torch.float16):
            return NotImplemented
        af, xf = torch.broadcast_tensors(a.to(torch.float32), x.to(torch.float32))
        af, xf = unfused(af), unfused(xf)
        value, converged = _incomplete_gamma(af, xf, upper)
        torch.ops.aten._assert_async.msg(
            torch.all(converged.reshape(-1, 1)),  # (a column: compiles for any N)
            f"torch.{name}: the neuron backend sums {SERIES_TERMS} series terms and "
            f"{FRACTION_STEPS} continued-fraction steps; an element (a large, x near a) "
            f"needs more",
        )
        return value.to(dtype)

    decomposition.__name__ = name
    return decomposition


INCOMPLETE_GAMMA_DECOMPOSITIONS = {
    aten.igamma.default: _decomposition(False),
    aten.igammac.default: _decomposition(True),
    prims.igamma.default: _decomposition(False),
    prims.igammac.default: _decomposition(True),
}
