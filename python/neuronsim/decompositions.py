"""Decompositions the neuron backend adds to PyTorch's core ATen table.

AOTAutograd differentiates an op with its own autograd formula, then decomposes the joint
graph: an op whose backward is a fused CPU kernel with no decomposition of its own would
reach the compiler as that kernel. Each function here rewrites one such kernel into core
ATen ops the compiler supports, computing what the kernel computes.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .bessel import BESSEL_DECOMPOSITIONS
from .distances import DISTANCE_DECOMPOSITIONS
from .error_functions import ERROR_FUNCTION_DECOMPOSITIONS
from .float_bits import FLOAT_BITS_DECOMPOSITIONS
from .grid_sample import GRID_SAMPLE_DECOMPOSITIONS
from .grouped_mm import GROUPED_MM_DECOMPOSITIONS
from .histogram import HISTOGRAM_DECOMPOSITIONS
from .incomplete_gamma import INCOMPLETE_GAMMA_DECOMPOSITIONS
from .linalg import LINALG_DECOMPOSITIONS
from .nonzero_static import NONZERO_STATIC_DECOMPOSITIONS
from .orthogonal_polynomials import ORTHOGONAL_POLYNOMIAL_DECOMPOSITIONS
from .segment_reduce import SEGMENT_REDUCE_DECOMPOSITIONS
from .special_functions import SPECIAL_DECOMPOSITIONS
from .zeta_gamma import ZETA_DECOMPOSITIONS

aten = torch.ops.aten


def _attention_scores_mask(
    length: int, source: int, is_causal: bool, attn_mask: torch.Tensor | None, like: torch.Tensor
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """(boolean keep mask or None, additive float mask or None) of scaled_dot_product_attention."""
    keep = None
    if is_causal:
        keep = torch.ones(length, source, dtype=torch.bool, device=like.device).tril()
    additive = None
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            keep = attn_mask if keep is None else keep & attn_mask
        else:
            additive = attn_mask.to(torch.float32)
    return keep, additive


def sdpa_flash_cpu_backward(
    grad_out: torch.Tensor,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    out: torch.Tensor,
    logsumexp: torch.Tensor,
    dropout_p: float,
    is_causal: bool,
    *,
    attn_mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """aten._scaled_dot_product_flash_attention_for_cpu_backward: the attention backward from
    the forward's logsumexp (P = exp(S - logsumexp), dS = P * (dP - rowsum(dO * O))), in fp32
    like the CPU kernel's accumulation, cast back to the inputs' dtype."""
    if dropout_p != 0.0:
        # The forward's dropout mask is not an input of the backward: it cannot be rebuilt.
        return NotImplemented
    dtype = query.dtype
    q, k, v, o, do = (t.to(torch.float32) for t in (query, key, value, out, grad_out))
    if k.shape[-3] != q.shape[-3]:  # grouped-query attention: heads share keys and values
        groups = q.shape[-3] // k.shape[-3]
        k = k.repeat_interleave(groups, dim=-3)
        v = v.repeat_interleave(groups, dim=-3)
    factor = scale if scale is not None else 1.0 / math.sqrt(query.shape[-1])
    keep, additive = _attention_scores_mask(q.shape[-2], k.shape[-2], is_causal, attn_mask, q)
    if logsumexp.dim() == q.dim():
        # PyTorch's decomposition of the forward (which AOTAutograd applies) returns the
        # attention probabilities [..., L, S] where the kernel returns logsumexp [..., L].
        probs = logsumexp.to(torch.float32)
    else:
        scores = q @ k.transpose(-2, -1) * factor
        if additive is not None:
            scores = scores + additive
        probs = torch.exp(scores - logsumexp.to(torch.float32).unsqueeze(-1))
    if keep is not None:
        probs = torch.where(keep, probs, torch.zeros_like(probs))
    grad_v = probs.transpose(-2, -1) @ do
    grad_probs = do @ v.transpose(-2, -1)
    grad_scores = probs * (grad_probs - (do * o).sum(-1, keepdim=True))
    grad_q = grad_scores @ k * factor
    grad_k = grad_scores.transpose(-2, -1) @ q * factor
    if key.shape[-3] != query.shape[-3]:  # sum the shared heads' gradients
        groups = query.shape[-3] // key.shape[-3]
        shape = (*grad_k.shape[:-3], key.shape[-3], groups, *grad_k.shape[-2:])
        grad_k = grad_k.reshape(shape).sum(-3)
        grad_v = grad_v.reshape(shape).sum(-3)
    return grad_q.to(dtype), grad_k.to(key.dtype), grad_v.to(value.dtype)


def _attention_mask(
    mask: torch.Tensor | None, mask_type: int | None, batch: int, heads: int, length: int
) -> torch.Tensor | None:
    """The fused encoder layer's merged mask as an additive [B, H, L, L] float mask: True (or
    -inf) masks a key out. mask_type 0 is an [L, L] attention mask, 1 a [B, L] key padding
    mask, 2 an already merged [B, H, L, L] mask."""
    if mask is None:
        return None
    if mask.dtype == torch.bool:
        mask = torch.zeros(mask.shape).masked_fill(mask, float("-inf"))
    mask = mask.to(torch.float32)
    if mask_type == 1:
        mask = mask[:, None, None, :]
    return mask.expand(batch, heads, length, length) if mask.dim() <= 4 else mask


def transformer_encoder_layer_fwd(
    src: torch.Tensor,
    embed_dim: int,
    num_heads: int,
    qkv_weight: torch.Tensor,
    qkv_bias: torch.Tensor,
    proj_weight: torch.Tensor,
    proj_bias: torch.Tensor,
    use_gelu: bool,
    norm_first: bool,
    eps: float,
    norm_weight_1: torch.Tensor,
    norm_bias_1: torch.Tensor,
    norm_weight_2: torch.Tensor,
    norm_bias_2: torch.Tensor,
    ffn_weight_1: torch.Tensor,
    ffn_bias_1: torch.Tensor,
    ffn_weight_2: torch.Tensor,
    ffn_bias_2: torch.Tensor,
    mask: torch.Tensor | None = None,
    mask_type: int | None = None,
) -> torch.Tensor:
    """aten._transformer_encoder_layer_fwd, the fused CPU kernel of nn.TransformerEncoderLayer
    in inference (its "fast path"): self-attention and a ReLU/GELU feed-forward, each with a
    residual and a layer norm before (norm_first) or after, in the kernel's order."""
    batch, length, _ = src.shape
    head_dim = embed_dim // num_heads

    def norm(x, weight, bias):
        return torch.nn.functional.layer_norm(x, (embed_dim,), weight, bias, eps)

    def heads(x):
        return x.reshape(batch, length, num_heads, head_dim).transpose(1, 2)

    x = norm(src, norm_weight_1, norm_bias_1) if norm_first else src
    q, k, v = torch.nn.functional.linear(x, qkv_weight, qkv_bias).chunk(3, dim=-1)
    scores = heads(q) @ heads(k).transpose(-2, -1) / math.sqrt(head_dim)
    additive = _attention_mask(mask, mask_type, batch, num_heads, length)
    if additive is not None:
        scores = scores + additive.to(scores.dtype)
    attended = (torch.softmax(scores, dim=-1) @ heads(v)).transpose(1, 2)
    x = torch.nn.functional.linear(attended.reshape(batch, length, embed_dim), proj_weight, proj_bias)
    x = x + src
    if not norm_first:
        x = norm(x, norm_weight_1, norm_bias_1)
    residual = x
    if norm_first:
        x = norm(x, norm_weight_2, norm_bias_2)
    hidden = torch.nn.functional.linear(x, ffn_weight_1, ffn_bias_1)
    hidden = torch.nn.functional.gelu(hidden) if use_gelu else torch.relu(hidden)
    x = torch.nn.functional.linear(hidden, ffn_weight_2, ffn_bias_2) + residual
    return x if norm_first else norm(x, norm_weight_2, norm_bias_2)


