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


@kernels.jit
def flash_attention_kernel(q_t, k_t, v):
    heads, d, seq = q_t.shape
    assert d <= 128 and seq % 128 == 0, "head dim <= 128, sequence a multiple of 128"
    scale = 1.0 / math.sqrt(d)
    o = nl.ndarray((heads, seq, d), dtype=v.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:128]
    for h in range(heads):  # unrolled too: tiles of unrolled blocks are freed after use
        # K^T and V of the head stay in SBUF: [d, seq] and [128, (seq / 128) * d] (block b
        # of 128 keys in columns b * d ...)
        k_all = nl.load(k_t[h])
        v_all = nl.ndarray((128, (seq // 128) * d), dtype=v.dtype, buffer=nl.sbuf)
        for b in nl.affine_range(seq // 128):
            v_all[:, nl.ds(b * d, d)] = nl.load(v[h, nl.ds(b * 128, 128), :])
        for qi in range(seq // 128):  # unrolled: each query block sees its own key range
            q0 = qi * 128
            q_tile = nl.load(q_t[h, :, nl.ds(q0, 128)])
            m = nl.full((128, 1), -math.inf, dtype=nl.float32)
            l_sum = nl.zeros((128, 1), dtype=nl.float32)
            acc = nl.zeros((128, d), dtype=nl.float32)

            def block(kb, width, masked):
                """Keys [128 * kb, 128 * kb + width) (kb may be a loop expression)."""
                s = nisa.nc_matmul(q_tile, k_all[:, nl.ds(kb * 128, width)])  # PSUM
                if masked:  # key 128 kb + f is visible to query q0 + p when p >= f
                    s = nisa.affine_select(i_p - i_f >= 0, s, -math.inf)
                m_new = nl.maximum(m, nl.max(s, axis=1))
                p = nisa.activation(op=nl.exp, data=nl.subtract(s, m_new), scale=scale,
                                    dtype=v.dtype)
                alpha = nisa.activation(op=nl.exp, data=nl.subtract(m, m_new), scale=scale)
                l_sum[...] = nl.add(nl.multiply(l_sum, alpha), nl.sum(p, axis=1,
                                                                      dtype=nl.float32))
                m[...] = m_new
                pv = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.psum)
                for c in range(width // 128):
                    p_t = nisa.nc_transpose(p[:, c * 128:(c + 1) * 128])
                    p_t = nisa.activation(op=nl.identity, data=p_t, dtype=v.dtype)
                    pv += nisa.nc_matmul(p_t, v_all[:, nl.ds((kb + c) * d, d)])
                acc[...] = nl.add(nl.multiply(acc, alpha), pv)

            wide = q0 // 512
            for j in nl.sequential_range(wide):
                block(j * 4, 512, False)
            for c in range((q0 - wide * 512) // 128):
                block(wide * 4 + c, 128, False)
            block(qi, 128, True)
            out = nl.multiply(acc, nl.reciprocal(l_sum), dtype=v.dtype)
            nl.store(o[h, nl.ds(q0, 128), :], value=out)
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
