"""Batched products and distances as decompositions: addbmm, cdist, pdist.

cdist follows eager's choice of algorithm: for p = 2 and compute_mode 1, or compute_mode
None/0 with more than 25 rows in either input, the matmul form
sqrt(max(0, |x|^2 - 2 x.y + |y|^2)) (eager's _euclidean_dist, same rounding behaviour);
otherwise the differences themselves. pdist (eager: always the differences) computes every
pair's distance and keeps the pairs i < j in eager's order (one slice per row).
"""

from __future__ import annotations

import math

import torch

aten = torch.ops.aten


def addbmm(
    self: torch.Tensor, batch1: torch.Tensor, batch2: torch.Tensor, *, beta=1, alpha=1
) -> torch.Tensor:
    """aten.addbmm: beta * self + alpha * sum_b batch1[b] @ batch2[b]; beta = 0 ignores self
    (its NaN and inf too), as eager does. In fp32 one matmul over the batch-and-contraction
    dim; in narrower types eager's order: one addmm per batch element, each rounded to the
    type (fp32 products and sums in between)."""
    b, n, k = batch1.shape
    m = batch2.shape[-1]
    if self.dtype == torch.float32 or b == 0:
        product = batch1.permute(1, 0, 2).reshape(n, b * k) @ batch2.reshape(b * k, m)
        if alpha != 1:
            product = product * alpha
        if beta == 0:
            return product.expand(n, m).clone()
        return (self * beta if beta != 1 else self) + product
    dtype = self.dtype
    result = self.to(torch.float32).expand(n, m)
    for i in range(b):
        product = batch1[i].to(torch.float32) @ batch2[i].to(torch.float32)
        if i == 0:
            result = product * alpha if beta == 0 else result * beta + product * alpha
        else:
            result = result.to(dtype).to(torch.float32) + product * alpha
    return result.to(dtype)


def _norm(diff: torch.Tensor, p: float) -> torch.Tensor:
    """The p-norm over the last dim, as eager's cdist/pdist kernels define it."""
    magnitude = torch.abs(diff)
    if p == 0:
        return (magnitude != 0).to(diff.dtype).sum(-1)
    if p == 1:
        return magnitude.sum(-1)
    if p == 2:
        return torch.sqrt((diff * diff).sum(-1))
    if math.isinf(p):
        return magnitude.amax(-1)
    return torch.pow(torch.pow(magnitude, p).sum(-1), 1.0 / p)


def _euclidean(x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    """eager's _euclidean_dist: one matmul of [-2 x1, |x1|^2, 1] and [x2, 1, |x2|^2]."""
    x1_norm = (x1 * x1).sum(-1, keepdim=True)
    x2_norm = (x2 * x2).sum(-1, keepdim=True)
    left = torch.cat([x1 * -2.0, x1_norm, torch.ones_like(x1_norm)], -1)
    right = torch.cat([x2, torch.ones_like(x2_norm), x2_norm], -1)
    return torch.sqrt(torch.clamp_min(left @ right.mT, 0.0))


def cdist_forward(
    x1: torch.Tensor, x2: torch.Tensor, p: float, compute_mode: int | None
) -> torch.Tensor:
    """aten._cdist_forward: [..., r1, r2] distances between the rows of x1 and x2."""
    r1, r2 = x1.shape[-2], x2.shape[-2]
    batch = torch.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    x1 = x1.expand(*batch, *x1.shape[-2:])
    x2 = x2.expand(*batch, *x2.shape[-2:])
    mode = compute_mode or 0
    if p == 2 and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25))):
        return _euclidean(x1, x2)
    if x1.shape[-1] == 0:
        return x1.new_zeros((*batch, r1, r2))
    return _norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p)


def cdist_backward(
    grad: torch.Tensor, x1: torch.Tensor, x2: torch.Tensor, p: float, cdist: torch.Tensor
) -> torch.Tensor:
    """aten._cdist_backward: the gradient with respect to x1 of the differences form,
    sum_j grad[i, j] * d||x1_i - x2_j||_p / dx1_i, zero where the distance is zero."""
    if p == 0 or x1.numel() == 0 or x2.shape[-2] == 0:
        return torch.zeros_like(x1)
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)  # [..., r1, r2, m]
    dist = cdist.unsqueeze(-1)
    zero = torch.zeros((), dtype=diff.dtype)
    if p == 1:
        slope = torch.sign(diff)
    elif p == 2:
        slope = torch.where(dist == 0, zero, diff / dist)
    elif math.isinf(p):
        slope = torch.sign(diff) * (torch.abs(diff) == dist).to(diff.dtype)
    elif p < 2:
        magnitude = torch.abs(diff)
        ratio = torch.sign(diff) * torch.pow(magnitude, p - 1) / torch.pow(dist, p - 1)
        slope = torch.where((dist == 0) | (magnitude == 0), zero, ratio)
    else:
        ratio = diff * torch.pow(torch.abs(diff), p - 2) / torch.pow(dist, p - 1)
        slope = torch.where(dist == 0, zero, ratio)
    result = (grad.unsqueeze(-1) * slope).sum(-2)
    return result.sum_to_size(x1.shape) if result.shape != x1.shape else result


def pdist_forward(x: torch.Tensor, p: float = 2.0) -> torch.Tensor:
    """aten._pdist_forward: the distances of the rows i < j of x [n, m], in row-major pair
    order."""
    n = x.shape[0]
    pairs = n * (n - 1) // 2
    if pairs == 0:
        return x.new_zeros((0,))
    if x.shape[1] == 0:
        return x.new_zeros((pairs,))
    distances = _norm(x.unsqueeze(1) - x.unsqueeze(0), p)
    return torch.cat([distances[i, i + 1 :] for i in range(n - 1)])


def _symmetric(pairs: torch.Tensor, n: int) -> torch.Tensor:
    """The [n, n] symmetric matrix with pdist's pair values (i < j, row-major) off the
    diagonal and zeros on it."""
    rows, start = [], 0
    for i in range(n):
        count = n - 1 - i
        if count == 0:
            rows.append(pairs.new_zeros((n,)))
        else:
            rows.append(torch.nn.functional.pad(pairs[start : start + count], (i + 1, 0)))
        start += count
    upper = torch.stack(rows)
    return upper + upper.mT


def pdist_backward(
    grad: torch.Tensor, x: torch.Tensor, p: float, pdist: torch.Tensor
) -> torch.Tensor:
    """aten._pdist_backward: cdist's gradient of x against itself, each pair counted from
    both ends."""
    n = x.shape[0]
    if n < 2 or x.shape[1] == 0:
        return torch.zeros_like(x)
    return cdist_backward(_symmetric(grad, n), x, x, p, _symmetric(pdist, n))


DISTANCE_DECOMPOSITIONS = {
    aten.addbmm.default: addbmm,
    aten._cdist_forward.default: cdist_forward,
    aten._cdist_backward.default: cdist_backward,
    aten._pdist_forward.default: pdist_forward,
    aten._pdist_backward.default: pdist_backward,
}
