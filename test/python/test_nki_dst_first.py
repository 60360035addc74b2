"""neuronsim.nki, NKI 0.2+ dialect (`import nki`): dst-first ISA calls, Python-semantics loops,
numpy in / numpy out, nki.benchmark / simulate / platform targets, the import hook. The kernels
are the project's own; results against numpy."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import neuronsim  # noqa: F401  (installs the import hook)
import nki
import nki.isa as nisa
import nki.language as nl
import nki.typing as nt


@nki.jit
def add_rows(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows, cols = a.shape
    for i in nl.affine_range(rows // 128):
        ta = nl.ndarray((128, cols), dtype=a.dtype, buffer=nl.sbuf)
        tb = nl.ndarray((128, cols), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ta, src=a[i * 128:(i + 1) * 128, :])
        nisa.dma_copy(dst=tb, src=b[i * 128:(i + 1) * 128, :])
        tc = nl.ndarray((128, cols), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=tc, data1=ta, data2=tb, op=nl.add)
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=tc)
    return out


@nki.jit
def matmul_lists(lhsT, rhs):
    """Tiles kept in Python lists across loops (a loop variable indexes a list)."""
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    lhs_tiles = []
    for k in nl.affine_range(K // 128):
        t = nl.ndarray((128, M), dtype=lhsT.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=lhsT[k * 128:(k + 1) * 128, :])
        lhs_tiles.append(t)
    for n in nl.affine_range(N // 512):
        acc = nl.ndarray((M, 512), dtype=nl.float32, buffer=nl.psum)
        for k in nl.sequential_range(K // 128):
            r = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=r, src=rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
            nisa.nc_matmul(dst=acc, stationary=lhs_tiles[k], moving=r)  # accumulate=None
        res = nl.ndarray((M, 512), dtype=lhsT.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out[:, n * 512:(n + 1) * 512], src=res)
    return out


@nki.jit
def scaled_exp_rowsum(x, bias):
    """exp(2 x + bias[p]) and its row sums; (x * 3 - 1) through a two-op tensor_scalar; the
    row max through tensor_reduce. bias is 1-D: its slice goes on the partitions."""
    P, F = x.shape
    e_out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    s_out = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    m_out = nl.ndarray((P, 1), dtype=x.dtype, buffer=nl.shared_hbm)
    a_out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    xt = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=xt, src=x)
    bt = nl.ndarray((P, 1), dtype=bias.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=bt, src=bias[0:P])
    e = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    sums = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=e, op=np.exp, data=xt, bias=bt, scale=2.0, reduce_op=nl.add,
                    reduce_res=sums)
    mx = nl.ndarray((P, 1), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=mx, op=nl.max, data=xt, axis=1)
    af = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=af, data=xt, op0=nl.multiply, operand0=3.0, op1=nl.subtract,
                       operand1=1.0)
    nisa.dma_copy(dst=e_out, src=e)
    nisa.dma_copy(dst=s_out, src=sums)
    nisa.dma_copy(dst=m_out, src=mx)
    nisa.dma_copy(dst=a_out, src=af)
    return e_out, s_out, m_out, a_out


@nki.jit
def layer_stats_scan(x, a):
    """bn_stats per 256-column chunk into one stats tile, bn_aggr; a decayed scan of x whose
    start values are the row means (a [P, 1] initial tile)."""
    P, F = x.shape
    mv_out = nl.ndarray((P, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    s_out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=xt, src=x)
    at = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=at, src=a)
    n = F // 256
    stats = nl.ndarray((P, 6 * n), dtype=nl.float32, buffer=nl.sbuf)
    for j in nl.affine_range(n):
        nisa.bn_stats(dst=stats[:, j * 6:(j + 1) * 6], data=xt[:, j * 256:(j + 1) * 256])
    mv = nl.ndarray((P, 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.bn_aggr(dst=mv, data=stats)
    sc = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor_scan(dst=sc, data0=at, data1=xt, initial=mv[:, 0:1], op0=nl.multiply,
                            op1=nl.add)
    nisa.dma_copy(dst=mv_out, src=mv)
    nisa.dma_copy(dst=s_out, src=sc)
    return mv_out, s_out


@nki.jit
def quadrant_ops(x):
    """Engine ops on partition slices at the documented start partitions: 32 partitions at
    32, 64 at 64; a cross-half copy from partitions 64-127 to 0-63."""
    out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    r = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=r[0:32, :], data=t[0:32, :], op0=nl.add, operand0=1.0)
    nisa.tensor_scalar(dst=r[32:64, :], data=t[32:64, :], op0=nl.multiply, operand0=2.0)
    nisa.tensor_copy(dst=r[64:128, :], src=t[0:64, :])
    nisa.dma_copy(dst=out, src=r)
    return out


@nki.jit
def broadcast_middle_dim(x, c):
    """A stride-0 .ap() dim in the middle of an operand (c broadcast over H): not a
    per-partition column, so the view is gathered before the multiply."""
    P, H, S = x.shape
    out = nl.ndarray((P, H, S), dtype=x.dtype, buffer=nl.shared_hbm)
    xt = nl.ndarray((P, H, S), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=xt, src=x)
    ct = nl.ndarray((P, S), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=ct, src=c)
    r = nl.ndarray((P, H, S), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(r, xt, ct.ap([[S, P], [0, H], [1, S]]), nl.multiply)
    nisa.dma_copy(dst=out, src=r)
    return out


@nki.jit
def bad_start_partition(x):
    out = nl.ndarray((16, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    r = nl.ndarray((16, 64), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=r, src=t[16:32, :])
    nisa.dma_copy(dst=out, src=r)
    return out


@nki.jit
def too_many_partitions(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((256, 4), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return out


def test_import_hook_resolves_to_neuronsim():
    import neuronsim.nki

    assert nki is neuronsim.nki
    assert nl is neuronsim.nki.language and nisa is neuronsim.nki.isa


def test_import_hook_can_be_turned_off():
    env = dict(os.environ, NEURONSIM_NKI_IMPORT="0")
    code = "import neuronsim\ntry:\n import nki\nexcept ImportError:\n print('off')\n"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert "off" in p.stdout, p.stderr


def test_tensor_add_numpy_in_numpy_out():
    a = np.random.rand(256, 512).astype(np.float32)
    b = np.random.rand(256, 512).astype(np.float32)
    out = add_rows(a, b)
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, a + b, rtol=1e-6)


def test_simulate_and_platform_target():
    a = np.random.rand(128, 256).astype(np.float32)
    out = nki.simulate(add_rows)(a, a)
    np.testing.assert_allclose(out, 2 * a, rtol=1e-6)
    k = nki.jit(add_rows.fn, platform_target="trn1")
    k(a, a)
    assert k.last_stats["target"] == "trn1"


def test_matmul_python_lists_and_psum_accumulation():
    torch.manual_seed(0)
    lhsT = torch.randn(256, 128)
    rhs = torch.randn(256, 1024)
    out = matmul_lists(lhsT, rhs)
    torch.testing.assert_close(out, lhsT.T @ rhs, rtol=1e-4, atol=1e-4)
    b = matmul_lists(lhsT.to(torch.bfloat16), rhs.to(torch.bfloat16))
    ref = lhsT.to(torch.bfloat16).float().T @ rhs.to(torch.bfloat16).float()
    torch.testing.assert_close(b.float(), ref, rtol=2e-2, atol=3e-2)


def test_activation_reduce_tensor_scalar_and_1d_partitions():
    x = np.random.rand(128, 64).astype(np.float32)
    bias = np.random.rand(200).astype(np.float32)
    e, s, m, a = scaled_exp_rowsum(x, bias)
    ref = np.exp(2 * x + bias[:128, None])
    np.testing.assert_allclose(e, ref, rtol=1e-5)
    np.testing.assert_allclose(s[:, 0], ref.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(m[:, 0], x.max(axis=1), rtol=0)
    np.testing.assert_allclose(a, x * 3 - 1, rtol=1e-6, atol=1e-6)


def test_benchmark_reports_simulated_latency():
    b = nki.benchmark(warmup=1, iters=3)(add_rows)
    b(nt.tensor[[256, 512], nl.float32], nt.tensor[[256, 512], nl.float32])
    lat = b.benchmark_result.nc_latency
    assert lat.get_latency_percentile(50) == lat.get_latency_percentile(99) > 0
    assert abs(lat.get_latency_percentile(50) - b.benchmark_result.stats["sim_ns"] / 1e3) < 1e-6


def test_error_names_the_kernel_line():
    x = np.zeros((256, 4), dtype=np.float32)
    with pytest.raises(neuronsim.NeuronCompileError, match=r"test_nki_dst_first.py:\d+ .*"
                       r"256 partitions"):
        too_many_partitions(x)


def test_nki_kernel_as_torch_op_in_compiled_graph():
    from neuronsim import kernels

    op = kernels.torch_op("nkitest::add_rows", add_rows)

    def f(a, b):
        return torch.relu(op(a, b)) * 2.0

    a, b = torch.randn(128, 256), torch.randn(128, 256)
    compiled = torch.compile(f, backend="neuron", fullgraph=True)
    out = compiled(a, b).cpu()
    torch.testing.assert_close(out, torch.relu(a + b) * 2.0, rtol=1e-6, atol=1e-6)


def test_bn_stats_bn_aggr_and_scan_from_an_initial_tile():
    x = np.random.randn(64, 768).astype(np.float32)
    a = np.random.uniform(0.5, 1.0, (64, 768)).astype(np.float32)
    mv, sc = layer_stats_scan(x, a)
    np.testing.assert_allclose(mv[:, 0], x.mean(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mv[:, 1], x.var(axis=1), rtol=1e-4)
    r = x.mean(axis=1)
    ref = np.zeros_like(x)
    for i in range(x.shape[1]):
        r = a[:, i] * r + x[:, i]
        ref[:, i] = r
    np.testing.assert_allclose(sc, ref, rtol=1e-4, atol=1e-4)


def test_engine_access_at_quadrant_start_partitions():
    x = np.random.rand(128, 64).astype(np.float32)
    out = quadrant_ops(x)
    np.testing.assert_allclose(out[0:32], x[0:32] + 1, rtol=1e-6)
    np.testing.assert_allclose(out[32:64], x[32:64] * 2, rtol=1e-6)
    np.testing.assert_allclose(out[64:128], x[0:64], rtol=0)
    with pytest.raises(neuronsim.NeuronCompileError, match=r"test_nki_dst_first.py:\d+ .*"
                       r"16 partitions starts at partition 0, 32, 64, 96, not 16"):
        bad_start_partition(x)


def test_ap_broadcast_of_a_middle_dim_and_positional_op():
    x = np.random.rand(32, 3, 16).astype(np.float32)
    c = np.random.rand(32, 16).astype(np.float32)
    np.testing.assert_allclose(broadcast_middle_dim(x, c), x * c[:, None, :], rtol=1e-6)


@nki.jit
def add_one_into(x, out):
    """Writes half of an argument (NKI kernels take their outputs as arguments)."""
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
    nisa.dma_copy(dst=out[0:64, :], src=t[0:64, :])
    back = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=back, src=out)  # reads its own write and the untouched half
    total = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=total, src=back)
    return total


def test_kernel_writes_an_argument_in_place():
    x = np.random.randn(128, 32).astype(np.float32)
    out = np.full((128, 32), 7.0, np.float32)
    total = add_one_into(x, out)
    want = np.concatenate([x[:64] + 1, np.full((64, 32), 7.0, np.float32)])
    np.testing.assert_array_equal(total, want)  # the kernel saw its write and the old half
    np.testing.assert_array_equal(out, want)    # the caller's array holds the final value
    xt, ot = torch.from_numpy(x), torch.full((128, 32), 7.0)
    add_one_into(xt, ot)
    torch.testing.assert_close(ot, torch.from_numpy(want), rtol=0, atol=0)


def test_kernel_writing_an_argument_is_an_error_inside_compiled_graphs():
    from neuronsim import kernels
    from neuronsim.errors import NeuronCompileError

    op = kernels.torch_op("nkitest::add_one_into", add_one_into)
    compiled = torch.compile(lambda a, b: op(a, b) * 2.0, backend="neuron", fullgraph=True)
    with pytest.raises(NeuronCompileError) as info:
        compiled(torch.randn(128, 32), torch.zeros(128, 32))
    assert "writes its argument(s) [1] in place: such kernels run eagerly" in str(info.value)
