"""F.linear_cross_entropy's chunked custom ops (torch_nn::_linear_cross_entropy_batch_chunked
and ..._no_reduction) as one linear and one cross entropy over the whole batch.

The chunks only bound eager's peak memory: every row's loss and gradient is computed from that
row alone, so the unchunked computation is the same math. The ops' contract, from PyTorch's
accumulator (torch/nn/modules/linear_cross_entropy.py):
- logits = input @ linear_weight^T (+ linear_bias), shifted by their row maximum, in acc_dtype
  when the inputs are fp16/bf16 (acc_dtype fp32), otherwise in the input dtype;
- w_n = weight[target_n] (1 without a class weight), 0 where target_n == ignore_index;
- reduction 'mean': loss = sum_n w_n (logsumexp_n - logit[n, target_n]) / sum_n w_n (NaN when
  that sum is 0 or the batch is empty); 'sum': without the division; 'none' (the second op):
  the per-row terms;
- the scalar op also returns the gradients its flags ask for (empty tensors otherwise):
  with g = (one_hot(target) - softmax) * (-w / d) (d the 'mean' divisor, 1 for 'sum'),
  grad_input = g @ linear_weight, grad_linear_weight = g^T @ input, grad_linear_bias = sum_n g.
"""

from __future__ import annotations

from typing import Any, Callable

import torch


def _validate(
    target: torch.Tensor,
    linear_weight: torch.Tensor,
    linear_bias: torch.Tensor | None,
    reduction: str,
    label_smoothing: float,
    dtype: torch.dtype,
    acc_dtype: torch.dtype,
) -> None:
    """The accumulator's own checks, with its messages."""
    if target.dtype != torch.int64:
        raise TypeError(
            f"linear_cross_entropy: target dtype must be torch.int64, got {target.dtype}."
        )
    if label_smoothing > 0.0:
        raise NotImplementedError("linear_cross_entropy does not support label smoothing")
    if reduction not in {"mean", "sum", "none"}:
        raise NotImplementedError(f"linear_cross_entropy does not support {reduction=}")
    if linear_bias is not None and linear_bias.shape != linear_weight.shape[:-1]:
        raise RuntimeError(
            "linear_cross_entropy: expected linear_bias shape "
            f"{tuple(linear_weight.shape[:-1])}, got {tuple(linear_bias.shape)}."
        )
    if dtype != acc_dtype and not (
        dtype in {torch.float16, torch.bfloat16} and acc_dtype == torch.float32
    ):
        raise RuntimeError(
            "linear_cross_entropy supports float32 acc_dtype with"
            f" float16/bfloat16 inputs, but got {acc_dtype} acc_dtype and {dtype} inputs."
        )


def _rows(
    input: torch.Tensor,
    linear_weight: torch.Tensor,
    target: torch.Tensor,
    linear_bias: torch.Tensor | None,
    weight: torch.Tensor | None,
    ignore_index: int,
    acc_dtype: torch.dtype,
) -> tuple[torch.Tensor, ...]:
    """(x, W, target with ignored rows at class 0, row weights w, shifted logits, log of the
    softmax denominators), all floats in the computation dtype."""
    compute = acc_dtype if input.dtype != acc_dtype else input.dtype
    x, lw = input.to(compute), linear_weight.to(compute)
    logits = x @ lw.T
    if linear_bias is not None:
        logits = logits + linear_bias.to(compute)
    ignored = target == ignore_index
    corrected = torch.where(ignored, 0, target)
    if weight is None:
        row_weight = (~ignored).to(compute)
    else:
        row_weight = torch.where(ignored, 0.0, weight.to(compute)[corrected])
    shifted = logits - logits.amax(1, keepdim=True)
    log_denominator = torch.log(torch.exp(shifted).sum(1))
    return x, lw, corrected, row_weight, shifted, log_denominator


