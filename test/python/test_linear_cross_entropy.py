"""F.linear_cross_entropy with chunking options (PyTorch's torch_nn chunked custom ops) through
the neuron backend: one linear and one cross entropy over the batch
(python/neuronsim/linear_cross_entropy.py). Losses and gradients against eager."""

import warnings

import pytest
import torch
import torch.nn.functional as F
from torch.nn.modules.linear_cross_entropy_options import LinearCrossEntropyOptions

import neuronsim

FP32 = {"rtol": 1.3e-4, "atol": 1e-5}
BF16 = {"rtol": 2e-2, "atol": 2e-2}


def _options(**kwargs):
    return LinearCrossEntropyOptions(batch_chunk_size=3, allow_retain_graph=True, **kwargs)


def _compile(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="neuron", dynamic=False, fullgraph=True)


def _data(dtype, batch=10, features=12, classes=7, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, features, generator=gen).to(dtype)
    w = torch.randn(classes, features, generator=gen).to(dtype)
    b = torch.randn(classes, generator=gen).to(dtype)
    class_weight = torch.rand(classes, generator=gen).to(dtype) + 0.5
    target = torch.randint(0, classes, (batch,), generator=gen)
    target[2] = -100  # the default ignore_index
    return x, w, b, class_weight, target


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype,tol", [(torch.float32, FP32), (torch.bfloat16, BF16)])
def test_chunked_loss_matches_eager(reduction, dtype, tol):
    x, w, b, class_weight, target = _data(dtype)

    def fn(x, w, b, class_weight, target):
        return F.linear_cross_entropy(
            x, w, target, linear_bias=b, weight=class_weight, reduction=reduction,
            options=_options(),
        )

    expected = fn(x, w, b, class_weight, target)
    got = _compile(fn)(x, w, b, class_weight, target)
    assert neuronsim.get_fallback_ops() == {}
    assert got.dtype == expected.dtype and got.shape == expected.shape
    torch.testing.assert_close(got, expected, **tol)


def test_chunked_mean_of_all_ignored_rows_is_nan():
    x, w, b, _, target = _data(torch.float32)
    target = torch.full_like(target, 3)

    def fn(x, w, target):
        return F.linear_cross_entropy(x, w, target, ignore_index=3, options=_options())

    expected = fn(x, w, target)
    assert expected.isnan()
    assert _compile(fn)(x, w, target).isnan()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_chunked_gradients_match_eager(reduction):
    """The scalar op returns its gradients from the forward; 'none' recomputes them in its
    backward: both train like eager."""
    data = _data(torch.float32, seed=1)

    def fn(x, w, b, class_weight, target):
        loss = F.linear_cross_entropy(
            x, w, target, linear_bias=b, weight=class_weight, reduction=reduction,
            options=_options(),
        )
        return loss if reduction != "none" else (loss * torch.arange(loss.shape[0])).sum()

    def run(f):
        x, w, b = (t.clone().requires_grad_() for t in data[:3])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss = f(x, w, b, *data[3:])
        loss.backward()
        return loss, x.grad, w.grad, b.grad

    expected = run(fn)
    got = run(_compile(fn))
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, **FP32)
