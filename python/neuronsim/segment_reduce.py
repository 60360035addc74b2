"""aten.segment_reduce (torch.segment_reduce with lengths or offsets) as a decomposition: the
segment count is static (the last dim of lengths/offsets), so every segment is a masked
reduction over the axis, its membership mask built on device from the segments' starts and
ends (ends = cumsum(lengths)).

As eager's CPU kernel: a segment starts from `initial` when given (else sum 0, prod 1, max
-inf, min inf), max and min propagate NaN, mean divides by the segment's length (an empty
segment's mean is `initial`, or NaN without it). Without `unsafe`, eager's check that each
row of lengths sums to the axis' size runs on the host after the run (a hoisted assert).
"""

from __future__ import annotations

import math

import torch

aten = torch.ops.aten

_IDENTITY = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -math.inf, "min": math.inf}
_LENGTHS_MESSAGE = (
    "segment_reduce(): Expected all rows of lengths along axis to sum to "
    "data.size(lengths.dim()-1) when !unsafe."
)


def _reduce(values: torch.Tensor, reduce: str, dim: int) -> torch.Tensor:
    if reduce in ("sum", "mean"):
        return values.sum(dim)
    if reduce == "prod":
        return values.prod(dim)
    return values.amax(dim) if reduce == "max" else values.amin(dim)


def segment_reduce(
    data: torch.Tensor,
    reduce: str,
    *,
    lengths: torch.Tensor | None = None,
    indices: torch.Tensor | None = None,
    offsets: torch.Tensor | None = None,
    axis: int = 0,
    unsafe: bool = False,
    initial: float | None = None,
) -> torch.Tensor:
    """[*data.shape[:axis], segments, *data.shape[axis + 1:]]."""
    if indices is not None or reduce not in _IDENTITY or not data.is_floating_point():
        return NotImplemented
    axis = axis % data.dim()
    if lengths is not None:
        if lengths.dim() != axis + 1:
            return NotImplemented
        ends = torch.cumsum(lengths.to(torch.int64), -1)
        starts = ends - lengths
        if not unsafe:
            torch._assert_async((ends[..., -1:] == data.shape[axis]).all(), _LENGTHS_MESSAGE)
    elif offsets is not None:
        if offsets.dim() != axis + 1:
            return NotImplemented
        starts, ends = offsets[..., :-1].to(torch.int64), offsets[..., 1:].to(torch.int64)
    else:
        return NotImplemented
    segments = starts.shape[-1]
    batch, length = data.shape[:axis], data.shape[axis]
    rest = data.shape[axis + 1 :]
    flat = data.reshape(math.prod(batch), 1, length, math.prod(rest))  # [B, 1, N, R]
    starts = starts.reshape(-1, segments, 1, 1)
    ends = ends.reshape(-1, segments, 1, 1)
    positions = torch.arange(length, device=data.device).reshape(1, 1, length, 1)
    member = (positions >= starts) & (positions < ends)  # [B, S, N, 1]
    identity = torch.full((), _IDENTITY[reduce], dtype=data.dtype)
    out = _reduce(torch.where(member, flat, identity), reduce, 2)  # [B, S, R]
    if initial is not None:
        start = torch.full((), initial, dtype=data.dtype)
        if reduce in ("sum", "mean"):
            out = start + out
        elif reduce == "prod":
            out = start * out
        else:
            out = torch.maximum(out, start) if reduce == "max" else torch.minimum(out, start)
    if reduce == "mean":
        count = (ends - starts).reshape(-1, segments, 1)
        divided = out / count.to(data.dtype)
        empty = out if initial is not None else torch.full_like(out, math.nan)
        out = torch.where(count > 0, divided, empty)
    return out.reshape(*batch, segments, *rest)


SEGMENT_REDUCE_DECOMPOSITIONS = {aten.segment_reduce.default: segment_reduce}
