"""Models of common architectures beyond the transformer families: a diffusion UNet block,
a Whisper-style encoder (nn.TransformerEncoder, whose eval mode takes PyTorch's fused fast
path), a top-k mixture-of-experts layer, an EfficientNet-style block and a DETR-style head.

Each compiles with backend="neuron" (no op on the CPU), in eval (forward) and in train mode
(forward and backward: every parameter's gradient), and matches eager in fp32: max relative
error (max |compiled - eager| / max |eager|) <= 1e-4 per output and per gradient.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import neuronsim
from models import relative_error

TOLERANCE = 1e-4


class UNetBlock(nn.Module):
    """ResBlock with a timestep embedding, spatial self-attention, nearest 2x upsample + conv."""

    def __init__(self, channels: int = 32, time_dim: int = 16) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.GroupNorm(8, channels), nn.GroupNorm(8, channels)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.time = nn.Linear(time_dim, channels)
        self.norm_attn = nn.GroupNorm(8, channels)
        self.attn = nn.MultiheadAttention(channels, 4, batch_first=True)
        self.up = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor, temb: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x))) + self.time(F.silu(temb))[:, :, None, None]
        x = x + self.conv2(F.silu(self.norm2(h)))
        batch, channels, height, width = x.shape
        tokens = self.norm_attn(x).flatten(2).transpose(1, 2)
        attended, _ = self.attn(tokens, tokens, tokens, need_weights=False)
        x = x + attended.transpose(1, 2).reshape(batch, channels, height, width)
        return self.up(F.interpolate(x, scale_factor=2, mode="nearest"))


class WhisperEncoder(nn.Module):
    """Two 1-D convolutions (the second strided) over mel features, GELU, sinusoid-free
    learned positions and a pre-norm nn.TransformerEncoder."""

    def __init__(self, mels: int = 8, width: int = 32, frames: int = 16) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(mels, width, 3, padding=1)
        self.conv2 = nn.Conv1d(width, width, 3, stride=2, padding=1)
        self.position = nn.Parameter(torch.randn(frames // 2, width) * 0.1)
        layer = nn.TransformerEncoderLayer(
            width, 4, 64, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        x = F.gelu(self.conv2(F.gelu(self.conv1(mel)))).transpose(1, 2)
        return self.encoder(x + self.position)


class TopKMoE(nn.Module):
    """A softmax router picking the top 2 of 4 experts per token, weights renormalised."""

    def __init__(self, dim: int = 32, experts: int = 4, k: int = 2) -> None:
        super().__init__()
        self.router, self.k = nn.Linear(dim, experts), k
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(dim, 64), nn.GELU(), nn.Linear(64, dim))
            for _ in range(experts)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weights, chosen = torch.topk(torch.softmax(self.router(x), -1), self.k, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        out = torch.zeros_like(x)
        for index, expert in enumerate(self.experts):
            gate = ((chosen == index).to(x.dtype) * weights).sum(-1, keepdim=True)
            out = out + expert(x) * gate
        torch._assert_async(torch.isfinite(out).all())  # a runtime check, as MoE code does
        return out


class EfficientNetBlock(nn.Module):
    """MBConv: 1x1 expand, depthwise 3x3, squeeze-excite, 1x1 project, BatchNorm and SiLU."""

    def __init__(self, channels: int = 16, expanded: int = 32) -> None:
        super().__init__()
        # No conv bias before a BatchNorm (as EfficientNet): its gradient would be exactly 0.
        self.expand = nn.Conv2d(channels, expanded, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(expanded)
        self.depthwise = nn.Conv2d(expanded, expanded, 3, padding=1, groups=expanded, bias=False)
        self.bn2 = nn.BatchNorm2d(expanded)
        self.squeeze, self.excite = nn.Conv2d(expanded, 8, 1), nn.Conv2d(8, expanded, 1)
        self.project = nn.Conv2d(expanded, channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.silu(self.bn2(self.depthwise(F.silu(self.bn1(self.expand(x))))))
        scale = torch.sigmoid(self.excite(F.silu(self.squeeze(F.adaptive_avg_pool2d(h, 1)))))
        return x + self.bn3(self.project(h * scale))


class DETRHead(nn.Module):
    """Learned object queries through a transformer decoder over image features, then class
    probabilities and sigmoid boxes."""

    def __init__(self, dim: int = 32, queries: int = 10, classes: int = 5) -> None:
        super().__init__()
        self.queries = nn.Parameter(torch.randn(queries, dim))
        layer = nn.TransformerDecoderLayer(dim, 4, 64, dropout=0.0, batch_first=True)
        self.decoder = nn.TransformerDecoder(layer, 2)
        self.classes = nn.Linear(dim, classes + 1)
        self.boxes = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, 4))

    def forward(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        targets = self.decoder(self.queries.expand(memory.shape[0], -1, -1), memory)
        return self.classes(targets).softmax(-1), self.boxes(targets).sigmoid()


MODELS = {
    "unet_block": (UNetBlock, lambda: (torch.randn(2, 32, 8, 8), torch.randn(2, 16))),
    "whisper_encoder": (WhisperEncoder, lambda: (torch.randn(2, 8, 16),)),
    "topk_moe": (TopKMoE, lambda: (torch.randn(2, 6, 32),)),
    "efficientnet_block": (EfficientNetBlock, lambda: (torch.randn(2, 16, 8, 8),)),
    "detr_head": (DETRHead, lambda: (torch.randn(2, 20, 32),)),
}


def _outputs(value) -> tuple[torch.Tensor, ...]:
    return value if isinstance(value, tuple) else (value,)


def _run(model: nn.Module, inputs, compiled: bool, train: bool):
    model.zero_grad(set_to_none=True)
    fn = torch.compile(model, backend="neuron", dynamic=False) if compiled else model
    with torch.set_grad_enabled(train):
        outputs = _outputs(fn(*inputs))
        if not train:
            return outputs, ()
        # A random probe per output: sum() alone would give zero gradients through softmax.
        generator = torch.Generator().manual_seed(1)
        probes = [torch.randn(out.shape, generator=generator) for out in outputs]
        sum((out * probe).sum() for out, probe in zip(outputs, probes)).backward()
    return outputs, tuple(p.grad.clone() for p in model.parameters())


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
@pytest.mark.parametrize("name", list(MODELS))
def test_model_compiles_with_no_fallback_and_matches_eager(name, train):
    cls, make_inputs = MODELS[name]
    torch.manual_seed(0)
    model = cls().train(train)
    inputs = make_inputs()
    torch._dynamo.reset()
    # BatchNorm in train mode updates its running statistics: both runs start from the same.
    state = {k: v.clone() for k, v in model.state_dict().items()}
    expected, expected_grads = _run(model, inputs, compiled=False, train=train)
    model.load_state_dict(state)
    actual, actual_grads = _run(model, inputs, compiled=True, train=train)
    assert neuronsim.get_fallback_ops() == {}
    for got, want in zip(actual + actual_grads, expected + expected_grads, strict=True):
        assert got.shape == want.shape
        error = relative_error(got, want)
        assert error <= TOLERANCE, f"relative error {error:.3g}"
    if train:
        for key, value in model.state_dict().items():  # running stats updated as in eager
            torch.testing.assert_close(value, _reference_state(cls, make_inputs)[key])


def _reference_state(cls, make_inputs):
    torch.manual_seed(0)
    model = cls().train()
    inputs = make_inputs()
    _run(model, inputs, compiled=False, train=True)
    return model.state_dict()


def test_encoder_fast_path_with_a_key_padding_mask_matches_eager():
    """nn.TransformerEncoder in eval mode runs aten._transformer_encoder_layer_fwd; with a key
    padding mask its merged mask reaches the kernel as a [B, L] boolean (mask_type 1)."""
    torch.manual_seed(0)
    for norm_first in (False, True):
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True,
                                           norm_first=norm_first)  # fmt: skip
        encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
        x = torch.randn(2, 6, 32)
        padding = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
        torch._dynamo.reset()
        with torch.no_grad():
            expected = encoder(x, src_key_padding_mask=padding)
            actual = torch.compile(encoder, backend="neuron", dynamic=False)(
                x, src_key_padding_mask=padding
            )
        assert neuronsim.get_fallback_ops() == {}
        assert relative_error(actual, expected) <= TOLERANCE
