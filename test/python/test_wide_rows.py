"""Row reductions over wide rows (more than 2048 elements) fuse with their elementwise ops
while a block's tiles fit SBUF (see neuron-fuse-elementwise): softmax, layer norm and RMS
norm over 4096 to 16384 columns match eager, fused or not, and the fused ones move each
input and output through HBM once."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import neuronsim

TOL = {torch.float32: dict(atol=1e-5, rtol=1e-4), torch.bfloat16: dict(atol=2e-2, rtol=2e-2)}


def softmax(x, w, b):
    return torch.softmax(x, dim=-1)


def layer_norm(x, w, b):
    return F.layer_norm(x, x.shape[-1:], w, b)


def rms_norm(x, w, b):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


def run(fn, rows, cols, dtype):
    x = torch.randn(rows, cols, dtype=dtype)
    w, b = torch.randn(cols, dtype=dtype), torch.randn(cols, dtype=dtype)
    with torch.no_grad():
        got = torch.compile(fn, backend="neuron", dynamic=False)(x, w, b)
        want = fn(x, w, b)
    torch.testing.assert_close(got, want, **TOL[dtype])
    return neuronsim.last_run_stats()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("fn", [softmax, layer_norm, rms_norm])
@pytest.mark.parametrize("rows,cols", [(256, 4096), (130, 6000), (128, 16384)])
def test_wide_rows_match_eager(fn, rows, cols, dtype):
    run(fn, rows, cols, dtype)


@pytest.mark.parametrize("cols", [4096, 8192])
def test_wide_softmax_moves_hbm_once(cols):
    stats = run(softmax, 256, cols, torch.bfloat16)
    # one fusion: the input read and the output written once (no HBM round trips of
    # intermediate values, as the unfused column-tiled reductions make)
    assert stats["hbm_bytes"] == 2 * 256 * cols * 2
