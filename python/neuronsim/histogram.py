"""torch.histogram and torch.histogramdd as decompositions: the bin count is static, so the
histogram is a one-hot comparison of each sample's bin with every bin, summed over samples.

As eager's CPU kernel (aten/src/ATen/native/Histogram.cpp, cpu/HistogramKernel.cpp):
- The outer edges of a dimension are `range`, or the minimum and maximum of its samples (0 and
  1 with no samples); equal outer edges are widened by 0.5 on each side. The bin_ct ops' edges
  are then linspace(left, right, bins + 1) as eager's CPU linspace computes it in the input
  dtype: left + step * i for the first half, right - step * (bins - i) for the second, each a
  fused multiply-add (the kernel is compiled with FMA contraction), emulated here exactly
  enough to give eager's edges bit for bit (see _fused_multiply_add).
- A sample is counted if every coordinate lies in [left, right] (NaN never does); its bin in a
  dimension is the number of edges <= the coordinate, minus one, the last bin including its
  right edge (std::upper_bound, which the kernel's linear interpolation with local search
  reproduces for linspace edges).
- density divides by the total and by each dimension's bin lengths.
A non-finite data-derived range raises eager's RuntimeError after the run (a hoisted assert),
without the range's values in the message (they are data).
"""

from __future__ import annotations

import torch

aten = torch.ops.aten


