"""The `neuron` device: tensors in simulated HBM, eager ops on the simulator, the torch.neuron
module, torch.accelerator, memory and transfer accounting, and its errors."""

import copy
import warnings

import pytest
import torch

import neuronsim
from neuronsim.device import eager

DEV = torch.device("neuron:0")


@pytest.fixture(autouse=True)
def _fresh():
    neuronsim.clear_op_tracking()
    yield


def test_registered_as_privateuse1_and_accelerator():
    assert torch._C._get_privateuse1_backend_name() == "neuron"
    assert torch.accelerator.current_accelerator() == torch.device("neuron")
    assert torch.accelerator.device_count() == torch.neuron.device_count() == 1
    assert torch.neuron.is_available()
    assert torch.neuron.current_device() == 0
    x = torch.arange(6.0).neuron()
    assert x.is_neuron and x.device == DEV
    assert torch.equal(x.cpu(), torch.arange(6.0))


def test_eager_ops_match_cpu():
    torch.manual_seed(0)
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    na, nb = a.to(DEV), b.to(DEV)
    torch.testing.assert_close((na @ nb).cpu(), a @ b, rtol=1e-4, atol=1e-5)
    softmax = torch.softmax(na, -1).cpu()
    torch.testing.assert_close(softmax, torch.softmax(a, -1), rtol=1e-4, atol=1e-6)
    ln = torch.nn.functional.layer_norm(na, (16,)).cpu()
    torch.testing.assert_close(ln, torch.nn.functional.layer_norm(a, (16,)), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close((na * 2 + 1).sum(0).cpu(), (a * 2 + 1).sum(0), rtol=1e-4, atol=1e-5)
    assert neuronsim.get_fallback_ops() == {}


def test_in_place_and_out_forms_write_device_memory():
    a = torch.randn(4, 5)
    na = a.to(DEV)
    same = na.mul_(3)
    assert same is na
    torch.testing.assert_close(na.cpu(), a * 3)
    out = torch.empty(0, device=DEV)
    torch.add(na, 1, out=out)  # out= of the wrong size is resized, as on the CPU
    torch.testing.assert_close(out.cpu(), a * 3 + 1)
    positions = torch.arange(7, device=DEV)
    assert positions.device == DEV and positions.cpu().tolist() == list(range(7))


def test_views_stay_views():
    a = torch.zeros(4, 6)
    na = a.to(DEV)
    t = na.t()  # a view PyTorch makes from strides alone
    t[1].fill_(5)  # writes through to na
    windows = na.unfold(1, 2, 2)  # a view the CPU kernel computes, through the fallback path
    assert windows.untyped_storage().data_ptr() == na.untyped_storage().data_ptr()
    windows.add_(1)
    expected = a.clone()
    expected.t()[1].fill_(5)
    expected.unfold(1, 2, 2).add_(1)
    assert torch.equal(na.cpu(), expected)
    assert eager.STATS.views > 0


def test_unsupported_op_falls_back_once_with_warning_and_count():
    x = torch.tensor([3.0, 1.0, 2.0])
    nx = x.to(DEV)
    with pytest.warns(UserWarning, match=r"neuron: aten::_logcumsumexp runs on the CPU"):
        first = torch.logcumsumexp(nx, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one warning per op, not per call
        second = torch.logcumsumexp(nx, 0)
    assert first.device == DEV and torch.equal(first.cpu(), torch.logcumsumexp(x, 0))
    assert torch.equal(second.cpu(), first.cpu())
    (name,) = neuronsim.get_fallback_ops()
    assert name == "aten._logcumsumexp.default" and neuronsim.get_fallback_ops()[name] == 2


def test_random_ops_follow_the_device_generator():
    torch.neuron.manual_seed(123)
    a = torch.randn(5, device=DEV)
    torch.neuron.manual_seed(123)
    b = torch.randn(5, device=DEV)
    assert torch.equal(a.cpu(), b.cpu())
    torch.manual_seed(7)  # seeds the device too, as for CUDA
    c = torch.rand(3, device=DEV)
    torch.manual_seed(7)
    assert torch.equal(c.cpu(), torch.rand(3, device=DEV).cpu())


def test_cross_device_op_is_the_usual_error():
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device, "
                       r"but found at least two devices, neuron:0 and cpu"):
        torch.ones(3, device=DEV) + torch.ones(3)
    # A 0-dim CPU tensor is a scalar, as for CUDA.
    assert (torch.ones(3, device=DEV) * torch.tensor(2.0)).cpu().tolist() == [2.0, 2.0, 2.0]


def test_unsupported_dtype_is_a_type_error():
    with pytest.raises(TypeError, match=r"neuron: ComplexHalf tensors are not supported"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch: "ComplexHalf support is experimental"
        torch.zeros(2, dtype=torch.complex32).to(DEV)
    with pytest.raises(TypeError, match=r"neuron: Bits8 tensors are not supported"):
        torch.empty(2, dtype=torch.bits8, device=DEV)


def test_float64_is_held_exactly_and_computed_as_float32_on_the_device():
    # TorchNeuron's eager float64: computed as float32 on the device, not on the CPU.
    x = torch.tensor([1.0 + 2.0**-40, 3.0], dtype=torch.float64)
    nx = x.to(DEV)
    assert torch.equal(nx.cpu(), x)  # held exactly in device memory
    y = nx * 1.0
    assert y.dtype == torch.float64 and y.device == DEV
    assert torch.equal(y.cpu(), x.float().double())  # 1 + 2**-40 rounds as in float32
    assert neuronsim.get_fallback_ops() == {}
    assert "tensor([" in repr(torch.randn(3, device=DEV))  # printing uses float64 internally


def test_out_of_memory_names_the_sizes():
    before = torch.neuron.memory_allocated()
    capacity = torch.neuron.mem_get_info()[1]
    with pytest.raises(torch.OutOfMemoryError, match=r"out of simulated HBM on neuron:0: tried to "
                       r"allocate 16\.00 GiB .* of the 12\.00 GiB the target has per core"):
        torch.empty(16 << 30, dtype=torch.uint8, device=DEV)
    assert capacity == 12 << 30  # trn2: 96 GiB per chip / 8 cores
    assert torch.neuron.memory_allocated() == before


def test_memory_stats_follow_tensors():
    torch.neuron.reset_peak_memory_stats()
    before = torch.neuron.memory_allocated()
    x = torch.empty(1 << 18, device=DEV)  # 1 MiB
    assert torch.neuron.memory_allocated() == before + (1 << 20)
    del x
    assert torch.neuron.memory_allocated() == before
    assert torch.neuron.max_memory_allocated() >= before + (1 << 20)
    torch.neuron.reset_peak_memory_stats()
    assert torch.neuron.max_memory_allocated() == before
    torch.neuron.empty_cache()


def test_host_transfers_are_timed_and_counted():
    stats = torch.neuron.memory_stats()
    start = torch.Event(device="neuron", enable_timing=True)
    end = torch.Event(device="neuron", enable_timing=True)
    start.record()
    x = torch.ones(1 << 20).to(DEV)  # 4 MiB
    end.record()
    after = torch.neuron.memory_stats()
    assert after["host_to_device_count"] == stats["host_to_device_count"] + 1
    assert after["host_to_device_bytes"] == stats["host_to_device_bytes"] + (4 << 20)
    copy_ns = after["host_to_device_ns"] - stats["host_to_device_ns"]
    # trn2 host link (an estimate, runtime/program/Target.cpp): 2 us + 4 MiB at 50 B/ns.
    assert copy_ns == pytest.approx(2000 + (4 << 20) / 50)
    assert start.elapsed_time(end) == pytest.approx(copy_ns / 1e6)
    x.cpu()
    assert torch.neuron.memory_stats()["device_to_host_count"] == after["device_to_host_count"] + 1


def test_eager_op_advances_the_clock_by_its_simulated_time():
    x = torch.randn(128, 512, device=DEV)
    before = torch.neuron.simulated_time_ns()
    y = x * 2
    assert torch.neuron.simulated_time_ns() > before
    assert torch.neuron.memory_stats()["device_to_host_count"] >= 0
    assert y.device == DEV


def test_compiled_model_keeps_device_tensors_on_the_device():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8))
    x = torch.randn(4, 16)
    expected = model(x)
    model.to(DEV)
    compiled = torch.compile(model, backend="neuron", dynamic=False)
    xd = x.to(DEV)
    compiled(xd)  # compile
    before = torch.neuron.memory_stats()
    out = compiled(xd)
    after = torch.neuron.memory_stats()
    assert out.device == DEV
    for kind in ("host_to_device", "device_to_host"):
        assert after[f"{kind}_count"] == before[f"{kind}_count"], kind
    assert after["clock_ns"] > before["clock_ns"]
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-4, atol=1e-5)


