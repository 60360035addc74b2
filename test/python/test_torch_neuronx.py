"""TorchNeuron parity: scripts and libraries written for AWS TorchNeuron (torch-neuronx 2.13) run
unchanged. The autoload at `import torch`, the torch_neuronx module, torch.neuron's additions,
TorchNeuron's environment variables and torch.compile behaviour, and the reliability fixes of
the device (CPU index tensors, outputs the graph moves, DataLoader workers, threads)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import warnings

import pytest
import torch

import neuronsim
import torch_neuronx

DEV = torch.device("neuron:0")
# What conftest.py pins for the rest of the suite; subprocesses here test TorchNeuron's defaults.
_SUITE_PINS = ("NEURON_LOGICAL_NC_CONFIG", "TORCH_NEURONX_RETAIN_DEVICE_MODE")


def _run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in _SUITE_PINS}
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, timeout=300, env=environment,
    )


@pytest.fixture(autouse=True)
def _clean_tracking():
    torch_neuronx.clear_op_tracking()
    torch_neuronx.reset_dynamo_metrics()
    yield


# ---------------------------------------------------------------------------------------------
# Autoload and the quickstart


def test_bare_import_torch_registers_the_device_without_loading_dynamo():
    result = _run_python(
        """
        import sys, torch
        assert "torch._dynamo" not in sys.modules, "the autoload imported torch._dynamo"
        x = torch.ones(3, device="neuron")
        print(x.device, torch.neuron.get_device_properties().target,
              torch.neuron.get_device_properties().total_memory)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["neuron:0", "trn2-lnc2", str(24 << 30)]


def test_import_neuronsim_before_torch_works():
    # neuronsim imports torch, whose autoload calls neuronsim._autoload on the partly imported
    # package: the entry point must exist before that import.
    result = _run_python(
        """
        import neuronsim
        import torch
        print(torch.ones(2, device="neuron").device)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "neuron:0"


def test_autoload_can_be_turned_off():
    result = _run_python(
        """
        import torch
        try:
            torch.ones(3, device="neuron")
        except RuntimeError as error:
            print("refused:", "neuron" in str(error))
        """,
        TORCH_DEVICE_BACKEND_AUTOLOAD="0",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "refused: True"


def test_aws_quickstart_flow_runs_unchanged():
    result = _run_python(
        """
        import torch
        import torch_neuronx

        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                    torch.nn.Linear(64, 8))
        x = torch.randn(16, 32)
        expected = model(x)
        device = torch.device("neuron")
        model_neuron = model.to(device)
        out = model_neuron(x.to(device))
        torch.testing.assert_close(out.cpu(), expected, rtol=1e-4, atol=1e-5)
        compiled = torch.compile(model_neuron, backend="neuron")
        torch.testing.assert_close(compiled(x.to(device)).cpu(), expected, rtol=1e-4, atol=1e-5)
        print(out.device, len(torch_neuronx.get_dynamo_metrics()))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["neuron:0", "1"]


def test_torch_neuronx_refuses_to_run_beside_torch_xla(tmp_path):
    (tmp_path / "torch_xla").mkdir()
    (tmp_path / "torch_xla" / "__init__.py").write_text("")
    result = _run_python("import torch_neuronx", PYTHONPATH=str(tmp_path))
    assert result.returncode != 0
    assert "does not run beside torch_xla" in result.stderr


# ---------------------------------------------------------------------------------------------
# torch_neuronx's API


def test_executed_and_fallback_ops_are_listed_per_call():
    a = torch.randn(4, 4).to(DEV)
    (a + a).cpu()
    (a + 1).cpu()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.nonzero(a > 0)  # data-dependent shape: runs on the CPU
    executed = torch_neuronx.get_executed_ops()
    assert executed.count("aten::add") == 2
    assert "aten::nonzero" in torch_neuronx.get_fallback_ops()
    assert "aten::nonzero" not in executed
    torch_neuronx.clear_op_tracking()
    assert torch_neuronx.get_executed_ops() == [] and torch_neuronx.get_fallback_ops() == []


