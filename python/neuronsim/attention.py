"""Attention in compiled graphs as one fused kernel: before AOTAutograd, the backend replaces
each `scaled_dot_product_attention` call of a Dynamo graph that the built-in attention kernel
(neuronsim/kernels/attention.py) computes exactly - causal, or with a boolean or additive
attention mask of the query's dtype broadcastable to the scores (op neuronsim::attention_masked),
no dropout, query and key lengths equal and a multiple of 128 (up to 16384 in bf16,
8192 in fp32 at head dim 128), head dim <= 128, one float dtype, query heads a multiple of
the key/value heads (GQA) - by the op
`neuronsim::attention`, whose kernel is spliced into the graph's program: the S x S scores
never reach HBM. Where gradients are needed the op is `neuronsim::attention_lse`, which also
returns each query's log-sum-exp, and its backward is the attention_backward kernel
(neuronsim/kernels/attention_backward.py, op `neuronsim::attention_backward`); with a mask, or where that kernel's tiles would not fit SBUF, the
backward recomputes the probabilities with PyTorch ops (the attention backward AOTAutograd
would otherwise decompose). Anything else stays as it is (and is decomposed into core ATen
ops as before)."""

from __future__ import annotations

import inspect
import math
import operator
from typing import Any

import torch

from . import kernels
from .kernels.attention import attention, mask_lowest
from .kernels.attention_backward import attention_backward
from .kernels.attention_backward import sbuf_bytes as backward_sbuf_bytes

FUSED_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


@kernels.jit(name="attention")
def attention_kernel(q, k, v, causal: bool, scale: float):
    """q [heads, seq, d], k and v [kv_heads, seq, d] -> [heads, seq, d]."""
    return attention(q, k, v, transposed=False, causal=causal, scale=scale)


@kernels.jit(name="attention_lse")
def attention_lse_kernel(q, k, v, causal: bool, scale: float):
    """attention_kernel's output and the log-sum-exp of each query's scaled scores (float32
    [heads, 128, seq / 128], the kernel's layout), which the backward kernel reads."""
    return attention(q, k, v, transposed=False, causal=causal, scale=scale, lse=True)


@kernels.jit(name="attention_backward")
def attention_backward_kernel(q, k, v, o, lse, grad, causal: bool, scale: float):
    """The gradients of attention_kernel's output with respect to q, k and v."""
    return attention_backward(q, k, v, o, lse, grad, causal=causal, scale=scale)


@kernels.jit(name="attention_masked")
def attention_masked_kernel(q, k, v, mask, scale: float):
    """q [heads, seq, d], k and v [kv_heads, seq, d], mask [masks, seq, seq] (additive,
    finite, heads a multiple of masks) -> [heads, seq, d]."""
    return attention(q, k, v, transposed=False, causal=False, scale=scale, mask=mask)


def _setup_context(ctx: Any, inputs: tuple, output: torch.Tensor | tuple) -> None:
    """Saves q, k, v and the output(s): out, or (attention_lse) out and the log-sum-exp."""
    q, k, v, causal, scale = inputs
    ctx.save_for_backward(q, k, v, *(output if isinstance(output, tuple) else (output,)))
    ctx.causal, ctx.scale = causal, scale


def _setup_masked_context(ctx: Any, inputs: tuple, output: torch.Tensor) -> None:
    q, k, v, mask, scale = inputs
    ctx.save_for_backward(q, k, v, output, mask)
    ctx.causal, ctx.scale = False, scale


# SBUF bytes per partition the backward kernel may keep (of trn1's 192 KiB, the smallest).
_BACKWARD_SBUF_BYTES = 128 * 1024


