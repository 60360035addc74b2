"""Shape bucketing: sequences of many lengths, a few compiled shapes.

A small self-attention encoder takes [batch, tokens, features] and a key-padding mask. Fed
sequences of 12 different lengths directly, the neuron backend would compile 12 programs; padded
up to the buckets (16, 32, 64) with neuronsim.bucketing, it compiles at most 3, and the outputs
on the real (unpadded) positions equal eager PyTorch on the unpadded input.

    python python/examples/bucketing.py
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

import neuronsim
from neuronsim.bucketing import Bucketed

BUCKETS = (16, 32, 64)
LENGTHS = (3, 5, 9, 16, 17, 20, 25, 31, 33, 40, 50, 64)


class MaskedEncoder(torch.nn.Module):
    """One self-attention layer and a feed-forward layer. mask: [batch, tokens] bool, True for
    real tokens; padded keys get no attention weight. Without a mask, every token is real."""

    def __init__(self, features: int = 32, hidden: int = 64) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(features, 3 * features)
        self.proj = torch.nn.Linear(features, features)
        self.ff1 = torch.nn.Linear(features, hidden)
        self.ff2 = torch.nn.Linear(hidden, features)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = (q @ k.transpose(1, 2)) * (1.0 / math.sqrt(q.shape[-1]))
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
        x = x + self.proj(F.softmax(scores, dim=-1) @ v)
        return x + self.ff2(torch.relu(self.ff1(x)))


def main() -> None:
    torch.manual_seed(0)
    encoder = MaskedEncoder().eval()
    # Pad outside the compiled region: the compiled graph only ever sees bucket shapes.
    model = Bucketed(torch.compile(encoder, backend="neuron"), buckets=BUCKETS, dim=1)
    worst = 0.0
    with torch.no_grad():
        for length in LENGTHS:
            x = torch.randn(2, length, 32)
            actual = model(x).cpu()  # [2, length, 32]: padded to a bucket, cut back
            expected = encoder(x)  # eager, unpadded, no mask
            error = float((actual - expected).abs().max() / expected.abs().max())
            worst = max(worst, error)
            print(f"length {length:3d}: relative error {error:.2e}")
    stats = neuronsim.cache_stats()
    shapes = sorted(
        {tuple(shape) for s in stats["signatures"] for shape, _ in s["inputs"] if len(shape) == 3}
    )
    print(
        f"{len(LENGTHS)} lengths, {stats['compiles']} compilations "
        f"(buckets {BUCKETS}; compiled input shapes {shapes}); worst relative error {worst:.2e}"
    )


if __name__ == "__main__":
    main()
