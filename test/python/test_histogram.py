"""torch.histogram / torch.histogramdd through the neuron backend (python/neuronsim/histogram.py):
static bin counts, edges from the data's min/max or a range or given, as eager's CPU kernel."""

import pytest
import torch

import neuronsim

FP32 = {"rtol": 1.3e-4, "atol": 1e-5}


def _compile(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="neuron", dynamic=False, fullgraph=True)


def _check(fn, *args):
    expected = fn(*args)
    got = _compile(fn)(*args)
    assert neuronsim.get_fallback_ops() == {}
    leaves = torch.utils._pytree.tree_leaves
    for g, e in zip(leaves(got), leaves(expected)):
        assert g.shape == e.shape and g.dtype == e.dtype
        torch.testing.assert_close(g, e, **FP32)
    return got, expected


@pytest.mark.parametrize("bins", [1, 7, 40])
def test_histogram_bin_count_edges_are_eagers_bit_for_bit(bins):
    """linspace edges as eager's FMA-contracted CPU kernel: equal bits, so samples on an edge
    fall in eager's bin."""
    x = torch.randn(300, generator=torch.Generator().manual_seed(bins)) * 13.7 + 0.3
    got, expected = _check(lambda x: torch.histogram(x, bins), x)
    assert torch.equal(got.bin_edges, expected.bin_edges)
    on_edges = torch.cat([x, expected.bin_edges])  # every edge a sample
    got, expected = _check(lambda x: torch.histogram(x, bins), on_edges)
    assert torch.equal(got.hist, expected.hist)


@pytest.mark.parametrize("density", [False, True])
def test_histogram_range_weight_density(density):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4, 25, generator=gen)
    w = torch.rand(4, 25, generator=gen)

    def fn(x, w):
        return torch.histogram(x, 6, range=(-1.0, 1.5), weight=w, density=density)

    _check(fn, x, w)


def test_histogram_given_edges_and_constant_input():
    x = torch.tensor([0.5, 1.0, 2.0, 2.0, 3.0, -1.0, float("nan")])
    edges = torch.tensor([0.0, 1.0, 1.5, 3.0])
    got, expected = _check(lambda x, b: torch.histogram(x, b), x, edges)
    assert torch.equal(got.hist, expected.hist)
    _check(lambda x: torch.histogram(x, 4), torch.full((5,), 2.5))  # widened by 0.5


@pytest.mark.parametrize("density", [False, True])
def test_histogramdd_bin_counts_and_tensors(density):
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(2, 40, 3, generator=gen)
    w = torch.rand(2, 40, generator=gen)
    _check(lambda x, w: torch.histogramdd(x, [3, 1, 4], weight=w, density=density), x, w)
    edges = [torch.tensor([-1.0, 0.0, 2.0]), torch.tensor([-3.0, 3.0]), torch.linspace(-1, 1, 5)]
    _check(lambda x, *e: torch.histogramdd(x, list(e), density=density), x, *edges)
    _check(lambda x: torch.histogramdd(x, [2, 2, 2], range=[0, 1, -1, 1, -2, 0]), x)


def test_histogram_of_nan_data_raises_after_the_run():
    compiled = _compile(lambda x: torch.histogram(x, 3))
    with pytest.raises(RuntimeError, match="torch.histogramdd: dimension 0's range"):
        torch.histogram(torch.tensor([1.0, float("nan")]), 3)
    message = "^torch.histogramdd: dimension 0's range is not finite$"
    with pytest.raises(RuntimeError, match=message):
        compiled(torch.tensor([1.0, float("nan")]))
