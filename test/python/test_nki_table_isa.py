"""nki.isa instructions that run as the generic ntile.isa op (the ISA table's instructions
without an op of their own): the project's own small kernels, each against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import neuronsim  # noqa: F401  (installs the import hook)
import nki
import nki.isa as nisa
import nki.language as nl

RNG = np.random.default_rng(7)


def _load(x, dtype=None):
    t = nl.ndarray(x.shape, dtype=dtype or x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    return t


def _store(t, dtype=None):
    out = nl.ndarray(t.shape, dtype=dtype or t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def scale_and_max(x):
    xt = _load(x)
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    m = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=y, data=xt, op0=nl.multiply, operand0=0.5,
                              reduce_op=nl.maximum, reduce_res=m)
    a = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    s = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=a, data=xt, op0=nl.abs, operand0=0.0, reduce_op=nl.maximum,
                              reduce_res=s)
    return _store(y), _store(m), _store(a), _store(s)


def test_tensor_scalar_reduce():
    x = RNG.standard_normal((128, 96)).astype(np.float32)
    y, m, a, s = scale_and_max(x)
    np.testing.assert_allclose(y, x * 0.5, rtol=0, atol=0)
    np.testing.assert_allclose(m[:, 0], (x * 0.5).max(axis=1), rtol=0, atol=0)
    np.testing.assert_array_equal(a, np.abs(x))
    np.testing.assert_array_equal(s[:, 0], np.abs(x).max(axis=1))


@nki.jit
def top8(x):
    xt = _load(x)
    vals = nl.ndarray((x.shape[0], 8), dtype=x.dtype, buffer=nl.sbuf)
    nisa.max8(dst=vals, src=xt)
    idx = nl.ndarray((x.shape[0], 8), dtype=nl.int32, buffer=nl.sbuf)
    nisa.nc_find_index8(dst=idx, data=xt, vals=vals)
    rest = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    idx2 = nl.ndarray((x.shape[0], 8), dtype=nl.int32, buffer=nl.sbuf)
    nisa.nc_match_replace8(dst=rest, data=xt, vals=vals, imm=-1e9, dst_idx=idx2)
    return _store(vals), _store(idx), _store(rest), _store(idx2)


def test_max8_find_index8_match_replace8():
    x = RNG.permutation(64 * 40).reshape(64, 40).astype(np.float32)  # distinct values
    vals, idx, rest, idx2 = top8(x)
    order = np.argsort(-x, axis=1)[:, :8]
    np.testing.assert_array_equal(vals, np.take_along_axis(x, order, 1))
    np.testing.assert_array_equal(idx, order)
    np.testing.assert_array_equal(idx2, order)
    expect = x.copy()
    np.put_along_axis(expect, order, -1e9, 1)
    np.testing.assert_array_equal(rest, expect)


@nki.jit
def masks(x):
    P, F = x.shape
    xt = _load(x)
    causal = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    # keep where p - f >= 0 (a causal mask): offset 0, channel_multiplier 1, step -1
    nisa.affine_select(causal, pattern=[[-1, F]], offset=0, channel_multiplier=1,
                       on_true_tile=xt, on_false_value=-1e30, cmp_op=nl.greater_equal)
    grid = nl.ndarray((P, 4, F // 4), dtype=nl.float32, buffer=nl.sbuf)
    # a pattern that does not flatten to one step: two instructions per outer index
    nisa.iota(grid, pattern=[[100, 4], [1, F // 4]], offset=7, channel_multiplier=1000)
    return _store(causal), _store(grid)


def test_affine_select_and_iota():
    x = RNG.standard_normal((32, 64)).astype(np.float32)
    causal, grid = masks(x)
    p, f = np.meshgrid(np.arange(32), np.arange(64), indexing="ij")
    np.testing.assert_array_equal(causal, np.where(p - f >= 0, x, np.float32(-1e30)))
    w, q = np.meshgrid(np.arange(4), np.arange(16), indexing="ij")
    expect = 7 + 1000 * np.arange(32)[:, None, None] + (100 * w + q)[None]
    np.testing.assert_array_equal(grid, expect.astype(np.float32))


@nki.jit
def predicated(x, y, pred):
    xt, yt, pt = _load(x), _load(y), _load(pred)
    nisa.tensor_copy_predicated(dst=xt, src=yt, predicate=pt)
    return _store(xt)


def test_tensor_copy_predicated():
    x = RNG.standard_normal((16, 24)).astype(np.float32)
    y = RNG.standard_normal((16, 24)).astype(np.float32)
    pred = (RNG.random((16, 24)) < 0.5).astype(np.float32)
    np.testing.assert_array_equal(predicated(x, y, pred), np.where(pred != 0, y, x))


@nki.jit
def bounded(x, lo, hi):
    xt, lt, ht = _load(x), _load(lo), _load(hi)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    mx = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.range_select(dst=out, on_true_tile=xt, comp_op0=nl.greater_equal, comp_op1=nl.less,
                      bound0=lt, bound1=ht, reduce_res=mx, reduce_op=nl.maximum,
                      range_start=0, on_false_value=-1e30)
    return _store(out), _store(mx)


def test_range_select():
    x = RNG.standard_normal((8, 32)).astype(np.float32)
    lo = RNG.integers(0, 16, (8, 1)).astype(np.float32)
    hi = lo + RNG.integers(1, 16, (8, 1)).astype(np.float32)
    out, mx = bounded(x, lo, hi)
    f = np.arange(32)[None, :]
    expect = np.where((f >= lo) & (f < hi), x, np.float32(-1e30))
    np.testing.assert_array_equal(out, expect)
    np.testing.assert_array_equal(mx[:, 0], expect.max(axis=1))


@nki.jit
def shuffle(x):
    xt = _load(x)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(out, 5.0)
    mask = [31 - i for i in range(31)] + [255]  # reverse a quadrant; the last keeps dst's row
    nisa.nc_stream_shuffle(src=xt, dst=out, shuffle_mask=mask)
    again = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(again, 5.0)
    nisa.nc_stream_shuffle(xt, again, mask)  # positionally: NKI's (src, dst, shuffle_mask)
    return _store(out), _store(again)


def test_nc_stream_shuffle():
    x = RNG.standard_normal((64, 8)).astype(np.float32)
    out, again = shuffle(x)
    np.testing.assert_array_equal(again, out)
    for q in range(2):
        for i in range(31):
            np.testing.assert_array_equal(out[32 * q + i], x[32 * q + 31 - i])
        np.testing.assert_array_equal(out[32 * q + 31], np.full(8, 5.0, np.float32))


@nki.jit
def gather_rows(data, indices):
    dt, it = _load(data), _load(indices)
    out = nl.ndarray(indices.shape, dtype=data.dtype, buffer=nl.sbuf)
    nisa.nc_n_gather(dst=out, data=dt, indices=it)
    return _store(out)


def test_nc_n_gather():
    data = RNG.standard_normal((16, 50)).astype(np.float32)
    idx = RNG.integers(0, 50, (16, 12)).astype(np.int32)
    np.testing.assert_array_equal(gather_rows(data, idx), np.take_along_axis(data, idx, 1))


@nki.jit
def compact(x):
    xt = _load(x)
    out = nl.ndarray((x.shape[0], x.shape[1] + 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(out, 0)
    nisa.nonzero_with_count(dst=out, src=xt, index_offset=10, padding_val=-1)
    return _store(out)


def test_nonzero_with_count():
    x = (RNG.random((32, 20)) < 0.3).astype(np.float32)
    out = compact(x)
    for p in range(32):
        if p % 16:
            np.testing.assert_array_equal(out[p], np.zeros(21, np.int32))
            continue
        nz = np.nonzero(x[p])[0] + 10
        expect = np.full(21, -1, np.int32)
        expect[:len(nz)] = nz
        expect[20] = len(nz)
        np.testing.assert_array_equal(out[p], expect)


@nki.jit
def column_sums(x):
    xt = _load(x)
    out = nl.ndarray((1, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_partition_reduce(out, nl.add, xt)
    run = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(dst=run, src=xt, op0=nl.multiply, op1=nl.add, imm0=2.0)
    return _store(out), _store(run)


def test_tensor_partition_reduce_and_cumulative():
    x = RNG.standard_normal((64, 16)).astype(np.float32)
    s, run = column_sums(x)
    np.testing.assert_allclose(s[0], x.sum(axis=0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(run, np.cumsum(2 * x, axis=1), rtol=1e-5, atol=1e-5)


@nki.jit
def drop(x):
    xt = _load(x)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dropout(dst=out, data=xt, prob=0.25)
    return _store(out)


def test_dropout_keeps_or_zeroes_at_its_rate():
    x = RNG.random((128, 512)).astype(np.float32) + 1.0  # no zeros of its own
    out = drop(x)
    kept = out != 0
    np.testing.assert_array_equal(out[kept], x[kept])
    assert abs(1.0 - kept.mean() - 0.25) < 0.01


@nki.jit
def bad_reduce(x):
    xt = _load(x)
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    m = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=y, data=xt, op0=nl.multiply, operand0=0.5,
                              reduce_op=nl.subtract, reduce_res=m)
    return _store(y)


def test_the_runtime_checks_name_the_instruction_and_line():
    x = np.ones((8, 8), np.float32)
    with pytest.raises(Exception) as info:
        bad_reduce(x)
    text = str(info.value)
    assert "tensor_scalar_reduce" in text and "cannot reduce with sub" in text, text
    assert "test_nki_table_isa.py" in text, text


@nki.jit
def find_u32(x, vals):
    xt, vt = _load(x), _load(vals)
    idx = nl.ndarray((x.shape[0], 8), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.nc_find_index8(dst=idx, data=xt, vals=vt)
    g = nl.ndarray((x.shape[0], 8), dtype=x.dtype, buffer=nl.sbuf)
    nisa.nc_n_gather(dst=g, data=xt, indices=idx)  # uint32 indices gather back the values
    return _store(idx), _store(g)


def test_uint32_indices_and_not_found():
    x = RNG.permutation(16 * 32).reshape(16, 32).astype(np.float32)
    vals = np.take_along_axis(x, RNG.integers(0, 32, (16, 8)), 1)
    idx, g = find_u32(x, vals)
    assert idx.dtype == np.uint32
    np.testing.assert_array_equal(np.take_along_axis(x, idx.astype(np.int64), 1), vals)
    np.testing.assert_array_equal(g, vals)


@nki.jit
def find_only(x, vals):
    xt, vt = _load(x), _load(vals)
    idx = nl.ndarray((x.shape[0], 8), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.nc_find_index8(dst=idx, data=xt, vals=vt)
    return _store(idx)


def test_find_index8_not_found_is_uint32_max():
    x = RNG.permutation(16 * 32).reshape(16, 32).astype(np.float32)
    vals = np.take_along_axis(x, RNG.integers(0, 32, (16, 8)), 1)
    vals[:, 3] = -1.0  # in no row
    idx = find_only(x, vals)
    np.testing.assert_array_equal(idx[:, 3], np.full(16, 2**32 - 1, np.uint32))


@nki.jit
def with_constants(x):
    """nl.shared_constant and nl.shared_identity_matrix (HBM tensors made at trace time), and
    nc_matmul(is_transpose=True) through the identity."""
    table = nl.shared_constant(np.arange(32 * 8, dtype=np.float32).reshape(32, 8))
    it = nl.shared_identity_matrix(32, dtype=nl.float32)  # an SBUF tile, as NKI's
    xt, tt = _load(x), _load(table)
    s = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=s, data1=xt, data2=tt, op=nl.add)
    t = nl.ndarray((8, 32), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=t, stationary=s, moving=it, is_transpose=True)
    ts = nl.ndarray((8, 32), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=ts, src=t)
    return _store(ts)


def test_shared_constants_and_pe_transpose():
    x = RNG.standard_normal((32, 8)).astype(np.float32)
    expect = (x + np.arange(32 * 8, dtype=np.float32).reshape(32, 8)).T
    np.testing.assert_array_equal(with_constants(x), expect)


@nki.jit
def strided_dst_and_reshaped_return(x):
    """An engine result written into a strided dst view (every other column of a 3-D tile),
    and an output returned reshaped."""
    P, F = x.shape
    xt = _load(x)
    wide = nl.ndarray((P, F, 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(wide, 0.0)
    nisa.tensor_scalar(dst=wide[:, :, 1], data=xt, op0=nl.multiply, operand0=3.0)
    out = nl.ndarray((P, F * 2), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=wide)
    return out.reshape((P * 2, F))


def test_strided_dst_and_reshaped_return():
    x = RNG.standard_normal((16, 8)).astype(np.float32)
    y = strided_dst_and_reshaped_return(x)
    expect = np.zeros((16, 8, 2), np.float32)
    expect[:, :, 1] = 3 * x
    assert y.shape == (32, 8)
    np.testing.assert_array_equal(y, expect.reshape(32, 8))


@nki.jit
def casting_dma(x):
    """dma_copy between dtypes (NKI's DMA casts): float32 HBM into a uint32 and a bf16 tile."""
    u = nl.ndarray(x.shape, dtype=nl.uint32, buffer=nl.sbuf)
    nisa.dma_copy(dst=u, src=x)
    b = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=b, src=x)
    return _store(u), _store(b, nl.float32)