def _device_agnostic_training(steps: int = 3) -> list[float]:
    """Written only against torch.accelerator, as device-agnostic PyTorch code is."""
    device = torch.accelerator.current_accelerator()
    assert torch.accelerator.is_available() and torch.accelerator.device_count() >= 1
    torch.accelerator.set_device_index(0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.randn(32, 8, generator=torch.Generator().manual_seed(1)).to(device)
    target = data.sum(1, keepdim=True)
    stream = torch.accelerator.current_stream()
    start = torch.Event(enable_timing=True)
    end = torch.Event(enable_timing=True)
    losses = []
    with torch.Stream(device=device):
        start.record()
        for _ in range(steps):
            loss = torch.nn.functional.mse_loss(model(data), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        end.record()
    stream.synchronize()
    torch.accelerator.synchronize()
    assert end.query() and start.elapsed_time(end) > 0  # simulated milliseconds
    return losses


def test_device_agnostic_code_runs_unchanged():
    losses = _device_agnostic_training()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.randn(32, 8, generator=torch.Generator().manual_seed(1))
    target = data.sum(1, keepdim=True)
    expected = []
    for _ in range(3):
        loss = torch.nn.functional.mse_loss(model(data), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        expected.append(loss.item())
    assert losses == pytest.approx(expected, abs=1e-4)


def test_module_to_keeps_tied_weights_tied():
    embedding = torch.nn.Embedding(10, 4)
    head = torch.nn.Linear(4, 10, bias=False)
    head.weight = embedding.weight
    model = torch.nn.ModuleDict({"embedding": embedding, "head": head}).to(DEV)
    assert model["head"].weight is model["embedding"].weight
    assert model["head"].weight.device == DEV


# ---------------------------------------------------------------------------------------------
# HuggingFace GPT-2 (tiny config, random weights)


def _tiny_gpt2():
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(
        n_layer=2, n_head=2, n_embd=64, vocab_size=128, n_positions=64,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=1,
    )  # fmt: skip
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(config)


def test_gpt2_generate_in_eager_mode_gives_the_cpu_tokens():
    model = _tiny_gpt2().eval()
    ids = torch.randint(2, 128, (1, 8), generator=torch.Generator().manual_seed(0))
    expected = model.generate(ids, max_new_tokens=8, do_sample=False, pad_token_id=0)
    model.to(DEV)
    got = model.generate(ids.to(DEV), max_new_tokens=8, do_sample=False, pad_token_id=0)
    assert got.device == DEV
    assert got.cpu().tolist() == expected.tolist()
    assert neuronsim.get_fallback_ops() == {}  # every op of generate() ran on the simulator


def _train(model, device, compiled: bool, steps: int = 3) -> list[float]:
    model = copy.deepcopy(model).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1)).to(device)
    run = torch.compile(model, backend="neuron", dynamic=False) if compiled else model
    losses = []
    for _ in range(steps):
        loss = run(ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_gpt2_adamw_training_on_the_device_matches_cpu(compiled):
    model = _tiny_gpt2()
    expected = _train(model, "cpu", compiled=False)
    got = _train(model, DEV, compiled=compiled)
    assert got == pytest.approx(expected, abs=1e-3)
    assert neuronsim.get_fallback_ops() == {}


# ---------------------------------------------------------------------------------------------
# Eager ops on a CI-sized OpInfo subset, compared with the CPU

EAGER_OPINFO = [
    "abs", "add", "addcmul", "addmm", "amax", "argmax", "bmm", "cat", "clamp", "cos",
    "div.no_rounding_mode", "exp", "flip", "gather", "index_select", "log_softmax", "logsumexp",
    "masked_fill", "matmul", "maximum", "mean", "mm", "mul", "nn.functional.gelu",
    "nn.functional.layer_norm", "nn.functional.relu", "nn.functional.silu", "permute", "pow",
    "rsqrt", "sigmoid", "softmax", "sqrt", "stack", "sum", "tanh", "transpose", "tril", "where",
    "sort", "topk", "cumsum", "nonzero", "unique",
]  # fmt: skip


def _opinfo(name):
    pytest.importorskip("expecttest")
    from torch.testing._internal.common_methods_invocations import op_db

    for op in op_db:
        if op.name + (f".{op.variant_test_name}" if op.variant_test_name else "") == name:
            return op
    pytest.skip(f"no OpInfo named {name} in this torch")


def _to(value, device):
    return torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), value)


