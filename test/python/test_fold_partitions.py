"""Elementwise ops over few rows run spread over all SBUF partitions (neuron-fold-partitions,
test/Transforms/fold_partitions.mlir): the numbers stay eager's for any shape."""

import pytest
import torch

import neuronsim


def _chain(x):
    return torch.where(x > 0, x * 2, x.exp()) + 1


@pytest.mark.parametrize(
    "shape",
    [(100_000,), (128 * 3 + 1,), (3, 5000), (7, 13), (2, 3, 40000), (1, 1 << 16), (4099,)],
    ids=str,
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_folded_elementwise_matches_eager(shape, dtype):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0)).to(dtype)
    got = torch.compile(_chain, backend="neuron", dynamic=False)(x)
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(got, _chain(x), rtol=tol, atol=tol)


def test_folded_output_is_written_in_place_and_returned_twice():
    x = torch.randn(50_000)

    def two(t):
        doubled = t * 2
        return doubled, doubled.view(100, 500), doubled.exp()

    got = torch.compile(two, backend="neuron", dynamic=False)(x)
    for g, e in zip(got, two(x), strict=True):
        torch.testing.assert_close(g, e)


def test_a_long_vector_uses_all_partitions():
    """1-D x * 2 + 1 over 4M elements runs as fast as the same bytes as [512, 8192] rows."""

    def run(shape):
        torch._dynamo.reset()
        f = torch.compile(lambda t: t * 2 + 1, backend="neuron", dynamic=False,
                          options={"timing_only": True})  # fmt: skip
        f(torch.randn(shape, dtype=torch.bfloat16))
        return neuronsim.last_run_stats()["sim_ns"]

    assert run((1 << 22,)) == pytest.approx(run((512, 8192)), rel=0.01)


_REDUCTIONS = [
    ("sum_all", (1024, 768), torch.float32, lambda x: x.sum()),
    ("amax_all", (1024, 768), torch.float32, lambda x: x.amax()),
    ("sum_rows", (3, 50000), torch.float32, lambda x: x.sum(-1)),
    ("mean_rows_bf16", (8, 4096), torch.bfloat16, lambda x: x.mean(-1)),
    ("amin_two_dims", (2, 3, 4096), torch.float32, lambda x: x.amin((1, 2))),
    ("sum_keepdim", (4, 8192), torch.float32, lambda x: x.sum(-1, keepdim=True)),
    ("sum_int", (16, 8192), torch.int32, lambda x: x.sum(-1)),
    ("any_rows", (16, 4096), torch.bool, lambda x: x.any(-1)),
]


@pytest.mark.parametrize("name,shape,dtype,fn", _REDUCTIONS, ids=[r[0] for r in _REDUCTIONS])
def test_split_reductions_match_eager(name, shape, dtype, fn):
    """Reductions of long rows into few rows are split across partitions, then along them
    (test/Transforms/fold_partitions.mlir); sums are reassociated, max/min/any/int exact."""
    gen = torch.Generator().manual_seed(1)
    if dtype == torch.int32:
        x = torch.randint(-1000, 1000, shape, dtype=dtype, generator=gen)
    elif dtype == torch.bool:
        x = torch.rand(shape, generator=gen) > 0.9999
    else:
        x = torch.randn(shape, generator=gen).to(dtype)
    got = torch.compile(fn, backend="neuron", dynamic=False)(x)
    want = fn(x)
    if dtype in (torch.int32, torch.bool) or name.startswith(("amax", "amin")):
        assert torch.equal(got, want)
    else:
        tol = 1e-4 if dtype == torch.float32 else 2e-2
        torch.testing.assert_close(got, want, rtol=tol, atol=tol)


def test_a_whole_tensor_sum_uses_all_partitions():
    """x.sum() over [1024, 768] fp32 reads its 3 MiB about as fast as the HBM bound (it took
    the 786432 elements on one partition: over 800 us)."""
    x = torch.randn(1024, 768)
    torch.compile(lambda t: t.sum(), backend="neuron", dynamic=False)(x)
    stats = neuronsim.last_run_stats()
    assert stats["sim_ns"] < 4 * stats["roofline_ns"] + 5_000
