"""Causal flash-attention forward kernel, organized as NKI's flash_fwd.

Inputs per batch-head: q_t [d, S] and k_t [d, S] (head dim on the partitions: the Tensor
engine's layout for Q K^T), v [S, d]; output o [S, d] = softmax(Q K^T / sqrt(d), causal) V.

Q^T is scaled by -1/sqrt(d) as it is loaded (GpSimd), so the scores come out as
-scale * Q K^T and their row min is the exp's bias (-max) directly. For every block of 128
queries, the keys up to the diagonal are visited in units of up to `key_tile` keys (blocks
above the diagonal are skipped):
- the unit's scores stay in PSUM (a tile over several banks, one matmul of up to 512 keys
  per bank); the Vector engine reads them straight from there for the row min (the two
  halves in one instruction: their elementwise min, in bf16, which GpSimd reduces);
- the Scalar engine computes P = exp(-S - min) from PSUM, the row min as the per-partition
  bias tile of the activation;
- P is transposed on the Tensor engine into the PSUM banks its scores came from, copied to
  SBUF (by the Vector or the Scalar engine, whichever has less work), and P V accumulates
  in PSUM. V carries a column of ones, so the same matmuls also sum the rows of P (the
  softmax denominator), and the output is one division of the accumulator by that column;
- from a row's second unit on, the running max may grow: the accumulator is rescaled in
  PSUM by exp(old min - new min), once per unit;
- the diagonal block gets the causal mask added on the Tensor engine (its transpose,
  made once by affine_select on GpSimd, transposed into the scores' PSUM accumulation),
  so masked scores are the largest finite bf16 number and their exp is 0;
- the units run as a software pipeline of four stages (scores and min; exp; transposes
  and copies; P V): every engine's instruction stream interleaves four units, and the
  loads (128 positions of Q, K and V at a time) run two query blocks ahead.
"""

from __future__ import annotations

import math

import torch

from neuronsim import kernels
from neuronsim.kernels import isa as nisa
from neuronsim.kernels import language as nl

MASKED = float(torch.finfo(torch.bfloat16).max)  # 3.39e38: finite in bf16 and fp32


def _schedule(units) -> None:
    """Traces the units (generators, one yield between stages) as a software pipeline: a
    unit starts at every step, and in each step every running unit runs its next stage,
    the oldest first. So every engine's instruction stream interleaves the stages of
    several units (one's matmuls with another's max, exp, transposes, copies), and a
    stage's inputs were produced a step earlier."""
    units = iter(units)
    running = []
    while True:
        u = next(units, None)
        if u is not None:
            running.append(u)
        if not running:
            return
        running = [u for u in running if next(u, StopIteration) is not StopIteration]


