"""aten.nonzero_static as a decomposition: the output size is static, so each output row k
finds the k-th nonzero element by its rank among the nonzeros (a cumulative sum) with a
one-hot comparison of every row with every element; rows past the last nonzero hold
fill_value, as eager's."""

from __future__ import annotations

import torch

aten = torch.ops.aten


def nonzero_static(x: torch.Tensor, *, size: int, fill_value: int = -1) -> torch.Tensor:
    """[size, x.dim()] int64: the indices of x's first `size` nonzeros in row-major order."""
    count = x.numel()
    if count == 0 or size == 0:
        return torch.full((size, x.dim()), fill_value, dtype=torch.int64, device=x.device)
    nonzero = (x != 0).reshape(count)
    rank = torch.cumsum(nonzero.to(torch.int64), 0) - 1
    slots = torch.arange(size, device=x.device).unsqueeze(1)
    hit = nonzero & (rank == slots)  # [size, count]: element i is the slot's nonzero
    positions = torch.arange(count, device=x.device)
    flat = torch.where(hit, positions, 0).sum(1, keepdim=True)
    found = hit.any(1, keepdim=True)
    coordinates = []
    stride = count
    for extent in x.shape:
        stride //= extent
        coordinates.append((flat // stride) % extent)
    if not coordinates:
        return torch.zeros((size, 0), dtype=torch.int64, device=x.device)
    return torch.where(found, torch.cat(coordinates, 1), fill_value)


NONZERO_STATIC_DECOMPOSITIONS = {aten.nonzero_static.default: nonzero_static}
