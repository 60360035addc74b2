"""scaled_dot_product_attention in compiled graphs runs as the built-in fused attention kernel
(python/neuronsim/attention.py) where the kernel is exact, and matches eager; elsewhere it is
decomposed as before."""

import json
import math
import os

import pytest
import torch
import torch.nn.functional as F

import neuronsim
from neuronsim.attention import fuse_attention

TOL = {torch.float32: dict(atol=1e-4, rtol=1e-4), torch.bfloat16: dict(atol=3e-2, rtol=2e-2),
       torch.float16: dict(atol=3e-3, rtol=3e-3)}


def _graph_targets(dump_dir) -> list:
    targets = []
    for root, _, files in os.walk(dump_dir):
        if "graph.json" in files:
            with open(os.path.join(root, "graph.json")) as f:
                targets += [n["target"] for n in json.load(f)["nodes"]]
    return targets


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16],
                         ids=["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
def test_fused_sdpa_matches_eager(dtype, causal, tmp_path):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 256, 64, dtype=dtype) for _ in range(3))

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    compiled = torch.compile(attend, backend="neuron", dynamic=False,
                             options={"dump_dir": str(tmp_path)})
    with torch.no_grad():
        out = compiled(q, k, v)
    expected = attend(q.float(), k.float(), v.float())
    assert out.dtype == dtype
    torch.testing.assert_close(out.float(), expected, **TOL[dtype])
    targets = _graph_targets(tmp_path)
    assert targets.count("neuronsim.kernel.default") == 1
    assert not any("bmm" in t or "softmax" in t for t in targets)
    # useful FLOPs: Q K^T and P V over the visible scores (not the kernel's transposes)
    flops = 2 * 2 * 6 * 256 * 256 * 64
    assert neuronsim.last_run_stats()["flops"] == (flops // 2 if causal else flops)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_fused_sdpa_grouped_query_heads_and_scale(dtype, tmp_path):
    torch.manual_seed(1)
    q = torch.randn(2, 8, 384, 32, dtype=dtype)
    k, v = (torch.randn(2, 2, 384, 32, dtype=dtype) for _ in range(2))

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3,
                                              enable_gqa=True)

    compiled = torch.compile(attend, backend="neuron", dynamic=False,
                             options={"dump_dir": str(tmp_path)})
    with torch.no_grad():
        out = compiled(q, k, v)
    torch.testing.assert_close(out.float(), attend(q.float(), k.float(), v.float()),
                               **TOL[dtype])
    assert "neuronsim.kernel.default" in _graph_targets(tmp_path)


@pytest.mark.parametrize("scale, causal", [(-0.5, False), (0.0, False), (4.0, False),
                                           (4.0, True)],
                         ids=["negative", "zero", "large", "large-causal"])
def test_fused_sdpa_any_scale_sign(scale, causal, tmp_path):
    # the kernel shifts the exp by the row max of the scores times the scale's sign, so a
    # negative or zero scale (uniform weights over the visible keys) and scores of large
    # magnitude (scale 4: exp arguments in the hundreds before the shift) stay exact. (With
    # is_causal and a scale <= 0, eager's own result is NaN: its math kernel scales q and k
    # by sqrt(scale).)
    torch.manual_seed(4)
    q, k, v = (torch.randn(1, 2, 256, 32) for _ in range(3))

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)

    compiled = torch.compile(attend, backend="neuron", dynamic=False,
                             options={"dump_dir": str(tmp_path)})
    with torch.no_grad():
        out = compiled(q, k, v)
    torch.testing.assert_close(out, attend(q, k, v), **TOL[torch.float32])
    assert "neuronsim.kernel.default" in _graph_targets(tmp_path)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_fused_sdpa_trains_like_eager(dtype):
    torch.manual_seed(2)
    leaves = [torch.randn(1, 2, 256, 32, dtype=dtype).requires_grad_() for _ in range(3)]

    def loss(q, k, v):
        return (F.scaled_dot_product_attention(q, k, v, is_causal=True).float() ** 2).sum()

    def grads(fn):
        for t in leaves:
            t.grad = None
        value = fn(*leaves)
        value.backward()
        return value.detach(), [t.grad.clone() for t in leaves]

    expected_loss, expected = grads(loss)
    got_loss, got = grads(torch.compile(loss, backend="neuron", dynamic=False))
    tol = TOL[dtype] if dtype == torch.float32 else dict(atol=5e-2, rtol=3e-2)
    torch.testing.assert_close(got_loss, expected_loss, rtol=1e-3 if dtype == torch.float32
                               else 2e-2, atol=0)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g.float(), e.float(), **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("causal,heads,kv_heads", [(True, 4, 2), (False, 2, 2)],
                         ids=["causal-gqa", "full"])
