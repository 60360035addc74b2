"""One small model per family of issue 3, written from torch.nn with random weights, compiled
with backend="neuron" (no fallback) and compared with eager PyTorch, inference forward.

Error measure: max |compiled - eager| / max |eager| over the output (models.relative_error),
eager in the same dtype. Tolerances (TOLERANCE below): fp32 1e-4, bf16 3e-2, fp16 5e-3: both
sides round intermediates to the narrow type, in different places and orders. (Observed when
written: fp32 <= 5e-7, bf16 <= 1e-2, fp16 <= 1.1e-3.)
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import neuronsim
from models import relative_error

TOLERANCE = {torch.float32: 1e-4, torch.bfloat16: 3e-2, torch.float16: 5e-3}
DTYPES = [
    pytest.param(torch.float32, id="fp32"),
    pytest.param(torch.bfloat16, id="bf16"),
    pytest.param(torch.float16, id="fp16"),
]


def _compare(model: nn.Module, inputs: list[torch.Tensor], dtype: torch.dtype) -> None:
    """Compiles `model` in `dtype` (floating inputs cast too) and compares it with eager."""
    model = model.eval().to(dtype)
    inputs = [x.to(dtype) if x.is_floating_point() else x for x in inputs]
    with torch.no_grad():
        expected = model(*inputs)
        # fullgraph: no graph break, so no part of the model runs outside the backend
        compiled = torch.compile(model, backend="neuron", dynamic=False, fullgraph=True)
        actual = compiled(*inputs)
    assert neuronsim.get_fallback_ops() == {}  # the default: no op ran on the CPU
    assert neuronsim.last_run_stats()["instructions"] > 0  # it ran on the simulator
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    error = relative_error(actual, expected)
    assert error <= TOLERANCE[dtype], f"relative error {error:.3g} > {TOLERANCE[dtype]}"


def _heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """[B, T, C] -> [B, heads, T, C / heads]."""
    batch, tokens, channels = x.shape
    return x.view(batch, tokens, heads, channels // heads).transpose(1, 2)


def _merge_heads(x: torch.Tensor) -> torch.Tensor:
    """[B, heads, T, D] -> [B, T, heads * D]."""
    batch, heads, tokens, dim = x.shape
    return x.transpose(1, 2).contiguous().view(batch, tokens, heads * dim)


# --- GPT-2-style decoder ------------------------------------------------------------------------


class GPT2Block(nn.Module):
    def __init__(self, dim: int, heads: int, max_tokens: int, gelu: str) -> None:
        super().__init__()
        self.heads, self.gelu = heads, gelu
        self.ln_1 = nn.LayerNorm(dim)
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.ln_2 = nn.LayerNorm(dim)
        self.c_fc = nn.Linear(dim, 4 * dim)
        self.mlp_proj = nn.Linear(4 * dim, dim)
        causal = torch.tril(torch.ones(max_tokens, max_tokens, dtype=torch.bool))
        self.register_buffer("bias", causal.view(1, 1, max_tokens, max_tokens))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens, channels = x.shape[1], x.shape[2]
        q, k, v = self.c_attn(self.ln_1(x)).split(channels, dim=2)
        q, k, v = (_heads(t, self.heads) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
        scores = scores.masked_fill(~self.bias[:, :, :tokens, :tokens], float("-inf"))
        attention = F.softmax(scores, dim=-1)
        x = x + self.c_proj(_merge_heads(attention @ v))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate=self.gelu))


class GPT2(nn.Module):
    def __init__(self, vocab=97, dim=64, heads=4, max_tokens=16) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(max_tokens, dim)
        # GELU in both forms: tanh approximation (GPT-2's "gelu_new") and exact erf.
        self.h = nn.ModuleList(
            [GPT2Block(dim, heads, max_tokens, "tanh"), GPT2Block(dim, heads, max_tokens, "none")]
        )
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(positions)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


@pytest.mark.parametrize("dtype", DTYPES)
def test_gpt2_decoder(dtype):
    _compare(GPT2(), [torch.randint(0, 97, (2, 11))], dtype)


# --- Llama-style decoder ------------------------------------------------------------------------


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * normed.to(x.dtype)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, dim: int, heads: int, kv_heads: int, hidden: int) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.input_layernorm = RMSNorm(dim)
        self.q_proj = nn.Linear(dim, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, dim, bias=False)
        self.post_attention_layernorm = RMSNorm(dim)
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def _repeat_kv(self, x: torch.Tensor) -> torch.Tensor:
        """[B, kv_heads, T, D] -> [B, heads, T, D] by expand + reshape (as HF's repeat_kv)."""
        batch, kv_heads, tokens, dim = x.shape
        repeats = self.heads // kv_heads
        x = x[:, :, None, :, :].expand(batch, kv_heads, repeats, tokens, dim)
        return x.reshape(batch, kv_heads * repeats, tokens, dim)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        h = self.input_layernorm(x)
        q = _heads(self.q_proj(h), self.heads)
        k = _heads(self.k_proj(h), self.kv_heads)
        v = _heads(self.v_proj(h), self.kv_heads)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        k, v = self._repeat_kv(k), self._repeat_kv(v)
        attention = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(_merge_heads(attention))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(nn.Module):
    def __init__(self, vocab=101, dim=64, heads=4, kv_heads=2, hidden=172, layers=2) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(
            [LlamaBlock(dim, heads, kv_heads, hidden) for _ in range(layers)]
        )
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        head_dim = dim // heads
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens(idx)
        positions = torch.arange(idx.shape[1], device=idx.device).float()
        freqs = positions[:, None] * self.inv_freq[None, :]
        angles = torch.cat((freqs, freqs), dim=-1)
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.norm(x))


