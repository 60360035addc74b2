"""The native layer on a hand-written program: Program.run, DLPack, stats, errors, the runner."""

from __future__ import annotations

import copy
import json

import pytest
import torch
from torch.utils.dlpack import to_dlpack

import neuronsim
from neuronsim import _C
from neuronsim.runner import CompiledGraph, LiteralOutput, OutputSpec


def _sbuf(offset: int) -> dict:
    return {"space": "sbuf", "dtype": "f32", "partition": 0, "offset": offset,
            "dims": [[1, 4], [1, 3]]}  # fmt: skip


def _hbm(buffer: int) -> dict:
    return {"space": "hbm", "dtype": "f32", "buffer": buffer, "offset": 0,
            "dims": [[3, 4], [1, 3]]}  # fmt: skip


# y = x * 2 for x: f32[4, 3]: DMA in, Vector engine multiply, DMA out.
DOUBLE = {
    "format": "neuronsim-program",
    "version": _C.PROGRAM_FORMAT_VERSION,
    "target": "trn2",
    "flops": 12,
    "origins": ["aten.mul.Tensor (model.py:1)"],
    "buffers": [
        {"name": "x", "kind": "input", "index": 0, "dtype": "f32", "shape": [4, 3]},
        {"name": "y", "kind": "output", "index": 0, "dtype": "f32", "shape": [4, 3]},
    ],
    "instructions": [
        {"op": "dma_copy", "queue": 4, "dst": _sbuf(0), "srcs": [_hbm(0)]},
        {
            "op": "tensor_scalar",
            "queue": 1,
            "alu": "mul",
            "imm": [2.0, 0.0],
            "waits": [[4, 1]],
            "dst": _sbuf(64),
            "srcs": [_sbuf(0)],
        },  # fmt: skip
        {"op": "dma_copy", "queue": 5, "waits": [[1, 1]], "dst": _hbm(1), "srcs": [_sbuf(64)]},
    ],
}


def _program(doc: dict = DOUBLE) -> _C.Program:
    return _C.Program.from_json(json.dumps(doc))


def test_program_properties_and_json_round_trip():
    program = _program()
    assert program.target == "trn2" and program.num_instructions == 3 and program.flops == 12
    assert [
        (b["name"], b["kind"], b["index"], b["dtype"], b["shape"]) for b in program.buffers
    ] == [
        ("x", "input", 0, "f32", (4, 3)),
        ("y", "output", 0, "f32", (4, 3)),
    ]
    again = _C.Program.from_json(program.to_json())
    assert again.to_json() == program.to_json()


def test_run_computes_and_reports_stats():
    x = torch.randn(4, 3)
    outputs, stats = _program().run([to_dlpack(x)])
    y = torch.from_dlpack(outputs[0])
    assert y.dtype == torch.float32 and y.shape == (4, 3)
    assert torch.equal(y, x * 2)
    assert stats["sim_ns"] > 0 and stats["instructions"] == 3 and stats["flops"] == 12
    assert stats["hbm_bytes"] == 2 * 4 * 3 * 4
    assert set(stats["engine_busy_ns"]) == {"tensor", "vector", "scalar", "gpsimd", "dma"}
    assert stats["engine_busy_ns"]["vector"] > 0


def _row(buffer: int, space: str, offset: int, terms: list) -> dict:
    ap = {"space": space, "dtype": "f32", "offset": offset, "dims": [[1, 1], [1, 3]]}
    ap.update({"buffer": buffer} if space == "hbm" else {"partition": 0})
    return {**ap, "terms": terms} if terms else ap


# The same y = x * 2 as a loop over the 4 rows: row offsets 3 * i0 in HBM, the SBUF
# tiles rotate over two buffers (64 bytes apart), waits count per iteration.
LOOPED = {
    **DOUBLE,
    "instructions": [
        {"op": "dma_copy", "queue": 4, "waits": [[1, -1, [[0, 1, 0]]]],
         "dst": _row(0, "sbuf", 0, [[0, 64, 2]]), "srcs": [_row(0, "hbm", 0, [[0, 3, 0]])]},
        {"op": "tensor_scalar", "queue": 1, "alu": "mul", "imm": [2.0, 0.0],
         "waits": [[4, 1, [[0, 1, 0]]]],
         "dst": _row(0, "sbuf", 128, [[0, 64, 2]]), "srcs": [_row(0, "sbuf", 0, [[0, 64, 2]])]},
        {"op": "dma_copy", "queue": 5, "waits": [[1, 1, [[0, 1, 0]]]],
         "dst": _row(1, "hbm", 0, [[0, 3, 0]]), "srcs": [_row(0, "sbuf", 128, [[0, 64, 2]])]},
    ],  # fmt: skip
    "loops": [[0, 3, 4]],
}


