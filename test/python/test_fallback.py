"""Unsupported ops: the error that lists them, and CPU fallback (options={"fallback": "cpu"}).

The op left unsupported on purpose is the tangent of a complex tensor (the complex lowering has no
rule for it: it stays complex64, the FFT before it runs on the simulator), and
aten.rrelu_with_noise_functional (F.rrelu in eval mode) for the importer's own diagnostic
(its tensors have supported dtypes): the importer does not lower it, and the backend's
decomposition of it (neuronsim.decompositions) is left out of the table in these tests.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch._decomp import core_aten_decompositions
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func

import neuronsim
from models import relative_error
from neuronsim import _C
from neuronsim.graph_export import export_graph

FP32_TOLERANCE = 1e-5  # max |compiled - eager| / max |eager|


def _line_of(marker: str) -> int:
    lines = Path(__file__).read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if line.rstrip().endswith(marker))


class Spectral(torch.nn.Module):
    """Linear -> FFT -> complex tangent (CPU) -> magnitude -> Linear, the rest on the
    simulator."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(24, 32)
        self.fc2 = torch.nn.Linear(17, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.fc1(x))
        spectrum = torch.fft.rfft(y).tan().abs()  # MARK_FFT
        return torch.sigmoid(self.fc2(spectrum)) * 2.0