def test_fused_sdpa_backward_is_the_attention_backward_kernel(dtype, causal, heads, kv_heads,
                                                              tmp_path):
    """The backward graph runs neuronsim::attention_backward (FlashAttention-2's backward on
    chip, P recomputed from the forward's log-sum-exp): no S x S matmul or softmax in any
    graph, and the gradients match eager's."""
    torch.manual_seed(3)
    q = torch.randn(1, heads, 384, 64, dtype=dtype, requires_grad=True)
    k, v = (torch.randn(1, kv_heads, 384, 64, dtype=dtype, requires_grad=True)
            for _ in range(2))
    w = torch.randn(1, heads, 384, 64, dtype=dtype)

    def loss(q, k, v):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                             enable_gqa=heads != kv_heads)
        return (out.float() * w.float()).sum()

    def grads(fn):
        for t in (q, k, v):
            t.grad = None
        fn(q, k, v).backward()
        return [t.grad.clone() for t in (q, k, v)]

    expected = grads(loss)
    got = grads(torch.compile(loss, backend="neuron", dynamic=False,
                              options={"dump_dir": str(tmp_path)}))
    tol = TOL[dtype] if dtype == torch.float32 else dict(atol=5e-2, rtol=3e-2)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g.float(), e.float(), **tol)
    kernels = []
    for root, _, files in os.walk(tmp_path):
        if "graph.json" in files:
            with open(os.path.join(root, "graph.json")) as f:
                nodes = json.load(f)["nodes"]
            kernels += [n["name"] for n in nodes if n["target"] == "neuronsim.kernel.default"]
    assert sorted(kernels) == ["attention_backward", "attention_lse"]
    assert not any("bmm" in t or "softmax" in t for t in _graph_targets(tmp_path))


def test_attention_backward_without_room_recomputes_with_torch_ops(monkeypatch, tmp_path):
    """Where the backward kernel's tiles would not fit SBUF (long sequences), the backward
    recomputes the probabilities with PyTorch ops (matmuls and softmax in the backward
    graph) and still matches eager."""
    import neuronsim.attention as attention

    monkeypatch.setattr(attention, "_BACKWARD_SBUF_BYTES", 0)
    torch.manual_seed(4)
    leaves = [torch.randn(1, 2, 256, 32, requires_grad=True) for _ in range(3)]

    def loss(q, k, v):
        return (F.scaled_dot_product_attention(q, k, v, is_causal=True) ** 2).sum()

    loss(*leaves).backward()
    expected = [t.grad.clone() for t in leaves]
    for t in leaves:
        t.grad = None
    torch.compile(loss, backend="neuron", dynamic=False,
                  options={"dump_dir": str(tmp_path)})(*leaves).backward()
    for t, e in zip(leaves, expected):
        torch.testing.assert_close(t.grad, e, **TOL[torch.float32])
    assert any("bmm" in t for t in _graph_targets(tmp_path))