def test_dma_copy_casts():
    x = RNG.integers(0, 1000, (8, 16)).astype(np.float32)
    u, b = casting_dma(x)
    assert u.dtype == np.uint32
    np.testing.assert_array_equal(u, x.astype(np.uint32))
    import torch

    expect = torch.from_numpy(x).to(torch.bfloat16).float().numpy()  # round to nearest even
    np.testing.assert_array_equal(b, expect)


@nki.jit
def through_private_hbm(x):
    """An HBM scratch tensor (nl.private_hbm) the kernel writes and reads back, not returned."""
    scratch = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.private_hbm)
    nisa.dma_copy(dst=scratch, src=x)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=scratch.reshape((x.shape[0], x.shape[1])))
    nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
    return _store(t)


def test_private_hbm_scratch_is_not_returned():
    x = RNG.standard_normal((16, 32)).astype(np.float32)
    y = through_private_hbm(x)
    assert isinstance(y, np.ndarray)
    np.testing.assert_array_equal(y, x + 1.0)


@nki.jit
def copy_u16(x):
    return _store(_load(x))


def test_uint16_tiles_round_trip_bit_exactly():
    x = RNG.integers(0, 2**16, (8, 64)).astype(np.uint16)
    y = copy_u16(x)
    assert y.dtype == np.uint16
    np.testing.assert_array_equal(y, x)