@pytest.mark.parametrize("name", EAGER_OPINFO)
def test_eager_opinfo_samples_match_cpu(name):
    op = _opinfo(name)
    dtype = torch.float32 if torch.float32 in op.supported_dtypes("cpu") else torch.int64
    for sample in list(op.sample_inputs("cpu", dtype, requires_grad=False))[:2]:
        expected = op.op(sample.input, *sample.args, **sample.kwargs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # CPU fallbacks (sort, unique, ...)
            got = op.op(_to(sample.input, DEV), *_to(sample.args, DEV), **_to(sample.kwargs, DEV))
        leaves = torch.utils._pytree.tree_leaves
        for g, e in zip(leaves(got), leaves(expected), strict=True):
            if isinstance(e, torch.Tensor):
                assert g.device == DEV
                torch.testing.assert_close(g.cpu(), e, rtol=1.3e-4, atol=1e-5, equal_nan=True)
            else:
                assert g == e


def test_profiler_trace_has_simulated_engine_lanes_beside_host_ops(tmp_path):
    import json

    x = torch.randn(256, 256, device=DEV)
    model = torch.nn.Linear(256, 256).to(DEV)
    compiled = torch.compile(model, backend="neuron", dynamic=False)
    compiled(x)
    with torch.profiler.profile() as prof:
        y = x * 2
        compiled(y)
    path = neuronsim.profiler.export_chrome_trace(prof, str(tmp_path / "trace.json"))
    events = json.load(open(path))["traceEvents"]
    marks = {e["name"]: e for e in events if str(e.get("name", "")).startswith("neuron::")}
    assert any(name.startswith("neuron::eager_") for name in marks)  # the eager mul
    assert any(name.startswith("neuron::forward_") for name in marks)  # the compiled graph
    assert any(e.get("name") == "aten::mul" for e in events)  # host ops stay
    simulated = [e for e in events if e.get("ph") == "X" and e.get("args", {}).get("run")]
    assert {e["cat"] for e in simulated} >= {"dma", "tensor"}
    for event in simulated:  # each instruction starts at or after its run's host mark
        assert event["ts"] >= marks[event["args"]["run"]]["ts"]
    names = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert "neuron (simulated NeuronCore)" in names


def test_convolution_forward_and_backward_on_the_device():
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    conv(x).square().sum().backward()
    device_conv = copy.deepcopy(conv).to(DEV)
    device_conv.zero_grad()
    xd = x.detach().to(DEV).requires_grad_()
    device_conv(xd).square().sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), x.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(device_conv.weight.grad.cpu(), conv.weight.grad, rtol=1e-4, atol=1e-3)
    assert neuronsim.get_fallback_ops() == {}  # not through convolution_overrideable


def test_autocast_runs_matmuls_in_bfloat16_as_on_the_cpu():
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    with torch.autocast("neuron", dtype=torch.bfloat16):
        product = a.to(DEV) @ b.to(DEV)
        softmax = torch.softmax(a.to(DEV), -1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = a @ b
    assert product.dtype == torch.bfloat16 and softmax.dtype == torch.float32
    torch.testing.assert_close(product.cpu(), expected, rtol=1e-2, atol=1e-2)