def test_dynamo_metrics_and_model_name():
    model = torch.nn.Linear(8, 4).to(DEV)
    compiled = torch.compile(model, backend="neuron", options={"model_name": "tiny"})
    compiled(torch.randn(2, 8, device=DEV)).sum().backward()
    metrics = torch_neuronx.get_dynamo_metrics()
    assert [m.kind for m in metrics] == ["forward", "backward"]
    assert all(m.graph_name.startswith(f"tiny_{m.kind}_") for m in metrics)
    assert all(m.graph_node_count > 0 and m.torch_neuronx_compile_us > 0 for m in metrics)
    assert torch._dynamo.utils.counters["neuron"]["compiled_graphs"] == 2
    torch.neuron.reset_dynamo_metrics()
    assert torch.neuron.get_dynamo_metrics() == []


def test_model_name_is_validated():
    compiled = torch.compile(lambda x: x + 1, backend="neuron", options={"model_name": "a/b"})
    with pytest.raises(neuronsim.NeuronCompileError, match="option 'model_name' must be"):
        compiled(torch.ones(2))


def _scaled(x):
    return x * 2 + 1


def test_fallback_execution_runs_a_failed_graph_eagerly():
    x = torch.randn(5)
    # dynamic=True (symbolic shapes) does not compile: TorchNeuron rejects it too.
    with pytest.raises(neuronsim.NeuronCompileError, match="symbolic"):
        torch.compile(_scaled, backend="neuron", dynamic=True)(x)
    torch._dynamo.reset()
    compiled = torch.compile(_scaled, backend="neuron", dynamic=True,
                             options={"fallback_execution": True})
    with pytest.warns(UserWarning, match="runs in eager mode instead"):
        out = compiled(x)
    torch.testing.assert_close(out, _scaled(x))
    assert torch_neuronx.get_dynamo_metrics()[-1].fell_back_to_eager


def test_fallback_execution_from_torchneuron_environment_variable(monkeypatch):
    monkeypatch.setenv("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", "0")
    x = torch.randn(5)
    with pytest.warns(UserWarning, match="runs in eager mode instead"):
        out = torch.compile(_scaled, backend="neuron", dynamic=True)(x)
    torch.testing.assert_close(out, _scaled(x))


def test_nki_op_and_wrap_nki_run_a_kernel():
    from neuronsim.kernels import jit
    from neuronsim.kernels import language as nl

    @jit
    def add_one(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out[0:128, :], value=nl.load(x[0:128, :]) + 1.0)
        return out

    x = torch.randn(128, 64)
    op = torch_neuronx.nki_op("parity28::add_one", add_one)
    torch.testing.assert_close(op(x), x + 1)
    torch.testing.assert_close(torch_neuronx.wrap_nki(add_one)[2](x), x + 1)
    with pytest.raises(ValueError, match="launch grid must be 1 or 2"):
        torch_neuronx.wrap_nki(add_one)[4]
    compiled = torch.compile(lambda t: op(t) * 2, backend="neuron", fullgraph=True)
    torch.testing.assert_close(compiled(x), (x + 1) * 2)

    @torch_neuronx.nki_op("parity28::fused", mutates_args=())
    def fused(t: torch.Tensor) -> torch.Tensor:  # a Python function calling the kernel op
        return op(t) * t

    fused.register_fake(lambda t: torch.empty_like(t))
    torch.testing.assert_close(fused(x), (x + 1) * x)
    compiled = torch.compile(lambda t: fused(t) - 1, backend="neuron", fullgraph=True)
    torch.testing.assert_close(compiled(x), (x + 1) * x - 1)
    assert neuronsim.last_run_stats()["graph"].startswith("forward")  # compiled, not eager


