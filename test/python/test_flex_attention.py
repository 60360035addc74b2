"""FlexAttention (torch.nn.attention.flex_attention) on the neuron device (neuronsim/flex_attention.py):
compiled with backend="neuron" (its higher-order op lowered to the dense form) and called eagerly on
neuron tensors, forward and backward, against eager PyTorch on the CPU: SDPA for the causal mask
(what torchtitan's llama3 uses), and the attention written out for a score_mod and a
document mask. float32, at 1e-4 (the softmax and two matmuls; the simulator's exp and
reductions differ from the CPU's in the last bits)."""

from __future__ import annotations

import pytest
import torch

import neuronsim
import torch.nn.functional as F
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

TOL = dict(rtol=1e-4, atol=1e-4)
B, H, S, D = 2, 4, 64, 16

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _causal(b, h, q, kv):
    return q >= kv


def _qkv(seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(B, H, S, D, generator=g) for _ in range(3)]


def _grads(fn, q, k, v, device):
    leaves = [t.detach().to(device).requires_grad_() for t in (q, k, v)]
    out = fn(*leaves)
    g = torch.Generator().manual_seed(1)
    upstream = torch.randn(out.shape, generator=g).to(device)
    (out * upstream).sum().backward()
    return out.detach().cpu(), [t.grad.cpu() for t in leaves]


def _sdpa_causal(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


@pytest.mark.parametrize("mode", ["compiled", "eager"])
def test_causal_flex_attention_matches_sdpa(mode):
    q, k, v = _qkv()
    mask = create_block_mask(_causal, B=None, H=None, Q_LEN=S, KV_LEN=S, device="neuron")

    def attend(q, k, v):
        return flex_attention(q, k, v, block_mask=mask)

    fn = torch.compile(attend, backend="neuron", dynamic=False) if mode == "compiled" else attend
    neuronsim.reset()
    out, grads = _grads(fn, q, k, v, "neuron")
    if mode == "compiled":  # forward and backward graphs compiled for the simulator
        assert neuronsim.cache_stats()["compiles"] >= 2
    ref_out, ref_grads = _grads(_sdpa_causal, q, k, v, "cpu")
    torch.testing.assert_close(out, ref_out, **TOL)
    for got, expected in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(got, expected, **TOL)


def test_score_mod_and_document_mask_match_the_written_out_attention():
    q, k, v = _qkv(2)
    document = torch.arange(S) // 24  # three documents of 24, 24 and 16 tokens
    bias = torch.randn(H) * 0.1

    def score_mod(score, b, h, q_idx, kv_idx):  # ALiBi-like, per-head slope
        return score + bias_dev[h] * (q_idx - kv_idx)

    doc_dev, bias_dev = document.to("neuron"), bias.to("neuron")

    def document_causal(b, h, q_idx, kv_idx):
        return (doc_dev[q_idx] == doc_dev[kv_idx]) & (q_idx >= kv_idx)

    mask = create_block_mask(document_causal, B=None, H=None, Q_LEN=S, KV_LEN=S,
                             device="neuron")

    @torch.compile(backend="neuron", dynamic=False)
    def attend(q, k, v):
        return flex_attention(q, k, v, score_mod=score_mod, block_mask=mask, scale=0.3)

    def reference(q, k, v):
        qi, ki = torch.arange(S)[:, None], torch.arange(S)[None, :]
        scores = q @ k.transpose(-1, -2) * 0.3 + bias[None, :, None, None] * (qi - ki)
        allowed = (document[:, None] == document[None, :]) & (qi >= ki)
        return torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1) @ v

    out, grads = _grads(attend, q, k, v, "neuron")
    ref_out, ref_grads = _grads(reference, q, k, v, "cpu")
    torch.testing.assert_close(out, ref_out, **TOL)
    for got, expected in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(got, expected, **TOL)


def test_grouped_query_heads_match_sdpa():
    q = torch.randn(B, H, S, D)
    k, v = torch.randn(B, 2, S, D), torch.randn(B, 2, S, D)
    mask = create_block_mask(_causal, B=None, H=None, Q_LEN=S, KV_LEN=S, device="neuron")

    @torch.compile(backend="neuron", dynamic=False)
    def attend(q, k, v):
        return flex_attention(q, k, v, block_mask=mask, enable_gqa=True)

    out = attend(q.to("neuron"), k.to("neuron"), v.to("neuron")).cpu()
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    torch.testing.assert_close(out, ref, **TOL)


def test_flex_attention_inside_activation_checkpointing():
    # torchtitan wraps its layers in activation checkpointing: under torch.compile the
    # flex_attention op is inside the checkpoint's subgraph (a higher-order op's body).
    from torch.utils.checkpoint import checkpoint

    q, k, v = _qkv(3)
    mask = create_block_mask(_causal, B=None, H=None, Q_LEN=S, KV_LEN=S, device="neuron")

    def layer(q, k, v):
        return flex_attention(q, k, v, block_mask=mask) * 2

    @torch.compile(backend="neuron", dynamic=False)
    def attend(q, k, v):
        return checkpoint(layer, q, k, v, use_reentrant=False)

    out, grads = _grads(attend, q, k, v, "neuron")
    ref_out, ref_grads = _grads(lambda q, k, v: _sdpa_causal(q, k, v) * 2, q, k, v, "cpu")
    torch.testing.assert_close(out, ref_out, **TOL)
    for got, expected in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(got, expected, **TOL)
