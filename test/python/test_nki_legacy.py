"""neuronsim.nki, legacy dialect (`import neuronxcc.nki`): index grids (nl.arange, nl.mgrid),
masks on ragged tiles, nl.par_dim block dims, symbolic affine_range loops (and the unrolling of
loops whose variable is needed as an int), SPMD grids with nl.program_id, return-value ISA
calls. The kernels are the project's own; results against numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest

import neuronsim  # noqa: F401  (installs the import hook)
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def ragged_softmax(x):
    """Rows not a multiple of 128: the last tile is masked (its loop is unrolled)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    jf = nl.arange(x.shape[1])[None, :]
    rows = x.shape[0]
    for i in nl.affine_range(math.ceil(rows / 128)):
        t = nl.load(x[i * 128 + ip, jf], mask=(i * 128 + ip < rows))
        m = nl.max(t, axis=[1], keepdims=True)
        e = nl.exp(nl.subtract(t, m))
        s = nl.sum(e, axis=[1])
        nl.store(out[i * 128 + ip, jf], value=e / s, mask=(i * 128 + ip < rows))
    return out


@nki.jit
def spmd_scale(a):
    """One 128 x 256 tile per program of a 2-D launch grid."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ix = nl.program_id(0) * 128 + nl.arange(128)[:, None]
    iy = nl.program_id(1) * 256 + nl.arange(256)[None, :]
    t = nl.load(a[ix, iy])
    nl.store(out[ix, iy], value=t * 2.0 + 1.0)
    return out


@nki.jit
def blocked_matmul(lhsT, rhs):
    """K tiles of lhsT and rhs in block-dim tiles, indexed by a symbolic loop variable; PSUM
    accumulation with +=; an mgrid's .p / .x."""
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    i_l = nl.mgrid[0:128, 0:M]
    i_r = nl.mgrid[0:128, 0:N]
    i_o = nl.mgrid[0:M, 0:N]
    lt = nl.ndarray((K // 128, nl.par_dim(128), M), dtype=lhsT.dtype, buffer=nl.sbuf)
    rt = nl.ndarray((K // 128, nl.par_dim(128), N), dtype=rhs.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(K // 128):
        lt[k, i_l.p, i_l.x] = nl.load(lhsT[k * 128 + i_l.p, i_l.x])
        rt[k, i_r.p, i_r.x] = nl.load(rhs[k * 128 + i_r.p, i_r.x])
    acc = nl.zeros((M, N), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(K // 128):
        acc += nisa.nc_matmul(lt[k, i_l.p, i_l.x], rt[k, i_r.p, i_r.x])
    nl.store(out[i_o.p, i_o.x], value=nl.copy(acc, dtype=out.dtype))
    return out


@nki.jit
def grid_transpose(x):
    """A load whose grids put the tensor's dim 1 on the partitions (a transposed load), and
    legacy return-value calls: activation with a bias tile, tensor_reduce."""
    R, C = x.shape
    out = nl.ndarray((C, R), dtype=x.dtype, buffer=nl.shared_hbm)
    sums = nl.ndarray((C, 1), dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(C)[:, None]
    jf = nl.arange(R)[None, :]
    t = nl.load(x[jf, ip])  # [C, R]
    bias = nisa.tensor_reduce(np.add, t, axis=(1,), keepdims=True)
    y = nisa.activation(op=nl.tanh, data=t, bias=bias, scale=0.5)
    nl.store(out[ip, jf], value=y)
    nl.store(sums, value=bias)
    return out, sums


def test_ragged_softmax_masks():
    x = np.random.rand(300, 96).astype(np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(ragged_softmax(x), e / e.sum(axis=1, keepdims=True), rtol=1e-5,
                               atol=1e-6)


def test_spmd_grid_program_ids():
    a = np.random.rand(256, 512).astype(np.float32)
    np.testing.assert_allclose(spmd_scale[2, 2](a), a * 2 + 1, rtol=1e-6)


def test_par_dim_blocks_and_psum_accumulation():
    lhsT = np.random.rand(384, 128).astype(np.float32)
    rhs = np.random.rand(384, 256).astype(np.float32)
    np.testing.assert_allclose(blocked_matmul(lhsT, rhs), lhsT.T @ rhs, rtol=1e-4, atol=1e-4)


def test_grid_axes_transposed_load_and_return_value_isa():
    x = np.random.rand(64, 32).astype(np.float32)
    y, s = grid_transpose(x)
    b = x.T.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(s, b, rtol=1e-5)
    np.testing.assert_allclose(y, np.tanh(0.5 * x.T + b), rtol=1e-5, atol=1e-6)


def test_simulate_kernel_and_unknown_platform():
    a = np.random.rand(128, 256).astype(np.float32)
    np.testing.assert_allclose(nki.simulate_kernel(spmd_scale[1, 1], a), a * 2 + 1, rtol=1e-6)
    bad = nki.jit(spmd_scale.fn, platform_target="trn9")
    with pytest.raises(neuronsim.NeuronCompileError, match="platform target"):
        bad(a)


@nki.jit
def masked_bn_norm(x):
    """Row mean and variance through bn_stats over 512-column chunks (the last one masked: its
    grid reaches past the tile and the mask brings it back) and bn_aggr."""
    R, C = x.shape
    out = nl.ndarray((R, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    ip = nl.arange(R)[:, None]
    jf = nl.arange(C)[None, :]
    jb = nl.arange(nl.tile_size.bn_stats_fmax)[None, :]
    j6 = nl.arange(6)[None, :]
    n = math.ceil(C / nl.tile_size.bn_stats_fmax)
    t = nl.load(x[ip, jf])
    stats = nl.ndarray((R, 6 * n), dtype=nl.float32)
    for j in nl.affine_range(n):
        stats[ip, j * 6 + j6] = nisa.bn_stats(t[ip, j * nl.tile_size.bn_stats_fmax + jb],
                                              mask=(j * nl.tile_size.bn_stats_fmax + jb < C),
                                              dtype=nl.float32)
    mv = nisa.bn_aggr(stats[ip, nl.arange(6 * n)[None, :]])
    nl.store(out[ip, nl.arange(2)[None, :]], value=mv)
    return out


@nki.jit
def chunked_scan(a, b):
    """r = a * r + b along each row, in chunks of 64 columns: each chunk's scan starts from a
    [P, 1] tile holding the previous chunk's last column."""
    P, F = a.shape
    out = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.shared_hbm)
    init = nl.zeros((P, 1), dtype=nl.float32)
    for c in nl.sequential_range(F // 64):
        ta = nl.load(a[:, c * 64:(c + 1) * 64])
        tb = nl.load(b[:, c * 64:(c + 1) * 64])
        r = nisa.tensor_tensor_scan(ta, tb, initial=init, op0=np.multiply, op1=np.add)
        init[...] = r[:, 63]
        nl.store(out[:, c * 64:(c + 1) * 64], value=r)
    return out


def test_bn_stats_bn_aggr_with_a_masked_chunk():
    x = (np.random.rand(96, 700).astype(np.float32) - 0.3) * 4
    mv = masked_bn_norm(x)
    np.testing.assert_allclose(mv[:, 0], x.mean(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mv[:, 1], x.var(axis=1), rtol=1e-4, atol=1e-5)


def test_tensor_tensor_scan_with_an_initial_tile():
    a = np.random.uniform(0.5, 1.0, (128, 256)).astype(np.float32)
    b = np.random.rand(128, 256).astype(np.float32)
    ref = np.zeros_like(a)
    r = np.zeros(128, dtype=np.float32)
    for i in range(256):
        r = a[:, i] * r + b[:, i]
        ref[:, i] = r
    np.testing.assert_allclose(chunked_scan(a, b), ref, rtol=1e-5, atol=1e-5)


def test_bn_stats_over_512_columns_names_the_line():
    @nki.jit
    def too_wide(x):
        out = nl.ndarray((128, 6), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        nl.store(out, value=nisa.bn_stats(t))
        return out

    with pytest.raises(neuronsim.NeuronCompileError,
                       match=r"test_nki_legacy.py:\d+ .*bn_stats of 600 elements"):
        too_wide(np.zeros((128, 600), dtype=np.float32))


@nki.jit
def ragged_scale_shift(x, gamma):
    """A masked load is a tile of the grid's 128 partitions (NKI's semantics): it meets a
    128-partition broadcast of gamma and is indexed with the full grid; the store's mask
    leaves the unloaded partitions out."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    jf = nl.arange(x.shape[1])[None, :]
    g = nl.load(gamma.reshape((1, x.shape[1]))[nl.arange(1)[:, None], jf])
    g128 = g.broadcast_to((128, x.shape[1]))
    rows = x.shape[0]
    for i in nl.affine_range(math.ceil(rows / 128)):
        t = nl.load(x[i * 128 + ip, jf], mask=(i * 128 + ip < rows))
        c = nl.subtract(t[ip, jf], nl.mean(t, axis=1))
        nl.store(out[i * 128 + ip, jf], value=c * g128 + 1.0, mask=(i * 128 + ip < rows))
    return out


@pytest.mark.parametrize("rows", [300, 128 + 5, 64])
def test_masked_load_keeps_the_grids_partitions(rows):
    x = np.random.rand(rows, 96).astype(np.float32)
    g = np.random.rand(96).astype(np.float32)
    y = ragged_scale_shift(x, g)
    ref = (x - x.mean(axis=1, keepdims=True)) * g + 1.0
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def test_mismatched_partitions_without_a_mask_still_fail():
    @nki.jit
    def bad(x):
        out = nl.ndarray((64, 32), dtype=x.dtype, buffer=nl.shared_hbm)
        a = nl.load(x[0:64, 0:32])
        b = nl.load(x[0:128, 0:32])
        nl.store(out[0:64, 0:32], value=a + b)
        return out

    with pytest.raises(Exception, match=r"add of tiles \[64, 32\] and \[128, 32\]"):
        bad(np.zeros((128, 32), np.float32))
