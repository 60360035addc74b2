"""Custom tile kernels (neuronsim.kernels): the example kernels against eager PyTorch, eagerly
and inside torch.compile(backend="neuron", fullgraph=True), their IR, report and trace."""

from __future__ import annotations

import json
import os
import sys

import pytest
import torch
import torch.nn.functional as F

import neuronsim
from neuronsim import kernels
from neuronsim.kernels import isa as nisa
from neuronsim.kernels import language as nl

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "python", "examples", "kernels")
sys.path.insert(0, os.path.abspath(EXAMPLES))

import flash_attention as fa  # noqa: E402
import matmul as mm  # noqa: E402
import rmsnorm as rn  # noqa: E402
import softmax as sm  # noqa: E402

# fp32: the kernels compute in fp32 like eager; bf16: inputs and outputs in bf16, compared
# with the fp32 result of the same bf16 inputs (one bf16 rounding of the output, plus the bf16
# intermediates a kernel chooses, such as P in flash attention).
TOL = {torch.float32: dict(atol=1e-4, rtol=1e-4), torch.bfloat16: dict(atol=3e-2, rtol=2e-2)}


def _close(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype) -> None:
    assert actual.dtype == dtype
    torch.testing.assert_close(actual.float(), expected.float(), **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_matmul_kernel_matches_eager(dtype):
    a_t = torch.randn(384, 256).to(dtype)
    b = torch.randn(384, 1024).to(dtype)
    c = mm.matmul_kernel(a_t, b)
    _close(c, a_t.float().T @ b.float(), dtype)
    stats = neuronsim.last_run_stats()
    assert stats["matmuls"] == 3 * 2 * 2  # K tiles x row blocks x column blocks
    assert stats["flops"] == 2 * 384 * 256 * 1024


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rmsnorm_kernel_matches_eager(dtype):
    x = torch.randn(300, 192).to(dtype)  # a partial last tile of 44 rows
    w = torch.randn(192).to(dtype)
    y = rn.rmsnorm_kernel(x, w, 1e-5)
    xf = x.float()
    expected = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * w.float()
    _close(y, expected, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_softmax_kernel_matches_eager(dtype):
    x = (torch.randn(200, 1000) * 4).to(dtype)
    _close(sm.softmax_kernel(x), torch.softmax(x.float(), -1), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_flash_attention_kernel_matches_eager(dtype):
    q, k, v = (torch.randn(2, 640, 64).to(dtype) for _ in range(3))  # 512- and 128-key blocks
    out = fa.flash_attention(q, k, v)
    expected = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
    _close(out, expected, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_flash_attention_kernel_rescales_across_key_units(dtype):
    # Units of 256 keys: rows of up to 5 units, the running max growing between them (the
    # later keys score higher), the accumulator rescaled in PSUM each time; head dim 128.
    q, k, v = (torch.randn(1, 1280, 128) for _ in range(3))
    k = k + torch.linspace(0, 3, 1280).unsqueeze(-1) * q.mean(1, keepdim=True)
    q, k, v = (t.to(dtype) for t in (q, k, v))
    out = fa.flash_attention_kernel(q.transpose(1, 2).contiguous(),
                                    k.transpose(1, 2).contiguous(), v, 256)
    expected = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
    _close(out, expected, dtype)


def test_activation_with_scale_and_bias_tiles_and_row_sums():
    @kernels.jit
    def act(x, b, s):
        out = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
        sums = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((x.shape[0], 2), dtype=nl.float32, buffer=nl.sbuf)
        y = nisa.activation(op=nl.exp, data=nl.load(x), bias=nl.load(b), scale=nl.load(s),
                            reduce_op=nl.add, reduce_res=acc[:, 1:2], dtype=nl.bfloat16)
        nl.store(out, value=y)
        nl.store(sums, value=acc[:, 1:2])
        return out, sums

    x, b, s = torch.randn(128, 300), torch.randn(128, 1), torch.rand(128, 1)
    assert 'ntile.activation exp' in act.ir(x, b, s) and ' sum %' in act.ir(x, b, s)
    y, sums = act(x, b, s)
    expected = torch.exp(x * s + b)
    torch.testing.assert_close(y.float(), expected, atol=0, rtol=1e-2)
    # the row sums of the fp32 results (before the bf16 rounding of the output)
    torch.testing.assert_close(sums, expected.sum(1, keepdim=True), atol=1e-3, rtol=1e-5)
    with pytest.raises(kernels.KernelError, match=r"a float or a \[128, 1\] tile"):
        act.trace(x, torch.randn(128, 2), s)
    with pytest.raises(kernels.KernelError, match="reduces its rows with nl.add only"):

        @kernels.jit
        def bad(x):
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            acc = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
            nl.store(out, value=nisa.activation(op=nl.exp, data=nl.load(x),
                                                reduce_op=nl.maximum, reduce_res=acc))
            return out

        bad(x)


def test_psum_tile_over_two_banks_and_a_chosen_vector_engine_stays():
    @kernels.jit
    def two_banks(a, b):
        out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
        at, bt = nl.load(a), nl.load(b)
        acc = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.psum)
        acc[:, 0:512] = nisa.nc_matmul(at, bt[:, 0:512])
        acc[:, 512:1024] = nisa.nc_matmul(at, bt[:, 512:1024])
        acc[:, 640:768] += nisa.nc_matmul(at, bt[:, 0:128])  # accumulates (written before)
        nl.store(out, value=nisa.tensor_copy(acc, engine=nisa.engine.vector))
        return out

    a, b = torch.randn(128, 128), torch.randn(128, 1024)
    assert 'ntile.engine = "vector"' in two_banks.ir(a, b)
    expected = a.T @ b
    expected[:, 640:768] += a.T @ b[:, 0:128]
    torch.testing.assert_close(two_banks(a, b), expected, atol=1e-3, rtol=1e-4)
    busy = neuronsim.last_run_stats()["engine_busy_ns"]
    assert busy["vector"] > 0 and busy["scalar"] == 0 and busy["gpsimd"] == 0


def test_kernel_op_is_a_torch_op_with_fake_shapes():
    x = torch.randn(130, 64)
    w = torch.randn(64)
    y = torch.ops.neuronsim_examples.rmsnorm(x, w, 1e-6)  # eager: on the simulator
    torch.testing.assert_close(y, rn.rmsnorm_reference(x, w), atol=1e-5, rtol=1e-5)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        fake = torch.ops.neuronsim_examples.rmsnorm(torch.empty(130, 64), torch.empty(64), 1e-6)
    assert fake.shape == (130, 64) and fake.dtype == torch.float32


class Block(torch.nn.Module):
    """A GPT-2-style block (pre-norm, causal attention, GELU MLP) with RMSNorm; the norm and
    the attention run as custom kernels or as PyTorch ops."""

    def __init__(self, d: int = 128, heads: int = 2, norm_kernel: bool = False,
                 attention_kernel: bool = False) -> None:
        super().__init__()
        self.d, self.heads = d, heads
        self.norm_kernel, self.attention_kernel = norm_kernel, attention_kernel
        self.w1 = torch.nn.Parameter(torch.randn(d) * 0.5 + 1)
        self.w2 = torch.nn.Parameter(torch.randn(d) * 0.5 + 1)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.fc1 = torch.nn.Linear(d, 4 * d)
        self.fc2 = torch.nn.Linear(4 * d, d)

    def norm(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        if self.norm_kernel:
            return rn.rmsnorm(x.reshape(-1, self.d), w, 1e-6).reshape(x.shape)
        return rn.rmsnorm_reference(x, w, 1e-6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm(x, self.w1)).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        if self.attention_kernel:
            a = fa.flash_attention(q, k, v)
        else:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.norm(x, self.w2))))


@pytest.mark.parametrize("norm_kernel,attention_kernel", [(True, False), (False, True),
                                                          (True, True)])
def test_gpt2_block_with_kernels_compiles_fullgraph(norm_kernel, attention_kernel):
    torch.manual_seed(1)
    reference = Block()
    block = Block(norm_kernel=norm_kernel, attention_kernel=attention_kernel)
    block.load_state_dict(reference.state_dict())
    x = torch.randn(2, 128, 128)
    compiled = torch.compile(block, backend="neuron", fullgraph=True, dynamic=False)
    with torch.no_grad():
        expected = reference(x)
        out = compiled(x)
    torch.testing.assert_close(out, expected, atol=2e-4, rtol=2e-4)
    assert neuronsim.last_run_stats()["graph"].startswith("forward")


def test_kernel_ir_is_ntile_loops_with_source_lines(tmp_path, monkeypatch):
    ir = sm.softmax_kernel.ir(torch.empty(300, 64))
    assert "ntile.loop iv0 to 2 {" in ir
    assert 'loc("softmax_kernel"("softmax.py":' in ir
    # Inside a compiled graph the kernel's loop nest is the graph's (dump_dir shows it).
    monkeypatch.setenv("NEURONSIM_DUMP_DIR", str(tmp_path))
    sm.softmax_kernel(torch.randn(300, 64))
    (folder,) = os.listdir(tmp_path)
    ntile = (tmp_path / folder / "2-ntile.mlir").read_text()
    assert "ntile.reduce max" in ntile and "ntile.activation exp" in ntile


def test_report_and_trace_name_kernel_lines(tmp_path, monkeypatch):
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("NEURONSIM_PROFILE", str(trace))
    rn.rmsnorm_kernel(torch.randn(256, 128), torch.randn(128))
    stats = neuronsim.last_run_stats()
    origins = list(stats["origin_busy_ns"])
    assert any(o.startswith("rmsnorm_kernel at rmsnorm.py:") for o in origins), origins
    text = neuronsim.report(file=open(os.devnull, "w"))
    assert "rmsnorm_kernel at rmsnorm.py:" in text
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert any("rmsnorm.py:" in str(e.get("args", {}).get("origin", "")) for e in events)


def test_kernel_backward_through_torch_library():
    @kernels.jit
    def scale_kernel(x, factor: float):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(x.shape[0] // 128):
            t = nl.load(x[nl.ds(i * 128, 128), :])
            nl.store(out[nl.ds(i * 128, 128), :], value=nisa.tensor_scalar(t, nl.multiply,
                                                                           factor))
        return out

    def setup(ctx, inputs, output):
        ctx.factor = inputs[1]

    def backward(ctx, grad):
        return scale(grad, ctx.factor), None

    scale = kernels.torch_op("neuronsim_test::scale", scale_kernel, backward=backward,
                             setup_context=setup)
    x = torch.randn(256, 32, requires_grad=True)
    y = torch.compile(lambda t: scale(t, 3.0).sum(), backend="neuron", fullgraph=True)(x)
    y.backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 3.0))
    torch.testing.assert_close(y, (x * 3).sum(), atol=1e-3, rtol=1e-5)


