"""Grouped matrix products (torch._grouped_mm, transformers' mixture-of-experts fallback op)
through the neuron backend: offsets are run-time data, the decomposition masks a dense batched
product (python/neuronsim/grouped_mm.py). Outputs and gradients against eager."""

import pytest
import torch

import neuronsim


def _compile(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="neuron", dynamic=False, fullgraph=True)


def _offsets(*ends):
    return torch.tensor(ends, dtype=torch.int32)


# (mat_a shape, mat_b shape, offsets): every group kind, with an empty group in each
CASES = [
    ((24, 16), (3, 16, 8), (5, 5, 24)),  # 2-D x 3-D: rows of mat_a by group
    ((3, 16, 32), (32, 24), (8, 8, 24)),  # 3-D x 2-D: columns of mat_b by group
    ((16, 40), (40, 8), (16, 16, 40)),  # 2-D x 2-D: the contraction dimension by group
]


@pytest.mark.parametrize("a_shape,b_shape,ends", CASES)
def test_grouped_mm_matches_eager_bf16(a_shape, b_shape, ends):
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(a_shape, generator=gen).to(torch.bfloat16)
    b = torch.randn(b_shape, generator=gen).to(torch.bfloat16)
    offs = _offsets(*ends)

    def fn(a, b, offs):
        return torch._grouped_mm(a, b, offs=offs)

    expected = fn(a, b, offs)
    got = _compile(fn)(a, b, offs)
    assert neuronsim.get_fallback_ops() == {}
    torch.testing.assert_close(got, expected, rtol=2e-2, atol=2e-2)


def test_grouped_mm_offsets_are_data_not_constants():
    """Same compiled graph, other offsets: no recompile, still eager's result."""
    gen = torch.Generator().manual_seed(1)
    a = torch.randn(24, 16, generator=gen).to(torch.bfloat16)
    b = torch.randn(3, 16, 8, generator=gen).to(torch.bfloat16)
    compiled = _compile(lambda a, b, offs: torch._grouped_mm(a, b, offs=offs))
    for ends in [(5, 5, 24), (0, 20, 24), (8, 16, 24)]:
        offs = _offsets(*ends)
        expected = torch._grouped_mm(a, b, offs=offs)
        torch.testing.assert_close(compiled(a, b, offs), expected, rtol=2e-2, atol=2e-2)


def test_transformers_moe_fallback_op_trains_like_eager():
    """transformers::grouped_mm_fallback (its MoE layers' op for fp32 under torch.compile) and
    its backward op compile with no fallback; output and gradients match eager."""
    pytest.importorskip("transformers")
    import transformers.integrations.moe  # noqa: F401  (registers the ops)

    gen = torch.Generator().manual_seed(2)
    x = torch.randn(12, 8, generator=gen, requires_grad=True)
    w = torch.randn(4, 8, 6, generator=gen, requires_grad=True)
    offs = _offsets(3, 3, 10, 12)

    def fn(x, w, offs):
        return torch.ops.transformers.grouped_mm_fallback(x, w, offs).square().sum()

    expected = fn(x, w, offs)
    expected_grads = torch.autograd.grad(expected, (x, w))
    got = _compile(fn)(x, w, offs)
    got_grads = torch.autograd.grad(got, (x, w))
    assert neuronsim.get_fallback_ops() == {}
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
    for g, e in zip(got_grads, expected_grads):
        torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-4)
