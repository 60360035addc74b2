"""Row-wise norms whose rows are narrower than the DMA efficiency knee (2438 bytes): layer
norm, group norm and var_mean against eager PyTorch. These pin the numerics that a
bn_stats / bn_aggr lowering with several rows packed per partition (issue 25) must keep:
row counts that are and are not multiples of the 128 partitions, rows of one and of
several 512-element bn_stats chunks, with and without the affine step.
"""

from __future__ import annotations

import pytest
import torch

BF16 = torch.bfloat16
# fp32: 1e-4; bf16: the suite's 3e-2 abs, 2e-2 rel (one rounding of an fp32 result).
TOL = {torch.float32: dict(atol=1e-4, rtol=1e-4), BF16: dict(atol=3e-2, rtol=2e-2)}


def _compiled(fn):
    return torch.compile(fn, backend="neuron", dynamic=False)


@pytest.mark.parametrize("dtype", [torch.float32, BF16])
@pytest.mark.parametrize(
    "shape",
    [
        (512, 768),  # 1536-byte bf16 rows, 4 rows per partition
        (300, 96),  # rows not a multiple of 128
        (2, 130, 640),  # leading dims, a row of two bn_stats chunks
        (256, 1000),  # a chunk of 512 and one of 488
    ],
)
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_short_rows(shape, dtype, affine):
    d = shape[-1]
    norm = torch.nn.LayerNorm(d, elementwise_affine=affine).to(dtype)
    if affine:
        with torch.no_grad():
            norm.weight.copy_(torch.randn(d, dtype=dtype))
            norm.bias.copy_(torch.randn(d, dtype=dtype))
    x = torch.randn(*shape, dtype=dtype) * 3 + 1.5  # a mean far from 0
    with torch.no_grad():
        expected = norm(x)
        got = _compiled(norm)(x)
    torch.testing.assert_close(got, expected, **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, BF16])
def test_group_norm_short_rows(dtype):
    norm = torch.nn.GroupNorm(4, 32).to(dtype)
    x = torch.randn(3, 32, 6, 5, dtype=dtype) * 2 - 1
    with torch.no_grad():
        torch.testing.assert_close(_compiled(norm)(x), norm(x), **TOL[dtype])


@pytest.mark.parametrize("correction", [0, 1])
def test_var_mean_short_rows(correction):
    x = torch.randn(384, 200) * 4 + 10

    def fn(t):
        return torch.var_mean(t, dim=-1, correction=correction, keepdim=True)

    with torch.no_grad():
        got_var, got_mean = _compiled(fn)(x)
        var, mean = fn(x)
    torch.testing.assert_close(got_var, var, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(got_mean, mean, atol=1e-4, rtol=1e-4)
