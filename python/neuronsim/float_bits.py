"""signbit, frexp and nextafter from float arithmetic (the compiler has no bit casts).

Each works on the value, not on its bits: the exponent comes from floor(log2|x|), corrected
by one step so that the mantissa lands in [0.5, 1); powers of two come from exp2 of an
integer, which is exact, and scaling by them is exact. The sign of zero is read through an
ALU division (1 / -0 = -inf). Where the bits alone carry information (the sign of a NaN)
the value cannot show it: a NaN's signbit is False.
"""

from __future__ import annotations

import torch

aten = torch.ops.aten

# (mantissa bits including the implicit one, exponent of the smallest normal number)
_FORMATS = {torch.float32: (24, -126), torch.bfloat16: (8, -126)}


def _negative(x: torch.Tensor) -> torch.Tensor:
    """x < 0, or x is -0 (1 / -0 is -inf: the ALU division keeps the sign of zero)."""
    return (x < 0) | ((x == 0) & (torch.ones_like(x) / x < 0))


def _power_of_two(e: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Two exact fp32 powers of two whose product is 2^e, for integral e in [-250, 250] (one
    power alone over- or underflows outside [-149, 127])."""
    half = torch.floor(e * 0.5)
    return torch.exp2(half), torch.exp2(e - half)


def _split(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(m, e) with a = m * 2^e and m in [0.5, 1), for finite a > 0 (fp32), computed exactly."""
    e = torch.floor(torch.log2(a)) + 1.0
    first, second = _power_of_two(-e)
    m = a * first * second
    # log2 may round across a power of two: one correction step either way
    high = m >= 1.0
    m = torch.where(high, m * 0.5, m)
    e = torch.where(high, e + 1.0, e)
    low = m < 0.5
    m = torch.where(low, m * 2.0, m)
    e = torch.where(low, e - 1.0, e)
    return m, e


def signbit(x: torch.Tensor) -> torch.Tensor:
    """aten.signbit: True for negative values and -0 (integers: x < 0)."""
    if not x.dtype.is_floating_point:
        return x < 0
    return _negative(x.to(torch.float32))


def frexp(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """aten.frexp: (mantissa, int32 exponent) with x = mantissa * 2^exponent, |mantissa| in
    [0.5, 1); zero, infinities and NaN give (x, 0) as eager's std::frexp."""
    if x.dtype not in _FORMATS:
        return NotImplemented
    v = x.to(torch.float32)
    a = torch.abs(v)
    regular = (a > 0) & (a < float("inf"))
    m, e = _split(torch.where(regular, a, 1.0))
    mantissa = torch.where(regular, torch.where(v < 0, -m, m), v)
    exponent = torch.where(regular, e, 0.0)
    return mantissa.to(x.dtype), exponent.to(torch.int32)


def nextafter(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """aten.nextafter: the neighbour of x in x's format (fp32 or bf16) towards y; y where
    x == y, NaN where either is NaN. The step is x's unit in the last place (half of it
    towards zero from a normal power of two), a subnormal's below 2^-126; x + step is exact."""
    if x.dtype not in _FORMATS or y.dtype != x.dtype:
        return NotImplemented
    bits, min_exponent = _FORMATS[x.dtype]
    v, w = x.to(torch.float32), y.to(torch.float32)
    a = torch.abs(v)
    finite = (a > 0) & (a < float("inf"))
    m, e = _split(torch.where(finite, a, 1.0))  # a in [2^(e-1), 2^e)
    ulp_exponent = torch.clamp(e, min=min_exponent + 1) - bits
    towards_zero = (w > v) != (v > 0)
    shrink = towards_zero & (m == 0.5) & (e - 1 > min_exponent)
    first, second = _power_of_two(torch.where(shrink, ulp_exponent - 1, ulp_exponent))
    step = first * second
    direction = torch.where(w > v, 1.0, -1.0)
    result = v + direction * step
    tiny = float(2.0 ** (min_exponent + 1 - bits))  # the smallest subnormal
    result = torch.where(v == 0, direction * tiny, result)
    largest = float((2.0 - 2.0 ** (1 - bits)) * 2.0**127)
    result = torch.where(torch.isinf(v), torch.where(v > 0, largest, -largest), result)
    result = torch.where(v == w, w, result)
    result = torch.where(torch.isnan(v) | torch.isnan(w), float("nan"), result)
    return result.to(x.dtype)


FLOAT_BITS_DECOMPOSITIONS = {
    aten.signbit.default: signbit,
    aten.frexp.Tensor: frexp,
    aten.nextafter.default: nextafter,
}