@pytest.mark.parametrize("dtype", DTYPES)
def test_llama_decoder(dtype):
    _compare(Llama(), [torch.randint(0, 101, (2, 9))], dtype)


# --- BERT-style encoder -------------------------------------------------------------------------


class BertLayer(nn.Module):
    def __init__(self, dim: int, heads: int, hidden: int) -> None:
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = (nn.Linear(dim, dim) for _ in range(3))
        self.attention_output = nn.Linear(dim, dim)
        self.attention_norm = nn.LayerNorm(dim, eps=1e-12)
        self.intermediate = nn.Linear(dim, hidden)
        self.output = nn.Linear(hidden, dim)
        self.output_norm = nn.LayerNorm(dim, eps=1e-12)

    def forward(self, x: torch.Tensor, additive_mask: torch.Tensor) -> torch.Tensor:
        q, k, v = (_heads(f(x), self.heads) for f in (self.query, self.key, self.value))
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + additive_mask
        context = _merge_heads(F.softmax(scores, dim=-1) @ v)
        x = self.attention_norm(x + self.attention_output(context))
        return self.output_norm(x + self.output(F.gelu(self.intermediate(x))))


class Bert(nn.Module):
    def __init__(self, vocab=113, dim=48, heads=4, hidden=96, layers=2, classes=3) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, dim)
        self.position_embeddings = nn.Embedding(32, dim)
        self.token_type_embeddings = nn.Embedding(2, dim)
        self.embeddings_norm = nn.LayerNorm(dim, eps=1e-12)
        self.layers = nn.ModuleList([BertLayer(dim, heads, hidden) for _ in range(layers)])
        self.pooler = nn.Linear(dim, dim)
        self.dropout = nn.Dropout(0.1)
        self.classifier = nn.Linear(dim, classes)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        token_types = torch.zeros_like(input_ids)
        x = (
            self.word_embeddings(input_ids)
            + self.position_embeddings(positions)
            + self.token_type_embeddings(token_types)
        )
        x = self.embeddings_norm(x)
        # [B, T] 1 = token, 0 = padding  ->  [B, 1, 1, T] 0 or the dtype's most negative value.
        additive = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, additive)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return self.classifier(self.dropout(pooled))


@pytest.mark.parametrize("dtype", DTYPES)
def test_bert_encoder(dtype):
    input_ids = torch.randint(0, 113, (3, 10))
    attention_mask = torch.ones(3, 10, dtype=torch.long)
    attention_mask[1, 7:] = 0  # padding
    attention_mask[2, 4:] = 0
    _compare(Bert(), [input_ids, attention_mask], dtype)


# --- ViT-style ----------------------------------------------------------------------------------


class ViTBlock(nn.Module):
    def __init__(self, dim: int, heads: int, hidden: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = (_heads(t, self.heads) for t in self.qkv(self.norm1(x)).chunk(3, dim=-1))
        attention = F.softmax(q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5, dim=-1)
        x = x + self.proj(_merge_heads(attention @ v))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class ViT(nn.Module):
    def __init__(self, image=20, patch=4, dim=48, heads=3, hidden=96, layers=2, classes=10):
        super().__init__()
        patches = (image // patch) ** 2
        self.patch_embed = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
        self.cls_token = nn.Parameter(0.02 * torch.randn(1, 1, dim))
        self.pos_embed = nn.Parameter(0.02 * torch.randn(1, patches + 1, dim))
        self.blocks = nn.ModuleList([ViTBlock(dim, heads, hidden) for _ in range(layers)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Sequential(nn.Linear(dim, hidden), nn.Tanh(), nn.Linear(hidden, classes))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(images).flatten(2).transpose(1, 2)  # [B, patches, dim]
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat((cls, x), dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_vit(dtype):
    _compare(ViT(), [torch.randn(2, 3, 20, 20)], dtype)


# --- ResNet-style CNN ---------------------------------------------------------------------------


def _randomize_batch_norm(model: nn.Module) -> nn.Module:
    """Non-trivial running statistics, so eval-mode batch norm is not the identity."""
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 1.5)
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.uniform_(-0.5, 0.5)
    return model


class BasicBlock(nn.Module):
    def __init__(self, inputs: int, outputs: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.downsample = None
        if stride != 1 or inputs != outputs:
            self.downsample = nn.Sequential(
                nn.Conv2d(inputs, outputs, 1, stride=stride, bias=False), nn.BatchNorm2d(outputs)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + identity)


class ResNet(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = BasicBlock(16, 16, stride=1)
        self.layer2 = BasicBlock(16, 32, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_resnet(dtype):
    _compare(_randomize_batch_norm(ResNet()), [torch.randn(2, 3, 18, 18)], dtype)


# --- MLP with assorted activations --------------------------------------------------------------


class ActivationMLP(nn.Module):
    def __init__(self, features: int = 37, hidden: int = 150, classes: int = 7) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(features, hidden),
            nn.Sigmoid(),
            nn.Dropout(0.5),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Softplus(),
            nn.Dropout(0.2),
            nn.Linear(hidden, hidden),
            nn.Hardswish(),
            nn.Linear(hidden, hidden),
            nn.LeakyReLU(0.1),
            nn.Linear(hidden, classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mlp_activations(dtype):
    _compare(ActivationMLP(), [torch.randn(5, 37)], dtype)
