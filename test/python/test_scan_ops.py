"""Scans other than cumsum (cumprod, cummax, cummin, logcumsumexp): log-step scans in the
importer (compiler/Import/AtenScans.cpp), compared with eager.

Tolerances: cummax/cummin values and indices and integer cumprod exactly (the combines are
exact); float cumprod and logcumsumexp at rtol 1e-5 (fp32) / 2e-2 (bf16), since the scan
multiplies or adds in a different order than eager's loop.
"""

from __future__ import annotations

import pytest
import torch

import neuronsim  # noqa: F401 - registers the backend


def _compiled(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="neuron", dynamic=False)


def _special_values(shape=(3, 37, 5)) -> torch.Tensor:
    """Random values with NaN, +-inf and runs of ties where the scans must pick right."""
    torch.manual_seed(0)
    x = torch.randn(*shape)
    x[0, 5, 1] = float("nan")
    x[0, 20, 1] = float("nan")
    x[1, 3:9, 2] = 1.0
    x[2, 10, 0], x[2, 12, 0] = float("inf"), float("-inf")
    x[1, :, 4] = float("-inf")
    return x


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("op", [torch.cummax, torch.cummin], ids=["cummax", "cummin"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cummax_cummin_values_and_indices_match_eager_exactly(op, dim, dtype):
    """Later ties win, and once a NaN is seen it stays, with the last NaN's index."""
    x = _special_values().to(dtype)
    expected = op(x, dim)
    actual = _compiled(lambda t: op(t, dim))(x)
    torch.testing.assert_close(actual.values, expected.values, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(actual.indices, expected.indices)


@pytest.mark.parametrize("op", [torch.cummax, torch.cummin], ids=["cummax", "cummin"])
def test_cummax_cummin_of_integers(op):
    x = torch.randint(-4, 4, (5, 33))
    x[0, 0] = torch.iinfo(torch.int64).min if op is torch.cummax else torch.iinfo(torch.int64).max
    expected = op(x, 1)
    actual = _compiled(lambda t: op(t, 1))(x)
    assert torch.equal(actual.values, expected.values)
    assert torch.equal(actual.indices, expected.indices)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_cumprod_matches_eager(dtype):
    torch.manual_seed(0)
    x = (torch.rand(4, 50, 3) * 0.6 + 0.7).to(dtype)
    x[1, 7, 0] = 0.0
    x[2, 9, 1] = float("inf")
    tolerance = 1e-5 if dtype == torch.float32 else 2e-2
    for dim in (0, 1, 2):
        fn = lambda t, d=dim: torch.cumprod(t, d)  # noqa: E731
        torch.testing.assert_close(_compiled(fn)(x), fn(x), rtol=tolerance, atol=1e-6,
                                   equal_nan=True)  # fmt: skip


def test_integer_cumprod_wraps_as_eager():
    x = torch.randint(-9, 9, (3, 70))
    fn = lambda t: torch.cumprod(t, 1)  # noqa: E731
    assert torch.equal(_compiled(fn)(x), fn(x))
    fn_dtype = lambda t: torch.cumprod(t, 1, dtype=torch.float32)  # noqa: E731
    torch.testing.assert_close(_compiled(fn_dtype)(x[:, :12]), fn_dtype(x[:, :12]), rtol=1e-5,
                               atol=0)  # fmt: skip


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_logcumsumexp_matches_eager(dtype):
    """-inf runs stay -inf, +inf stays +inf, NaN propagates; large values do not overflow."""
    x = (_special_values() * 30).to(dtype)
    tolerance = 1e-5 if dtype == torch.float32 else 2e-2
    for dim in (0, 1, 2):
        fn = lambda t, d=dim: torch.logcumsumexp(t, d)  # noqa: E731
        torch.testing.assert_close(_compiled(fn)(x), fn(x), rtol=tolerance, atol=1e-5,
                                   equal_nan=True)  # fmt: skip


@pytest.mark.parametrize(
    "fn",
    [lambda x: x.cumprod(1), lambda x: x.logcumsumexp(1)],
    ids=["cumprod", "logcumsumexp"],
)
def test_scan_gradients_match_eager(fn):
    torch.manual_seed(0)
    x = (torch.rand(4, 9) + 0.5).requires_grad_()
    probe = torch.randn(4, 9)
    (fn(x) * probe).sum().backward()
    expected, x.grad = x.grad.clone(), None
    (_compiled(fn)(x) * probe).sum().backward()
    torch.testing.assert_close(x.grad, expected, rtol=1e-5, atol=1e-6)
