"""sort / argsort / topk / kthvalue / median / nanmedian / mode compiled vs eager, exactly.

The importer expands them into a bitonic sorting network (compiler/Import/AtenSort.cpp) that
gives the stable order with NaN largest. Values are compared exactly (NaN where eager has NaN);
indices are compared where eager's are well defined: stable sorts, or inputs without ties
(topk, kthvalue and median pick any of equal elements on the CPU).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import neuronsim

NAN, INF = float("nan"), float("inf")
FLOATS = (torch.float32, torch.bfloat16, torch.float16)
INTS = (torch.int64, torch.int32, torch.bool, torch.uint8)
SHAPES = [(7,), (3, 13), (2, 5, 9), (4, 1)]


def run(fn, *args):
    out = torch.compile(fn, backend="neuron", dynamic=False)(*args)
    assert neuronsim.last_run_stats()["instructions"] > 0
    return out


def assert_exact(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True)


def check(fn, *args):
    assert_exact(tuple(run(fn, *args)), tuple(fn(*args)))


def with_ties(shape, dtype, seed=0):
    """Small integers (many ties), NaN/inf sprinkled in for floats."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) < 0.5
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, generator=g, dtype=dtype)
    if dtype in (torch.int64, torch.int32):
        big = torch.iinfo(dtype)
        x = torch.randint(-4, 5, shape, generator=g, dtype=dtype)
        flat = x.view(-1)
        flat[: min(2, flat.numel())] = big.max
        if flat.numel() > 2:
            flat[2] = big.min
        return x
    x = torch.randint(-4, 5, shape, generator=g).to(dtype)
    u = torch.rand(shape, generator=g)
    x[u < 0.15] = NAN
    x[(u > 0.15) & (u < 0.2)] = INF
    x[(u > 0.2) & (u < 0.25)] = -INF
    x[(u > 0.25) & (u < 0.3)] = -0.0
    return x


def distinct(shape, dtype, seed=0):
    """A permutation of small integers (exact in bf16): no ties, well-defined indices."""
    g = torch.Generator().manual_seed(seed)
    n = torch.Size(shape).numel()
    return (torch.randperm(n, generator=g) - n // 2).reshape(shape).to(dtype)


# --- sort and argsort --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
@pytest.mark.parametrize("descending", [False, True])
def test_stable_sort_with_ties_and_nans(dtype, descending):
    xs = [with_ties(s, dtype, seed=i) for i, s in enumerate(SHAPES)]

    def f(a, b, c, d):
        outs = []
        for x, dim in ((a, 0), (b, -1), (c, 1), (c, -1), (d, 0)):
            outs += torch.sort(x, dim=dim, descending=descending, stable=True)
        return tuple(outs)

    check(f, *xs)


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16, torch.int64), ids=str)
def test_sort_default_and_argsort(dtype):
    x, y = distinct((5, 11), dtype), with_ties((6, 33), dtype)

    def f(x, y):
        v, i = torch.sort(x, 0)
        w, j = torch.sort(x, -1, descending=True)
        return v, i, w, j, torch.argsort(y, dim=-1, stable=True), torch.msort(x)

    check(f, x, y)


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16, torch.int64), ids=str)
def test_sort_of_many_rows_and_a_long_dim(dtype):
    """130 rows (more than the 128 partitions) and a dim of 300 (padded to 512, 45 stages)."""
    x, y = with_ties((130, 37), dtype), with_ties((2, 300), dtype, seed=1)

    def f(x, y):
        return (*torch.sort(x, dim=1, stable=True), *torch.sort(x, dim=0, stable=True),
                *torch.sort(y, dim=-1, descending=True, stable=True))

    check(f, x, y)


def test_sort_of_one_element_and_a_scalar():
    def f(x, s):
        return torch.sort(x, dim=1) + torch.sort(s)

    check(f, torch.randn(3, 1), torch.tensor(2.5))


def test_sort_large_int64_values_exactly():
    big = 2**62 + 1
    x = torch.tensor([[big, -big, big + 2, 3, -(2**63), 2**63 - 1, big, 0, 1]], dtype=torch.int64)
    check(lambda x: torch.sort(x, dim=-1, stable=True), x)
    check(lambda x: torch.sort(x, dim=-1, descending=True, stable=True), x)


# --- topk --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype", (torch.float32, torch.bfloat16, torch.float16, torch.int32), ids=str
)
@pytest.mark.parametrize("largest", [True, False])
def test_topk_without_ties(dtype, largest):
    a, b = distinct((4, 19), dtype), distinct((8, 3), dtype, seed=1)

    def f(a, b):
        outs = []
        for k in (1, 5, 19):
            outs += torch.topk(a, k, dim=-1, largest=largest)
        outs += torch.topk(b, 2, dim=0, largest=largest)
        return tuple(outs)

    check(f, a, b)


@pytest.mark.parametrize("largest", [True, False])
def test_topk_partial_network_for_every_k(largest):
    """k from 1 to n on a dim of 100 (padded to 128): blocks of 1..64 and halving rounds."""
    x = distinct((3, 100), torch.float32)

    def f(x):
        outs = []
        for k in (1, 2, 3, 5, 8, 9, 31, 33, 64, 65, 100):
            outs += torch.topk(x, k, largest=largest)
        return tuple(outs)

    check(f, x)