@nki.jit
def gather_local(src, index, per_elem, valid):
    st = _load(src)
    it = _load(index)
    out = nl.ndarray((src.shape[0], valid * per_elem), dtype=src.dtype, buffer=nl.sbuf)
    nisa.local_gather(dst=out, src_buffer=st, index=it, num_elem_per_idx=per_elem,
                      num_valid_indices=valid)
    return _store(out)


def _local_gather_reference(src, index, per_elem, valid):
    """NKI's numpy semantics: each core's 16 partitions take its indices partition first."""
    flat = src.reshape(src.shape[0], -1)
    out = np.empty((src.shape[0], valid * per_elem), src.dtype)
    for core in range(src.shape[0] // 16):
        rows = slice(16 * core, 16 * core + 16)
        idx = index[rows].flatten(order="F")[:valid].astype(np.int64)
        runs = idx[:, None] + np.arange(per_elem)[None, :]
        out[rows] = flat[rows][:, runs.reshape(-1)]
    return out


@pytest.mark.parametrize("per_elem,valid", [(1, 64), (2, 37), (8, 5)])
def test_local_gather_matches_numpy_bit_exactly(per_elem, valid):
    import torch

    src = torch.randn(32, 256).to(torch.bfloat16)  # every bf16 bit pattern must survive
    # different indices on the two GpSimd cores; each run stays inside the row
    index = RNG.integers(0, 256 - per_elem + 1, (32, 4)).astype(np.uint16)
    got = gather_local(src, torch.from_numpy(index), per_elem, valid)
    assert got.dtype == torch.bfloat16
    want = _local_gather_reference(src.view(torch.int16).numpy(), index, per_elem, valid)
    np.testing.assert_array_equal(got.view(torch.int16).numpy(), want)


def test_local_gather_rejects_an_index_past_the_row():
    src = RNG.standard_normal((16, 64)).astype(np.float32)
    index = np.zeros((16, 1), np.uint16)
    index[3, 0] = 63  # valid index 3, two elements from 63: past the 64-element row
    with pytest.raises(RuntimeError) as info:
        gather_local(src, index, 2, 16)
    text = str(info.value)
    assert "local_gather" in text and "index 63 (valid index 3 of GpSimd core 0) reads " \
        "elements [63, 65) of rows of 64" in text, text


def test_local_gather_takes_uint16_indices():
    src = RNG.standard_normal((16, 64)).astype(np.float32)
    with pytest.raises(Exception) as info:
        gather_local(src, np.zeros((16, 1), np.int32), 1, 16)
    assert "takes u16 indices (srcs[1]), not i32" in str(info.value), str(info.value)


@nki.jit
def bounds(ids):
    out = nl.ndarray((1, 2, ids.shape[1]), dtype=ids.dtype, buffer=nl.sbuf)
    nisa.sequence_bounds(dst=out, segment_ids=_load(ids))
    return _store(out)


def _sequence_bounds_reference(ids):
    n = len(ids)
    start, end = np.empty(n), np.empty(n)
    for i in range(n):
        start[i] = n if ids[i] == 0 else start[i - 1] if i and ids[i] == ids[i - 1] else i
    for i in reversed(range(n)):
        end[i] = -1 if ids[i] == 0 else end[i + 1] if i + 1 < n and ids[i] == ids[i + 1] \
            else i + 1
    return np.stack([start, end])[None]


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_sequence_bounds_matches_numpy(dtype):
    ids = np.array([[0, 1, 1, 2, 2, 2, 0, 3, 3] + [4] * 7 + [0] * 3 + [5]], dtype)
    got = bounds(ids)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, _sequence_bounds_reference(ids[0]).astype(dtype))