def test_looped_program_runs_every_iteration():
    program = _program(LOOPED)
    assert program.num_instructions == 3 and program.num_loops == 1
    assert _C.Program.from_json(program.to_json()).to_json() == program.to_json()
    x = torch.randn(4, 3)
    outputs, stats = program.run([to_dlpack(x)])
    assert torch.equal(torch.from_dlpack(outputs[0]), x * 2)
    assert stats["instructions"] == 12 and stats["hbm_bytes"] == 2 * 4 * 3 * 4


def test_run_accepts_tensors_and_non_contiguous_inputs():
    x = torch.randn(3, 4).t()
    outputs, _ = _program().run([x])
    assert torch.equal(torch.from_dlpack(outputs[0]), x * 2)


def test_timing_only_returns_outputs_of_the_right_shape():
    outputs, stats = _program().run([to_dlpack(torch.randn(4, 3))], timing_only=True)
    assert torch.from_dlpack(outputs[0]).shape == (4, 3)
    assert stats["sim_ns"] > 0


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (lambda: [], "program takes 1 inputs, got 0"),
        (lambda: [to_dlpack(torch.randn(2, 2))], r"input 0 \('x'\): expected shape \[4, 3\]"),
        (
            lambda: [to_dlpack(torch.randn(4, 3, dtype=torch.bfloat16))],
            r"input 0 \('x'\): expected dtype f32, got BFloat16",
        ),
        (lambda: [object()], "input 0: expected a DLPack capsule"),
    ],
    ids=["count", "shape", "dtype", "not-a-tensor"],
)
def test_run_rejects_bad_inputs(inputs, message):
    with pytest.raises(ValueError, match=message):
        _program().run(inputs())


def test_a_capsule_is_consumed_once():
    capsule = to_dlpack(torch.randn(4, 3))
    _program().run([capsule])
    with pytest.raises(ValueError, match="unused DLPack capsule"):
        _program().run([capsule])


def test_illegal_program_raises_simulation_error():
    doc = copy.deepcopy(DOUBLE)
    doc["instructions"][1]["dst"]["offset"] = 1 << 30  # far beyond SBUF
    with pytest.raises(_C.SimulationError):
        _program(doc).run([to_dlpack(torch.randn(4, 3))])


def test_malformed_program_raises_format_error():
    doc = copy.deepcopy(DOUBLE)
    doc["instructions"][0]["op"] = "no_such_op"
    with pytest.raises(_C.FormatError, match="instructions"):
        _program(doc)
    assert issubclass(_C.FormatError, ValueError)


def test_runner_returns_eager_dtypes_and_records_stats():
    graph = CompiledGraph(_program(), "double", [OutputSpec((4, 3), torch.float64)])
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    with pytest.warns(UserWarning, match="float64"):
        (y,) = graph([x])
    assert y.dtype == torch.float64
    torch.testing.assert_close(y, (x * 2).detach())
    stats = neuronsim.last_run_stats()
    assert stats["graph"] == "double" and stats["target"] == "trn2" and stats["sim_ns"] > 0


def test_runner_wraps_simulation_errors():
    doc = copy.deepcopy(DOUBLE)
    doc["instructions"][1]["dst"]["offset"] = 1 << 30
    graph = CompiledGraph(_program(doc), "broken", [OutputSpec((4, 3), torch.float32)])
    with pytest.raises(neuronsim.NeuronRuntimeError, match="graph broken"):
        graph([torch.randn(4, 3)])


def test_runner_puts_back_outputs_the_program_does_not_compute():
    layout = [LiteralOutput(None), OutputSpec((4, 3), torch.float32), LiteralOutput(None)]
    x = torch.randn(4, 3)
    none_before, y, none_after = CompiledGraph(_program(), "double", layout)([x])
    assert none_before is None and none_after is None
    assert torch.equal(y, x * 2)