def test_only_exact_cases_are_fused():
    def graph(fn, *inputs):  # the Dynamo graph the backend receives
        captured = []

        def backend(gm, example_inputs):
            captured.append(gm)
            return gm.forward

        torch._dynamo.reset()
        torch.compile(fn, backend=backend, fullgraph=True, dynamic=False)(*inputs)
        return captured[0]

    q, k, v = (torch.randn(1, 2, 256, 32) for _ in range(3))
    cases = {
        "causal": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), 1),
        "mask": (lambda q, k, v: F.scaled_dot_product_attention(
            q, k, v, attn_mask=torch.ones(256, 256, dtype=torch.bool)), 1),
        "mask broadcast over keys": (lambda q, k, v: F.scaled_dot_product_attention(
            q, k, v, attn_mask=torch.ones(256, 1, dtype=torch.bool)), 0),
        "dropout": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.1), 0),
        "gqa without enable_gqa": (lambda q, k, v: F.scaled_dot_product_attention(
            q, k[:, :1], v[:, :1]), 0),
    }
    for name, (fn, fused) in cases.items():
        assert fuse_attention(graph(fn, q, k, v)) == fused, name
    short = [t[:, :, :200] for t in (q, k, v)]  # not a multiple of 128
    assert fuse_attention(graph(cases["causal"][0], *short)) == 0
    wide = [torch.randn(1, 2, 256, 160) for _ in range(3)]  # head dim over 128
    assert fuse_attention(graph(cases["causal"][0], *wide)) == 0
    long = [torch.randn(1, 1, 16384, 64) for _ in range(3)]  # fp32 Q^T, K^T, V over SBUF
    assert fuse_attention(graph(cases["causal"][0], *long)) == 0


def _mask(kind, dtype, batch, heads, seq):
    """Attention masks eager takes, with rows whose keys are all masked out (-inf or False:
    eager gives 0) and a row of the dtype's lowest number (finite: eager gives its mean)."""
    if kind == "bool":  # one for all heads and batch elements
        m = torch.rand(seq, seq) > 0.3
        m[5] = False
    elif kind == "bool per batch":  # [batch, 1, seq, seq]
        m = torch.rand(batch, 1, seq, seq) > 0.5
        m[1, 0, 7] = False
    elif kind == "additive per batch":
        m = torch.randn(batch, 1, seq, seq, dtype=dtype)
        m[0, 0, 3, ::2] = float("-inf")
        m[1, 0, 9] = float("-inf")
        m[0, 0, 11] = torch.finfo(dtype).min
    else:  # additive, one per head
        m = torch.randn(1, heads, seq, seq, dtype=dtype) * 3
    return m


@pytest.mark.parametrize("kind", ["bool", "bool per batch", "additive per batch",
                                  "additive per head"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16],
                         ids=["fp32", "bf16", "fp16"])
def test_fused_sdpa_with_attention_mask(kind, dtype, tmp_path):
    torch.manual_seed(5)
    q, k, v = (torch.randn(2, 3, 256, 64, dtype=dtype) for _ in range(3))
    mask = _mask(kind, dtype, 2, 3, 256)

    def attend(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.2)

    compiled = torch.compile(attend, backend="neuron", dynamic=False,
                             options={"dump_dir": str(tmp_path)})
    with torch.no_grad():
        out = compiled(q, k, v, mask)
    expected = attend(q.float(), k.float(), v.float(),
                      mask if mask.dtype == torch.bool else mask.float())
    assert out.dtype == dtype
    torch.testing.assert_close(out.float(), expected, **TOL[dtype])
    targets = _graph_targets(tmp_path)
    assert targets.count("neuronsim.kernel.default") == 1
    assert not any("bmm" in t or "softmax" in t for t in targets)
    assert neuronsim.last_run_stats()["flops"] == 2 * 2 * 6 * 256 * 256 * 64


