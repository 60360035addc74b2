"""The attention backward as a tile kernel (FlashAttention-2's backward): the gradients of
softmax(scale * Q K^T [+ causal mask]) V with respect to Q, K and V, from Q, K, V, the
forward's output O and log-sum-exp L (attention(..., lse=True)) and the output gradient dO.
The S x S probabilities are recomputed block by block on chip and never reach HBM; it is the
backward of the neuronsim::attention op (neuronsim/attention.py).

Per query head, keys are visited in units of up to 512 (one PSUM bank of fp32 scores) and,
for each unit, every block i of 128 queries that sees one of its keys (with a causal mask,
the blocks from the unit's first key on, narrowed to the keys up to the diagonal):
- S = Q_i K^T and dP = dO_i V^T on the Tensor engine (Q_i^T, dO_i^T, K^T and V^T, head
  dim on the partitions, are transposed once per head when loaded), the diagonal block's
  causal mask added as in the forward;
- P = exp(scale * S - L_i) on the Scalar engine (straight from PSUM), dP - D_i there too
  (D_i = rowsum(dO_i * O_i), computed once per block), both in the inputs' dtype, and
  dS = P * (dP - D_i) on the Vector engine (in bf16 at its fast rate);
- dV += P^T dO_i and dK += dS^T Q_i accumulate in PSUM over the query blocks (P and dS, queries
  on the partitions, are the stationary operands as they are); dS is transposed on the
  Tensor engine (128 x 128 blocks), copied to SBUF, and dQ_i += dS K accumulates into an fp32
  SBUF tile of the head's dQ;
- the steps (all units and query blocks of a head) run as a software pipeline of four
  stages (matmuls of S and dP; P and dS; dV, dK and the transposes of dS; dQ), so that each
  engine interleaves four steps.
The scale is applied to dQ and dK when they are stored. The query heads of a key/value head
(grouped-query attention) add their dK and dV in fp32 SBUF tiles.
"""

from __future__ import annotations

import itertools

import torch

from . import isa as nisa
from . import language as nl
from .attention import _load_rows, _schedule
from .tracer import error


def sbuf_bytes(seq: int, d: int) -> int:
    """SBUF bytes per partition that the kernel keeps for one query head and its key/value
    head (callers keep it within the SBUF): Q, dO, K rows and their transposes, D and L, and
    the fp32 accumulators of dQ, dK and dV."""
    blocks = seq // 128
    return blocks * (3 * d * 2 + 4 * 128 * 2 + 3 * d * 4 + 8)


