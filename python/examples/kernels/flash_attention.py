"""Causal flash-attention forward kernel, organized as NKI's flash_fwd (its code is in
neuronsim/kernels/attention.py, the built-in attention kernel; here it takes Q and K
transposed, as NKI's flash_fwd does).

Inputs per batch-head: q_t [d, S] and k_t [d, S] (head dim on the partitions: the Tensor
engine's layout for Q K^T), v [S, d]; output o [S, d] = softmax(Q K^T / sqrt(d), causal) V.

Q^T is used as loaded: the softmax scale is applied by the exp. For every block of 128
queries, the keys up to the diagonal are visited in units of up to `key_tile` keys (blocks
above the diagonal are skipped):
- the unit's scores S stay in PSUM (a tile over several banks, one matmul of up to 512 keys
  per bank); the Vector engine reads them straight from there for the row max (the two
  halves in one instruction: their elementwise max, in bf16, which GpSimd reduces);
- the Scalar engine computes P = exp(scale * S - scale * m) from PSUM (m the row max),
  -scale * m as the per-partition bias tile of the activation;
- P is transposed on the Tensor engine into the PSUM banks its scores came from, copied to
  SBUF 256 columns at a time (by the Vector or the Scalar engine, whichever has less work:
  the P V matmuls start after the first copy), and P V accumulates
  in PSUM. V carries a column of ones, so the same matmuls also sum the rows of P (the
  softmax denominator), and the output is one division of the accumulator by that column;
- from a row's second unit on, the running max may grow: the accumulator is rescaled in
  PSUM by exp(scale * (old max - new max)), once per unit, before the copies of P^T;
- the diagonal block gets the causal mask added on the Tensor engine (its transpose,
  made once by affine_select on GpSimd, transposed into the scores' PSUM accumulation),
  so masked scores are the lowest finite number of the dtype and their exp is 0;
- the units run as a software pipeline of four stages (scores and max; exp; transposes
  and copies; P V): every engine's instruction stream interleaves four units; PSUM is
  allocated once (three score tiles used in turn, the accumulators of two rows), and the
  loads (128 positions of Q, K and V at a time, split over DMA queues) run two query
  blocks ahead.
"""

from __future__ import annotations

import torch

from neuronsim import kernels
from neuronsim.kernels.attention import attention


@kernels.jit
def flash_attention_kernel(q_t, k_t, v, key_tile: int = 1024):
    # The kernel's code is the package's built-in attention kernel (also what
    # torch.compile(backend="neuron") runs for scaled_dot_product_attention), given the
    # transposed layout of Q and K: neuronsim/kernels/attention.py.
    return attention(q_t, k_t, v, transposed=True, causal=True, key_tile=key_tile)


_flash_attention_op = kernels.torch_op("neuronsim_examples::flash_attention",
                                       flash_attention_kernel)


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal attention of q, k, v [..., S, d] through the kernel (a PyTorch op)."""
    lead, (seq, d) = q.shape[:-2], q.shape[-2:]
    qt = q.reshape(-1, seq, d).transpose(1, 2).contiguous()
    kt = k.reshape(-1, seq, d).transpose(1, 2).contiguous()
    out = _flash_attention_op(qt, kt, v.reshape(-1, seq, d).contiguous())
    return out.reshape(*lead, seq, d)


def causal_flops(heads: int, seq: int, d: int) -> float:
    """FLOPs of the causal half of Q K^T and P V (the kernel also computes the masked half
    of the diagonal blocks, which is not counted)."""
    return 2 * 2 * heads * d * seq * seq / 2


if __name__ == "__main__":
    import neuronsim

    q, k, v = (torch.randn(2, 512, 64) for _ in range(3))
    y = flash_attention(q, k, v)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    print("max error vs eager:", (y - ref).abs().max().item())
    neuronsim.report()
