"""matrix_exp by scaling and squaring, as a decomposition (see linalg.py for the size cap).

exp(A) = exp(A / 2^s)^(2^s), s = max(0, ceil(log2 ||A||_1)), so that ||A / 2^s||_1 <= 1,
where the Taylor polynomial of degree TAYLOR_DEGREE has a truncation error below
1 / 13! = 1.6e-10 relative to ||exp(X)||: exact at fp32 tolerance. The halvings and the
squarings are unrolled MAX_SQUARINGS times and masked per matrix (s is data: each matrix of
a batch squares as often as it needs). A finite input with ||A||_1 > 2^MAX_SQUARINGS fails
on the host after the run (a runtime assert, runtime_asserts.py) instead of returning an
inexact result; non-finite inputs give NaN/inf, as in eager.
"""

from __future__ import annotations


import torch

from .linalg import _identity

TAYLOR_DEGREE = 12
MAX_SQUARINGS = 20


def matrix_exp(a: torch.Tensor) -> torch.Tensor:
    """aten.linalg_matrix_exp."""
    n = a.shape[-1]
    if n == 0 or a.numel() == 0:
        return a.clone()
    dtype = a.dtype
    x = a.to(torch.float32)
    norm = torch.abs(x).sum(-2).amax(-1, keepdim=True).unsqueeze(-1)  # [..., 1, 1]
    finite = torch.isfinite(norm)
    too_large = finite & (norm > 2.0**MAX_SQUARINGS)
    torch.ops.aten._assert_async.msg(
        torch.logical_not(too_large.any()),
        f"linalg.matrix_exp: the neuron backend computes the exponential of matrices with a "
        f"1-norm of at most 2^{MAX_SQUARINGS} (scaling and squaring unrolled "
        f"{MAX_SQUARINGS} times); this input's is larger",
    )
    # s = the number of halvings that bring the norm to at most 1 (exact: halving is exact)
    squarings = torch.zeros_like(norm)
    scaled_norm = norm
    for _ in range(MAX_SQUARINGS):
        more = scaled_norm > 1.0
        squarings = squarings + more.to(torch.float32)
        scaled_norm = torch.where(more, scaled_norm * 0.5, scaled_norm)
        x = torch.where(more, x * 0.5, x)
    identity = _identity(n, x)
    result = identity + x * (1.0 / TAYLOR_DEGREE)
    for k in range(TAYLOR_DEGREE - 1, 0, -1):  # Horner: I + X/k (I + X/(k+1) (...))
        result = identity + (x @ result) * (1.0 / k)
    for i in range(MAX_SQUARINGS):
        result = torch.where(squarings > i, result @ result, result)
    return result.to(dtype)


