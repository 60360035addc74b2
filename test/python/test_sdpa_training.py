"""scaled_dot_product_attention trains through the neuron backend: its CPU backward kernel
(_scaled_dot_product_flash_attention_for_cpu_backward) is decomposed into core ATen ops
(python/neuronsim/decompositions.py) and the gradients match eager."""

import pytest
import torch
import torch.nn.functional as F


def _grads(fn, *inputs):
    for t in inputs:
        t.grad = None
    fn(*inputs).backward()
    return [t.grad.clone() for t in inputs]


def _leaf(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype).requires_grad_()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("mask", ["none", "causal", "float", "bool"])
def test_sdpa_gradients_match_eager(dtype, mask):
    torch.manual_seed(0)
    q, k, v = _leaf(2, 3, 40, 16, dtype=dtype), _leaf(2, 3, 33, 16, dtype=dtype), _leaf(2, 3, 33, 16, dtype=dtype)
    attn_mask = None
    if mask == "float":
        attn_mask = torch.randn(40, 33, dtype=dtype)
    elif mask == "bool":
        attn_mask = torch.rand(40, 33) > 0.3
        attn_mask[:, 0] = True  # every query keeps a key
    if mask == "causal":
        k, v = _leaf(2, 3, 40, 16, dtype=dtype), _leaf(2, 3, 40, 16, dtype=dtype)

    def loss(q, k, v):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=mask == "causal")
        return (out.float() ** 2).sum()

    expected = _grads(loss, q, k, v)
    got = _grads(torch.compile(loss, backend="neuron", dynamic=False), q, k, v)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=3e-2, atol=3e-2)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g.float(), e.float(), **tol)


def test_attention_block_trains_like_eager():
    torch.manual_seed(0)

    class Block(torch.nn.Module):
        def __init__(self, d=32, heads=4):
            super().__init__()
            self.heads = heads
            self.qkv = torch.nn.Linear(d, 3 * d)
            self.proj = torch.nn.Linear(d, d)
            self.norm = torch.nn.LayerNorm(d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.norm(x)).split(d, dim=-1)
            q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return x + self.proj(y.transpose(1, 2).reshape(b, t, d))

    eager = Block()
    compiled_model = Block()
    compiled_model.load_state_dict(eager.state_dict())
    compiled = torch.compile(compiled_model, backend="neuron", dynamic=False)
    opt_e = torch.optim.SGD(eager.parameters(), lr=0.1)
    opt_c = torch.optim.SGD(compiled_model.parameters(), lr=0.1)
    x = torch.randn(2, 24, 32)
    for _ in range(3):
        losses = []
        for model, opt in ((eager, opt_e), (compiled, opt_c)):
            opt.zero_grad()
            loss = (model(x) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[1] == pytest.approx(losses[0], rel=1e-4, abs=1e-5)
    for pe, pc in zip(eager.parameters(), compiled_model.parameters()):
        torch.testing.assert_close(pc, pe, rtol=1e-4, atol=1e-5)
