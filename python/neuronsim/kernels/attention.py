"""Causal (or full) attention as a tile kernel, organized as NKI's flash_fwd: the kernel of
python/examples/kernels/flash_attention.py (which documents the algorithm and its cost) and
of the neuronsim::attention op, which torch.compile(backend="neuron") puts in place of
scaled_dot_product_attention (see neuronsim/attention.py). Written in the kernel language
(neuronsim.kernels.language / isa)."""

from __future__ import annotations

import math

import torch

from . import isa as nisa
from . import language as nl
from .tracer import error, tracer
from .values import TileView



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


def _row_max(s, width: int, exact: bool):
    """The max of each row of the scores s [128, width] (PSUM) as a [128, 1] fp32 tile. The
    Vector engine reads the two halves in one instruction (their elementwise max), GpSimd
    reduces that. The max is only the softmax's shift: written in bf16 (a bf16 max reduce
    costs half) its rounding changes nothing but the scale of P and of its row sums, which
    cancels, as long as exp(scores - max) stays in range: `exact` keeps it in fp32 where
    scores may be far from 0 (masks: a row of masked keys has max about the dtype's lowest;
    fp16: P overflows at 65504)."""
    h = width // 2
    dtype = nl.float32 if exact else nl.bfloat16
    both = nisa.tensor_tensor(s[:, 0:h], s[:, h:width], op=nl.maximum, dtype=dtype,
                              engine=nisa.engine.vector)
    return nisa.tensor_reduce(nl.max, both, axis=1, dtype=nl.float32,
                              engine=nisa.engine.gpsimd)


def softmax_factors(scale: float) -> tuple[float, float]:
    """(q_factor, e_scale) without a mask: softmax(scale * Q K^T) is computed as
    softmax(e_scale * S) with S = (q_factor * Q) K^T and e_scale > 0 (the exp's scale), so
    the shift is always the row max of S; Q is scaled on chip only for a scale <= 0 (or
    NaN). With a mask M: S = (scale * Q) K^T + M and e_scale = 1."""
    q_factor = 1.0 if scale > 0 else -1.0 if scale < 0 else 0.0 if scale == 0 else scale
    e_scale = scale if scale > 0 else -scale if scale < 0 else 1.0
    return q_factor, e_scale


def mask_lowest(dtype: torch.dtype) -> float:
    """The number that stands for -inf in an attention mask of `dtype`: the dtype's lowest,
    or bf16's if that is higher (the row max passes through bf16)."""
    return max(float(torch.finfo(dtype).min), float(torch.finfo(torch.bfloat16).min))