def _kernel_backward(ctx: Any, grad: torch.Tensor, grad_lse: torch.Tensor | None) -> tuple:
    """neuronsim::attention_lse's backward: the attention_backward kernel (FlashAttention-2's
    backward on chip), or, where its tiles would not fit SBUF (long sequences) or the scale
    is not positive, the PyTorch ops of _backward. The log-sum-exp output is internal to
    fused_attention: nothing reads it, so its gradient is none (or zeros)."""
    q, k, v, out, lse = ctx.saved_tensors
    _, seq, d = q.shape
    if ctx.scale > 0 and backward_sbuf_bytes(seq, d) <= _BACKWARD_SBUF_BYTES:
        dq, dk, dv = attention_backward_op(q, k, v, out, lse, grad.contiguous(), ctx.causal,
                                           ctx.scale)
        return dq, dk, dv, None, None
    return _backward(ctx, grad, saved=(q, k, v, out))


def attention_backward_flops(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                             o: torch.Tensor, lse: torch.Tensor, grad: torch.Tensor,
                             causal: bool, scale: float) -> int:
    """Useful FLOPs of the backward: Q K^T recomputed, dO V^T, P^T dO, dS K and dS^T Q over
    the visible scores (half of them when causal)."""
    heads, seq, d = q.shape
    full = 10 * heads * seq * seq * d
    return full // 2 if causal else full


def _backward(ctx: Any, grad: torch.Tensor, saved: tuple | None = None) -> tuple:
    """The attention backward from recomputed probabilities, in fp32 (PyTorch ops, which
    AOTAutograd traces into the backward graph)."""
    q, k, v, out, *mask = ctx.saved_tensors if saved is None else saved
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
    if mask:  # the kernel's mask (see _additive_mask), as the forward applies it
        scores = scores + mask[0].float().repeat_interleave(heads // mask[0].shape[0], 0)
        seen = scores.amax(-1, keepdim=True) > 0.75 * mask_lowest(q.dtype)
        p = torch.softmax(scores, dim=-1) * seen  # rows with every key masked: 0
    else:
        p = torch.softmax(scores, dim=-1)
    dv = p.transpose(1, 2) @ gf
    dp = gf @ vf.transpose(1, 2)
    ds = p * (dp - (gf * of).sum(-1, keepdim=True))
    dq = (ds @ kf) * ctx.scale
    dk = (ds.transpose(1, 2) @ qf) * ctx.scale
    if group > 1:
        dk = dk.view(kv_heads, group, seq, d).sum(1)
        dv = dv.view(kv_heads, group, seq, d).sum(1)
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), None, None  # (the mask: none)


def attention_flops(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                    scale: float) -> int:
    """Useful FLOPs: Q K^T and P V over the visible scores (half of them when causal, as
    FlashAttention counts; the kernel's transposes and masked halves of diagonal blocks are
    not counted)."""
    heads, seq, d = q.shape
    full = 4 * heads * seq * seq * d
    return full // 2 if causal else full


attention_backward_op = kernels.torch_op("neuronsim::attention_backward",
                                         attention_backward_kernel, num_outputs=3,
                                         flops=attention_backward_flops)
attention_op = kernels.torch_op("neuronsim::attention", attention_kernel,
                                backward=_backward, setup_context=_setup_context,
                                flops=attention_flops)
attention_lse_op = kernels.torch_op("neuronsim::attention_lse", attention_lse_kernel,
                                    num_outputs=2, backward=_kernel_backward,
                                    setup_context=_setup_context, flops=attention_flops)


def attention_masked_flops(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                           mask: torch.Tensor, scale: float) -> int:
    """Useful FLOPs of the masked attention: all of Q K^T and P V."""
    heads, seq, d = q.shape
    return 4 * heads * seq * seq * d


attention_masked_op = kernels.torch_op("neuronsim::attention_masked",
                                       attention_masked_kernel, backward=_backward,
                                       setup_context=_setup_masked_context,
                                       flops=attention_masked_flops)


