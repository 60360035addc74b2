"""F.grid_sample of 5-D inputs (aten.grid_sampler_3d) through the neuron backend
(python/neuronsim/grid_sample.py): trilinear and nearest, zeros/border/reflection padding,
both align_corners, against eager in fp32 and bit for bit in bf16 (eager's kernel rounds every
step to bf16, and so does the decomposition)."""

import pytest
import torch
import torch.nn.functional as F

import neuronsim

FP32 = {"rtol": 1.3e-4, "atol": 1e-5}
CASES = [
    (mode, padding, align)
    for mode in ("bilinear", "nearest")
    for padding in ("zeros", "border", "reflection")
    for align in (False, True)
]


def _inputs(dtype):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 4, 6, 5, generator=gen)
    grid = torch.rand(2, 3, 7, 4, 3, generator=gen) * 2.6 - 1.3  # some points outside
    return x.to(dtype), grid.to(dtype)


@pytest.mark.parametrize("mode,padding,align", CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_grid_sample_3d_matches_eager(mode, padding, align, dtype):
    x, grid = _inputs(dtype)

    def fn(x, grid):
        return F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=align)

    expected = fn(x, grid)
    torch._dynamo.reset()
    got = torch.compile(fn, backend="neuron", dynamic=False, fullgraph=True)(x, grid)
    assert neuronsim.get_fallback_ops() == {}
    assert got.shape == expected.shape and got.dtype == dtype
    if dtype == torch.bfloat16:
        assert torch.equal(got, expected)
    else:
        torch.testing.assert_close(got, expected, **FP32)