def _load_rows(dst, src, parts: int = 4) -> None:
    """dst = src (HBM) in `parts` DMAs of consecutive partitions, which run on as many DMA
    queues at once (one queue moves 32 KiB in about 1.4 us)."""
    rows = dst.shape[0]
    step = -(-rows // parts)
    for p0 in range(0, rows, step):
        dst[p0:p0 + step, :] = nl.load(src[p0:p0 + step])


def _row_min(s, width: int):
    """The min of each row of the scores s [128, width] (PSUM) as a [128, 1] fp32 tile. The
    Vector engine reads the two halves in one instruction (their elementwise min, written in
    bf16), GpSimd reduces that (a bf16 reduce costs half). The min is only the softmax's
    shift: its bf16 rounding changes nothing but the scale of P and of its row sums, which
    cancels."""
    h = width // 2
    both = nisa.tensor_tensor(s[:, 0:h], s[:, h:width], op=nl.minimum, dtype=nl.bfloat16,
                              engine=nisa.engine.vector)
    return nisa.tensor_reduce(nl.minimum, both, axis=1, dtype=nl.float32,
                              engine=nisa.engine.gpsimd)


@kernels.jit
def flash_attention_kernel(q_t, k_t, v, key_tile: int = 1536):
    heads, d, seq = q_t.shape
    assert d <= 128 and seq % 128 == 0, "head dim <= 128, sequence a multiple of 128"
    assert key_tile % 128 == 0 and 128 <= key_tile <= 2048, "key_tile: 128 ... 2048 keys"
    scale = 1.0 / math.sqrt(d)
    blocks, dv = seq // 128, d + 1  # V blocks carry a column of ones: dv columns each
    o = nl.ndarray((heads, seq, d), dtype=v.dtype, buffer=nl.shared_hbm)
    gpsimd, scalar, vector = nisa.engine.gpsimd, nisa.engine.scalar, nisa.engine.vector
    i_p, i_f = nl.mgrid[0:128, 0:128]
    # The diagonal block's mask, transposed (key p is hidden from query f when p > f): its
    # transpose is added to the scores on the Tensor engine.
    mask_t = nisa.affine_select(i_f - i_p >= 0, nl.zeros((128, 128), dtype=v.dtype), MASKED,
                                engine=gpsimd)

    # Q^T (scaled), K^T and V with ones of each head, loaded 128 positions at a time: chunk
    # (h, b) a few query blocks before the first query block that needs it.
    heads_tiles = {}

    def load_chunk(h, b):
        if b == 0:
            heads_tiles[h] = (nl.ndarray((d, seq), dtype=q_t.dtype, buffer=nl.sbuf),
                              nl.ndarray((d, seq), dtype=k_t.dtype, buffer=nl.sbuf),
                              nl.ndarray((128, blocks * dv), dtype=v.dtype, buffer=nl.sbuf))
        q_all, k_all, v_all = heads_tiles[h]
        cols = slice(b * 128, (b + 1) * 128)
        # -scale * Q^T (GpSimd, as it arrives): the scores come out as -scale * Q K^T,
        # whose row min is the exp's bias -max directly
        q_raw = nl.ndarray((d, 128), dtype=q_t.dtype, buffer=nl.sbuf)
        _load_rows(q_raw, q_t[h, :, cols])
        q_all[:, cols] = nisa.tensor_scalar(q_raw, nl.multiply, -scale, engine=gpsimd)
        _load_rows(k_all[:, cols], k_t[h, :, cols])
        _load_rows(v_all[:, b * dv:b * dv + d], v[h, cols, :])
        v_all[:, b * dv + d:(b + 1) * dv] = 1.0

    chunks = iter([(h, b) for h in range(heads) for b in range(blocks)])
    loaded = []

    def prefetch(h, qi):
        """Loads every chunk up to two blocks after block qi of head h."""
        want = h * blocks + qi + 2
        while len(loaded) <= want:
            chunk = next(chunks, None)
            if chunk is None:
                return
            load_chunk(*chunk)
            loaded.append(chunk)

    # The kernel's estimate of the Vector and Scalar engines' work so far (ns, the cost
    # model's formulas): each P^T copy goes to the one that is less loaded.
    load = {vector: 0.0, scalar: 0.0}
    ghz = {vector: 0.96, scalar: 1.2}

    def charge(engine, columns):
        load[engine] += (max(columns, 64) + 60) / ghz[engine]
        return engine

    def lighter(columns):
        return charge(min(load, key=lambda e: load[e] + (columns + 60) / ghz[e]), columns)

    class Row:
        """The state of a block of 128 queries across its key tiles: the running -max and
        the accumulator [128, dv] in PSUM (P V and, in the last column, the row sums)."""

        def __init__(self):
            self.neg = None
            self.acc = None

    def unit(h, qi, k0, width, row):
        """Keys [k0, k0 + key_tile) (up to the diagonal) of queries [128 qi, 128 qi + 128)
        of head h: matmuls of up to 512 keys, one PSUM bank of scores each. Four stages, a
        step apart: scores and their max; exp; transposes and copies; P V."""
        prefetch(h, qi)
        q_all, k_all, v_all = heads_tiles[h]
        keys = (qi + 1) * 128
        first, last = k0 == 0, k0 + width == keys
        q = q_all[:, qi * 128:(qi + 1) * 128]
        # The scores in PSUM banks side by side, 512 keys (one matmul) per bank
        s = nl.ndarray((128, width), dtype=nl.float32, buffer=nl.psum)
        for c0 in range(0, width, 512):
            w = min(512, width - c0)
            s[:, c0:c0 + w] = nisa.nc_matmul(q, k_all[:, k0 + c0:k0 + c0 + w])
        if last:  # the diagonal block: add its mask
            s[:, width - 128:width] += nisa.nc_transpose(mask_t)
        neg = _row_min(s, width)  # -max of the scaled scores
        charge(vector, width // 2)
        neg_old = row.neg
        if not first:
            neg = nisa.tensor_tensor(neg, neg_old, op=nl.minimum, engine=gpsimd)
        row.neg = neg
        yield
        if not first:
            alpha = nisa.activation(op=nl.exp, data=neg_old, bias=neg, scale=-1.0)
            charge(scalar, 1)
        p = nl.ndarray((128, width), dtype=v.dtype, buffer=nl.sbuf)
        for c0 in range(0, width, 512):
            w = min(512, width - c0)
            p[:, c0:c0 + w] = nisa.activation(op=nl.exp, data=s[:, c0:c0 + w], bias=neg,
                                              scale=-1.0, dtype=v.dtype)
            charge(scalar, w)
        yield
        p_t = nl.ndarray((128, width), dtype=v.dtype, buffer=nl.sbuf)
        for c in range(0, width, 128):  # P^T into the banks of the scores
            s[:, c:c + 128] = nisa.nc_transpose(p[:, c:c + 128])
        for c0 in range(0, width, 256):  # copies of 256 columns: the P V matmuls start
            w = min(256, width - c0)  # after the first, not after all
            p_t[:, c0:c0 + w] = nisa.tensor_copy(s[:, c0:c0 + w], dtype=v.dtype,
                                                 engine=lighter(w))
        if first:
            row.acc = nl.ndarray((128, dv), dtype=nl.float32, buffer=nl.psum)
        elif lighter(dv) == vector:  # rescale the accumulator to the new max
            row.acc[...] = nisa.tensor_tensor(row.acc, alpha, op=nl.multiply, engine=vector)
        else:
            row.acc[...] = nisa.activation(op=nl.identity, data=row.acc, scale=alpha)
        yield
        for c in range(width // 128):
            kb = k0 // 128 + c
            row.acc += nisa.nc_matmul(p_t[:, c * 128:(c + 1) * 128],
                                      v_all[:, kb * dv:(kb + 1) * dv])
        if last:
            out = nisa.tensor_tensor(row.acc[:, 0:d], row.acc[:, d:dv], op=nl.divide,
                                     dtype=v.dtype, engine=charge(vector, d))
            for p0 in range(0, 128, 32):  # four transfers: the last one ends the kernel
                nl.store(o[h, qi * 128 + p0:qi * 128 + p0 + 32, :], value=out[p0:p0 + 32, :])

    def units():
        for h in range(heads):
            for qi in range(blocks):
                row = Row()
                keys = (qi + 1) * 128
                n = -(-keys // key_tile)  # units of equal widths (whole 128-key blocks)
                widths = [128 * (keys // 128 // n + (1 if i < keys // 128 % n else 0))
                          for i in range(n)]
                for i in range(n):
                    yield unit(h, qi, sum(widths[:i]), widths[i], row)

    _schedule(units())
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
