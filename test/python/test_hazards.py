"""The simulator's hazard detection on compiled programs: with the compiler's semaphore waits
a program runs clean and matches eager; with its waits stripped, the simulated schedule no
longer follows program order and the run raises instead of returning optimistic numbers."""

import json

import pytest
import torch
import torch.nn.functional as F
from torch.utils.dlpack import from_dlpack, to_dlpack

import neuronsim
from neuronsim import _C


def _program(tmp_path, fn, *inputs):
    compiled = torch.compile(fn, backend="neuron", dynamic=False, options={"dump_dir": str(tmp_path)})
    with torch.no_grad():
        expected = fn(*inputs)
        actual = compiled(*inputs)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-4)
    (path,) = sorted(tmp_path.glob("*/program.json"))
    return json.loads(path.read_text())


def _run(program_json, inputs, **options):
    program = _C.Program.from_json(json.dumps(program_json))
    outputs, stats = program.run([to_dlpack(x.contiguous()) for x in inputs], **options)
    return [from_dlpack(o) for o in outputs], stats


def _attention():
    q = torch.randn(1, 2, 160, 16)
    return (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)), (q, q, q)


def _mlp():
    def mlp(x, w1, b1, w2, b2):
        return F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2)

    shapes = [(300, 64), (96, 64), (96,), (32, 96), (32,)]
    return mlp, tuple(torch.randn(s) for s in shapes)


@pytest.mark.parametrize("case", [_attention, _mlp], ids=["causal_attention", "two_layer_mlp"])
def test_stripped_waits_are_hazards(tmp_path, case):
    fn, inputs = case()
    program = _program(tmp_path, fn, *inputs)
    with torch.no_grad():
        expected = fn(*inputs)
    (out,), _ = _run(program, inputs)
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)

    waits = sum(len(inst.get("waits", [])) for inst in program["instructions"])
    assert waits > 0
    for inst in program["instructions"]:
        inst.pop("waits", None)
    with pytest.raises(_C.SimulationError, match=r"hazard \((read after write|write after "
                       r"read|write after write)\): instruction \d+ \(\w+ on queue \w+, from "
                       r"aten\.[\w.]+ .*\).* which instruction \d+ \(\w+ on queue \w+"):
        _run(program, inputs)
    # Without the check the numbers still come out (the functional model runs in program
    # order) and the time is optimistic: that is what the detector prevents.
    _, stats = _run(program, inputs, check_hazards=False)
    assert stats["sim_ns"] > 0


def test_hazards_surface_as_runtime_errors_through_torch_compile(tmp_path, monkeypatch):
    # A program whose waits are lost between the compiler and the simulator: the user sees a
    # NeuronRuntimeError naming both instructions, not wrong numbers.
    real_compile = neuronsim.native.compile_program

    def compile_and_drop_waits(*args, **kwargs):
        program = real_compile(*args, **kwargs)
        text = json.loads(program.to_json())
        for inst in text["instructions"]:
            inst.pop("waits", None)
        return _C.Program.from_json(json.dumps(text))

    monkeypatch.setattr(neuronsim.native, "compile_program", compile_and_drop_waits)
    mlp, inputs = _mlp()
    compiled = torch.compile(mlp, backend="neuron", dynamic=False)
    with pytest.raises(neuronsim.NeuronRuntimeError, match=r"hazard \("):
        compiled(*inputs)
    torch._dynamo.reset()
    off = torch.compile(mlp, backend="neuron", dynamic=False, options={"check_hazards": False})
    off(*inputs)  # runs; its simulated time is not to be trusted


def test_check_hazards_option_is_validated():
    with pytest.raises(neuronsim.NeuronCompileError, match="must be a boolean"):
        torch.compile(torch.relu, backend="neuron", options={"check_hazards": "maybe"})(
            torch.randn(4)
        )