def test_neuron_profiler_exports_the_simulated_trace(tmp_path):
    from torch.profiler import ProfilerActivity, profile

    from torch_neuronx.profiling import NeuronConfig, NeuronProfiler, ProfileMode

    config = NeuronConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=str(tmp_path))
    exporter = NeuronProfiler(config)
    compiled = torch.compile(lambda t: t * 2 + 1, backend="neuron")
    x = torch.randn(64, 64, device=DEV)
    compiled(x)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1],
                 experimental_config=config, on_trace_ready=exporter.export_trace):
        compiled(x)
    assert exporter.traces == [str(tmp_path / "trace.json")]
    assert "simulated NeuronCore" in (tmp_path / "trace.json").read_text()


# ---------------------------------------------------------------------------------------------
# torch.neuron


def test_device_properties_name_and_memory_module():
    props = torch.neuron.get_device_properties(0)
    assert props.total_memory == torch.neuron.mem_get_info()[1]
    assert "neuron" in torch.neuron.get_device_name()
    x = torch.empty(1024, 1024, device=DEV)  # 4 MiB
    stats = torch.neuron.memory.memory_stats()
    assert stats["allocated_bytes.all.current"] >= x.nbytes
    assert stats["active_bytes.all.peak"] >= stats["allocated_bytes.all.current"]
    summary = torch.neuron.memory_summary()
    assert "Allocated memory" in summary and "neuron:0" in summary
    (segment,) = torch.neuron.memory._snapshot()["segments"]
    assert segment["allocated_size"] == torch.neuron.memory_allocated()
    with pytest.raises(NotImplementedError, match="history"):
        torch.neuron.memory._record_memory_history()


def test_accelerator_memory_functions_reach_the_device_allocator():
    before = torch.accelerator.memory_stats()
    x = torch.empty(256, 1024, device=DEV)  # 1 MiB
    stats = torch.accelerator.memory_stats()
    assert stats["allocated_bytes.all.current"] == before["allocated_bytes.all.current"] + x.nbytes
    assert stats["allocation.all.allocated"] == before["allocation.all.allocated"] + 1
    assert torch.accelerator.memory_allocated() == torch.neuron.memory_allocated()
    del x
    assert torch.accelerator.memory_stats()["allocated_bytes.all.freed"] >= (1 << 20)
    torch.accelerator.reset_peak_memory_stats()
    assert torch.accelerator.max_memory_allocated() == torch.accelerator.memory_allocated()
    torch.accelerator.empty_cache()
    with pytest.raises(torch.OutOfMemoryError):
        torch.empty(torch.neuron.mem_get_info()[1] + 1, dtype=torch.uint8, device=DEV)
    assert torch.neuron.memory_stats()["num_ooms"] == before["num_ooms"] + 1


def test_generators_on_the_device():
    g = torch.Generator(device="neuron")
    assert g.device == DEV
    g.manual_seed(5)
    first = torch.randn(8, generator=g, device=DEV).cpu()
    second = torch.randn(8, generator=g, device=DEV).cpu()
    assert torch.equal(first, torch.randn(8, generator=torch.Generator().manual_seed(5)))
    assert not torch.equal(first, second)  # the state advanced
    g.manual_seed(5)
    torch.testing.assert_close(torch.empty(8, device=DEV).normal_(generator=g).cpu(), first)


def test_default_generator_state_is_seed_and_offset_as_dtensor_expects():
    # DTensor's offset-based RNG tracker (torchtitan, FSDP2, TP) reads the device state as
    # CUDA's Philox one: 16 bytes, seed then offset (uint64), and rewrites the offset per shard.
    torch.neuron.manual_seed(7)
    state = torch.neuron.get_rng_state()
    assert state.dtype == torch.uint8 and state.shape == (16,)
    assert state.view(torch.uint64).tolist() == [7, 0]
    first = torch.randn(5, device=DEV).cpu()
    assert torch.neuron.get_rng_state().view(torch.uint64).tolist() == [7, 8]  # 5 -> 8
    torch.neuron.set_rng_state(state)
    assert torch.equal(torch.randn(5, device=DEV).cpu(), first)  # the same state, the same draw
    moved = state.clone()
    moved.view(torch.uint64)[1] = 1024  # another shard's offset: other numbers
    torch.neuron.set_rng_state(moved)
    assert not torch.equal(torch.randn(5, device=DEV).cpu(), first)
    with torch.random.fork_rng(device_type="neuron"):
        torch.rand(3, device=DEV)
    assert torch.neuron.get_rng_state().view(torch.uint64).tolist() == [7, 1032]
    with pytest.raises(RuntimeError, match="a device generator's state is 16 bytes"):
        torch.neuron.set_rng_state(torch.Generator().get_state())