def test_kthvalue_values_with_ties_and_nans():
    x = with_ties((4, 23), torch.float32)
    for k in (1, 6, 20, 23):
        got = run(lambda x: torch.kthvalue(x, k).values, x)
        torch.testing.assert_close(got, torch.kthvalue(x, k).values, rtol=0, atol=0,
                                   equal_nan=True)
        torch._dynamo.reset()


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_topk_values_with_ties_and_nans(dtype):
    x = with_ties((5, 17), dtype)
    got = run(lambda x: torch.topk(x, 6).values, x)
    torch.testing.assert_close(got, torch.topk(x, 6).values, rtol=0, atol=0, equal_nan=True)
    got = run(lambda x: torch.topk(x, 6, largest=False, sorted=False).values, x)
    want = torch.topk(x, 6, largest=False).values
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)


# --- kthvalue, median, nanmedian ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16, torch.int64), ids=str)
def test_kthvalue(dtype):
    x = distinct((3, 9), dtype)

    def f(x):
        return (*torch.kthvalue(x, 1), *torch.kthvalue(x, 5, dim=1, keepdim=True),
                *torch.kthvalue(x, 3, dim=0), *torch.kthvalue(x, 9))

    check(f, x)


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16, torch.int64), ids=str)
def test_median(dtype):
    odd, even = distinct((3, 7), dtype), distinct((4, 6), dtype, seed=1)

    def f(odd, even):
        return (torch.median(odd), torch.median(even), *torch.median(odd, 1),
                *torch.median(even, 0, keepdim=True), *torch.median(even, -1))

    check(f, odd, even)


def test_median_propagates_nan_with_the_first_nans_index():
    x = torch.tensor([[1.0, NAN, 3.0, NAN, -INF, 2.0], [2.0, 3.0, 1.0, 0.0, -1.0, 4.0],
                      [NAN, NAN, NAN, NAN, NAN, NAN]])
    check(lambda x: (*torch.median(x, 1), torch.median(x), torch.median(x[1])), x)


def test_nanmedian():
    x = torch.tensor([[1.0, NAN, 3.0, NAN, -INF, 2.0, 7.0], [2.0, 3.0, 1.0, 0.0, -1.0, 4.0, 5.0],
                      [NAN, 9.0, NAN, NAN, NAN, 8.0, NAN]])
    check(lambda x: (*torch.nanmedian(x, 1), torch.nanmedian(x)), x)
    # an all-NaN row: NaN (the index is arbitrary in eager)
    y = torch.tensor([[NAN, NAN, NAN], [1.0, NAN, 0.0]])
    got = run(lambda y: torch.nanmedian(y, 1).values, y)
    torch.testing.assert_close(got, torch.nanmedian(y, 1).values, equal_nan=True)


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16) + INTS, ids=str)
def test_mode(dtype):
    """The most frequent value (the smallest of ties) exactly; its index is the last
    occurrence, eager's one of the occurrences (the last for short rows: compared there)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 4, (6, 37), generator=g).to(dtype)
    got = run(lambda x: (*torch.mode(x, -1), *torch.mode(x, 0, keepdim=True)), x)
    want = (*torch.mode(x, -1), *torch.mode(x, 0, keepdim=True))
    assert_exact((got[0], got[2], got[3]), (want[0], want[2], want[3]))
    assert torch.equal(x.gather(1, got[1].unsqueeze(1)).squeeze(1), got[0])
    last = torch.stack([(x[i] == got[0][i]).nonzero().max() for i in range(6)])
    assert torch.equal(got[1], last)


def test_too_long_a_dim_is_a_clear_error():
    with pytest.raises(Exception, match=r"sort along a dim of 70000 elements.*131072"):
        run(lambda x: torch.sort(x).values, torch.randn(1, 70000))


# --- a top-2 mixture-of-experts router ----------------------------------------------------------


class Top2Router(torch.nn.Module):
    """Softmax gate, top-2 experts per token, their weights renormalized; experts' outputs
    gathered by the chosen indices (Mixtral-style)."""

    def __init__(self, dim=16, experts=8, hidden=24):
        super().__init__()
        self.gate = torch.nn.Linear(dim, experts, bias=False)
        self.w1 = torch.nn.Parameter(torch.randn(experts, dim, hidden) / dim**0.5)
        self.w2 = torch.nn.Parameter(torch.randn(experts, hidden, dim) / hidden**0.5)

    def forward(self, x):
        probs = F.softmax(self.gate(x), dim=-1)
        weights, chosen = torch.topk(probs, 2, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        w1, w2 = self.w1[chosen], self.w2[chosen]  # [tokens, 2, dim, hidden], [.., hidden, dim]
        h = F.silu(torch.einsum("td,tkdh->tkh", x, w1))
        y = torch.einsum("tkh,tkhd->tkd", h, w2)
        return (weights.unsqueeze(-1) * y).sum(1), chosen


def test_top2_moe_router_compiles_without_fallback():
    torch.manual_seed(0)
    model, x = Top2Router().eval(), torch.randn(10, 16)
    with torch.no_grad():
        want = model(x)
        options = {"fallback": "cpu"}
        compiled = torch.compile(model, backend="neuron", dynamic=False, options=options)
        got = compiled(x)
    assert neuronsim.get_fallback_ops() == {}
    assert torch.equal(got[1], want[1])
    torch.testing.assert_close(got[0], want[0], rtol=1e-4, atol=1e-5)