def convert_element_type(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """prims.convert_element_type, which some of PyTorch's decompositions (renorm in bf16)
    emit: the same conversion as Tensor.to(dtype)."""
    return aten._to_copy.default(x, dtype=dtype)


def angle(x: torch.Tensor) -> torch.Tensor:
    """aten.angle of a real tensor, as eager's kernel: pi for x < 0, 0 otherwise, NaN stays
    NaN; integers give the default float dtype. A complex input keeps aten.angle, which the
    complex lowering rewrites to atan2(imag, real)."""
    if x.dtype.is_complex:
        return NotImplemented
    dtype = x.dtype if x.is_floating_point() else torch.get_default_dtype()
    result = torch.where(x < 0, math.pi, 0.0).to(dtype)
    return torch.where(torch.isnan(x), x, result) if x.is_floating_point() else result


def constant_pad_nd(x: torch.Tensor, pad: list[int], value: float = 0) -> torch.Tensor:
    """aten.constant_pad_nd with negative pads (the backward of a zero-padding pad, e.g. of
    torch.fft with n > size): the cropping as a slice, then the non-negative padding. Without
    negative pads the op stays (the importer lowers it)."""
    if all(p >= 0 for p in pad):
        return NotImplemented
    for i in range(len(pad) // 2):
        dim, low, high = x.dim() - 1 - i, pad[2 * i], pad[2 * i + 1]
        if low < 0 or high < 0:
            x = x[(slice(None),) * dim + (slice(max(-low, 0), x.shape[dim] - max(-high, 0)),)]
    return aten.constant_pad_nd(x, [max(p, 0) for p in pad], value)


def _std_and_mean(
    x: torch.Tensor, dim: Any, correction: float | None, keepdim: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """(std, mean) in fp32 (fp16, bf16) or x's type, as a * sqrt(sum(((x - mean) / a)^2) /
    (n - correction)) with a the largest |x - mean| of each reduced set, and the mean taken
    relative to each set's first element: where the variance or the sum overflows fp32
    (deviations above 1.8e19, sums above 3.4e38) the deviation and the mean still do not,
    as in eager's CPU kernel (Welford's algorithm in double)."""
    xf = x.to(torch.float32) if x.dtype in (torch.float16, torch.bfloat16) else x
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        dims = list(range(x.dim()))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
    n = math.prod(x.shape[d] for d in dims) if x.dim() else 1
    origin = xf
    for d in dims:
        origin = origin.narrow(d, 0, 1)
    mean = origin + (xf - origin).mean(dims, keepdim=True) if x.dim() else xf
    deviation = xf - mean
    scale = deviation.abs().amax(dims, keepdim=True) if x.dim() else deviation.abs()
    scale = torch.where(scale == 0, torch.ones_like(scale), scale)
    squares = ((deviation / scale) ** 2).sum(dims, keepdim=keepdim)
    if not keepdim and x.dim():
        scale, mean = scale.squeeze(dims), mean.squeeze(dims)
    divisor = max(n - (1.0 if correction is None else correction), 0.0)
    return scale * torch.sqrt(squares / divisor), mean


def std(x: torch.Tensor, dim: Any = None, *, correction: float | None = None,
        keepdim: bool = False) -> torch.Tensor:  # fmt: skip
    """aten.std.correction (see _std_and_mean)."""
    if not x.dtype.is_floating_point:
        return NotImplemented
    return _std_and_mean(x, dim, correction, keepdim)[0].to(x.dtype)


def std_mean(x: torch.Tensor, dim: Any = None, *, correction: float | None = None,
             keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """aten.std_mean.correction (see _std_and_mean)."""
    if not x.dtype.is_floating_point:
        return NotImplemented
    sd, mean = _std_and_mean(x, dim, correction, keepdim)
    return sd.to(x.dtype), mean.to(x.dtype)


def iota(length: int, *, start: int, step: int, dtype: torch.dtype, device: Any,
         requires_grad: bool) -> torch.Tensor:  # fmt: skip
    """prims.iota: start, start + step, ... (length of them), as aten.arange."""
    return torch.arange(start, start + length * step, step, dtype=dtype, device=device,
                        requires_grad=requires_grad)  # fmt: skip


def rrelu_with_noise_functional(
    x: torch.Tensor, noise: torch.Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
    training: bool = False, generator: Any = None,
) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """aten.rrelu_with_noise_functional -> (out, noise): negative x times a slope, the mean
    (lower + upper) / 2 in eval mode; in training a uniform draw in [lower, upper) per
    element (the slope, 1 for x >= 0, is the noise output). The draws are the simulator's,
    so training results match eager in distribution."""
    if generator is not None:
        return NotImplemented
    if not training:
        return torch.where(x >= 0, x, x * ((lower + upper) / 2)), noise.clone()
    slope = lower + (upper - lower) * torch.rand_like(x, dtype=torch.float32)
    slope = torch.where(x >= 0, torch.ones_like(slope), slope).to(x.dtype)
    return x * slope, slope.to(noise.dtype)


# K per fp32 matmul of int8 values: |partial sums| <= 1024 * 128 * 128 = 2^24, exact in fp32.
_INT_MM_CHUNK = 1024


def int_mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """aten._int_mm: int8 [m, k] @ int8 [k, n] -> int32, exactly: fp32 matmuls over chunks
    of k whose sums stay integers below 2^24, added in int32 (which wraps as eager's)."""
    if a.dtype != torch.int8 or b.dtype != torch.int8 or a.dim() != 2 or b.dim() != 2:
        return NotImplemented
    total = None
    for k0 in range(0, a.shape[1], _INT_MM_CHUNK):
        part = torch.mm(a[:, k0 : k0 + _INT_MM_CHUNK].to(torch.float32),
                        b[k0 : k0 + _INT_MM_CHUNK].to(torch.float32)).to(torch.int32)  # fmt: skip
        total = part if total is None else total + part
    if total is None:
        return torch.zeros(a.shape[0], b.shape[1], dtype=torch.int32, device=a.device)
    return total


def randint(low: int, high: int, size: Any, *, dtype: torch.dtype | None = torch.int64,
            layout: Any = None, device: Any = None, pin_memory: Any = None,
            generator: Any = None) -> torch.Tensor:  # fmt: skip
    """aten.randint.low: low + floor(u * (high - low)) for uniform fp32 u in [0, 1), below
    high (u * range may round up to range). Ranges above 2^24 values would not be uniform
    from 24-bit draws: not decomposed. The draws are the simulator's (eager's distribution)."""
    span = high - low
    if generator is not None or not 0 < span <= 2**24:
        return NotImplemented
    u = torch.rand(size, dtype=torch.float32, device=device)
    offset = torch.clamp(torch.floor(u * span), max=span - 1)
    return (offset + low).to(torch.int64 if dtype is None else dtype)


def randint_high(high: int, size: Any, **kwargs: Any) -> torch.Tensor:
    """aten.randint.default: randint.low from 0."""
    return randint(0, high, size, **kwargs)


NEURON_DECOMPOSITIONS = {
    torch.ops.prims.iota.default: iota,
    aten.rrelu_with_noise_functional.default: rrelu_with_noise_functional,
    aten._int_mm.default: int_mm,
    aten.randint.low: randint,
    aten.randint.default: randint_high,
    aten.std.correction: std,
    aten.std_mean.correction: std_mean,
    aten.constant_pad_nd.default: constant_pad_nd,
    torch.ops.prims.convert_element_type.default: convert_element_type,
    aten.angle.default: angle,
    aten._scaled_dot_product_flash_attention_for_cpu_backward.default: sdpa_flash_cpu_backward,
    aten._transformer_encoder_layer_fwd.default: transformer_encoder_layer_fwd,
    **GROUPED_MM_DECOMPOSITIONS,
    **SPECIAL_DECOMPOSITIONS,
    **LINALG_DECOMPOSITIONS,
    **DISTANCE_DECOMPOSITIONS,
    **FLOAT_BITS_DECOMPOSITIONS,
    **BESSEL_DECOMPOSITIONS,
    **ERROR_FUNCTION_DECOMPOSITIONS,
    **ORTHOGONAL_POLYNOMIAL_DECOMPOSITIONS,
    **ZETA_DECOMPOSITIONS,
    **INCOMPLETE_GAMMA_DECOMPOSITIONS,
    **HISTOGRAM_DECOMPOSITIONS,
    **NONZERO_STATIC_DECOMPOSITIONS,
    **SEGMENT_REDUCE_DECOMPOSITIONS,
    **GRID_SAMPLE_DECOMPOSITIONS,
}