def test_engine_choice_moves_work_to_gpsimd_and_scalar():
    @kernels.jit
    def spread(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        a = nisa.tensor_scalar(t, nl.multiply, 2.0, engine=nisa.engine.gpsimd)
        s = nisa.tensor_reduce(nl.add, a, axis=1, engine=nisa.engine.gpsimd)
        b = nisa.tensor_tensor(a, s, op=nl.subtract, engine=nisa.engine.gpsimd)
        nl.store(out, value=nisa.tensor_copy(b, engine=nisa.engine.scalar))
        return out

    x = torch.randn(128, 256)
    y = spread(x)
    torch.testing.assert_close(y, 2 * x - (2 * x).sum(1, keepdim=True), atol=1e-4, rtol=1e-5)
    busy = neuronsim.last_run_stats()["engine_busy_ns"]
    assert busy["gpsimd"] > 0 and busy["scalar"] > 0 and busy["vector"] == 0


def test_assignment_redirects_fresh_results_and_converts_loads():
    @kernels.jit
    def assign(x):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        t[...] = nl.load(x)  # a bf16 load into an fp32 tile: a converting copy
        u = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        u[:, 0:64] = nl.exp(t[:, 0:64])  # the activation writes u's columns directly
        u[:, 64:128] = t[:, 64:128]  # a copy
        nl.store(out, value=u)
        return out

    x = torch.randn(128, 128).to(torch.bfloat16)
    ir = assign.ir(x)
    assert ir.count("ntile.copy") == 2 and ir.count("ntile.activation exp") == 1
    expected = torch.cat([x[:, :64].float().exp(), x[:, 64:].float()], 1)
    torch.testing.assert_close(assign(x), expected, atol=1e-5, rtol=1e-5)


def test_kernels_on_neuron_device_tensors():
    x, w = torch.randn(256, 128), torch.randn(128)
    expected = rn.rmsnorm_reference(x, w)
    xd, wd = x.to("neuron"), w.to("neuron")
    for y in (rn.rmsnorm_kernel(xd, wd), torch.ops.neuronsim_examples.rmsnorm(xd, wd, 1e-6)):
        assert y.device.type == "neuron"
        torch.testing.assert_close(y.cpu(), expected, atol=1e-5, rtol=1e-5)


def test_matmul_transpose_iota_and_transposed_load():
    @kernels.jit
    def misc(x, y):
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        out2 = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        out3 = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        out4 = nl.ndarray((64, 96), dtype=nl.float32, buffer=nl.shared_hbm)
        r = nl.matmul(nl.load(x), nl.load(y))  # x @ y: x transposed on the Tensor engine
        nl.store(out, value=nl.copy(r))
        nl.store(out2, value=nl.copy(nl.transpose(nl.load(x[:, 0:64]))))
        i_p, i_f = nl.mgrid[0:128, 0:64]
        nl.store(out3, value=nisa.iota(i_p * 64 + i_f, dtype=nl.float32, shape=(128, 64)) + 1.0)
        nl.store(out4, value=nl.load_transpose2d(y))
        return out, out2, out3, out4

    x, y = torch.randn(128, 96), torch.randn(96, 64)
    a, b, c, d = misc(x, y)
    torch.testing.assert_close(a, x @ y, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(b, x[:, :64].T.contiguous())
    torch.testing.assert_close(c, torch.arange(128 * 64, dtype=torch.float32).reshape(128, 64) + 1)
    torch.testing.assert_close(d, y.T.contiguous())
