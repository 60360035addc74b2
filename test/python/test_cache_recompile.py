"""Recompiling on new shapes (dynamic=None and dynamic=False), the recompile limit, the stats
(signatures, non-contiguous copies), logging and debug dumps."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import neuronsim
from models import MLP, relative_error

HERE = Path(__file__).resolve().parent


def _check(compiled, model, batch: int) -> None:
    x = torch.randn(batch, 20)
    with torch.no_grad():
        assert relative_error(compiled(x), model(x)) <= 1e-5


def _input_shapes(stats) -> list[tuple[int, ...]]:
    """The batch of each compiled signature (the input of shape [batch, 20]; fc1's weight is
    [30, 20])."""
    return sorted(
        shape[0]
        for s in stats["signatures"]
        for shape, _ in s["inputs"]
        if shape[1:] == [20] and shape[0] != 30
    )


def test_default_dynamic_compiles_each_new_shape_once():
    model = MLP(20, 30, 5)
    compiled = torch.compile(model, backend="neuron")  # dynamic=None: automatic dynamic
    for batch in (3, 4, 5, 4, 3, 5, 6):
        _check(compiled, model, batch)
    stats = neuronsim.cache_stats()
    assert stats["compiles"] == 4
    assert _input_shapes(stats) == [3, 4, 5, 6]
    assert {s["source"] for s in stats["signatures"]} == {"compiled"}
    assert all(s["graph"].startswith("forward_") and s["target"] for s in stats["signatures"])


def test_dynamic_false_compiles_each_new_shape_once():
    model = MLP(20, 30, 5)
    compiled = torch.compile(model, backend="neuron", dynamic=False)
    for batch in (3, 4, 5, 4, 3):
        _check(compiled, model, batch)
    assert neuronsim.cache_stats()["compiles"] == 3


def test_dynamic_none_is_not_bounded_by_the_recompile_limit(monkeypatch):
    # With dynamic=None Dynamo compiles the frame twice (static, then symbolic) and the backend
    # specializes per shape: more shapes than recompile_limit all still run on the simulator.
    monkeypatch.setattr(torch._dynamo.config, "recompile_limit", 2)
    model = MLP(20, 30, 5)
    compiled = torch.compile(model, backend="neuron")
    for batch in range(2, 8):
        _check(compiled, model, batch)
    assert neuronsim.cache_stats()["compiles"] == 6


def test_dynamic_false_beyond_the_recompile_limit_runs_eagerly(monkeypatch):
    # Documented in the README: past recompile_limit, Dynamo runs the frame in eager PyTorch.
    monkeypatch.setattr(torch._dynamo.config, "recompile_limit", 2)
    model = MLP(20, 30, 5)
    compiled = torch.compile(model, backend="neuron", dynamic=False)
    for batch in range(2, 6):
        _check(compiled, model, batch)
    assert neuronsim.cache_stats()["compiles"] == 2


def test_dynamic_true_still_raises():
    compiled = torch.compile(MLP(20, 30, 5), backend="neuron", dynamic=True)
    with torch.no_grad(), pytest.raises(neuronsim.NeuronCompileError, match="dynamic=False"):
        compiled(torch.randn(3, 20))


def test_symbolic_sizes_used_in_the_graph_are_specialized():
    def fn(x):
        return (x.view(x.shape[0], -1, 2) * 2.0).sum(-1) + x.shape[0]

    compiled = torch.compile(fn, backend="neuron")
    with torch.no_grad():
        for rows in (3, 4, 6):
            x = torch.randn(rows, 8)
            torch.testing.assert_close(compiled(x), fn(x))
    assert neuronsim.cache_stats()["compiles"] == 3


def test_noncontiguous_inputs_are_copied_and_counted():
    model = MLP(20, 30, 5)
    compiled = torch.compile(model, backend="neuron", dynamic=False)
    x = torch.randn(20, 4).t()  # [4, 20], not contiguous
    assert not x.is_contiguous()
    with torch.no_grad():
        for _ in range(2):
            assert relative_error(compiled(x), model(x)) <= 1e-5
    assert neuronsim.cache_stats()["noncontiguous_copies"] == 2
    with torch.no_grad():
        compiled(torch.randn(4, 20))
    assert neuronsim.cache_stats()["noncontiguous_copies"] == 2


def test_stats_have_every_counter():
    compiled = torch.compile(MLP(20, 30, 5), backend="neuron", dynamic=False)
    _check(compiled, compiled._orig_mod, 3)
    stats = neuronsim.cache_stats()
    for name in ("compiles", "hits", "misses", "memory_hits", "disk_hits", "evictions"):
        assert isinstance(stats[name], int)
    assert stats["compile_s"] > 0 and stats["entries"] == 1
    assert stats["hits"] == stats["memory_hits"] + stats["disk_hits"]


def _run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
        cwd=HERE,
    )


_TWICE = """
    import torch, neuronsim
    from models import MLP
    model = MLP(20, 30, 5)
    with torch.no_grad():
        torch.compile(model, backend="neuron", dynamic=False)(torch.randn(3, 20))
        torch._dynamo.reset()
        torch.compile(model, backend="neuron", dynamic=False)(torch.randn(3, 20))
    print("ok")
"""


def test_log_level_debug_shows_cache_misses_and_hits():
    result = _run_python(_TWICE, NEURONSIM_LOG_LEVEL="debug")
    assert result.returncode == 0, result.stderr
    assert "[neuronsim DEBUG] compile cache: miss for forward_" in result.stderr
    assert "[neuronsim INFO] compiled forward_" in result.stderr
    assert "[neuronsim DEBUG] compile cache: memory hit for forward_" in result.stderr
    again = _run_python(_TWICE, NEURONSIM_LOG_LEVEL="DEBUG")  # a new process: from disk
    assert "compile cache: disk hit for forward_" in again.stderr


def test_default_log_level_is_quiet_and_bad_level_warns():
    quiet = _run_python(_TWICE)
    assert quiet.returncode == 0 and "[neuronsim" not in quiet.stderr
    bad = _run_python(_TWICE, NEURONSIM_LOG_LEVEL="chatty")
    assert bad.returncode == 0, bad.stderr
    assert "NEURONSIM_LOG_LEVEL='chatty' is not a logging level" in bad.stderr


def test_dump_dir_gets_graph_ir_per_stage_and_program_even_when_cached(tmp_path):
    model = MLP(20, 30, 5)
    with torch.no_grad():
        torch.compile(model, backend="neuron", dynamic=False)(torch.randn(3, 20))
    torch._dynamo.reset()
    neuronsim.reset()  # the program is still on disk; a dump needs a compilation
    compiled = torch.compile(
        model, backend="neuron", dynamic=False, options={"dump_dir": str(tmp_path)}
    )
    with torch.no_grad():
        compiled(torch.randn(3, 20))
    (graph_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    names = sorted(p.name for p in graph_dir.iterdir())
    assert "graph.json" in names and "program.json" in names
    stages = [n for n in names if n.endswith(".mlir")]
    assert stages[0].startswith("0-import") and stages[-1].endswith("nisa.mlir")
    assert len(stages) >= 3 and all((graph_dir / n).stat().st_size > 0 for n in names)
    assert neuronsim.cache_stats()["compiles"] == 1
