"""Authoring errors of custom tile kernels: each names the kernel's source line."""

from __future__ import annotations

import pytest
import torch

import neuronsim
from neuronsim import kernels
from neuronsim.kernels import isa as nisa
from neuronsim.kernels import language as nl


def line_of(marker: str) -> str:
    """'test_kernels_errors.py:N' for the line of this file that carries `# <marker>`."""
    with open(__file__) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# {marker}"):
                return f"test_kernels_errors.py:{n}"
    raise AssertionError(marker)


def _raises(fn, *args, error=neuronsim.NeuronCompileError, match=""):
    with pytest.raises(error, match=match) as info:
        fn(*args)
    return str(info.value)


def test_tile_over_128_partitions():
    @kernels.jit
    def too_tall(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x[0:256, :])  # MARK_PARTITIONS
        nl.store(out, value=t)
        return out

    message = _raises(too_tall, torch.randn(256, 64), error=kernels.KernelError,
                      match="a tile of 256 partitions: at most 128")
    assert message.startswith(line_of("MARK_PARTITIONS") + " in kernel 'too_tall'")


def test_sbuf_over_capacity_from_the_allocation():
    @kernels.jit
    def hoard(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        a = nl.load(x)
        b = nl.exp(a)  # MARK_SBUF
        nl.store(out, value=nl.add(a, b))
        return out

    # Two [128, 30000] fp32 tiles (117 KiB per partition each) are live together.
    message = _raises(hoard, torch.randn(128, 30000), match="sbuf overflow")
    assert line_of("MARK_SBUF") + " (hoard): sbuf overflow: a tile of 120000 bytes" in message


def test_psum_over_capacity_from_the_allocation():
    @kernels.jit
    def nine_banks(a, b):
        out = nl.ndarray((128, 9 * 512), dtype=nl.float32, buffer=nl.shared_hbm)
        at, bt = nl.load(a), nl.load(b)
        accs = [nisa.nc_matmul(at, bt) for _ in range(9)]  # MARK_PSUM
        for i, acc in enumerate(accs):
            nl.store(out[:, i * 512:(i + 1) * 512], value=nl.copy(acc))
        return out

    message = _raises(nine_banks, torch.randn(128, 128), torch.randn(128, 512),
                      match="psum overflow")
    assert line_of("MARK_PSUM") + " (nine_banks): psum overflow" in message


def test_accumulation_group_spanning_psum_banks():
    @kernels.jit
    def wide(a, b):
        out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nisa.nc_matmul(nl.load(a), nl.load(b))  # MARK_BANKS
        nl.store(out, value=nl.copy(acc))
        return out

    message = _raises(wide, torch.randn(128, 128), torch.randn(128, 1024),
                      error=kernels.KernelError, match="spans 2 PSUM banks")
    assert message.startswith(line_of("MARK_BANKS"))

    # A PSUM tile may span banks (as NKI's); a matmul result in it must stay in one bank.
    @kernels.jit
    def across(a, b):
        out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
        at, bt = nl.load(a), nl.load(b)
        acc = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.psum)
        acc[:, 0:512] = nisa.nc_matmul(at, bt)
        acc[:, 256:768] = nisa.nc_matmul(at, bt)  # MARK_BANK_TILE
        nl.store(out, value=nl.copy(acc))
        return out

    message = _raises(across, torch.randn(128, 128), torch.randn(128, 512),
                      error=kernels.KernelError,
                      match=r"nc_matmul into columns \[256, 768\) of a PSUM tile of 1024 fp32 "
                      "columns: a matmul's result stays in one PSUM bank")
    assert message.startswith(line_of("MARK_BANK_TILE"))