@nki.jit
def cast_tile(x, dtype):
    """tensor_copy casts on the Vector engine: x's tile into a tile of `dtype`."""
    y = nl.ndarray(x.shape, dtype=dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=y, src=_load(x))
    return _store(y)


def _fp8_cases():
    """Every fp8 boundary the cast meets: ties at each exponent, subnormals, the largest finite
    values and their overflow points, inf, NaN and signed zeros, plus random values."""
    import torch

    specials = [0.0, -0.0, 1.0, 1.0625, 1.1875, -1.0625, 448.0, 464.0, 479.9, 480.0, 500.0,
                57344.0, 61440.0, 65535.0, 65536.0, 2.0 ** -6, 2.0 ** -9, 2.0 ** -10,
                3 * 2.0 ** -11, 2.0 ** -14, 2.0 ** -16, 2.0 ** -17, 3 * 2.0 ** -18, 1e-30,
                float("inf"), float("-inf"), float("nan"), -240.0, 0.3, -17.25]
    rand = torch.cat([torch.randn(1000) * s for s in (1e-3, 1.0, 100.0, 3e4)])
    x = torch.cat([torch.tensor(specials), -torch.tensor(specials), rand])
    return x[:len(x) // 128 * 128].reshape(128, -1)


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_casts_match_pytorch_bit_exactly(name):
    import torch

    dtype = getattr(torch, name)
    assert getattr(nl, name) is dtype
    x = _fp8_cases()
    got = cast_tile(x, dtype)
    assert got.dtype == dtype
    assert torch.equal(got.view(torch.uint8), x.to(dtype).view(torch.uint8))
    every = torch.arange(256, dtype=torch.uint8).view(dtype).reshape(2, 128)
    back = cast_tile(every, torch.float32)  # fp8 -> fp32 is exact for all 256 patterns
    torch.testing.assert_close(back, every.float(), rtol=0, atol=0, equal_nan=True)


def test_float8_e4m3_names_why_it_is_unsupported():
    with pytest.raises(Exception) as info:
        cast_tile(np.zeros((4, 4), np.float32), nl.float8_e4m3)
    assert "IEEE-style e4m3 (max 240), which has no PyTorch dtype" in str(info.value)