def test_kernel_traced_from_four_threads_at_once():
    from neuronsim import kernels
    from neuronsim.kernels import language as nl

    barrier = threading.Barrier(4, timeout=60)

    @kernels.jit
    def scale(x, k: float):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        barrier.wait()  # every thread is inside its trace at once
        for i in range(x.shape[0] // 128):
            t = nl.load(x[nl.ds(i * 128, 128), :])
            nl.store(out[nl.ds(i * 128, 128), :], value=t * k)
        return out

    errors, results = [], {}

    def work(n: int) -> None:
        try:
            x = torch.randn(128 * n, 64)
            results[n] = (scale(x, float(n)), x * n)
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(repr(error))

    threads = [threading.Thread(target=work, args=(n,)) for n in (1, 2, 3, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(results) == [1, 2, 3, 4]
    for out, expected in results.values():
        assert torch.equal(out, expected)


def test_torchneuron_environment_variables(monkeypatch):
    from neuronsim.device import environment

    for name in ("NEURONSIM_DEVICE_COUNT", "NEURON_RT_VISIBLE_CORES", "NEURON_RT_NUM_CORES",
                 "NEURON_LOGICAL_NC_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    assert environment.visible_cores() == [0] and environment.default_target() == "trn2-lnc2"
    monkeypatch.setenv("NEURON_RT_NUM_CORES", "3")
    assert environment.visible_cores() == [0, 1, 2]
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", "0-1,4")  # wins over NEURON_RT_NUM_CORES
    assert environment.visible_cores() == [0, 1, 4]
    for bad in ("3-1", "a", "1,1"):
        monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", bad)
        with pytest.raises(ValueError, match="NEURON_RT_VISIBLE_CORES"):
            environment.visible_cores()
    monkeypatch.setenv("NEURON_LOGICAL_NC_CONFIG", "4")
    with pytest.raises(ValueError, match="NEURON_LOGICAL_NC_CONFIG must be 1 or 2"):
        environment.default_target()
    # What the device becomes (the default, LNC=2 with 24 GiB: the bare-import test above).
    result = _run_python(
        """
        import torch
        p = torch.neuron.get_device_properties(torch.neuron.device_count() - 1)
        print(torch.neuron.device_count(), p.target, p.total_memory >> 30, p.core_id)
        """,
        NEURON_RT_VISIBLE_CORES="1,3", NEURON_LOGICAL_NC_CONFIG="1",
    )
    assert result.stdout.split() == ["2", "trn2", "12", "3"], result.stderr


def test_complex_tensors_compute_on_the_device():
    torch.manual_seed(0)
    a = torch.randn(4, 6, dtype=torch.complex64)
    b = torch.randn(4, 6, dtype=torch.complex64)
    na, nb = a.to(DEV), b.to(DEV)
    assert na.dtype == torch.complex64 and torch.equal(na.cpu(), a)
    torch.testing.assert_close((na * nb + 1).cpu(), a * b + 1, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(na.abs().cpu(), a.abs(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(torch.view_as_real(na).cpu(), torch.view_as_real(a))
    assert "aten::mul" in torch_neuronx.get_executed_ops()
    assert not any(op.startswith("aten::mul") for op in torch_neuronx.get_fallback_ops())


# ---------------------------------------------------------------------------------------------
# torch.compile's placement of inputs and outputs


def test_cpu_inputs_run_on_the_device_by_default(monkeypatch):
    monkeypatch.delenv("TORCH_NEURONX_RETAIN_DEVICE_MODE")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8))
    expected_model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8))
    expected_model.load_state_dict(model.state_dict())
    x = torch.randn(6, 8)
    compiled = torch.compile(model, backend="neuron")
    out = compiled(x)
    assert out.device == DEV
    torch.testing.assert_close(out.cpu(), expected_model(x), rtol=1e-4, atol=1e-5)
    # The graph updated BatchNorm's running statistics on the device: copied back to the CPU.
    torch.testing.assert_close(model[1].running_mean, expected_model[1].running_mean)
    out.sum().backward()
    assert model[0].weight.grad.device.type == "cpu"


def test_autocopy_can_be_refused(monkeypatch):
    monkeypatch.delenv("TORCH_NEURONX_RETAIN_DEVICE_MODE")
    monkeypatch.setenv("TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY", "1")
    compiled = torch.compile(lambda x: x * 2, backend="neuron")
    with pytest.raises(RuntimeError, match=r"Input tensor at index 0 is on cpu device"):
        compiled(torch.randn(10))


def test_retain_device_mode_keeps_outputs_where_inputs_are():
    assert os.environ["TORCH_NEURONX_RETAIN_DEVICE_MODE"] == "1"  # conftest.py
    assert torch.compile(lambda x: x * 2, backend="neuron")(torch.ones(3)).device.type == "cpu"


@pytest.mark.parametrize("retain", ["1", "0"])
def test_outputs_the_graph_moves_follow_eager(monkeypatch, retain):
    monkeypatch.setenv("TORCH_NEURONX_RETAIN_DEVICE_MODE", retain)

    def to_cpu(x):
        return (x * 2).cpu() + 1

    def to_device(x):
        return x.to("neuron") * 3

    x = torch.randn(4)
    out = torch.compile(to_cpu, backend="neuron")(x.to(DEV))
    assert out.device.type == "cpu"
    torch.testing.assert_close(out, to_cpu(x.to(DEV)))
    out = torch.compile(to_device, backend="neuron")(x)
    assert out.device == DEV
    torch.testing.assert_close(out.cpu(), x * 3)


def test_torch_compile_without_backend_uses_neuron_for_neuron_tensors():
    model = torch.nn.Linear(8, 4).to(DEV)
    x = torch.randn(3, 8, device=DEV)
    with torch.no_grad():
        out = torch.compile(model)(x)
        expected = model(x)
    assert len(torch_neuronx.get_dynamo_metrics()) == 1
    torch.testing.assert_close(out.cpu(), expected.cpu(), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# Reliability


def test_cpu_index_tensors_and_masks_index_device_tensors():
    base = torch.arange(12.0).reshape(4, 3)
    x = base.to(DEV)
    index, mask = torch.tensor([2, 0, 2]), torch.tensor([True, False, True, False])
    torch.testing.assert_close(x[index].cpu(), base[index])
    torch.testing.assert_close(x[mask].cpu(), base[mask])
    x[mask] = -1.0
    base[mask] = -1.0
    torch.testing.assert_close(x.cpu(), base)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        x + torch.ones(4, 3)  # other ops still refuse CPU operands


_DATALOADER = """
    import torch
    from torch.utils.data import DataLoader, Dataset

    class OnDevice(Dataset):
        def __len__(self):
            return 4
        def __getitem__(self, i):
            return torch.full((3,), float(i)).to("neuron")

    if __name__ == "__main__":
        batches = list(DataLoader(OnDevice(), batch_size=2, num_workers=2))
        print([str(b.device) for b in batches], [b.cpu().tolist() for b in batches])
    """


def test_dataloader_workers_return_neuron_tensors(tmp_path):
    script = tmp_path / "loader.py"
    script.write_text(textwrap.dedent(_DATALOADER))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "['neuron:0', 'neuron:0'] [[[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]], "
        "[[2.0, 2.0, 2.0], [3.0, 3.0, 3.0]]]"
    )


def test_compiled_model_from_threads_with_automatic_dynamic_shapes():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    compiled = torch.compile(model, backend="neuron")
    with torch.no_grad():
        compiled(torch.randn(2, 8))
        compiled(torch.randn(3, 8))  # the batch size becomes symbolic
    errors, results = [], {}

    def work(batch: int) -> None:
        try:
            x = torch.randn(batch, 8)
            with torch.no_grad():
                results[batch] = (compiled(x), model(x))
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(repr(error))

    threads = [threading.Thread(target=work, args=(n,)) for n in (5, 6, 7, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(results) == [5, 6, 7, 9]
    for out, expected in results.values():
        torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# HuggingFace


def test_transformers_and_accelerate_pick_the_neuron_device():
    result = _run_python(
        """
        import warnings
        warnings.simplefilter("ignore")
        from transformers import TrainingArguments
        from accelerate import PartialState
        print(TrainingArguments(output_dir="unused", report_to=[]).device, PartialState().device)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["neuron:0", "neuron"]


_TRAINER = """
    import sys, warnings
    warnings.simplefilter("ignore")
    import torch
    from torch.utils.data import Dataset
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    class Tokens(Dataset):
        def __init__(self):
            g = torch.Generator().manual_seed(0)
            self.ids = torch.randint(0, 64, (8, 16), generator=g)
        def __len__(self):
            return len(self.ids)
        def __getitem__(self, i):
            return {"input_ids": self.ids[i], "labels": self.ids[i]}

    torch.manual_seed(0)
    config = GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=64, n_positions=16,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = GPT2LMHeadModel(config)
    args = TrainingArguments(output_dir=sys.argv[1], per_device_train_batch_size=4,
                             max_steps=3, learning_rate=1e-3, logging_steps=1, report_to=[],
                             save_strategy="no", use_cpu=sys.argv[2] == "cpu", seed=0,
                             dataloader_num_workers=0)
    trainer = Trainer(model=model, args=args, train_dataset=Tokens())
    trainer.train()
    print(args.device, [round(h["loss"], 6) for h in trainer.state.log_history if "loss" in h])
    """


def _trainer_run(output_dir: str, where: str) -> tuple[str, list[float]]:
    """The _TRAINER script: in this process for the CPU, in a fresh one for the device (as
    a user's script starts, with TorchNeuron's defaults)."""
    if where == "cpu":
        import contextlib
        import io

        out = io.StringIO()
        with contextlib.redirect_stdout(out), mock_argv(["trainer", output_dir, "cpu"]):
            exec(compile(textwrap.dedent(_TRAINER), "trainer", "exec"), {"__name__": "t"})  # noqa: S102
        text = out.getvalue()
    else:
        result = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(_TRAINER), output_dir, where],
            capture_output=True, text=True, timeout=600,
            env={k: v for k, v in os.environ.items() if k not in _SUITE_PINS},
        )
        assert result.returncode == 0, result.stderr[-3000:]
        text = result.stdout
    device, losses = text.strip().splitlines()[-1].split(" ", 1)
    return device, [float(v) for v in losses.strip("[]").split(",")]


def mock_argv(argv: list[str]):
    import unittest.mock

    return unittest.mock.patch.object(sys, "argv", argv)


def test_trainer_trains_a_tiny_gpt2_on_the_device_as_on_the_cpu(tmp_path):
    device, on_device = _trainer_run(str(tmp_path / "neuron"), "neuron")
    cpu, on_cpu = _trainer_run(str(tmp_path / "cpu"), "cpu")
    assert device == "neuron:0" and cpu == "cpu"
    assert len(on_device) == 3
    for a, b in zip(on_device, on_cpu, strict=True):
        assert abs(a - b) < 1e-3
