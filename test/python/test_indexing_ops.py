"""Indexed writes compiled as indirect DMA scatters, against eager: index_put (with and without
accumulate, several indices, skipped dims, masks), index_fill, index_copy, put, scatter,
scatter_add, scatter_reduce, index_reduce, max_unpool, and nn.EmbeddingBag forward and
training.

Writes without a reduction are exact (equal to eager bit for bit, duplicates included: the
last index wins, as in eager's CPU kernels). Reductions match eager within rtol 1e-5 in fp32
and 1.6e-2 in bf16 (sums of the same values, each add rounded to the dtype, in index order).
Indices out of range raise on the device where eager raises.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import neuronsim
from neuronsim.compiler import compile_fx_graph
from neuronsim.options import resolve_options
from test_more_ops import _one_op_graph

A = torch.ops.aten
DTYPES = [torch.float32, torch.bfloat16]
DTYPE_IDS = ["fp32", "bf16"]


def _compile(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="neuron", dynamic=False)


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1.6e-2, atol=1e-2)


def _run(fn, *args):
    with torch.no_grad():
        got = _compile(fn)(*args)
        expected = fn(*args)
    return got, expected


def _exact(fn, *args):
    got, expected = _run(fn, *args)
    for g, e in zip(got if isinstance(got, tuple) else (got,),
                    expected if isinstance(expected, tuple) else (expected,)):
        assert g.dtype == e.dtype and g.shape == e.shape
        assert torch.equal(g, e), (g, e)


def _close(fn, *args, dtype=torch.float32):
    got, expected = _run(fn, *args)
    for g, e in zip(got if isinstance(got, tuple) else (got,),
                    expected if isinstance(expected, tuple) else (expected,)):
        assert g.dtype == e.dtype and g.shape == e.shape
        torch.testing.assert_close(g, e, **_tol(dtype), equal_nan=True)


def _tensor_engine_idle():
    return neuronsim.last_run_stats()["engine_busy_ns"]["tensor"] == 0.0


# --- index_put ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_index_put_rows_last_duplicate_wins_and_negative_indices_wrap(dtype):
    x = torch.randn(7, 5).to(dtype)
    i = torch.tensor([1, -1, 3, 1, 6, -7])  # 1 three times (-7 wraps to 0... and 1 twice)
    v = torch.randn(6, 5).to(dtype)
    _exact(lambda x, i, v: x.index_put((i,), v), x, i, v)
    assert _tensor_engine_idle()


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_index_put_accumulate_sums_duplicates(dtype):
    x = torch.randn(300, 6).to(dtype)
    i = torch.randint(-300, 300, (200,))  # many duplicates, negatives, two 128-row blocks
    v = torch.randn(200, 6).to(dtype)
    _close(lambda x, i, v: x.index_put((i,), v, accumulate=True), x, i, v, dtype=dtype)
    assert _tensor_engine_idle()  # a scatter, not a one-hot matmul


def test_index_put_several_indices_skipped_dims_and_broadcast_values():
    x = torch.randn(4, 6, 5)
    i, j = torch.tensor([[0], [-2]]), torch.tensor([1, 3, -1])
    v = torch.randn(2, 3)
    _exact(lambda x, i, j, v: torch.ops.aten.index_put(x, [None, i, j], v), x, i, j, v)
    _close(lambda x, i, j, v: torch.ops.aten.index_put(x, [None, i, j], v, True), x, i, j, v)
    _exact(lambda x, i, j: torch.ops.aten.index_put(x, [i, j], torch.tensor(2.5)), x, i, j)


def test_index_put_integer_tensor():
    x = torch.arange(20).reshape(4, 5)
    i = torch.tensor([3, 0, 3])
    v = torch.tensor([(1 << 40) + 1, 7, -9])
    _exact(lambda x, i, v: x.index_put((i,), v.unsqueeze(1).expand(3, 5), accumulate=True),
           x, i, v)


def test_index_put_with_a_mask_and_row_values_is_a_select():
    x = torch.randn(4, 3)
    m = torch.tensor([True, False, True, False])
    v = torch.randn(3)
    _exact(lambda x, m, v: x.index_put((m,), v), x, m, v)
    _exact(lambda x, m, v: x.index_put((m,), v, accumulate=True), x, m, v)
    _exact(lambda x, m: x.masked_fill(m.unsqueeze(1), 4.0), x, m)


def test_index_put_mask_with_values_per_selected_row_is_rejected():
    x, v = torch.zeros(4, 3), torch.randn(2, 3)
    m = torch.tensor([True, False, True, False])
    with pytest.raises(neuronsim.NeuronCompileError, match="values the same for every selected"):
        _compile(lambda x, m, v: x.index_put((m,), v))(x, m, v)


def test_index_put_out_of_range_raises_like_eager():
    x, v = torch.zeros(4, 3), torch.ones(1, 3)
    with pytest.raises(IndexError):
        x.index_put((torch.tensor([4]),), v)
    with pytest.raises(neuronsim.NeuronRuntimeError, match=r"index 4 .*outside the table's 4 rows"):
        with torch.no_grad():
            _compile(lambda x, i, v: x.index_put((i,), v))(x, torch.tensor([4]), v)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_index_fill_index_copy_index_select(dtype):
    x = torch.randn(5, 6, 3).to(dtype)
    i = torch.tensor([4, 0, 2])
    src = torch.randn(5, 3, 3).to(dtype)
    _exact(lambda x, i: x.index_fill(1, i, -3.0), x, i)
    _exact(lambda x, i, s: x.index_copy(1, i, s), x, i, src)
    _exact(lambda x, i: x.index_select(1, i), x, i)
    _exact(lambda x, i: x.index_select(0, i), torch.tensor(2.0).to(dtype), torch.tensor([0]))


# --- put, scatter, scatter_add, scatter_reduce, index_reduce -------------------------------


def test_put_wraps_negative_indices_and_accumulates():
    x = torch.randn(3, 4)
    i = torch.tensor([-1, 5, 5, 0])
    s = torch.randn(4)
    _exact(lambda x, i, s: x.put(torch.tensor([-1, 5, 0]), s[:3]), x, i, s)
    _close(lambda x, i, s: x.put(i, s, accumulate=True), x, i, s)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_scatter_src_value_and_deprecated_reduce(dtype):
    x = torch.randn(3, 6).to(dtype)
    i = torch.tensor([[0, 5, 2], [1, 1, 0], [4, 3, 2]])  # unique per row
    s = torch.randn(3, 4).to(dtype)
    _exact(lambda x, i, s: x.scatter(1, i, s), x, i, s)
    _exact(lambda x, i: x.scatter(1, i, 1.5), x, i)
    _exact(lambda x, i, s: x.scatter(0, i[:, :1].clamp(max=2), s[:, :1]), x, i, s)
    _close(lambda x, i, s: x.scatter(1, i, s, reduce="add"), x, i, s, dtype=dtype)
    _close(lambda x, i, s: x.scatter(1, i, s, reduce="multiply"), x, i, s, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_scatter_add_with_duplicates(dtype):
    x = torch.randn(4, 9).to(dtype)
    i = torch.randint(0, 9, (4, 20))
    s = torch.randn(4, 20).to(dtype)
    _close(lambda x, i, s: x.scatter_add(1, i, s), x, i, s, dtype=dtype)
    _close(lambda x, i, s: x.scatter_add(0, i[:, :9] % 4, s[:, :9]), x, i, s, dtype=dtype)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_scatter_reduce(reduce, include_self, dtype):
    x = torch.randn(3, 7).to(dtype)
    i = torch.randint(0, 7, (3, 10))
    s = torch.randn(3, 10).to(dtype)
    _close(lambda x, i, s: x.scatter_reduce(1, i, s, reduce, include_self=include_self),
           x, i, s, dtype=dtype)


@pytest.mark.parametrize("reduce", ["sum", "amax", "amin", "prod"])
def test_scatter_reduce_integers_exact(reduce):
    x = torch.randint(-50, 50, (3, 7))
    i = torch.randint(0, 7, (3, 5))
    s = torch.randint(-50, 50, (3, 5))
    _exact(lambda x, i, s: x.scatter_reduce(1, i, s, reduce, include_self=False), x, i, s)


def test_scatter_reduce_amax_propagates_nan():
    x = torch.zeros(5)
    s = torch.tensor([1.0, float("nan"), -2.0])
    _close(lambda x, s: x.scatter_reduce(0, torch.tensor([0, 0, 4]), s, "amax"), x, s)


def test_scatter_negative_index_raises_like_eager():
    x, s = torch.zeros(2, 4), torch.ones(2, 1)
    i = torch.tensor([[0], [-1]])
    with pytest.raises(RuntimeError):
        x.scatter(1, i, s)
    with pytest.raises(neuronsim.NeuronRuntimeError, match=r"index -1 .*outside"):
        with torch.no_grad():
            _compile(lambda x, i, s: x.scatter(1, i, s))(x, i, s)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_index_reduce(reduce, include_self, dtype):
    x = torch.randn(4, 6, 3).to(dtype)
    i = torch.tensor([5, 0, 5, 2, 5])
    s = torch.randn(4, 5, 3).to(dtype)
    _close(lambda x, i, s: x.index_reduce(1, i, s, reduce, include_self=include_self),
           x, i, s, dtype=dtype)


def test_max_unpool2d():
    x = torch.randn(2, 3, 8, 8)
    pooled, idx = F.max_pool2d(x, 2, return_indices=True)
    _exact(lambda p, i: F.max_unpool2d(p, i, 2), pooled, idx)


# --- nn.EmbeddingBag ------------------------------------------------------------------------


BAG_CASES = [
    # (indices, offsets, kwargs): an empty bag in the middle, duplicates inside a bag
    ([1, 2, 4, 5, 4, 3, 9, 9], [0, 2, 2, 5], {}),
    ([0, 7, 7, 3, 1, 2], [0, 3, 6], {"include_last_offset": True}),
    ([1, 2, 4, 2, 0, 3], [0, 1, 4], {"padding_idx": 2}),
]


@pytest.mark.parametrize("case", range(len(BAG_CASES)))
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_forward_and_training_step(mode, case):
    indices, offsets, kwargs = BAG_CASES[case]
    idx, off = torch.tensor(indices), torch.tensor(offsets)
    torch.manual_seed(case)
    eager = torch.nn.EmbeddingBag(10, 5, mode=mode, **kwargs)
    model = torch.nn.EmbeddingBag(10, 5, mode=mode, **kwargs)
    model.load_state_dict(eager.state_dict())
    compiled = _compile(model)
    with torch.no_grad():
        torch.testing.assert_close(compiled(idx, off), eager(idx, off), rtol=1e-6, atol=1e-6)
    for m, fn in ((eager, eager), (model, compiled)):
        opt = torch.optim.SGD(m.parameters(), lr=0.5)
        loss = (fn(idx, off) ** 2).sum()
        loss.backward()
        opt.step()
    torch.testing.assert_close(model.weight, eager.weight, rtol=1e-6, atol=1e-6)


def test_embedding_bag_per_sample_weights_and_2d_input():
    torch.manual_seed(0)
    eager = torch.nn.EmbeddingBag(10, 4, mode="sum")
    model = torch.nn.EmbeddingBag(10, 4, mode="sum")
    model.load_state_dict(eager.state_dict())
    idx, off = torch.tensor([3, 1, 3, 8, 0]), torch.tensor([0, 3])
    w_eager = torch.rand(5, requires_grad=True)
    w = w_eager.detach().clone().requires_grad_(True)
    got = _compile(model)(idx, off, per_sample_weights=w)
    expected = eager(idx, off, per_sample_weights=w_eager)
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)
    got.sum().backward()
    expected.sum().backward()
    torch.testing.assert_close(w.grad, w_eager.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(model.weight.grad, eager.weight.grad, rtol=1e-6, atol=1e-6)
    # A 2-D input: bags of equal size, no offsets.
    bags = torch.tensor([[1, 2, 3], [4, 4, 0]])
    with torch.no_grad():
        torch.testing.assert_close(_compile(model)(bags), eager(bags), rtol=1e-6, atol=1e-6)


def test_embedding_bag_bf16_mean():
    weight = torch.randn(10, 4).to(torch.bfloat16)
    idx, off = torch.tensor([1, 2, 4, 5, 4]), torch.tensor([0, 2])
    _close(lambda w, i, o: F.embedding_bag(i, w, o, mode="mean"), weight, idx, off,
           dtype=torch.bfloat16)


def _one_op(op, *args):
    """(compiled, eager) results of a one-node graph of `op(*args)` (for ops Dynamo's graphs
    do not contain with these inputs)."""
    gm = _one_op_graph(op, args)
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    expected = gm(*tensors)
    return tuple(compile_fx_graph(gm, tensors, resolve_options(None))(list(tensors))), expected


def test_scatter_value_reduce():
    x = torch.randn(3, 5)
    i = torch.tensor([[0, 4, 0], [1, 1, 2], [3, 2, 4]])
    for reduce in ("add", "multiply"):
        _close(lambda x, i: x.scatter(1, i, 1.5, reduce=reduce), x, i)


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_embedding_bag_forward_only_and_dense_backward_one_op(mode):
    weight = torch.randn(10, 4)
    idx, off = torch.tensor([1, 2, 4, 5, 4, 3]), torch.tensor([0, 2, 2, 5])
    got, expected = _one_op(A._embedding_bag_forward_only.default, weight, idx, off, False, mode)
    torch.testing.assert_close(got[0], expected[0], rtol=1e-6, atol=1e-6)
    # The dense backward from eager's own forward results (bag_size, max_indices; offset2bag
    # from mean mode: sum mode's is empty, which the composite backward fills in first).
    _, _, bag_size, max_indices = A._embedding_bag.default(weight, idx, off, False, mode)
    offset2bag = A._embedding_bag.default(weight, idx, off, False, 1)[1]
    grad = torch.randn(4, 4)
    args = (grad, idx, offset2bag, bag_size, max_indices, 10, False, mode, None, -1)
    got, expected = _one_op(A._embedding_bag_dense_backward.default, *args)
    torch.testing.assert_close(got[0], expected[0], rtol=1e-6, atol=1e-6)


# --- masked_scatter, histc, searchsorted, bucketize, isin ----------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_masked_scatter(dtype):
    x = torch.randn(4, 6).to(dtype)
    m = torch.rand(4, 6) > 0.5
    _exact(lambda x, m, s: x.masked_scatter(m, s), x, m, torch.randn(30).to(dtype))
    _exact(lambda x, m, s: x.masked_scatter(m, s), x, m[:1], torch.randn(5, 7).to(dtype))
    _exact(lambda x, m, s: x.masked_scatter(m, s), x, torch.zeros(4, 6, dtype=torch.bool),
           torch.randn(0).to(dtype))


def test_masked_scatter_with_too_few_source_elements_raises():
    x, m, s = torch.zeros(4), torch.tensor([True, False, True, True]), torch.ones(2)
    with pytest.raises(RuntimeError):
        x.masked_scatter(m, s)
    with pytest.raises(neuronsim.NeuronRuntimeError, match=r"index 2 .*outside the table's 2 rows"):
        with torch.no_grad():
            _compile(lambda x, m, s: x.masked_scatter(m, s))(x, m, s)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_histc(dtype):
    # Under 256 per bin: eager counts bf16 bins per thread (an exact count up to 256 each).
    x = torch.cat([torch.randn(500), torch.tensor([-1.0, 1.0, 2.5, float("nan")])]).to(dtype)
    _exact(lambda x: torch.histc(x, 10, -1, 1), x)
    _exact(lambda x: torch.histc(x, 7), x[:-1])  # the data's range
    _exact(lambda x: torch.histc(x, 3), torch.full((5,), 2.0, dtype=dtype))  # [1, 3]


def test_searchsorted_bucketize_isin():
    b = torch.sort(torch.randn(9)).values
    v = torch.cat([b[:3], torch.randn(5), torch.tensor([float("nan")])])
    _exact(lambda v, b: torch.bucketize(v, b), v, b)
    _exact(lambda v, b: torch.bucketize(v, b, right=True, out_int32=True), v, b)
    rows = torch.sort(torch.randn(3, 9)).values
    _exact(lambda b, v: torch.searchsorted(b, v), rows, torch.randn(3, 4))
    _exact(lambda b, v: torch.searchsorted(b, v, side="right"), b, v)
    ints = torch.tensor([0, 2, 2, 5, 9])
    _exact(lambda b, v: torch.searchsorted(b, v, right=True), ints, torch.arange(-1, 11))
    _exact(lambda a, b: torch.isin(a, b), torch.randint(0, 10, (20,)), torch.randint(0, 10, (6,)))
