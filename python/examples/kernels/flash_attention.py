"""Causal flash-attention forward kernel (one pass over the keys with a running max and sum).

Inputs per batch-head: q_t [d, S] and k_t [d, S] (head dim on the partitions: the Tensor
engine's layout for Q K^T), v [S, d]; output o [S, d] = softmax(Q K^T / sqrt(d), causal) V.
For every block of 128 queries (unrolled while tracing), the keys before it are visited in
blocks of 512 (a sequential loop) and 128, and the diagonal block is masked with
nisa.affine_select: only the causal half of Q K^T is computed. P is transposed on the
Tensor engine (nc_transpose) for the P V matmul, which accumulates in PSUM.
"""

from __future__ import annotations

import math

import torch

from neuronsim import kernels
from neuronsim.kernels import isa as nisa
from neuronsim.kernels import language as nl


def _run_interleaved(steps) -> None:
    """Traces several generators round-robin, one stage of each in turn: independent query
    blocks alternate in every engine's instruction stream, so that one block's dependent
    chain (matmul, max, exp, transpose, matmul) overlaps another's."""
    steps = list(steps)
    while steps:
        steps = [g for g in steps if next(g, StopIteration) is not StopIteration]


@kernels.jit
def flash_attention_kernel(q_t, k_t, v, group: int = 4):
    heads, d, seq = q_t.shape
    assert d <= 128 and seq % 128 == 0, "head dim <= 128, sequence a multiple of 128"
    scale = 1.0 / math.sqrt(d)
    o = nl.ndarray((heads, seq, d), dtype=v.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:128]
    gpsimd, scalar = nisa.engine.gpsimd, nisa.engine.scalar
    for h in range(heads):  # unrolled too: tiles of unrolled blocks are freed after use
        # K^T and V of the head stay in SBUF: [d, seq] and [128, (seq / 128) * d] (block b
        # of 128 keys in columns b * d ...)
        k_all = nl.load(k_t[h])
        v_all = nl.ndarray((128, (seq // 128) * d), dtype=v.dtype, buffer=nl.sbuf)
        for b in nl.affine_range(seq // 128):
            v_all[:, nl.ds(b * d, d)] = nl.load(v[h, nl.ds(b * 128, 128), :])

        class QueryBlock:
            """Queries [q0, q0 + 128): their running max, sum and output."""

            def __init__(self, qi):
                self.qi, self.q0 = qi, qi * 128
                self.q = nl.load(q_t[h, :, nl.ds(self.q0, 128)])
                self.m = nl.full((128, 1), -math.inf, dtype=nl.float32)
                self.l_sum = nl.zeros((128, 1), dtype=nl.float32)
                self.acc = nl.zeros((128, d), dtype=nl.float32)

            def block(self, kb, width, masked):
                """Keys [128 kb, 128 kb + width) (kb may be a loop expression); yields
                between stages. The work is spread over the Vector, GpSimd and Scalar
                engines."""
                s = nisa.nc_matmul(self.q, k_all[:, nl.ds(kb * 128, width)])  # PSUM
                s_psum = s
                yield
                if masked:  # key 128 kb + f is visible to query q0 + p when it is <= q0 + p
                    s = nisa.affine_select(i_p - i_f + (self.q0 - kb * 128) >= 0, s,
                                           -math.inf)
                m_new = nl.maximum(self.m, nl.max(s, axis=1))
                yield
                # (on the Vector engine: the scores may still be in PSUM, which GpSimd
                # cannot access)
                shifted = nisa.tensor_tensor(s, m_new, op=nl.subtract)
                yield
                p = nisa.activation(op=nl.exp, data=shifted, scale=scale, dtype=v.dtype)
                alpha = nisa.activation(op=nl.exp, data=nl.subtract(self.m, m_new),
                                        scale=scale)
                yield
                pv = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.psum)
                # P^T in 128 x 128 blocks, side by side in the PSUM bank of the scores
                # (read for the last time by the subtract above), copied to SBUF at once
                p_ts = s_psum[:, 0:width]
                for c in range(width // 128):
                    p_ts[:, c * 128:(c + 1) * 128] = nisa.nc_transpose(
                        p[:, c * 128:(c + 1) * 128])
                yield
                p_t = nisa.tensor_copy(p_ts, dtype=v.dtype, engine=scalar)
                yield
                for c in range(width // 128):
                    pv += nisa.nc_matmul(p_t[:, c * 128:(c + 1) * 128],
                                         v_all[:, nl.ds((kb + c) * d, d)])
                row_sum = nisa.tensor_reduce(nl.add, p, axis=1, dtype=nl.float32,
                                             engine=gpsimd)
                self.l_sum[...] = nl.add(nl.multiply(self.l_sum, alpha), row_sum)
                self.m[...] = nisa.tensor_copy(m_new, engine=gpsimd)
                yield
                self.acc[...] = nisa.tensor_tensor(  # reads PSUM: on the Vector engine
                    nisa.tensor_tensor(self.acc, alpha, op=nl.multiply, engine=gpsimd), pv,
                    op=nl.add)

            def tail(self, wide):
                """The key blocks after the first `wide` blocks of 512: 128 at a time up to
                the diagonal, then the masked diagonal block; then the output."""
                for c in range((self.q0 - wide * 512) // 128):
                    yield from self.block(wide * 4 + c, 128, False)
                yield from self.block(self.qi, 128, True)
                out = nl.multiply(self.acc, nl.reciprocal(self.l_sum), dtype=v.dtype)
                nl.store(o[h, nl.ds(self.q0, 128), :], value=out)

        # Query blocks in groups that see the same number of 512-key blocks, interleaved.
        for first in range(0, seq // 128, group):
            blocks = [QueryBlock(qi) for qi in range(first, min(first + group, seq // 128))]
            wides = {qb.q0 // 512 for qb in blocks}
            wide = min(wides)
            for j in nl.sequential_range(wide):
                _run_interleaved(qb.block(j * 4, 512, False) for qb in blocks)
            _run_interleaved(qb.tail(wide) for qb in blocks)
    return o


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
