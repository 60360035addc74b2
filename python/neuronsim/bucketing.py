"""Shape bucketing: pad a varying dimension up to a few sizes, so few shapes get compiled.

The neuron backend compiles one program per input shape. A model fed sequences of many lengths
would compile once per length; padding each input up to the next of a few bucket sizes (e.g.
128, 256, 512) bounds the compilations by the number of buckets. The model must then ignore the
padding, which is what the mask is for (an attention key-padding mask, a masked mean, ...):

    padded, mask = pad_to_bucket(x, dim=1, buckets=(16, 32, 64))   # x: [batch, seq, features]
    y = compiled(padded, mask)[:, : x.shape[1]]

or let Bucketed do the padding, the mask argument and the slicing of the outputs:

    model = Bucketed(torch.compile(net, backend="neuron"), buckets=(16, 32, 64), dim=1)
    y = model(x)   # net(padded, mask=mask), outputs cut back to x.shape[1] along dim 1

See python/examples/bucketing.py.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Any

import torch

__all__ = ["Bucketed", "bucket_for", "pad_to_bucket", "unpad"]


def _check_buckets(buckets: Sequence[int]) -> list[int]:
    sizes = sorted({int(b) for b in buckets})
    if not sizes or sizes[0] <= 0:
        raise ValueError(f"buckets must be positive sizes, got {list(buckets)!r}")
    return sizes


def bucket_for(length: int, buckets: Sequence[int]) -> int:
    """The smallest bucket >= length. Raises ValueError when length exceeds every bucket."""
    sizes = _check_buckets(buckets)
    i = bisect.bisect_left(sizes, length)
    if i == len(sizes):
        raise ValueError(
            f"length {length} is larger than the largest bucket {sizes[-1]}; add a bucket"
        )
    return sizes[i]


def pad_to_bucket(
    x: torch.Tensor, dim: int, buckets: Sequence[int], value: float | bool = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pads `x` at the end of dimension `dim` up to bucket_for(x.shape[dim], buckets).

    Returns (padded, mask): padded has the bucket size along `dim`, filled with `value`; mask
    is a bool tensor of shape padded.shape[: dim + 1], True where the data is real (e.g.
    [batch, bucket] for dim=1), on x's device.
    """
    dim = dim % x.dim()
    length = x.shape[dim]
    size = bucket_for(length, buckets)
    mask_shape = tuple(x.shape[:dim]) + (size,)
    mask = torch.zeros(mask_shape, dtype=torch.bool, device=x.device)
    mask.narrow(dim, 0, length).fill_(True)
    if size == length:
        return x, mask
    pad_shape = list(x.shape)
    pad_shape[dim] = size - length
    padding = torch.full(pad_shape, value, dtype=x.dtype, device=x.device)
    return torch.cat([x, padding], dim=dim), mask


def unpad(y: Any, dim: int, length: int) -> Any:
    """The first `length` entries of `y` along `dim` (tensors in lists/tuples/dicts too)."""
    if isinstance(y, torch.Tensor):
        return y.narrow(dim % y.dim(), 0, length) if y.dim() > 0 else y
    if isinstance(y, (list, tuple)):
        items = [unpad(v, dim, length) for v in y]
        return type(y)(items) if isinstance(y, list) else tuple(items)
    if isinstance(y, dict):
        return {k: unpad(v, dim, length) for k, v in y.items()}
    return y


class Bucketed(torch.nn.Module):
    """Wraps a (compiled) model: pads its first argument up to a bucket along `dim`, passes the
    mask as the keyword argument `mask_arg` (None: no mask), and cuts the outputs back along
    `output_dim` (None: outputs are returned as computed, e.g. a pooled result).

    Wrap the compiled model (Bucketed(torch.compile(net, backend="neuron"), ...)) so that the
    padding runs eagerly and the compiled graph only ever sees bucket shapes.
    """

    def __init__(
        self,
        model: Callable[..., Any],
        buckets: Sequence[int],
        dim: int = 1,
        mask_arg: str | None = "mask",
        output_dim: int | None = 1,
        value: float | bool = 0,
    ) -> None:
        super().__init__()
        self.model = model
        self.buckets = _check_buckets(buckets)
        self.dim = dim
        self.mask_arg = mask_arg
        self.output_dim = output_dim
        self.value = value

    def forward(self, x: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        length = x.shape[self.dim % x.dim()]
        padded, mask = pad_to_bucket(x, self.dim, self.buckets, self.value)
        if self.mask_arg is not None:
            kwargs[self.mask_arg] = mask
        out = self.model(padded, *args, **kwargs)
        if self.output_dim is None:
            return out
        return unpad(out, self.output_dim, length)
