"""Grouped matrix products (aten._grouped_mm and the mixture-of-experts custom ops libraries
register for it) as dense, masked batched products.

A grouped product splits one dimension into consecutive groups at run-time offsets `offs`
(cumulative ends, one per group): with a 2-D `input` [M, K] and 3-D `weight` [G, K, N], rows
offs[g-1] <= r < offs[g] of the output are input[r] @ weight[g]. The offsets are data, so the
groups' sizes are unknown when the graph is compiled. The decomposition computes every group's
product for every row (a [G, M, N] batched product) and keeps, for each row, its own group's
result through a one-hot mask built on device from `offs`: exact (the other groups contribute
exact zeros), at G times the FLOPs of the grouped product. Rows past the last offset are zero
(eager leaves them uninitialized).
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from .linear_cross_entropy import LINEAR_CROSS_ENTROPY_LIBRARY_OPS

aten = torch.ops.aten


def _group_masks(offs: torch.Tensor, length: int, like: torch.Tensor) -> torch.Tensor:
    """[G, length] one-hot: mask[g, i] = 1 where offs[g-1] <= i < offs[g] (offs[-1] = 0)."""
    positions = torch.arange(length, device=like.device, dtype=offs.dtype)
    ends = offs.reshape(-1, 1)
    starts = torch.cat([torch.zeros_like(offs[:1]), offs[:-1]]).reshape(-1, 1)
    inside = (positions >= starts) & (positions < ends)
    return inside.to(like.dtype)


def grouped_mm(
    mat_a: torch.Tensor,
    mat_b: torch.Tensor,
    offs: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    out_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """aten._grouped_mm: 2-D x 3-D groups the rows of mat_a, 3-D x 2-D the columns of mat_b,
    2-D x 2-D the contraction dimension (one [M, N] product per group), 3-D x 3-D is bmm."""
    if mat_a.dim() == 3 and mat_b.dim() == 3:
        if offs is not None:
            return NotImplemented
        out = torch.bmm(mat_a, mat_b)
        if bias is not None:
            out = out + bias.unsqueeze(-2)
    elif offs is None or offs.dim() != 1:
        return NotImplemented
    elif mat_a.dim() == 2 and mat_b.dim() == 3:  # rows of mat_a by group
        groups, m = mat_b.shape[0], mat_a.shape[0]
        every = torch.matmul(mat_a.unsqueeze(0), mat_b)  # [G, M, N]
        if bias is not None:
            every = every + bias.unsqueeze(1)
        mask = _group_masks(offs, m, every).unsqueeze(-1)  # [G, M, 1]
        out = (every * mask).sum(0) if groups > 1 else every[0] * mask[0]
    elif mat_a.dim() == 3 and mat_b.dim() == 2:  # columns of mat_b by group
        groups, n = mat_a.shape[0], mat_b.shape[1]
        every = torch.matmul(mat_a, mat_b.unsqueeze(0))  # [G, M, N]
        mask = _group_masks(offs, n, every).unsqueeze(1)  # [G, 1, N]
        if bias is not None:
            every = every + bias.unsqueeze(1)
        out = (every * mask).sum(0) if groups > 1 else every[0] * mask[0]
    elif mat_a.dim() == 2 and mat_b.dim() == 2:  # the contraction dimension by group
        mask = _group_masks(offs, mat_a.shape[1], mat_a)  # [G, K]
        out = torch.matmul(mat_a.unsqueeze(0) * mask.unsqueeze(1), mat_b)  # [G, M, N]
        if bias is not None:
            out = out + bias.unsqueeze(1)
    else:
        return NotImplemented
    return out.to(out_dtype) if out_dtype is not None else out


def grouped_mm_rows(input: torch.Tensor, weight: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    """(input [S, K], weight [G, K, N], offs [G]) -> [S, N], rows grouped by offs: the
    mixture-of-experts fallback op (transformers::grouped_mm_fallback)."""
    if input.dim() != 2 or weight.dim() != 3 or offs.dim() != 1:
        return NotImplemented
    return grouped_mm(input, weight, offs)


def grouped_mm_rows_backward(
    input: torch.Tensor, weight: torch.Tensor, offs: torch.Tensor, grad_output: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradients of grouped_mm_rows: grad_input groups rows of grad_output @ weight^T, and
    grad_weight[g] = input[rows of g]^T @ grad_output[rows of g] (grouped contraction)."""
    if input.dim() != 2 or weight.dim() != 3 or offs.dim() != 1:
        return NotImplemented
    grad_input = grouped_mm(grad_output, weight.transpose(-2, -1), offs)
    grad_weight = grouped_mm(input.t(), grad_output, offs)
    return grad_input, grad_weight


GROUPED_MM_DECOMPOSITIONS = {aten._grouped_mm.default: grouped_mm}

# Custom ops other libraries register with torch.library; decomposed when they are registered.
LIBRARY_OP_DECOMPOSITIONS: dict[str, Callable[..., Any]] = {
    "transformers::grouped_mm_fallback": grouped_mm_rows,
    "transformers::grouped_mm_fallback_backward": grouped_mm_rows_backward,
    **LINEAR_CROSS_ENTROPY_LIBRARY_OPS,
}


def registered_library_op_decompositions() -> dict[Any, Callable[..., Any]]:
    """LIBRARY_OP_DECOMPOSITIONS for the ops registered in this process, keyed on overload."""
    table = {}
    for name, fn in LIBRARY_OP_DECOMPOSITIONS.items():
        namespace, op_name = name.split("::")
        try:
            packet = getattr(getattr(torch.ops, namespace), op_name)
        except (AttributeError, RuntimeError):
            continue  # the library is not imported
        table[packet.default] = fn
    return table