def _empty(shape: tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
    return torch.zeros(shape, dtype=like.dtype, device=like.device)


def linear_cross_entropy_chunked(
    input: torch.Tensor,
    linear_weight: torch.Tensor,
    target: torch.Tensor,
    linear_bias: torch.Tensor | None,
    weight: torch.Tensor | None,
    reduction: str,
    ignore_index: int,
    label_smoothing: float,
    batch_chunk_size: int,  # noqa: ARG001  (memory only)
    acc_policy: str,  # noqa: ARG001  (the acc_dtype it resolved to is what counts)
    acc_dtype: torch.dtype,
    allow_retain_graph: bool,  # noqa: ARG001  (the backward's concern)
    compute_input_grad: bool,
    compute_linear_weight_grad: bool,
    compute_linear_bias_grad: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """torch_nn::_linear_cross_entropy_batch_chunked: (loss, grad_input, grad_linear_weight,
    grad_linear_bias) for reduction 'mean' or 'sum'."""
    dtype = input.dtype
    _validate(target, linear_weight, linear_bias, reduction, label_smoothing, dtype, acc_dtype)
    if reduction == "none":
        raise NotImplementedError(f"linear_cross_entropy does not support {reduction=}")
    x, lw, corrected, row_weight, shifted, log_denominator = _rows(
        input, linear_weight, target, linear_bias, weight, ignore_index, acc_dtype
    )
    if reduction == "mean":
        total = row_weight.sum()
        scale = row_weight / torch.where(total == 0, torch.nan, total)
    else:
        scale = row_weight
    target_logit = shifted.gather(1, corrected.unsqueeze(1)).squeeze(1)
    loss = (scale * (log_denominator - target_logit)).sum()
    if reduction == "mean" and input.shape[0] == 0:
        loss = torch.full_like(loss, torch.nan)
    classes = torch.arange(linear_weight.shape[0], device=input.device)
    one_hot = (corrected.unsqueeze(1) == classes).to(shifted.dtype)
    softmax = torch.exp(shifted - log_denominator.unsqueeze(1))
    grad_logits = (softmax - one_hot) * scale.unsqueeze(1)
    grad_input = (grad_logits @ lw).to(dtype) if compute_input_grad else _empty((0, 0), input)
    grad_weight = (
        (grad_logits.T @ x).to(dtype) if compute_linear_weight_grad else _empty((0, 0), input)
    )
    grad_bias = grad_logits.sum(0).to(dtype) if compute_linear_bias_grad else _empty((0,), input)
    return loss.to(dtype), grad_input, grad_weight, grad_bias


def linear_cross_entropy_chunked_no_reduction(
    input: torch.Tensor,
    linear_weight: torch.Tensor,
    target: torch.Tensor,
    linear_bias: torch.Tensor | None,
    weight: torch.Tensor | None,
    ignore_index: int,
    batch_chunk_size: int,  # noqa: ARG001  (memory only)
    acc_policy: str,  # noqa: ARG001
    acc_dtype: torch.dtype,
) -> torch.Tensor:
    """torch_nn::_linear_cross_entropy_batch_chunked_no_reduction: the per-row losses."""
    _validate(target, linear_weight, linear_bias, "none", 0.0, input.dtype, acc_dtype)
    _, _, corrected, row_weight, shifted, log_denominator = _rows(
        input, linear_weight, target, linear_bias, weight, ignore_index, acc_dtype
    )
    target_logit = shifted.gather(1, corrected.unsqueeze(1)).squeeze(1)
    return ((log_denominator - target_logit) * row_weight).to(input.dtype)


LINEAR_CROSS_ENTROPY_LIBRARY_OPS: dict[str, Callable[..., Any]] = {
    "torch_nn::_linear_cross_entropy_batch_chunked": linear_cross_entropy_chunked,
    "torch_nn::_linear_cross_entropy_batch_chunked_no_reduction": (
        linear_cross_entropy_chunked_no_reduction
    ),
}