@pytest.mark.parametrize("kind", ["bool per batch", "additive per batch"])
def test_fused_sdpa_with_attention_mask_trains_like_eager(kind):
    torch.manual_seed(6)
    q, k, v = (torch.randn(2, 2, 128, 32, requires_grad=True) for _ in range(3))
    mask = _mask(kind, torch.float32, 2, 2, 128)
    if kind == "additive per batch":  # (eager's own backward of a row of the lowest
        mask[0, 0, 11] = 0.0  # finite number is off: its exp(S - logsumexp) is 1, not 1/n)

    def loss(q, k, v, mask):
        return (F.scaled_dot_product_attention(q, k, v, attn_mask=mask) ** 2).sum()

    def grads(fn):
        for t in (q, k, v):
            t.grad = None
        value = fn(q, k, v, mask)
        value.backward()
        return value.detach(), [t.grad.clone() for t in (q, k, v)]

    expected_loss, expected = grads(loss)
    got_loss, got = grads(torch.compile(loss, backend="neuron", dynamic=False))
    torch.testing.assert_close(got_loss, expected_loss, rtol=1e-4, atol=0)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, **TOL[torch.float32])


def test_attention_kernel_rejects_bad_masks():
    from neuronsim.attention import attention_masked_kernel
    from neuronsim.kernels.ir import KernelError

    q, k, v = (torch.randn(2, 128, 32) for _ in range(3))
    with pytest.raises(KernelError, match=r"an attention mask is \[masks, 128, 128\] in v's "
                       r"dtype with heads a multiple of masks and causal=False, got "
                       r"\[3, 128, 128\] torch.float32"):
        attention_masked_kernel(q, k, v, torch.zeros(3, 128, 128), 1.0)
    with pytest.raises(KernelError, match=r"got \[1, 128, 128\] torch.bfloat16"):
        attention_masked_kernel(q, k, v, torch.zeros(1, 128, 128, dtype=torch.bfloat16), 1.0)


def _explicit_causal(q, k, v):  # GPT-2's eager attention, written out
    seq, d = q.shape[-2], q.shape[-1]
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
    mask = torch.ones(seq, seq, dtype=torch.bool, device=q.device).tril()
    scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_written_out_causal_attention_is_fused(dtype, tmp_path):
    torch.manual_seed(3)
    q, k, v = (torch.randn(1, 4, 256, 64, dtype=dtype) for _ in range(3))
    compiled = torch.compile(_explicit_causal, backend="neuron", dynamic=False,
                             options={"dump_dir": str(tmp_path)})
    with torch.no_grad():
        out = compiled(q, k, v)
    torch.testing.assert_close(out.float(), _explicit_causal(q.float(), k.float(), v.float()),
                               **TOL[dtype])
    targets = _graph_targets(tmp_path)
    assert "neuronsim.kernel.default" in targets and not any("bmm" in t for t in targets)


def test_written_out_attention_trains_and_other_masks_stay():
    torch.manual_seed(4)
    leaves = [torch.randn(1, 2, 128, 32).requires_grad_() for _ in range(3)]

    def loss(q, k, v):
        return (_explicit_causal(q, k, v) ** 2).sum()

    expected = torch.autograd.grad(loss(*leaves), leaves)
    got = torch.autograd.grad(torch.compile(loss, backend="neuron", dynamic=False)(*leaves),
                              leaves)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, atol=1e-4, rtol=1e-4)

    def banded(q, k, v):  # another mask: not the causal one, stays as written
        seq = q.shape[-2]
        keep = torch.ones(seq, seq, dtype=torch.bool).tril().triu(-4)
        scores = (q @ k.transpose(-2, -1)).masked_fill(~keep, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v

    captured = []

    def backend(gm, example_inputs):
        captured.append(fuse_attention(gm))
        return gm.forward

    torch._dynamo.reset()
    q, k, v = (t.detach() for t in leaves)
    torch.compile(banded, backend=backend, dynamic=False)(q, k, v)
    torch.compile(_explicit_causal, backend=backend, dynamic=False)(q, k, v)
    assert captured == [0, 1]
