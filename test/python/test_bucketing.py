"""Shape bucketing: pad_to_bucket / Bucketed bound the compilations by the buckets, and the
outputs on the real positions equal eager on the unpadded inputs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

import neuronsim
from models import relative_error
from neuronsim.bucketing import Bucketed, bucket_for, pad_to_bucket, unpad

EXAMPLE = Path(__file__).resolve().parents[2] / "python" / "examples" / "bucketing.py"


def _example():
    spec = importlib.util.spec_from_file_location("bucketing_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bucket_for():
    assert [bucket_for(n, (32, 8, 16)) for n in (1, 8, 9, 16, 17, 32)] == [8, 8, 16, 16, 32, 32]
    with pytest.raises(ValueError, match="larger than the largest bucket 32"):
        bucket_for(33, (8, 16, 32))
    with pytest.raises(ValueError, match="positive"):
        bucket_for(3, ())


def test_pad_to_bucket_pads_and_masks():
    x = torch.arange(2 * 5 * 3, dtype=torch.float32).reshape(2, 5, 3)
    padded, mask = pad_to_bucket(x, dim=1, buckets=(4, 8), value=-1.0)
    assert padded.shape == (2, 8, 3) and mask.shape == (2, 8) and mask.dtype == torch.bool
    assert torch.equal(padded[:, :5], x) and bool((padded[:, 5:] == -1.0).all())
    assert mask[:, :5].all() and not mask[:, 5:].any()
    same, full = pad_to_bucket(x, dim=-2, buckets=(5,))
    assert same is x and full.all()
    batch, batch_mask = pad_to_bucket(x, dim=0, buckets=(4,))
    assert batch.shape == (4, 5, 3) and batch_mask.tolist() == [True, True, False, False]
    assert torch.equal(unpad((padded, [padded]), 1, 5)[1][0], x)


def test_lengths_compile_at_most_once_per_bucket_and_match_eager():
    example = _example()
    torch.manual_seed(0)
    encoder = example.MaskedEncoder().eval()
    buckets = (8, 16, 32)
    model = Bucketed(torch.compile(encoder, backend="neuron"), buckets=buckets, dim=1)
    lengths = (2, 5, 8, 9, 13, 16, 20, 27, 32)
    with torch.no_grad():
        for length in lengths:
            x = torch.randn(2, length, 32)
            actual = model(x)
            assert actual.shape == (2, length, 32)
            assert relative_error(actual, encoder(x)) <= 1e-5, length
    stats = neuronsim.cache_stats()
    assert 0 < stats["compiles"] <= len(buckets)
    compiled_lengths = {
        shape[1] for s in stats["signatures"] for shape, _ in s["inputs"] if len(shape) == 3
    }
    assert compiled_lengths <= set(buckets)


def test_example_runs(capsys):
    _example().main()
    out = capsys.readouterr().out
    assert "12 lengths, 3 compilations" in out
