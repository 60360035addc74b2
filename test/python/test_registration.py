"""Backend registration: both names, the entry point, set_default_backend, a taken name."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib.metadata import entry_points

import torch
from torch._dynamo.backends.registry import list_backends, lookup_backend

import neuronsim
from models import MLP


def _run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_both_names_are_registered():
    assert lookup_backend("neuron") is neuronsim.neuron_backend
    assert lookup_backend("neuronsim") is neuronsim.neuron_backend
    assert {"neuron", "neuronsim"} <= set(list_backends())


def test_entry_point_is_installed():
    found = [e for e in entry_points(group="torch_dynamo_backends") if e.name == "neuron"]
    assert [e.value for e in found] == ["neuronsim.backend:neuron_backend"]


def test_entry_point_works_without_import():
    result = _run_python(
        """
        import sys, torch
        compiled = torch.compile(lambda x: x + 1, backend="neuron")
        from torch._dynamo.backends.registry import lookup_backend
        assert "neuronsim" in sys.modules, "the entry point did not load neuronsim"
        import neuronsim
        assert lookup_backend("neuron") is neuronsim.neuron_backend
        assert lookup_backend("neuronsim") is neuronsim.neuron_backend
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_taken_name_warns_once_and_keeps_alias():
    result = _run_python(
        """
        import warnings, torch
        from torch._dynamo.backends.registry import lookup_backend, register_backend
        def other(gm, example_inputs):
            return gm.forward
        register_backend(other, name="neuron")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import neuronsim  # registered by `import torch` already (the device's autoload)
            # The compiler's side loads (and registers its names) on first use.
            assert lookup_backend("neuronsim") is neuronsim.neuron_backend
        assert lookup_backend("neuron") is other
        messages = [str(w.message) for w in caught if "already taken" in str(w.message)]
        assert len(messages) == 1, messages
        print(messages[0])
        """
    )
    assert result.returncode == 0, result.stderr
    assert "backend='neuronsim'" in result.stdout


def test_set_default_backend_uses_neuron():
    model = MLP(16, 32, 4)
    x = torch.randn(3, 16)
    torch.compiler.set_default_backend("neuron")
    try:
        compiled = torch.compile(model, dynamic=False)
        with torch.no_grad():
            out = compiled(x)
    finally:
        torch.compiler.set_default_backend(None)
    assert neuronsim.cache_stats()["compiles"] == 1
    assert neuronsim.last_run_stats()["sim_ns"] > 0
    torch.testing.assert_close(out, model(x).detach(), rtol=1e-5, atol=1e-5)