def attention_backward(q, k, v, o, lse, do, *, causal: bool, scale: float):
    """dq, dk, dv (HBM, in v's dtype) for q, o, do [heads, seq, d], k, v [kv_heads, seq, d],
    lse float32 [heads, 128, seq / 128] (attention's layout: query b * 128 + p at [h, p, b]);
    scale > 0."""
    heads, seq, d = q.shape
    kv_heads = k.shape[0]
    if (tuple(k.shape) != (kv_heads, seq, d) or tuple(v.shape) != (kv_heads, seq, d)
            or heads % kv_heads or tuple(o.shape) != (heads, seq, d)
            or tuple(do.shape) != (heads, seq, d)
            or tuple(lse.shape) != (heads, 128, seq // 128)):
        raise error(f"attention_backward of q {list(q.shape)}, k {list(k.shape)}, v "
                    f"{list(v.shape)}, o {list(o.shape)}, lse {list(lse.shape)}, do "
                    f"{list(do.shape)}: shapes do not match")
    if d > 128 or seq % 128 or not scale > 0:
        raise error(f"attention_backward takes head dim <= 128, a sequence of a multiple of "
                    f"128 and a positive scale, got d = {d}, seq = {seq}, scale = {scale}")
    group, blocks, dt = heads // kv_heads, seq // 128, v.dtype
    gpsimd, scalar, vector = nisa.engine.gpsimd, nisa.engine.scalar, nisa.engine.vector
    dq = nl.ndarray((heads, seq, d), dtype=dt, buffer=nl.shared_hbm)
    dk = nl.ndarray((kv_heads, seq, d), dtype=dt, buffer=nl.shared_hbm)
    dv = nl.ndarray((kv_heads, seq, d), dtype=dt, buffer=nl.shared_hbm)
    mask_t = None
    if causal:  # the forward's transposed diagonal mask (key p hidden from query f if p > f)
        i_p, i_f = nl.mgrid[0:128, 0:128]
        mask_t = nisa.affine_select(i_f - i_p >= 0, nl.zeros((128, 128), dtype=dt),
                                    -float(torch.finfo(dt).max), engine=gpsimd)

    # PSUM (8 banks): S and dP two each (the pipeline's first two stages), dS^T, the dQ
    # block, the dV and dK accumulators of a unit of keys.
    s_ring = [nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum) for _ in range(2)]
    dp_ring = [nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum) for _ in range(2)]
    ds_t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    dq_ps = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.psum)
    dv_ps = nl.ndarray((128, 4 * d), dtype=nl.float32, buffer=nl.psum)
    dk_ps = nl.ndarray((128, 4 * d), dtype=nl.float32, buffer=nl.psum)
    step_count = itertools.count()
    # PSUM slots of the transposes made while loading (between the heads' pipelines, when
    # the banks of dS^T and dP are free), used in turn so that several are in flight; their
    # copies alternate between the Scalar and the Vector engine.
    slots = [bank[0:d, j * 128:(j + 1) * 128] for bank in (ds_t, *dp_ring) for j in range(4)]
    transpose_count = itertools.count()

    def transpose_into(dst, rows):
        """dst [d, 128] (SBUF) = rows^T, rows [128, d] in SBUF."""
        n = next(transpose_count)
        t = slots[n % len(slots)]
        t[...] = nisa.nc_transpose(rows)
        dst[...] = nisa.tensor_copy(t, dtype=dt, engine=(scalar, vector)[n % 2])

    def load_kv(kvh):
        k_rows = nl.ndarray((128, blocks * d), dtype=dt, buffer=nl.sbuf)
        k_t = nl.ndarray((d, seq), dtype=dt, buffer=nl.sbuf)
        v_t = nl.ndarray((d, seq), dtype=dt, buffer=nl.sbuf)
        for b in range(blocks):
            rows = slice(b * 128, (b + 1) * 128)
            _load_rows(k_rows[:, b * d:(b + 1) * d], k[kvh, rows, :])
            v_rows = nl.ndarray((128, d), dtype=dt, buffer=nl.sbuf)
            _load_rows(v_rows, v[kvh, rows, :])
            transpose_into(k_t[:, rows], k_rows[:, b * d:(b + 1) * d])
            transpose_into(v_t[:, rows], v_rows)
        return k_rows, k_t, v_t

    def load_head(h):
        """Q and dO rows and transposed, -L and -D of query head h, and its fp32 dQ
        accumulator."""
        q_rows = nl.ndarray((128, blocks * d), dtype=dt, buffer=nl.sbuf)
        do_rows = nl.ndarray((128, blocks * d), dtype=dt, buffer=nl.sbuf)
        q_t = nl.ndarray((d, seq), dtype=dt, buffer=nl.sbuf)
        do_t = nl.ndarray((d, seq), dtype=dt, buffer=nl.sbuf)
        neg_l = nl.ndarray((128, blocks), dtype=nl.float32, buffer=nl.sbuf)
        neg_d = nl.ndarray((128, blocks), dtype=nl.float32, buffer=nl.sbuf)
        neg_l[...] = nisa.tensor_scalar(nl.load(lse[h]), nl.multiply, -1.0, engine=gpsimd)
        for b in range(blocks):
            rows, cols = slice(b * 128, (b + 1) * 128), slice(b * d, (b + 1) * d)
            _load_rows(q_rows[:, cols], q[h, rows, :])
            _load_rows(do_rows[:, cols], do[h, rows, :])
            o_rows = nl.ndarray((128, d), dtype=dt, buffer=nl.sbuf)
            _load_rows(o_rows, o[h, rows, :])
            transpose_into(q_t[:, rows], q_rows[:, cols])
            transpose_into(do_t[:, rows], do_rows[:, cols])
            prod = nisa.tensor_tensor(do_rows[:, cols], o_rows, op=nl.multiply,
                                      dtype=nl.float32, engine=gpsimd)
            neg_d[:, b:b + 1] = nisa.tensor_reduce(nl.add, prod, axis=1, dtype=nl.float32,
                                                   negate=True, engine=gpsimd)
        dq_acc = nl.ndarray((128, blocks * d), dtype=nl.float32, buffer=nl.sbuf)
        return q_rows, do_rows, q_t, do_t, neg_l, neg_d, dq_acc

    def step(state, kv, k0, width, i, finish):
        """Query block i against keys [k0, k0 + width) of a head: four stages; `finish`
        (the unit's last block) is called at the end."""
        q_rows, do_rows, q_t, do_t, neg_l, neg_d, dq_acc = state
        k_rows, k_t, v_t = kv
        w = min(width, (i + 1) * 128 - k0) if causal else width
        qcols = slice(i * 128, (i + 1) * 128)
        n = next(step_count)
        s = s_ring[n % 2][:, 0:w]
        dp = dp_ring[n % 2][:, 0:w]
        s[...] = nisa.nc_matmul(q_t[:, qcols], k_t[:, k0:k0 + w])
        if causal and k0 + w == (i + 1) * 128:
            s[:, w - 128:w] += nisa.nc_transpose(mask_t)
        dp[...] = nisa.nc_matmul(do_t[:, qcols], v_t[:, k0:k0 + w])
        yield
        p = nisa.activation(op=nl.exp, data=s, bias=neg_l[:, i:i + 1], scale=scale, dtype=dt)
        t = nisa.activation(op=nl.identity, data=dp, bias=neg_d[:, i:i + 1], dtype=dt)
        ds = nisa.tensor_tensor(t, p, op=nl.multiply, dtype=dt, engine=vector)
        yield
        dcols = slice(i * d, (i + 1) * d)
        for c in range(w // 128):
            # the first query block that sees key block c of the unit starts its sums
            first = i == (k0 // 128 + c if causal else 0)
            kc = slice(c * 128, (c + 1) * 128)
            dv_c, dk_c = dv_ps[:, c * d:(c + 1) * d], dk_ps[:, c * d:(c + 1) * d]
            if first:
                dv_c[...] = nisa.nc_matmul(p[:, kc], do_rows[:, dcols])
                dk_c[...] = nisa.nc_matmul(ds[:, kc], q_rows[:, dcols])
            else:
                dv_c[...] += nisa.nc_matmul(p[:, kc], do_rows[:, dcols])
                dk_c[...] += nisa.nc_matmul(ds[:, kc], q_rows[:, dcols])
            ds_t[:, kc] = nisa.nc_transpose(ds[:, kc])
        ds_sb = nisa.tensor_copy(ds_t[:, 0:w], dtype=dt, engine=vector)
        yield
        for c in range(w // 128):
            kb = k0 // 128 + c
            if c == 0:
                dq_ps[...] = nisa.nc_matmul(ds_sb[:, c * 128:(c + 1) * 128],
                                            k_rows[:, kb * d:(kb + 1) * d])
            else:
                dq_ps[...] += nisa.nc_matmul(ds_sb[:, c * 128:(c + 1) * 128],
                                             k_rows[:, kb * d:(kb + 1) * d])
        if k0 == 0:
            dq_acc[:, dcols] = nisa.tensor_copy(dq_ps, dtype=nl.float32, engine=vector)
        else:
            dq_acc[:, dcols] = nisa.tensor_tensor(dq_acc[:, dcols], dq_ps, op=nl.add,
                                                  engine=vector)
        if finish is not None:
            finish()

    def finish_unit(h, k0, width, dk_acc, dv_acc):
        """Adds the unit's dK, dV (PSUM) into the kv head's fp32 accumulators."""
        cols = slice(k0 // 128 * d, (k0 + width) // 128 * d)
        n = width // 128 * d
        if h % group == 0:
            dk_acc[:, cols] = nisa.tensor_copy(dk_ps[:, 0:n], dtype=nl.float32, engine=vector)
            dv_acc[:, cols] = nisa.tensor_copy(dv_ps[:, 0:n], dtype=nl.float32, engine=scalar)
        else:
            dk_acc[:, cols] = nisa.tensor_tensor(dk_acc[:, cols], dk_ps[:, 0:n], op=nl.add,
                                                 engine=vector)
            dv_acc[:, cols] = nisa.tensor_tensor(dv_acc[:, cols], dv_ps[:, 0:n], op=nl.add,
                                                 engine=vector)

    def store_rows(dst, acc, factor):
        """dst [seq, d] (HBM) = factor * acc (fp32 [128, blocks * d]) in dt."""
        for b in range(blocks):
            out = nisa.tensor_scalar(acc[:, b * d:(b + 1) * d], nl.multiply, factor, dtype=dt,
                                     engine=gpsimd)
            nl.store(dst[b * 128:(b + 1) * 128, :], value=out)

    for kvh in range(kv_heads):
        kv = load_kv(kvh)
        dk_acc = nl.ndarray((128, blocks * d), dtype=nl.float32, buffer=nl.sbuf)
        dv_acc = nl.ndarray((128, blocks * d), dtype=nl.float32, buffer=nl.sbuf)
        for h in range(kvh * group, (kvh + 1) * group):
            state = load_head(h)

            def steps_of_head():
                """Every (unit of keys, query block) step of head h, in one pipeline."""
                for k0 in range(0, seq, 512):
                    width = min(512, seq - k0)
                    finish = (lambda k0=k0, width=width:
                              finish_unit(h, k0, width, dk_acc, dv_acc))
                    first_block = k0 // 128 if causal else 0
                    for i in range(first_block, blocks):
                        yield step(state, kv, k0, width, i,
                                   finish if i == blocks - 1 else None)

            _schedule(steps_of_head())
            store_rows(dq[h], state[-1], scale)
        store_rows(dk[kvh], dk_acc, scale)
        store_rows(dv[kvh], dv_acc, 1.0)
    return dq, dk, dv
