"""Graph export: the graph file written for a small AOTAutograd graph (no native module needed)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch
from torch._decomp import core_aten_decompositions
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func
from torch.fx.experimental.proxy_tensor import make_fx

import neuronsim
from neuronsim.graph_export import GRAPH_FORMAT, GRAPH_VERSION, export_graph


def _line_of(marker: str) -> int:
    lines = Path(__file__).read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if line.rstrip().endswith(marker))


class Small(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor):
        y = self.fc(x)  # MARK_FC
        values, indices = torch.max(y, dim=1)  # MARK_MAX
        z = torch.relu(y) * 0.5 + torch.tensor([1.0, float("inf"), 2.0, 3.0])  # MARK_CONST
        return z.to(torch.bfloat16), values, indices


def _export(model, *inputs: torch.Tensor):
    """Runs Dynamo + AOTAutograd (core ATen) and exports the forward graph."""
    graphs = []

    def capture(gm, example_inputs):
        graphs.append(export_graph(gm, example_inputs, name_prefix="forward"))
        return make_boxed_func(gm.forward)

    backend = aot_autograd(fw_compiler=capture, decompositions=core_aten_decompositions())
    with torch.no_grad():
        torch.compile(model, backend=backend, dynamic=False)(*inputs)
    assert len(graphs) == 1
    return graphs[0]


def test_header_inputs_and_name():
    graph = _export(Small(), torch.randn(3, 8))
    doc = json.loads(graph.text)
    assert doc["format"] == GRAPH_FORMAT and doc["version"] == GRAPH_VERSION
    assert doc["name"] == f"forward_{graph.hash[:12]}"
    assert [(i["shape"], i["dtype"]) for i in doc["inputs"]] == [
        ([4, 8], "f32"),
        ([4], "f32"),
        ([3, 8], "f32"),
    ]


def test_node_targets_and_args():
    doc = json.loads(_export(Small(), torch.randn(3, 8)).text)
    nodes = {n["name"]: n for n in doc["nodes"]}
    targets = [n["target"] for n in doc["nodes"]]
    assert targets[:2] == ["aten.permute.default", "aten.addmm.default"]
    assert {"aten.max.dim", "aten.relu.default", "aten.mul.Tensor", "aten.add.Tensor"} <= set(
        targets
    )
    assert "_operator.getitem" not in targets  # getitem is folded into references
    weight = doc["inputs"][0]["name"]
    assert nodes["permute"]["args"] == [{"node": weight}, [1, 0]]
    assert nodes["permute"]["outputs"] == [{"shape": [8, 4], "dtype": "f32"}]
    mul = next(n for n in doc["nodes"] if n["target"] == "aten.mul.Tensor")
    assert isinstance(mul["args"][1], float) and mul["args"][1] == 0.5
    assert '"args":[{"node":"relu"},0.5]' in json.dumps(mul, separators=(",", ":"))
    maximum = next(n for n in doc["nodes"] if n["target"] == "aten.max.dim")
    assert maximum["args"][1] == 1 and isinstance(maximum["args"][1], int)
    assert maximum["outputs"] == [{"shape": [3], "dtype": "f32"}, {"shape": [3], "dtype": "i64"}]
    to_bf16 = next(n for n in doc["nodes"] if n["target"] == "aten._to_copy.default")
    assert to_bf16["kwargs"]["dtype"] == {"dtype": "bf16"}


def test_graph_outputs_reference_multi_output_nodes_by_index():
    doc = json.loads(_export(Small(), torch.randn(3, 8)).text)
    maximum = next(n for n in doc["nodes"] if n["target"] == "aten.max.dim")
    assert doc["outputs"][1:] == [
        {"node": maximum["name"], "index": 0},
        {"node": maximum["name"], "index": 1},
    ]


def test_constants_are_written_with_their_values():
    doc = json.loads(_export(Small(), torch.randn(3, 8)).text)
    assert len(doc["constants"]) == 1
    constant = doc["constants"][0]
    assert constant["shape"] == [4] and constant["dtype"] == "f32"
    assert constant["data"] == [1.0, {"float": "inf"}, 2.0, 3.0]


def test_source_lines_point_at_this_file():
    doc = json.loads(_export(Small(), torch.randn(3, 8)).text)
    sources = {n["target"]: n["source"] for n in doc["nodes"]}
    here = Path(__file__).name
    assert sources["aten.addmm.default"] == (
        f"{here}:{_line_of('# MARK_FC')} in forward: y = self.fc(x)  # MARK_FC"
    )
    assert sources["aten.max.dim"].startswith(f"{here}:{_line_of('# MARK_MAX')} in forward: ")


def test_hash_is_stable_and_depends_on_shapes():
    first = _export(Small(), torch.randn(3, 8))
    torch._dynamo.reset()
    again = _export(Small(), torch.randn(3, 8))
    torch._dynamo.reset()
    other = _export(Small(), torch.randn(5, 8))
    assert first.hash == again.hash and first.text == again.text
    assert other.hash != first.hash


def test_float64_becomes_float32_with_one_warning():
    model = torch.nn.Linear(8, 4).double()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        doc = json.loads(_export(model, torch.randn(3, 8, dtype=torch.float64)).text)
    assert {i["dtype"] for i in doc["inputs"]} == {"f32"}
    assert all(o["dtype"] == "f32" for n in doc["nodes"] for o in n["outputs"])
    float64_warnings = [w for w in caught if "float64" in str(w.message)]
    assert len(float64_warnings) == 1


def test_unsupported_dtype_is_named():
    def double(x):
        return x * 2

    with pytest.raises(neuronsim.NeuronCompileError, match="dtype torch.complex64 of graph input"):
        _export(double, torch.randn(3, 8, dtype=torch.complex64))


def test_outputs_that_are_not_nodes_are_left_out():
    def with_none(x):
        return x * 2, None

    gm = make_fx(with_none)(torch.randn(2, 3))
    doc = json.loads(export_graph(gm).text)
    assert doc["outputs"] == [{"node": doc["nodes"][0]["name"]}]
