"""Regression tests of issue 29's silently wrong numbers and spurious errors, compiled vs
eager: logsumexp over several rows, low-precision reductions accumulating in fp32 (eager's
acc_type), copysign of signed zeros, reductions over dims given in descending order."""

from __future__ import annotations

import pytest
import torch

import neuronsim


def compiled(fn):
    return torch.compile(fn, backend="neuron", dynamic=False)


def run_on_simulator(fn, *args):
    out = compiled(fn)(*args)
    assert neuronsim.last_run_stats()["instructions"] > 0
    return out


# --- logsumexp ------------------------------------------------------------------------------


def test_logsumexp_of_several_rows():
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
    got = run_on_simulator(lambda x: torch.logsumexp(x, -1), x)
    torch.testing.assert_close(got, torch.logsumexp(x, -1), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape,dim", [((130, 33), -1), ((5, 7, 9), 1), ((4, 300), 0)])
def test_logsumexp_random(shape, dim):
    x = torch.randn(shape) * 4
    got = run_on_simulator(lambda x: torch.logsumexp(x, dim), x)
    torch.testing.assert_close(got, torch.logsumexp(x, dim), rtol=1e-5, atol=1e-5)


def test_router_z_loss():
    """SwitchTransformers' router z-loss: mean(logsumexp(logits, -1) ** 2)."""
    logits = torch.randn(2, 16, 8) * 3

    def z_loss(router_logits):
        num_groups, tokens_per_group, _ = router_logits.shape
        log_z = torch.logsumexp(router_logits, dim=-1)
        return torch.sum(log_z**2) / (num_groups * tokens_per_group)

    torch.testing.assert_close(run_on_simulator(z_loss, logits), z_loss(logits), rtol=1e-5, atol=1e-5)


# --- low-precision reductions accumulate in fp32 --------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_mean_whose_sum_overflows(dtype):
    x = torch.full((4096,), 20.0, dtype=dtype)
    got = run_on_simulator(lambda x: x.mean(), x)
    assert got.dtype == dtype
    torch.testing.assert_close(got, x.mean(), rtol=0, atol=0)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.mean(-1),
        lambda x: x.var(-1),
        lambda x: x.std(-1),
        lambda x: torch.var_mean(x, -1)[0],
        lambda x: torch.var_mean(x, -1)[1],
    ],
    ids=["mean", "var", "std", "var_mean.var", "var_mean.mean"],
)
def test_fp16_row_statistics_over_65504(fn):
    # rows of 3000 values near 40: sums over 65504, squares' sums too
    x = (40 + torch.randn(3, 3000)).to(torch.float16)
    want = fn(x)
    got = run_on_simulator(fn, x)
    assert got.dtype == want.dtype and torch.isfinite(got).all()
    torch.testing.assert_close(got.float(), want.float(), rtol=2e-3, atol=2e-3)


# --- signed zeros ---------------------------------------------------------------------------


def test_copysign_of_negative_zero():
    x = torch.tensor([1.0, -2.0, 3.0, 0.0, -0.0, float("inf")])
    s = torch.tensor([-0.0, 0.0, -0.0, -0.0, 0.0, -0.0])
    got = run_on_simulator(torch.copysign, x, s)
    want = torch.copysign(x, s)
    assert torch.equal(got, want) and torch.equal(torch.signbit(got), torch.signbit(want))


def test_copysign_scalar_sign_of_negative_zero_tensor():
    s = torch.tensor([-0.0, 0.0, -1.0, 1.0])
    got = run_on_simulator(lambda s: torch.copysign(torch.ones_like(s), s), s)
    assert torch.equal(got, torch.tensor([-1.0, 1.0, -1.0, 1.0]))


