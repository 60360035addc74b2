"""Attention in compiled graphs as one fused kernel: before AOTAutograd, the backend replaces
each `scaled_dot_product_attention` call of a Dynamo graph that the built-in attention kernel
(neuronsim/kernels/attention.py) computes exactly - no attention mask other than the causal
one, no dropout, query and key lengths equal and a multiple of 128, head dim <= 128, one
float dtype, query heads a multiple of the key/value heads (GQA) - by the op
`neuronsim::attention`, whose kernel is spliced into the graph's program: the S x S scores
never reach HBM. Its backward recomputes the probabilities with PyTorch ops (the attention
backward AOTAutograd would otherwise decompose), so training works as before. Anything
else stays as it is (and is decomposed into core ATen ops as before)."""

from __future__ import annotations

import inspect
import math
from typing import Any

import torch

from . import kernels
from .kernels.attention import attention

FUSED_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


@kernels.jit(name="attention")
def attention_kernel(q, k, v, causal: bool, scale: float):
    """q [heads, seq, d], k and v [kv_heads, seq, d] -> [heads, seq, d]."""
    return attention(q, k, v, transposed=False, causal=causal, scale=scale)


def _setup_context(ctx: Any, inputs: tuple, output: torch.Tensor) -> None:
    q, k, v, causal, scale = inputs
    ctx.save_for_backward(q, k, v, output)
    ctx.causal, ctx.scale = causal, scale


def _backward(ctx: Any, grad: torch.Tensor) -> tuple:
    """The attention backward from recomputed probabilities, in fp32 (PyTorch ops, which
    AOTAutograd traces into the backward graph)."""
    q, k, v, out = ctx.saved_tensors
    heads, seq, d = q.shape
    kv_heads = k.shape[0]
    group = heads // kv_heads
    qf, gf, of = q.float(), grad.float(), out.float()
    kf = k.float().repeat_interleave(group, 0)
    vf = v.float().repeat_interleave(group, 0)
    scores = (qf @ kf.transpose(1, 2)) * ctx.scale
    if ctx.causal:
        hidden = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(hidden, float("-inf"))
    p = torch.softmax(scores, dim=-1)
    dv = p.transpose(1, 2) @ gf
    dp = gf @ vf.transpose(1, 2)
    ds = p * (dp - (gf * of).sum(-1, keepdim=True))
    dq = (ds @ kf) * ctx.scale
    dk = (ds.transpose(1, 2) @ qf) * ctx.scale
    if group > 1:
        dk = dk.view(kv_heads, group, seq, d).sum(1)
        dv = dv.view(kv_heads, group, seq, d).sum(1)
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), None, None


def attention_flops(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                    scale: float) -> int:
    """Useful FLOPs: Q K^T and P V over the visible scores (half of them when causal, as
    FlashAttention counts; the kernel's transposes and masked halves of diagonal blocks are
    not counted)."""
    heads, seq, d = q.shape
    full = 4 * heads * seq * seq * d
    return full // 2 if causal else full


attention_op = kernels.torch_op("neuronsim::attention", attention_kernel,
                                backward=_backward, setup_context=_setup_context,
                                flops=attention_flops)


def fused_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                    scale: float) -> torch.Tensor:
    """q [..., heads, seq, d], k and v [..., kv_heads, seq, d] through neuronsim::attention
    (query head h of a batch element reads its kv head h // (heads / kv_heads))."""
    *lead, heads, seq, d = q.shape
    out = attention_op(q.reshape(-1, seq, d), k.reshape(-1, seq, d), v.reshape(-1, seq, d),
                       causal, scale)
    return out.reshape(*lead, heads, seq, d)


_SDPA_TARGETS = (torch._C._nn.scaled_dot_product_attention,
                 torch.nn.functional.scaled_dot_product_attention)
_SDPA_SIGNATURE = inspect.Signature([
    inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default)
    for name, default in (("query", inspect.Parameter.empty), ("key", inspect.Parameter.empty),
                          ("value", inspect.Parameter.empty), ("attn_mask", None),
                          ("dropout_p", 0.0), ("is_causal", False), ("scale", None),
                          ("enable_gqa", False))
])


def _value(node: Any) -> torch.Tensor | None:
    meta = node.meta.get("example_value") if isinstance(node, torch.fx.Node) else None
    return meta if isinstance(meta, torch.Tensor) else None


def fusable_sdpa(node: torch.fx.Node) -> tuple[Any, ...] | None:
    """(q, k, v, causal, scale) when the kernel computes this scaled_dot_product_attention
    call exactly, else None."""
    if node.op != "call_function" or node.target not in _SDPA_TARGETS:
        return None
    try:
        bound = _SDPA_SIGNATURE.bind(*node.args, **node.kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    a = bound.arguments
    if a["attn_mask"] is not None or not isinstance(a["is_causal"], bool):
        return None
    if not isinstance(a["dropout_p"], (int, float)) or a["dropout_p"] != 0:
        return None
    scale = a["scale"]
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))):
        return None
    q, k, v = (_value(a[n]) for n in ("query", "key", "value"))
    if q is None or k is None or v is None or q.dim() < 3 or q.dim() != k.dim() or (
            k.shape != v.shape):
        return None
    if not (q.dtype == k.dtype == v.dtype and q.dtype in FUSED_DTYPES):
        return None
    *lead, heads, seq, d = q.shape
    *klead, kv_heads, kseq, kd = k.shape
    if lead != klead or seq != kseq or d != kd or seq % 128 or d > 128 or heads % kv_heads:
        return None
    if kv_heads != heads and not a["enable_gqa"]:
        return None
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    return a["query"], a["key"], a["value"], a["is_causal"], float(scale)


def fuse_attention(gm: torch.fx.GraphModule) -> int:
    """Replaces the fusable scaled_dot_product_attention calls of a Dynamo graph by
    fused_attention; returns how many."""
    count = 0
    for node in list(gm.graph.nodes):
        found = fusable_sdpa(node)
        if found is None:
            continue
        with gm.graph.inserting_before(node):
            fused = gm.graph.call_function(fused_attention, found)
        fused.meta.update(node.meta)
        node.replace_all_uses_with(fused)
        gm.graph.erase_node(node)
        count += 1
    if count:
        gm.recompile()
    return count
