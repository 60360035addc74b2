"""Shared pieces of the special-function decompositions: fp32 evaluation whatever the
input's type (eager computes bf16 and integer inputs in fp32 and rounds the result), and
Chebyshev series by Clenshaw's recurrence."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import torch


def result_dtype(*inputs: torch.Tensor) -> torch.dtype:
    """The float type eager returns: the promoted float input type, fp32 for integers."""
    dtype = inputs[0].dtype
    for t in inputs[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    return dtype if dtype.is_floating_point else torch.float32


def in_fp32(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """fn on fp32 tensors; the result in the inputs' float type, NaN where a single input is
    NaN. fp64 and complex inputs are left to the compiler's error (NotImplemented)."""

    @functools.wraps(fn)
    def wrapper(*inputs: torch.Tensor) -> torch.Tensor:
        dtype = result_dtype(*inputs)
        if dtype not in (torch.float32, torch.bfloat16, torch.float16):
            return NotImplemented
        values = [t.to(torch.float32) for t in inputs]
        result = fn(*values)
        if len(values) == 1:  # NaN in, NaN out (branches select on comparisons NaN fails)
            result = torch.where(torch.isnan(values[0]), values[0], result)
        return result.to(dtype)

    return wrapper


def chebyshev(t: torch.Tensor, coefficients: Sequence[float]) -> torch.Tensor:
    """sum_k c_k T_k(t) by Clenshaw's recurrence (stable for t in [-1, 1])."""
    after = torch.zeros_like(t)
    current = torch.zeros_like(t)
    twice = t + t
    for c in reversed(coefficients[1:]):
        current, after = twice * current - after + c, current
    return t * current - after + coefficients[0]


def unfused(t: torch.Tensor) -> torch.Tensor:
    """t's values through two reversals of its last dim: data movement the compiler's
    elementwise fusion does not fuse, so the result is a plain input to what follows.

    For unrolled recurrences: an op of a computed value and a number (a + k at each step k)
    joins the fused region that computed the value, whose results then are every step's,
    all live at once (an SBUF overflow on large inputs); on a plain input each such op is
    computed on its own."""
    return t.flip(-1).flip(-1) if t.dim() > 0 and t.shape[-1] > 1 else t