def test_dtype_an_engine_does_not_take():
    @kernels.jit
    def int_matmul(a, b):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nisa.nc_matmul(nl.load(a), nl.load(b))  # MARK_INT_MATMUL
        nl.store(out, value=nl.copy(acc))
        return out

    a = torch.randint(0, 5, (128, 128), dtype=torch.int32)
    message = _raises(int_matmul, a, a, error=kernels.KernelError,
                      match="the Tensor engine does not take int32 tiles")
    assert message.startswith(line_of("MARK_INT_MATMUL"))

    @kernels.jit
    def int_exp(x):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.exp(nl.load(x)))  # MARK_INT_EXP
        return out

    message = _raises(int_exp, a, error=kernels.KernelError,
                      match="the Scalar engine does not take int32 tiles")
    assert message.startswith(line_of("MARK_INT_EXP"))

    @kernels.jit
    def bf16_psum(a, b):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.psum)
        acc += nisa.nc_matmul(nl.load(a), nl.load(b))  # MARK_BF16_PSUM
        nl.store(out, value=nl.copy(acc, dtype=nl.float32))
        return out

    message = _raises(bf16_psum, torch.randn(128, 128), torch.randn(128, 128),
                      error=kernels.KernelError, match="nc_matmul writes fp32 PSUM tiles")
    assert message.startswith(line_of("MARK_BF16_PSUM"))


def test_reading_a_tile_before_it_is_written():
    @kernels.jit
    def unwritten(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nl.store(out, value=nl.exp(t))  # MARK_UNWRITTEN
        return out

    message = _raises(unwritten, torch.randn(128, 64), error=kernels.KernelError,
                      match="reads the SBUF tile allocated at line .* before anything writes it")
    assert message.startswith(line_of("MARK_UNWRITTEN"))


def test_partly_written_tile_is_caught_by_the_simulator():
    # Only columns 0..31 are written: the tracer sees a write, the simulator's check of
    # SBUF bytes never written names the instruction and the kernel's line.
    @kernels.jit
    def half(x):
        out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
        t[:, 0:32] = nl.load(x)
        nl.store(out, value=t)  # MARK_PARTIAL
        return out

    message = _raises(half, torch.randn(128, 32), error=neuronsim.NeuronRuntimeError,
                      match="that no instruction wrote")
    assert f"from half at {line_of('MARK_PARTIAL')}" in message


def test_loop_variable_misuse_and_scope_errors():
    @kernels.jit
    def python_int(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(2):
            for _ in range(i):  # MARK_INT
                pass
        nl.store(out, value=nl.load(x))
        return out

    message = _raises(python_int, torch.randn(128, 8), error=kernels.KernelError,
                      match="symbolic")
    assert message.startswith(line_of("MARK_INT"))

    @kernels.jit
    def escaped(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(1):
            t = nl.load(x)
        nl.store(out, value=t)  # MARK_ESCAPED
        return out

    message = _raises(escaped, torch.randn(128, 8), error=kernels.KernelError,
                      match="lives in a loop body that has ended")
    assert message.startswith(line_of("MARK_ESCAPED"))


def test_errors_inside_torch_compile_name_the_kernel_line():
    @kernels.jit
    def too_tall_op(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.exp(nl.load(x)))  # MARK_COMPILED
        return out

    op = kernels.torch_op("neuronsim_test_errors::too_tall", too_tall_op)
    with pytest.raises(Exception, match="at most 128") as info:
        torch.compile(lambda x: op(x) * 2, backend="neuron", fullgraph=True)(torch.randn(200, 8))
    assert line_of("MARK_COMPILED") in str(info.value)


def test_engine_that_does_not_run_the_instruction():
    @kernels.jit
    def on_scalar(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        y = nisa.tensor_tensor(t, t, op=nl.add, engine=nisa.engine.scalar)  # MARK_ENGINE
        nl.store(out, value=y)
        return out

    message = _raises(on_scalar, torch.randn(128, 8), error=kernels.KernelError,
                      match="tensor_tensor runs on the vector or gpsimd engine, not 'scalar'")
    assert message.startswith(line_of("MARK_ENGINE"))


def test_gpsimd_reading_psum():
    @kernels.jit
    def psum_on_gpsimd(a, b):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        s = nisa.nc_matmul(nl.load(a), nl.load(b))  # PSUM
        t = nisa.tensor_scalar(s, nl.multiply, 2.0, engine=nisa.engine.gpsimd)  # MARK_GPSIMD
        nl.store(out, value=t)
        return out

    message = _raises(psum_on_gpsimd, torch.randn(128, 128), torch.randn(128, 128),
                      error=kernels.KernelError, match="GpSimd cannot access PSUM")
    assert message.startswith(line_of("MARK_GPSIMD") + " in kernel 'psum_on_gpsimd'")