# --- reductions over dims in descending order -----------------------------------------------


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.sum(dim=(-1, -2)),
        lambda x: torch.amax(x, dim=(-1, -2)),
        lambda x: torch.amin(x, dim=(2, 0)),
        lambda x: x.mean(dim=(-1, -2)),
        lambda x: x.sum(dim=(-1, -2), keepdim=True),
    ],
    ids=["sum", "amax", "amin", "mean", "sum-keepdim"],
)
def test_reduction_over_descending_dims(fn):
    x = torch.randn(3, 5, 7)
    torch.testing.assert_close(run_on_simulator(fn, x), fn(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "fn", [torch.reciprocal, torch.sqrt, torch.exp, torch.sin, lambda x: 1.0 / x, torch.neg,
           torch.asinh, lambda x: torch.atan2(x, torch.ones_like(x)), lambda x: x + 0.0,
           lambda x: 0.0 - x, lambda x: x - 0.0, lambda x: torch.sqrt(x + 0.0),
           lambda x: torch.reciprocal(0.0 - x), lambda x: torch.reciprocal(x * 2 + 0.0),
           lambda x: torch.reciprocal((x - 1.0) + 1.0), lambda x: torch.reciprocal(x * 2)],
    ids=["reciprocal", "sqrt", "exp", "sin", "rdiv", "neg", "asinh", "atan2", "add0", "rsub0",
         "sub0", "sqrt-add0", "recip-rsub0", "recip-mul-add0", "recip-sub-add", "recip-mul"],
)  # fmt: skip
def test_activations_see_the_sign_of_zero(fn):
    """An activation without bias computes fn(x * scale): -0 stays -0 (1 / -0 is -inf), and
    +0 stays +0 (neg(+0) is -0)."""
    x = torch.tensor([-0.0, 0.0, -0.0, 1.5, -2.0, 0.0])
    got, want = run_on_simulator(fn, x), fn(x)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=0, equal_nan=True)
    number = ~torch.isnan(want)  # a NaN's sign bit is not part of its value
    assert torch.equal(torch.signbit(got)[number], torch.signbit(want)[number])


# --- max pooling backward with any indices ---------------------------------------------------


def _random_plane_indices(out_shape, plane, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, plane, out_shape, generator=g, dtype=torch.int64)


@pytest.mark.parametrize("batch", [(), (2,)], ids=["3-D", "4-D"])
def test_max_pool2d_backward_scatters_to_any_index(batch):
    op = torch.ops.aten.max_pool2d_with_indices_backward.default
    x = torch.randn(*batch, 3, 7, 6)
    grad = torch.randn(*batch, 3, 3, 3)
    # random positions of the whole 7 x 6 plane, repeated ones included
    idx = _random_plane_indices(grad.shape, 42, 1)
    fn = lambda g, x, i: op(g, x, [2, 2], [2, 2], [0, 0], [1, 1], False, i)  # noqa: E731
    torch.testing.assert_close(run_on_simulator(fn, grad, x, idx), fn(grad, x, idx),
                               rtol=1e-6, atol=1e-6)  # fmt: skip


def test_max_pool2d_backward_of_the_forward_indices():
    x = torch.randn(2, 3, 9, 9)
    y, idx = torch.ops.aten.max_pool2d_with_indices.default(x, [3, 3], [2, 2], [1, 1])
    grad = torch.randn_like(y)
    op = torch.ops.aten.max_pool2d_with_indices_backward.default
    fn = lambda g, x, i: op(g, x, [3, 3], [2, 2], [1, 1], [1, 1], False, i)  # noqa: E731
    torch.testing.assert_close(run_on_simulator(fn, grad, x, idx), fn(grad, x, idx),
                               rtol=1e-6, atol=1e-6)  # fmt: skip


@pytest.mark.parametrize("batch", [(), (2,)], ids=["4-D", "5-D"])
def test_max_pool3d_backward_scatters_to_any_index(batch):
    op = torch.ops.aten.max_pool3d_with_indices_backward.default
    x = torch.randn(*batch, 2, 4, 5, 4)
    grad = torch.randn(*batch, 2, 2, 2, 2)
    idx = _random_plane_indices(grad.shape, 80, 2)
    fn = lambda g, x, i: op(g, x, [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False, i)  # noqa: E731
    torch.testing.assert_close(run_on_simulator(fn, grad, x, idx), fn(grad, x, idx),
                               rtol=1e-6, atol=1e-6)  # fmt: skip


@pytest.mark.parametrize("fn", [torch.tanh, torch.sinh, torch.expm1, torch.log1p],
                         ids=["tanh", "sinh", "expm1", "log1p"])
def test_odd_at_zero_functions_keep_tiny_values_and_negative_zero(fn):
    # tanh(-0), sinh(-0), expm1(-0), log1p(-0) are -0 in eager, and tiny x maps to x; the
    # simulator gave +0 for both (log(1 + x) and exp(x) - 1 lose x below fp32's epsilon).
    x = torch.tensor([-0.0, 0.0, -1e-30, 1e-20, -3e-8, 1e-10, 2e-6, -5e-5, 1e-3, -0.3, 0.49, 0.51,
                      0.7, -0.99, 2.0, 20.0, 88.0, -100.0, -104.0])
    if fn is torch.log1p:
        x = x[x > -1]
    got, want = run_on_simulator(fn, x), fn(x)
    assert torch.equal(torch.signbit(got), torch.signbit(want))
    torch.testing.assert_close(got, want, rtol=2e-6, atol=0)
