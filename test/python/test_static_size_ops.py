"""Ops whose output size eager derives from data but the caller fixes: torch.nonzero_static
(python/neuronsim/nonzero_static.py) and torch.segment_reduce with lengths or offsets
(segment_reduce.py), through the neuron backend against eager."""

import math

import pytest
import torch

import neuronsim

FP32 = {"rtol": 1.3e-4, "atol": 1e-5}


def _compile(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="neuron", dynamic=False, fullgraph=True)


def _check(fn, *args, exact=False, **tol):
    expected = fn(*args)
    got = _compile(fn)(*args)
    assert neuronsim.get_fallback_ops() == {}
    assert got.shape == expected.shape and got.dtype == expected.dtype
    if exact:
        assert torch.equal(got, expected), (got, expected)
    else:
        torch.testing.assert_close(got, expected, equal_nan=True, **(tol or FP32))


X = torch.tensor([[0.0, 1.5, -0.0], [math.nan, 0.0, 2.0], [0.0, 0.0, -3.0], [4.0, 0.0, 0.0]])


@pytest.mark.parametrize("size", [0, 2, 5, 9])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.bool, torch.bfloat16])
def test_nonzero_static_matches_eager(size, dtype):
    x = X.to(dtype) if dtype != torch.int32 else X.nan_to_num().to(dtype)
    _check(lambda x: torch.nonzero_static(x, size=size), x, exact=True)
    _check(lambda x: torch.nonzero_static(x, size=size, fill_value=7), x, exact=True)


def test_nonzero_static_of_3d_and_scalar():
    x = (torch.arange(24).reshape(2, 3, 4) % 5 == 0).to(torch.float32)
    _check(lambda x: torch.nonzero_static(x, size=6), x, exact=True)
    _check(lambda x: torch.nonzero_static(x, size=3), torch.tensor(2.0), exact=True)


DATA = torch.tensor([1.0, -2.0, math.nan, 4.0, 5.0, 0.5, -1.0])
LENGTHS = torch.tensor([0, 2, 1, 3, 1])


@pytest.mark.parametrize("reduce", ["sum", "mean", "prod", "max", "min"])
@pytest.mark.parametrize("initial", [None, 2.0])
def test_segment_reduce_lengths_and_offsets(reduce, initial):
    data = DATA.nan_to_num(3.0)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), LENGTHS.cumsum(0)])
    _check(lambda d, l: torch.segment_reduce(d, reduce, lengths=l, initial=initial), data, LENGTHS)
    _check(lambda d, o: torch.segment_reduce(d, reduce, offsets=o, initial=initial), data, offsets)
    # NaN propagates as in eager (max and min included)
    _check(lambda d, l: torch.segment_reduce(d, reduce, lengths=l, initial=initial), DATA, LENGTHS)


@pytest.mark.parametrize("reduce", ["sum", "mean", "max"])
def test_segment_reduce_along_an_inner_axis(reduce):
    gen = torch.Generator().manual_seed(0)
    data = torch.randn(2, 6, 3, generator=gen)
    lengths = torch.tensor([[2, 0, 4], [1, 5, 0]])

    def fn(d, l):
        return torch.segment_reduce(d, reduce, lengths=l, axis=1)

    _check(fn, data, lengths)
    _check(fn, data.to(torch.bfloat16), lengths, rtol=2e-2, atol=2e-2)


def test_segment_reduce_lengths_not_summing_to_the_axis_raise_eagers_error():
    message = (
        "segment_reduce(): Expected all rows of lengths along axis to sum to "
        "data.size(lengths.dim()-1) when !unsafe."
    )
    bad = torch.tensor([1, 2, 1, 1, 1])
    with pytest.raises(RuntimeError) as eager:
        torch.segment_reduce(DATA, "sum", lengths=bad)
    assert str(eager.value) == message
    compiled = _compile(lambda d, l: torch.segment_reduce(d, "sum", lengths=l))
    expected = torch.segment_reduce(DATA, "sum", lengths=LENGTHS)
    torch.testing.assert_close(compiled(DATA, LENGTHS), expected, equal_nan=True)
    with pytest.raises(RuntimeError) as got:
        compiled(DATA, bad)
    assert str(got.value) == message