class TwoUnsupported(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.tan(torch.fft.rfft(x * 2.0))  # MARK_FFT2
        values = F.rrelu(x, training=False)[..., :3]  # MARK_RRELU
        return y.real[..., :3] + values


@pytest.fixture(autouse=True)
def _rrelu_not_decomposed(monkeypatch):
    import neuronsim.backend

    table = dict(neuronsim.backend._builtin_decompositions())
    table.pop(torch.ops.aten.rrelu_with_noise_functional.default)
    monkeypatch.setattr(neuronsim.backend, "_builtin_decompositions", lambda: table)


def _compile(model, **options):
    return torch.compile(model, backend="neuron", dynamic=False, options=options or None)


# --- The default: compilation fails and names every unsupported op ------------------------------


def test_unsupported_ops_are_listed_with_source_lines():
    with torch.no_grad(), pytest.raises(neuronsim.NeuronCompileError) as error:
        _compile(TwoUnsupported())(torch.randn(4, 10))
    message = str(error.value)
    assert message.startswith("unsupported operators (2):\n"), message
    fft, rrelu = _line_of("# MARK_FFT2"), _line_of("# MARK_RRELU")
    expected = [
        # The FFT and y.real are rewritten into real ops; the complex tangent is not.
        "aten.tan.default (complex64 tensors: no real rewrite of this complex op) at "
        f"test_fallback.py:{fft} in forward: y = torch.tan(torch.fft.rfft(x * 2.0))  # MARK_FFT2",
        f"aten.rrelu_with_noise_functional.default at test_fallback.py:{rrelu} in forward: "
        "values = F.rrelu(x, training=False)[..., :3]  # MARK_RRELU",
    ]
    for line in expected:
        assert f"\n  {line}\n" in message, message
    assert "options={'fallback': 'cpu'}" in message
    assert isinstance(error.value, RuntimeError)


def test_complex_op_error_names_the_op_and_line():
    with torch.no_grad(), pytest.raises(neuronsim.NeuronCompileError) as error:
        _compile(Spectral())(torch.randn(3, 24))
    message = str(error.value)
    line = _line_of("# MARK_FFT")
    assert message.startswith("unsupported operators (1):\n"), message
    assert (
        "\n  aten.tan.default (complex64 tensors: no real rewrite of this complex op) at "
        f"test_fallback.py:{line} in forward: "
        "spectrum = torch.fft.rfft(y).tan().abs()  # MARK_FFT\n" in message
    )


def test_explicit_fallback_none_is_the_default():
    with torch.no_grad(), pytest.raises(neuronsim.NeuronCompileError, match="aten.tan.default"):
        _compile(Spectral(), fallback="none")(torch.randn(3, 24))


class EvalRRelu(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rrelu(x * 2.0, training=False)  # MARK_RRELU_ONLY


def _forward_graph_file(model, *inputs) -> str:
    files = []

    def capture(gm, example_inputs):
        files.append(export_graph(gm, example_inputs, name_prefix="forward").text)
        return make_boxed_func(gm.forward)

    backend = aot_autograd(fw_compiler=capture, decompositions=core_aten_decompositions())
    with torch.no_grad():
        torch.compile(model, backend=backend, dynamic=False)(*inputs)
    return files[0]


def test_importer_diagnostic_reaches_the_user_intact(monkeypatch):
    """The C++ importer's list (what _C.compile raises) comes through Dynamo unchanged."""
    x = torch.randn(4, 10)
    with pytest.raises(_C.CompileError) as native_error:
        _C.compile(_forward_graph_file(EvalRRelu(), x), "{}")
    native_message = str(native_error.value)
    line = _line_of("# MARK_RRELU_ONLY")
    assert native_message.startswith(
        "unsupported operators (1):\n  aten.rrelu_with_noise_functional.default at "
        f"test_fallback.py:{line} in forward: return F.rrelu(x * 2.0, training=False)"
    ), native_message

    # Through the backend with the Python-side check: the same lines (plus a hint).
    torch._dynamo.reset()
    with torch.no_grad(), pytest.raises(neuronsim.NeuronCompileError) as error:
        _compile(EvalRRelu())(x)
    assert str(error.value).startswith(native_message.rstrip()), str(error.value)

    # Without the Python-side check, the importer finds it: the message arrives as it was.
    monkeypatch.setattr("neuronsim.backend.check_supported", lambda gm: None)
    torch._dynamo.reset()
    with torch.no_grad(), pytest.raises(neuronsim.NeuronCompileError) as error:
        _compile(EvalRRelu())(x)
    assert str(error.value).startswith(native_message), str(error.value)


def test_unknown_fallback_value_names_the_valid_ones():
    with pytest.raises(neuronsim.NeuronCompileError) as error:
        _compile(Spectral(), fallback="gpu")(torch.randn(3, 24))
    assert "'gpu'" in str(error.value)
    assert "valid values: 'none', 'cpu'" in str(error.value)


# --- supported_ops(): the importer's list -------------------------------------------------------


def test_supported_ops_is_the_importer_list():
    native = _C.supported_ops()
    names = [name for name, _ in native]
    assert names == sorted(names) and len(names) == len(set(names))
    assert all(isinstance(how, str) and how for _, how in native)
    assert dict(native) == neuronsim.supported_ops()
    assert "aten.mm.default" in names and "aten._fft_r2c.default" not in names


# --- options={"fallback": "cpu"} ----------------------------------------------------------------


def test_cpu_fallback_matches_eager_and_counts_the_ops():
    model, x = Spectral(), torch.randn(3, 24)
    compiled = _compile(model, fallback="cpu")
    with torch.no_grad():
        expected = model(x)
        actual = compiled(x)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    assert relative_error(actual, expected) <= FP32_TOLERANCE
    # Counted per execution: one run, one node each.
    assert neuronsim.get_fallback_ops() == {"aten.tan.default": 1}
    # The supported parts ran on the simulator: two groups (before and after the tangent).
    assert neuronsim.cache_stats()["compiles"] == 2
    assert neuronsim.last_run_stats()["graph"].startswith("forward_p1_")
    with torch.no_grad():
        compiled(x)
    assert neuronsim.get_fallback_ops() == {"aten.tan.default": 2}
    neuronsim.clear_op_tracking()
    assert neuronsim.get_fallback_ops() == {}


def test_cpu_fallback_from_the_environment(monkeypatch):
    monkeypatch.setenv("NEURONSIM_FALLBACK", "cpu")
    model, x = TwoUnsupported(), torch.randn(4, 10)
    with torch.no_grad():
        actual = _compile(model)(x)
        expected = model(x)
    assert relative_error(actual, expected) <= FP32_TOLERANCE
    ops = neuronsim.get_fallback_ops()
    assert ops["aten.tan.default"] == 1 and ops["aten.rrelu_with_noise_functional.default"] == 1


def test_fully_supported_graph_has_no_fallback():
    model = torch.nn.Sequential(torch.nn.Linear(20, 30), torch.nn.ReLU(), torch.nn.Linear(30, 4))
    x = torch.randn(3, 20)
    with torch.no_grad():
        actual = _compile(model, fallback="cpu")(x)
    assert relative_error(actual, model(x)) <= FP32_TOLERANCE
    assert neuronsim.get_fallback_ops() == {}
    assert neuronsim.last_run_stats()["graph"].startswith("forward_")


class Interleaved(torch.nn.Module):
    """Several CPU islands; constants, multi-output ops and values used across them."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.fc = torch.nn.Linear(8, 6)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = F.max_pool2d(torch.relu(self.conv(x)), 2)  # [B, 4, 4, 4]
        flat = y.flatten(1)[:, :16]
        spectrum = torch.fft.rfft(flat).tan().abs()[:, :8]  # the tangent on the CPU
        z = self.fc(spectrum) + torch.tensor([1.0, -1.0, 0.5, 0.0, 2.0, 3.0])
        top = F.rrelu(z, training=False)[..., :2]  # CPU
        return z * y.mean(), top.sum(-1, keepdim=True) - flat.amax(-1, keepdim=True)


def test_cpu_fallback_with_several_islands():
    model, x = Interleaved(), torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        expected = model(x)
        actual = _compile(model, fallback="cpu")(x)
    for a, e in zip(actual, expected, strict=True):
        assert relative_error(a, e) <= FP32_TOLERANCE
    ops = neuronsim.get_fallback_ops()
    assert ops == {"aten.tan.default": 1, "aten.rrelu_with_noise_functional.default": 1}
    assert neuronsim.cache_stats()["compiles"] >= 2


class ReflectionGridSample(torch.nn.Module):
    """grid_sampler_2d is supported without reflection padding: this group fails to lower."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(5, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        grid = torch.tanh(x[:, :3, :, :2].permute(0, 2, 1, 3) * 1.5)
        sampled = F.grid_sample(self.proj(torch.relu(x)), grid, padding_mode="reflection",
                                align_corners=False)
        return torch.sigmoid(sampled * 3.0)


def test_group_that_fails_to_lower_falls_back_with_a_warning():
    model, x = ReflectionGridSample(), torch.randn(2, 4, 5, 5)
    with torch.no_grad(), pytest.warns(UserWarning, match="reflection") as record:
        actual = _compile(model, fallback="cpu")(x)
    assert any("runs in eager PyTorch on the CPU" in str(w.message) for w in record)
    with torch.no_grad():
        assert relative_error(actual, model(x)) <= FP32_TOLERANCE
    assert neuronsim.get_fallback_ops().get("aten.grid_sampler_2d.default") == 1


def test_group_that_fails_to_lower_is_an_error_without_fallback():
    with torch.no_grad(), pytest.raises(neuronsim.NeuronCompileError, match="reflection"):
        _compile(ReflectionGridSample())(torch.randn(2, 4, 5, 5))


def test_cpu_fallback_with_float64_warns_once():
    model, x = Spectral().double(), torch.randn(3, 24, dtype=torch.float64)
    with torch.no_grad(), warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        actual = _compile(model, fallback="cpu")(x)
    float64_warnings = [w for w in record if "float64" in str(w.message)]
    assert len(float64_warnings) == 1
    assert actual.dtype == torch.float64
    with torch.no_grad():
        assert relative_error(actual, model(x)) <= 1e-5


def test_cpu_fallback_in_training():
    """The backward graph is partitioned too: gradients match eager."""
    model, x = Spectral(), torch.randn(3, 24)
    reference = Spectral()
    reference.load_state_dict(model.state_dict())
    compiled = _compile(model, fallback="cpu")
    compiled(x).sum().backward()
    reference(x).sum().backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters(), strict=True):
        assert relative_error(p.grad, q.grad) <= 1e-4, name


def test_graph_file_of_a_partition_is_valid_json(tmp_path):
    with torch.no_grad():
        _compile(Spectral(), fallback="cpu", dump_dir=str(tmp_path))(torch.randn(3, 24))
    dirs = sorted(p.name for p in tmp_path.iterdir())
    assert [d.split("_")[:2] for d in dirs] == [["forward", "p0"], ["forward", "p1"]]
    for d in dirs:
        doc = json.loads((tmp_path / d / "graph.json").read_text())
        assert all(n["target"] in neuronsim.supported_ops() for n in doc["nodes"])
