"""Errors name the problem: dynamic shapes, options, targets, malformed graph files."""

from __future__ import annotations

import json

import pytest
import torch

import neuronsim
from models import MLP
from neuronsim import _C


def _double(x):
    return x * 2


def test_dynamic_true_is_rejected_with_the_fix():
    compiled = torch.compile(_double, backend="neuron", dynamic=True)
    with pytest.raises(neuronsim.NeuronCompileError) as error:
        compiled(torch.randn(4, 3))
    message = str(error.value)
    assert "supports only static shapes" in message
    assert "dynamic=False" in message


def test_unknown_option_is_named_with_the_valid_ones():
    compiled = torch.compile(_double, backend="neuron", options={"targte": "trn2"})
    with pytest.raises(neuronsim.NeuronCompileError) as error:
        compiled(torch.randn(4))
    assert "'targte'" in str(error.value)
    assert f"valid options: {', '.join(neuronsim.OPTION_SPECS)}" in str(error.value)
    assert "fallback" in neuronsim.OPTION_SPECS


def test_unknown_target_lists_the_valid_ones():
    compiled = torch.compile(_double, backend="neuron", options={"target": "trn9"})
    with pytest.raises(neuronsim.NeuronCompileError) as error:
        compiled(torch.randn(4))
    assert "'trn9'" in str(error.value)
    assert all(name in str(error.value) for name in neuronsim.targets())


def test_unknown_target_from_environment(monkeypatch):
    monkeypatch.setenv("NEURONSIM_TARGET", "trn0")
    compiled = torch.compile(_double, backend="neuron")
    with pytest.raises(neuronsim.NeuronCompileError, match="'trn0' \\(from NEURONSIM_TARGET\\)"):
        compiled(torch.randn(4))


def test_targets_and_version():
    assert "trn2" in neuronsim.targets()
    assert neuronsim.compiler_version()


def test_malformed_graph_files_raise_compile_error():
    with pytest.raises(_C.CompileError, match="(?i)json"):
        _C.compile("{not json", "{}")
    with pytest.raises(_C.CompileError, match="format"):
        _C.compile(json.dumps({"format": "something-else", "version": 1}), "{}")
    with pytest.raises(_C.CompileError, match="version"):
        _C.compile(json.dumps({"format": "neuronsim-graph", "version": 999}), "{}")


def test_unsupported_op_is_named():
    graph = {
        "format": "neuronsim-graph",
        "version": 1,
        "name": "bad",
        "inputs": [{"name": "x", "shape": [4], "dtype": "f32"}],
        "constants": [],
        "nodes": [
            {
                "name": "y",
                "target": "aten.no_such_op.default",
                "args": [{"node": "x"}],
                "kwargs": {},
                "outputs": [{"shape": [4], "dtype": "f32"}],
                "source": "model.py:3 in forward: y = no_such_op(x)",
            }
        ],
        "outputs": [{"node": "y"}],
    }
    with pytest.raises(_C.CompileError, match="aten.no_such_op.default"):
        _C.compile(json.dumps(graph), "{}")


def test_bad_compile_options_raise_compile_error():
    with pytest.raises(_C.CompileError, match="unknown compile option 'nope'"):
        _C.compile("{}", json.dumps({"nope": 1}))


def test_program_run_rejects_wrong_inputs():
    model = MLP(16, 32, 4)
    compiled = torch.compile(model, backend="neuron", dynamic=False)
    with torch.no_grad():
        compiled(torch.randn(3, 16))
    program = _last_program()
    wrong = [torch.zeros(2, 2)] * len([b for b in program.buffers if b["kind"] == "input"])
    with pytest.raises(ValueError, match="input 0 .*expected shape"):
        program.run([torch.utils.dlpack.to_dlpack(t) for t in wrong])
    with pytest.raises(ValueError, match="input 0: expected a DLPack capsule"):
        program.run([object()] * len(wrong))


def _last_program():
    from neuronsim.cache import CACHE

    programs = list(CACHE._programs.values())
    assert programs
    return programs[-1]