def attention(q, k, v, *, transposed: bool, causal: bool = True, scale: float | None = None,
              key_tile: int = 1024, mask=None, lse: bool = False):
    """The attention of q, k, v in a kernel being traced (call it from a @kernels.jit
    function); returns the output [heads, seq, d] in HBM. q is [heads, d, seq] (transposed)
    or [heads, seq, d]; k likewise with kv_heads (heads a multiple of kv_heads: query head h
    reads kv head h // (heads / kv_heads)); v is [kv_heads, seq, d]. mask: None or an
    additive mask [masks, seq (queries), seq (keys)] in v's dtype (heads a multiple of
    masks: head h adds mask h // (heads / masks)), with causal=False, finite:
    mask_lowest stands for -inf (a query whose keys all have it gets 0), other values are
    at least half of it. lse=True (no mask) also returns the log-sum-exp of each query's
    scaled scores (what attention_backward recomputes P from), float32 [heads, 128, seq /
    128]: query b * 128 + p of head h at [h, p, b], as the kernel's tiles hold them."""
    if transposed:
        heads, d, seq = q.shape
        kv_heads = k.shape[0]
        if tuple(k.shape) != (kv_heads, d, seq):
            raise error(f"k has shape {list(k.shape)}, expected [kv_heads, {d}, {seq}]")
    else:
        heads, seq, d = q.shape
        kv_heads = k.shape[0]
        if tuple(k.shape) != (kv_heads, seq, d):
            raise error(f"k has shape {list(k.shape)}, expected [kv_heads, {seq}, {d}]")
    if tuple(v.shape) != (kv_heads, seq, d) or heads % kv_heads:
        raise error(f"attention of q {list(q.shape)}, k {list(k.shape)}, v "
                          f"{list(v.shape)}: v must be [kv_heads, seq, d] and heads a multiple "
                          "of kv_heads")
    if d > 128 or seq % 128:
        raise error(f"attention takes head dim <= 128 and a sequence of a multiple of 128, "
                          f"got d = {d}, seq = {seq}")
    if key_tile % 128 or not 128 <= key_tile <= 1024:
        raise error(f"key_tile is a multiple of 128 in [128, 1024], got {key_tile}")
    if mask is not None and (causal or len(mask.shape) != 3 or heads % mask.shape[0]
                             or tuple(mask.shape[1:]) != (seq, seq) or mask.dtype != v.dtype):
        raise error(f"an attention mask is [masks, {seq}, {seq}] in v's dtype with heads a "
                    f"multiple of masks and causal=False, got {list(mask.shape)} "
                    f"{mask.dtype}, causal={causal}")
    group = heads // kv_heads
    lowest = mask_lowest(v.dtype)
    exact = mask is not None or v.dtype == torch.float16  # (see _row_max)
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    # with a mask, Q is scaled on chip so that the mask is added as it is
    q_factor, e_scale = softmax_factors(scale) if mask is None else (scale, 1.0)
    blocks, dv = seq // 128, d + 1  # V blocks carry a column of ones: dv columns each
    if lse and mask is not None:
        raise error("attention returns the log-sum-exp only without a mask")
    o = nl.ndarray((heads, seq, d), dtype=v.dtype, buffer=nl.shared_hbm)
    lse_out = None
    if lse:  # the row sums and -e_scale * max of every query block, for one log at the end
        lse_out = nl.ndarray((heads, 128, blocks), dtype=nl.float32, buffer=nl.shared_hbm)
        row_sums = nl.ndarray((128, heads * blocks), dtype=nl.float32, buffer=nl.sbuf)
        row_negs = nl.ndarray((128, heads * blocks), dtype=nl.float32, buffer=nl.sbuf)
    gpsimd, scalar, vector = nisa.engine.gpsimd, nisa.engine.scalar, nisa.engine.vector
    i_p, i_f = nl.mgrid[0:128, 0:128]
    # The diagonal block's mask, transposed (key p is hidden from query f when p > f): its
    # transpose is added to the scores on the Tensor engine.
    mask_t = None
    if causal:
        # (the lowest finite number of the dtype: an infinity times the identity's zeros
        # would make NaNs on the Tensor engine)
        masked = -float(torch.finfo(v.dtype).max)
        mask_t = nisa.affine_select(i_f - i_p >= 0, nl.zeros((128, 128), dtype=v.dtype),
                                    masked, engine=gpsimd)

    def identity():
        """The identity [128, 128] in v's dtype (the constant nc_transpose multiplies by)."""
        return TileView.whole(tracer().constant_tile(
            ("identity", 128, v.dtype), torch.eye(128, dtype=v.dtype), None))

    # The kernel's estimate of the Vector and Scalar engines' work so far (ns, the cost
    # model's formulas): each P^T copy goes to the one that is less loaded.
    load = {vector: 0.0, scalar: 0.0}
    ghz = {vector: 0.96, scalar: 1.2}

    def charge(engine, columns):
        load[engine] += (max(columns, 64) + 60) / ghz[engine]
        return engine

    def lighter(columns):
        return charge(min(load, key=lambda e: load[e] + (columns + 60) / ghz[e]), columns)

    # Q^T of each head, K^T and V with ones of each kv head, loaded 128 positions
    # at a time: chunk (h, b) two query blocks before the first query block that needs it.
    q_tiles, kv_tiles = {}, {}

    def transposed_rows(dst, src, factor, slot):
        """dst [d, 128] = factor * src^T for src [128 positions, d] in HBM: loaded, then
        transposed on the Tensor engine and copied out of PSUM by the Vector or Scalar
        engine (with the factor)."""
        rows = nl.ndarray((128, d), dtype=v.dtype, buffer=nl.sbuf)
        _load_rows(rows, src)
        t = psum_t[:, slot * 128:(slot + 1) * 128]
        t[...] = nisa.nc_transpose(rows)
        engine = lighter(128)
        if factor == 1.0:
            dst[...] = nisa.tensor_copy(t, dtype=v.dtype, engine=engine)
        elif engine == vector:
            dst[...] = nisa.tensor_scalar(t, nl.multiply, factor, dtype=v.dtype,
                                          engine=vector)
        else:
            dst[...] = nisa.activation(op=nl.identity, data=t, scale=factor, dtype=v.dtype)

    def load_chunk(h, b):
        kvh = h // group
        cols = slice(b * 128, (b + 1) * 128)
        if b == 0:
            q_tiles[h] = nl.ndarray((d, seq), dtype=v.dtype, buffer=nl.sbuf)
        q_all = q_tiles[h]
        # q_factor * Q^T: Q as it is for a positive scale (no engine work between the load
        # and the first matmul)
        if transposed and q_factor == 1.0:
            _load_rows(q_all[:, cols], q[h, :, cols])
        elif transposed:
            q_raw = nl.ndarray((d, 128), dtype=q.dtype, buffer=nl.sbuf)
            _load_rows(q_raw, q[h, :, cols])
            q_all[:, cols] = nisa.tensor_scalar(q_raw, nl.multiply, q_factor, engine=gpsimd)
        else:
            transposed_rows(q_all[:, cols], q[h, cols, :], q_factor, 0)
        if h % group:
            return  # K^T and V of the kv head are loaded with its first query head
        if b == 0:
            kv_tiles[kvh] = (nl.ndarray((d, seq), dtype=v.dtype, buffer=nl.sbuf),
                             nl.ndarray((128, blocks * dv), dtype=v.dtype, buffer=nl.sbuf))
        k_all, v_all = kv_tiles[kvh]
        if transposed:
            _load_rows(k_all[:, cols], k[kvh, :, cols])
        else:
            transposed_rows(k_all[:, cols], k[kvh, cols, :], 1.0, 1)
        _load_rows(v_all[:, b * dv:b * dv + d], v[kvh, cols, :])
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

    # PSUM, allocated once and reused in turn (no fragmentation whatever the units' widths):
    # three score tiles (the units in the pipeline's first three stages), the accumulators
    # of two rows side by side in one bank, and (rows layout) the Q / K transposes.
    scores_ring = [nl.ndarray((128, key_tile), dtype=nl.float32, buffer=nl.psum)
                   for _ in range(3)]
    accs = nl.ndarray((128, 2 * dv), dtype=nl.float32, buffer=nl.psum)
    psum_t = None if transposed else nl.ndarray((d, 256), dtype=nl.float32, buffer=nl.psum)
    counters = {"units": 0, "rows": 0}

    class Row:
        """The state of a block of 128 queries across its key tiles: the running max of the
        scores, -e_scale times it (the exp's bias) and the accumulator [128, dv] in PSUM (P V
        and, in the last column, the row sums)."""

        def __init__(self):
            self.mx = self.neg = None
            slot = counters["rows"] % 2
            counters["rows"] += 1
            self.acc = accs[:, slot * dv:(slot + 1) * dv]

    def unit(h, qi, k0, width, row):
        """Keys [k0, k0 + key_tile) (up to the diagonal) of queries [128 qi, 128 qi + 128)
        of head h: matmuls of up to 512 keys, one PSUM bank of scores each. Four stages, a
        step apart: scores and their max; exp; transposes and copies; P V."""
        prefetch(h, qi)
        q_all, (k_all, v_all) = q_tiles[h], kv_tiles[h // group]
        keys = (qi + 1) * 128 if causal else seq
        first, last = k0 == 0, k0 + width == keys
        q = q_all[:, qi * 128:(qi + 1) * 128]
        # The scores in PSUM banks side by side, 512 keys (one matmul) per bank
        s = scores_ring[counters["units"] % 3][:, 0:width]
        counters["units"] += 1
        for c0 in range(0, width, 512):
            w = min(512, width - c0)
            s[:, c0:c0 + w] = nisa.nc_matmul(q, k_all[:, k0 + c0:k0 + c0 + w])
            if mask is not None:  # + the mask's block (loaded as rows), on the Tensor engine
                m = nl.ndarray((128, w), dtype=v.dtype, buffer=nl.sbuf)
                _load_rows(m, mask[h // (heads // mask.shape[0]), qi * 128:(qi + 1) * 128,
                                   k0 + c0:k0 + c0 + w])
                s[:, c0:c0 + w] += nisa.nc_matmul(identity(), m)
        if last and causal:  # the diagonal block: add its mask
            s[:, width - 128:width] += nisa.nc_transpose(mask_t)
        mx = _row_max(s, width, exact)
        charge(vector, width // 2)
        neg_old = row.neg
        if not first:
            mx = nisa.tensor_tensor(mx, row.mx, op=nl.maximum, engine=gpsimd)
        neg = nisa.tensor_scalar(mx, nl.multiply, -e_scale, engine=gpsimd)  # the exp's bias
        row.mx, row.neg = mx, neg
        yield
        if not first:
            alpha = nisa.activation(op=nl.exp, data=neg_old, bias=neg, scale=-1.0)
            charge(scalar, 1)
        p = nl.ndarray((128, width), dtype=v.dtype, buffer=nl.sbuf)
        for c0 in range(0, width, 512):
            w = min(512, width - c0)
            p[:, c0:c0 + w] = nisa.activation(op=nl.exp, data=s[:, c0:c0 + w], bias=neg,
                                              scale=e_scale, dtype=v.dtype)
            charge(scalar, w)
        yield
        p_t = nl.ndarray((128, width), dtype=v.dtype, buffer=nl.sbuf)
        for c in range(0, width, 128):  # P^T into the banks of the scores
            s[:, c:c + 128] = nisa.nc_transpose(p[:, c:c + 128])
        # rescale the accumulator to the new max before the copies: the previous unit's
        # P V is done by then, and this unit's P V need not wait for it after the copies
        if first:
            pass
        elif lighter(dv) == vector:
            row.acc[...] = nisa.tensor_tensor(row.acc, alpha, op=nl.multiply, engine=vector)
        else:
            row.acc[...] = nisa.activation(op=nl.identity, data=row.acc, scale=alpha)
        for c0 in range(0, width, 256):  # copies of 256 columns: the P V matmuls start
            w = min(256, width - c0)  # after the first, not after all
            p_t[:, c0:c0 + w] = nisa.tensor_copy(s[:, c0:c0 + w], dtype=v.dtype,
                                                 engine=lighter(w))
        yield
        for c in range(width // 128):
            kb = k0 // 128 + c
            pv = nisa.nc_matmul(p_t[:, c * 128:(c + 1) * 128], v_all[:, kb * dv:(kb + 1) * dv])
            if first and c == 0:
                row.acc[...] = pv  # the row's first: overwrites what the slot held
            else:
                row.acc += pv
        if last and mask is None:
            out = nisa.tensor_tensor(row.acc[:, 0:d], row.acc[:, d:dv], op=nl.divide,
                                     dtype=v.dtype, engine=charge(vector, d))
        elif last:
            # a query whose keys are all masked out (its max is the mask's -inf:
            # mask_lowest) gets 0, as eager's -inf rows
            seen = nisa.tensor_scalar(row.mx, nl.greater, 0.75 * lowest, engine=gpsimd)
            r = nisa.tensor_tensor(seen, row.acc[:, d:dv], op=nl.divide, engine=vector)
            out = nisa.tensor_tensor(row.acc[:, 0:d], r, op=nl.multiply, dtype=v.dtype,
                                     engine=charge(vector, d))
        if last and lse_out is not None:  # (kept; the log is taken once, at the end)
            col = h * blocks + qi
            row_sums[:, col:col + 1] = nisa.tensor_copy(row.acc[:, d:dv], engine=vector)
            row_negs[:, col:col + 1] = nisa.tensor_copy(row.neg, engine=gpsimd)
        if last:
            for p0 in range(0, 128, 16):  # eight transfers: the last one ends the kernel
                nl.store(o[h, qi * 128 + p0:qi * 128 + p0 + 16, :], value=out[p0:p0 + 16, :])

    def units():
        for h in range(heads):
            for qi in range(blocks):
                row = Row()
                keys = (qi + 1) * 128 if causal else seq
                n = -(-keys // key_tile)  # units of equal widths (whole 128-key blocks)
                widths = [128 * (keys // 128 // n + (1 if i < keys // 128 % n else 0))
                          for i in range(n)]
                for i in range(n):
                    yield unit(h, qi, sum(widths[:i]), widths[i], row)

    _schedule(units())
    if lse:  # log(row sum) + e_scale * max, one store per head
        lse_all = nisa.tensor_tensor(nisa.activation(op=nl.log, data=row_sums), row_negs,
                                     op=nl.subtract, engine=gpsimd)
        for h in range(heads):
            nl.store(lse_out[h], value=lse_all[:, h * blocks:(h + 1) * blocks])
        return o, lse_out
    return o