def _additive_mask(mask: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """The mask as the kernel takes it: [masks, seq, seq] in q's dtype, additive and finite:
    a boolean mask's False and -inf become mask_lowest (about the dtype's lowest number),
    other values are kept above half of it, so a row of -inf gives 0 as in eager and a row
    of finite values its softmax. One mask for all heads when
    it varies over neither batch nor heads, else one per batch element (the kernel reads it
    for each of the element's heads) or one per batch element and head."""
    *lead, heads, seq, _ = q.shape
    lowest = mask_lowest(q.dtype)
    if mask.dtype == torch.bool:
        mask = torch.where(mask, 0.0, lowest).to(q.dtype)
    else:
        mask = torch.where(mask == float("-inf"), lowest, mask.clamp_min(lowest / 2))
    mask = mask.reshape((1,) * (q.dim() - mask.dim()) + tuple(mask.shape))
    if all(n == 1 for n in mask.shape[:-2]):
        return mask.reshape(1, seq, seq).contiguous()
    per_head = mask.shape[-3] != 1
    return mask.broadcast_to((*lead, heads if per_head else 1, seq, seq)).reshape(
        -1, seq, seq).contiguous()


def fused_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                    scale: float, mask: torch.Tensor | None = None) -> torch.Tensor:
    """q [..., heads, seq, d], k and v [..., kv_heads, seq, d] through neuronsim::attention
    (query head h of a batch element reads its kv head h // (heads / kv_heads)); with an
    attention mask (boolean: True where a key is visible, or additive; broadcastable to
    [..., heads, seq, seq]) through neuronsim::attention_masked."""
    *lead, heads, seq, d = q.shape
    qs, ks, vs = q.reshape(-1, seq, d), k.reshape(-1, seq, d), v.reshape(-1, seq, d)
    if mask is None and torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        out, _ = attention_lse_op(qs, ks, vs, causal, scale)  # (for the backward kernel)
    elif mask is None:
        out = attention_op(qs, ks, vs, causal, scale)
    else:
        out = attention_masked_op(qs, ks, vs, _additive_mask(mask, q), scale)
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


def _fits(t: torch.Tensor) -> bool:
    """The kernel's shapes: seq a multiple of 128, head dim <= 128, and Q^T, K^T and V of a
    head within about half of SBUF (the next head's load while one computes)."""
    seq, d = t.shape[-2], t.shape[-1]
    if seq % 128 or d > 128 or t.dim() < 3:
        return False
    return seq * t.element_size() * (2 + (d + 1) / 128) <= 100 * 1024


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
    if not isinstance(a["is_causal"], bool):
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
    if lead != klead or seq != kseq or d != kd or heads % kv_heads or not _fits(q):
        return None
    if kv_heads != heads and not a["enable_gqa"]:
        return None
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    found = (a["query"], a["key"], a["value"], a["is_causal"], float(scale))
    if a["attn_mask"] is None:
        return found
    mask = _value(a["attn_mask"])
    if a["is_causal"] or not _mask_fits(mask, q):
        return None
    return found + (a["attn_mask"],)


def _mask_fits(mask: torch.Tensor | None, q: torch.Tensor) -> bool:
    """A mask the kernel takes: boolean or of q's dtype, broadcastable to q's scores
    [..., heads, seq, seq] without broadcasting its last two dims."""
    if mask is None or mask.dim() < 2 or mask.dim() > q.dim() or (
            mask.dtype != torch.bool and mask.dtype != q.dtype):
        return False
    seq = q.shape[-2]
    if tuple(mask.shape[-2:]) != (seq, seq):
        return False
    scores = (*q.shape[:-2], seq, seq)
    try:
        torch.broadcast_shapes(tuple(mask.shape), scores)
    except RuntimeError:
        return False
    return True


def _is(node: Any, op: str, *targets: Any) -> bool:
    return isinstance(node, torch.fx.Node) and node.op == op and node.target in targets


def _only_user(node: torch.fx.Node, user: torch.fx.Node) -> bool:
    return list(node.users) == [user]


