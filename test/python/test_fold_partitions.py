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