def _fused_multiply_add(a: torch.Tensor, i: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """a * i + c rounded once (as fma), for i small non-negative integers (< 2^12) held as
    floats: a is split into 12-bit halves (Veltkamp) so both partial products are exact, and
    c + a_hi * i is summed without error (TwoSum) before the low parts are added."""
    split = a * 4097.0
    a_hi = split - (split - a)
    a_lo = a - a_hi
    product_hi, product_lo = a_hi * i, a_lo * i
    total = c + product_hi
    virtual = total - c
    error = (c - (total - virtual)) + (product_hi - virtual)
    return total + (error + product_lo)


def _linspace_edges(left: torch.Tensor, right: torch.Tensor, bins: int) -> torch.Tensor:
    """eager's CPU linspace(left, right, bins + 1) from 0-d tensors, in their dtype."""
    steps = bins + 1
    step = (right - left) / (steps - 1)
    index = torch.arange(steps, device=left.device).to(left.dtype)
    low = _fused_multiply_add(step, index, left)
    high = _fused_multiply_add(-step, (steps - 1) - index, right)
    return torch.where(torch.arange(steps, device=left.device) < steps // 2, low, high)


def _outer_edges(
    samples: torch.Tensor, range_: list[float] | None
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(left, right) 0-d tensors per dimension of samples [M, D], widened when equal."""
    d = samples.shape[-1]
    dtype = samples.dtype
    if range_ is not None:
        if len(range_) != 2 * d:
            return []
        outer = []
        for low, high in zip(range_[0::2], range_[1::2]):
            if low == high:  # widened in double, as eager, then converted
                low, high = low - 0.5, high + 0.5
            outer.append((torch.full((), low, dtype=dtype), torch.full((), high, dtype=dtype)))
        return outer
    if samples.shape[0] == 0:
        zero, one = torch.zeros((), dtype=dtype), torch.ones((), dtype=dtype)
        return [(zero, one)] * d
    lows, highs = samples.amin(0), samples.amax(0)
    lows = torch.where(torch.isnan(samples).any(0), torch.nan, lows)
    highs = torch.where(torch.isnan(samples).any(0), torch.nan, highs)
    for k in range(d):
        finite = torch.isfinite(lows[k]) & torch.isfinite(highs[k])
        torch._assert_async(finite, f"torch.histogramdd: dimension {k}'s range is not finite")
    same = lows == highs
    left = torch.where(same, lows - 0.5, lows)
    right = torch.where(same, highs + 0.5, highs)
    return [(left[k], right[k]) for k in range(d)]


def _bin_edges(samples: torch.Tensor, bins: list[int], range_) -> list[torch.Tensor]:
    outer = _outer_edges(samples, range_)
    return [_linspace_edges(left, right, b) for (left, right), b in zip(outer, bins)]


def _count(
    samples: torch.Tensor, edges: list[torch.Tensor], weight: torch.Tensor | None, density: bool
) -> torch.Tensor:
    """The histogram of samples [M, D] over the given edges (one sequence per dimension)."""
    m = samples.shape[0]
    bins = [e.shape[0] - 1 for e in edges]
    flat = torch.zeros(m, dtype=torch.int64, device=samples.device)
    inside = torch.ones(m, dtype=torch.bool, device=samples.device)
    stride = 1
    for k in range(len(edges) - 1, -1, -1):
        x = samples[:, k : k + 1]
        e = edges[k].to(samples.dtype)
        inside = inside & (x[:, 0] >= e[0]) & (x[:, 0] <= e[-1])
        position = (e <= x).sum(1) - 1
        position = torch.clamp(position, 0, bins[k] - 1)
        flat = flat + position * stride
        stride *= bins[k]
    cells = torch.arange(stride, device=samples.device)
    counted = inside.unsqueeze(1) & (flat.unsqueeze(1) == cells)  # [M, cells]
    values = (
        weight.reshape(m, 1).to(samples.dtype)
        if weight is not None
        else torch.ones((), dtype=samples.dtype)
    )
    hist = torch.where(counted, values, torch.zeros((), dtype=samples.dtype)).sum(0)
    hist = hist.reshape(bins)
    if density:
        hist = hist / hist.sum()
        for k, e in enumerate(edges):
            shape = [1] * len(bins)
            shape[k] = bins[k]
            hist = hist / (e[1:] - e[:-1]).to(samples.dtype).reshape(shape)
    return hist


def _samples(x: torch.Tensor, dims: int | None) -> torch.Tensor:
    """[M, D] samples: histogramdd's input [..., D]; histogram's (dims None) flattened."""
    if dims is None:
        return x.reshape(-1, 1)
    return x.reshape(-1, x.shape[-1])


def _weights(x: torch.Tensor, weight: torch.Tensor | None) -> torch.Tensor | None:
    return None if weight is None else weight.reshape(-1)


def histogramdd_bin_edges(x, bins, *, range=None, weight=None, density=False):  # noqa: A002
    """aten._histogramdd_bin_edges: the edges of every dimension."""
    if x.is_complex() or not x.is_floating_point():
        return NotImplemented
    return _bin_edges(_samples(x, x.shape[-1]), list(bins), range)


def histogramdd_from_bin_cts(x, bins, *, range=None, weight=None, density=False):  # noqa: A002
    """aten._histogramdd_from_bin_cts: the histogram of bins[k] equal bins per dimension."""
    if x.is_complex() or not x.is_floating_point():
        return NotImplemented
    samples = _samples(x, x.shape[-1])
    edges = _bin_edges(samples, list(bins), range)
    if len(edges) != samples.shape[1]:
        return NotImplemented
    return _count(samples, edges, _weights(x, weight), density)


def histogramdd_from_bin_tensors(x, bins, *, weight=None, density=False):
    """aten._histogramdd_from_bin_tensors: the histogram over the given edges."""
    if x.is_complex() or not x.is_floating_point():
        return NotImplemented
    samples = _samples(x, x.shape[-1])
    return _count(samples, list(bins), _weights(x, weight), density)


def histogram_bin_ct(x, bins=100, *, range=None, weight=None, density=False):  # noqa: A002
    """aten.histogram.bin_ct: (hist, bin_edges) of `bins` equal bins."""
    if x.is_complex() or not x.is_floating_point():
        return NotImplemented
    samples = _samples(x, None)
    edges = _bin_edges(samples, [bins], range)
    if not edges:
        return NotImplemented
    return _count(samples, edges, _weights(x, weight), density), edges[0]


def histogram_bins_tensor(x, bins, *, weight=None, density=False):
    """aten.histogram.bins_tensor: (hist, bin_edges) over the given edges."""
    if x.is_complex() or not x.is_floating_point():
        return NotImplemented
    samples = _samples(x, None)
    return _count(samples, [bins], _weights(x, weight), density), bins.clone()


HISTOGRAM_DECOMPOSITIONS = {
    aten._histogramdd_bin_edges.default: histogramdd_bin_edges,
    aten._histogramdd_from_bin_cts.default: histogramdd_from_bin_cts,
    aten._histogramdd_from_bin_tensors.default: histogramdd_from_bin_tensors,
    aten.histogram.bin_ct: histogram_bin_ct,
    aten.histogram.bins_tensor: histogram_bins_tensor,
}