def _causal_mask(node: Any, seq: int) -> bool:
    """node is the causal mask's complement, ~ones(seq, seq, bool).tril() or
    ones(seq, seq, bool).triu(1) (True where a key is hidden)."""
    def ones(n: Any) -> bool:
        v = _value(n)
        return (_is(n, "call_function", torch.ones) and v is not None
                and v.dtype == torch.bool and tuple(v.shape) == (seq, seq))
    if _is(node, "call_function", operator.invert) and _is(node.args[0], "call_method", "tril"):
        tril = node.args[0]
        return len(tril.args) == 1 and not tril.kwargs and ones(tril.args[0])
    if _is(node, "call_method", "triu") and not node.kwargs and len(node.args) == 2:
        return node.args[1] == 1 and ones(node.args[0])
    return False


def fusable_explicit(node: torch.fx.Node) -> tuple[list[torch.fx.Node], tuple] | None:
    """softmax(q @ k^T * scale [masked_fill(causal complement, -inf)], dim=-1) @ v written
    out (as GPT-2's eager attention): (the nodes it replaces, (q, k, v, causal, scale))."""
    if not _is(node, "call_function", operator.matmul, torch.matmul) or len(node.args) != 2:
        return None
    p, v = node.args
    if _is(p, "call_function", torch.softmax, torch.nn.functional.softmax):
        dim = p.kwargs.get("dim", p.args[1] if len(p.args) > 1 else None)
    elif _is(p, "call_method", "softmax"):
        dim = p.kwargs.get("dim", p.args[1] if len(p.args) > 1 else None)
    else:
        return None
    if dim != -1 or not _only_user(p, node) or p.kwargs.get("dtype") is not None:
        return None
    chain, x = [node, p], p.args[0]
    vq = _value(x)
    if vq is None or vq.dim() < 3:
        return None
    seq = vq.shape[-1]
    causal = False
    if _is(x, "call_method", "masked_fill") and len(x.args) == 3 and _only_user(x, chain[-1]):
        if not (x.args[2] == float("-inf") and _causal_mask(x.args[1], seq)):
            return None
        causal = True
        chain.append(x)
        x = x.args[0]
    scale = 1.0
    if _is(x, "call_function", operator.mul, operator.truediv) and _only_user(x, chain[-1]):
        a, b = x.args
        if x.target is operator.mul and isinstance(a, (int, float)):
            a, b = b, a
        if isinstance(b, bool) or not isinstance(b, (int, float)) or b == 0:
            return None
        scale = float(b) if x.target is operator.mul else 1.0 / float(b)
        chain.append(x)
        x = a
    if not _is(x, "call_function", operator.matmul, torch.matmul) or not _only_user(
            x, chain[-1]):
        return None
    q, kt = x.args
    chain.append(x)
    if not (_is(kt, "call_method", "transpose") and kt.args[1:] in ((-2, -1), (-1, -2))
            and _only_user(kt, x)):
        return None
    chain.append(kt)
    k = kt.args[0]
    tq, tk, tv = _value(q), _value(k), _value(v)
    if tq is None or tk is None or tv is None or not (
            tq.shape == tk.shape == tv.shape and tq.dtype == tk.dtype == tv.dtype):
        return None
    if tq.dtype not in FUSED_DTYPES or not _fits(tq) or seq != tq.shape[-2]:
        return None
    return chain, (q, k, v, causal, scale)


def fuse_attention(gm: torch.fx.GraphModule) -> int:
    """Replaces the fusable scaled_dot_product_attention calls of a Dynamo graph, and the
    attention written out as matmul, softmax and matmul, by fused_attention; returns how
    many."""
    count = 0
    for node in list(gm.graph.nodes):
        if node.graph is not gm.graph:  # (erased)
            continue
        found = fusable_sdpa(node)
        chain = [node]
        if found is None:
            explicit = fusable_explicit(node)
            if explicit is None:
                continue
            chain, found = explicit
        with gm.graph.inserting_before(node):
            fused = gm.graph.call_function(fused_attention, found)
        fused.meta.update(node.meta)
        node.replace_all_uses_with(fused)
        for dead in chain:  # the output first, then its inputs (each used by the previous)
            gm.graph.erase_node(dead)
        count += 1
    if count:
        gm.graph.eliminate_dead_code()
        gm.recompile()
    return count
