"""Ops a peer compiler's e2e suite runs that the backend did not compile (issue 29): prims.iota,
rrelu (eval: exact; training: in distribution), integer _int_mm (exact, K over several fp32
chunks), randint (in distribution, within bounds); and InstanceNorm in fp16 vs eager."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import neuronsim


def run_on_simulator(fn, *args):
    out = torch.compile(fn, backend="neuron", dynamic=False)(*args)
    assert neuronsim.last_run_stats()["instructions"] > 0
    return out


def test_prims_iota():
    def fn(x):
        i = torch.ops.prims.iota(10, start=3, step=-2, dtype=torch.int64, device=x.device,
                                 requires_grad=False)  # fmt: skip
        return i + x

    x = torch.arange(10)
    assert torch.equal(run_on_simulator(fn, x), fn(x))


def test_rrelu_eval_matches_eager():
    x = torch.randn(4, 50)
    fn = lambda x: F.rrelu(x, 0.1, 0.4, training=False)  # noqa: E731
    torch.testing.assert_close(run_on_simulator(fn, x), fn(x), rtol=1e-6, atol=1e-6)


def test_rrelu_training_slopes_are_uniform_in_bounds():
    x = -torch.rand(64, 128) - 0.5  # negative: every element gets a random slope
    x[0] = torch.rand(128)  # and a row of positive ones, passed through
    got = run_on_simulator(lambda x: F.rrelu(x, 0.1, 0.4, training=True), x)
    slope = got[1:] / x[1:]
    assert torch.equal(got[0], x[0])
    assert slope.min() >= 0.1 and slope.max() < 0.4
    # uniform on [0.1, 0.4): mean 0.25, std 0.3 / sqrt(12) over 8128 draws
    assert slope.mean().item() == pytest.approx(0.25, abs=0.005)
    assert slope.std().item() == pytest.approx(0.3 / 12**0.5, rel=0.03)


@pytest.mark.parametrize("k", [64, 2500], ids=["one-chunk", "three-chunks"])
def test_int_mm_is_exact(k):
    g = torch.Generator().manual_seed(3)
    a = torch.randint(-128, 128, (33, k), generator=g, dtype=torch.int8)
    b = torch.randint(-128, 128, (k, 40), generator=g, dtype=torch.int8)
    a[0], b[:, 0] = -128, -128  # the largest products: a dot product of k * 2^14
    got = run_on_simulator(torch._int_mm, a, b)
    assert got.dtype == torch.int32 and torch.equal(got, torch._int_mm(a, b))


@pytest.mark.parametrize("low,high", [(0, 10), (-5, 3), (0, 2**24)])
def test_randint_within_bounds_and_uniform(low, high):
    got = run_on_simulator(lambda x: torch.randint(low, high, (50000,)) + x, torch.zeros((), dtype=torch.int64))
    assert got.dtype == torch.int64
    assert got.min() >= low and got.max() < high
    span = high - low
    if span <= 10:
        assert set(got.tolist()) == set(range(low, high))  # every value drawn
    # mean of a discrete uniform: (low + high - 1) / 2, std span / sqrt(12) / sqrt(n)
    sigma = span / 12**0.5 / 50000**0.5
    assert got.double().mean().item() == pytest.approx((low + high - 1) / 2, abs=5 * sigma)


@pytest.mark.parametrize("affine", [False, True])
def test_instance_norm_fp16_matches_eager(affine):
    norm = torch.nn.InstanceNorm2d(3, affine=affine).half()
    if affine:
        with torch.no_grad():
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-1, 1)
    x = (torch.randn(2, 3, 9, 9) * 30 + 1000).half()  # mean far from 0: its fp16 rounding shows
    with torch.no_grad():
        want = norm(x)
        got = run_on_simulator(norm, x)
    torch.testing.assert_close(got, want, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x[2:].as_strided((3, 4), (4, 1)),  # the view's offset 2
        lambda x: x[2:].as_strided((3, 4), (4, 1), 1),  # an explicit offset of the storage
        lambda x: x.view(4, 6)[1:, 2:].as_strided((2, 2), (6, 1)),
        lambda x: x.view(4, 6).t().as_strided((3, 5), (1, 4), 2),  # a transposed view
        lambda x: (x.view(4, 6)[1:].as_strided((2, 3), (6, 2)) * 2).sum(0),
    ],
    ids=["slice", "slice-offset", "2-d-slice", "transpose", "then-compute"],
)
def test_as_strided_of_a_view_reads_its_base(fn):
    x = torch.arange(24.0) * 1.5
    assert torch.equal(run_on_simulator(fn, x), fn(x))
