"""Never wrong, never a crash: crafted graph files, huge and dynamic shapes, max pooling
(3-D inputs, dilation, ceil_mode, backward), NaN in argmax and max indices, uint8."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import neuronsim
from neuronsim import native

pytestmark = pytest.mark.timeout(300)

_TOOLS = os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "cp311-cp311-linux_x86_64", "tools"
)
NEURON_IMPORT = os.path.join(_TOOLS, "neuron-import", "neuron-import")
NEURON_OPT = os.path.join(_TOOLS, "neuron-opt", "neuron-opt")
needs_tools = pytest.mark.skipif(
    not (os.path.exists(NEURON_IMPORT) and os.path.exists(NEURON_OPT)),
    reason="neuron-import / neuron-opt are not built",
)


def _compile(graph, options=None):
    """The entry the backend uses (native.compile_program -> _C.compile)."""
    text = graph if isinstance(graph, (str, bytes)) else json.dumps(graph)
    return native.compile_program(text, options or {})


def _run_tool(tool, *args, stdin=None):
    proc = subprocess.run(
        [tool, *args], input=stdin, capture_output=True, timeout=60
    )
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}: {proc.stderr[-2000:]!r}"
    return proc


def _graph(nodes, inputs, outputs, constants=()):
    return {
        "format": "neuronsim-graph",
        "version": 1,
        "name": "g",
        "inputs": [{"name": n, "shape": s, "dtype": d} for n, s, d in inputs],
        "constants": list(constants),
        "nodes": nodes,
        "outputs": [{"node": o} for o in outputs],
    }


def _node(name, target, args, outputs, source="m.py:3 in f: y = g(x)", kwargs=None):
    return {
        "name": name,
        "target": target,
        "args": args,
        "kwargs": kwargs or {},
        "outputs": outputs,
        "source": source,
    }


def _relu_graph(source="m.py:3 in f: y = x.relu()"):
    return _graph(
        [_node("relu", "aten.relu.default", [{"node": "x"}],
               [{"shape": [4], "dtype": "f32"}], source)],
        [("x", [4], "f32")],
        ["relu"],
    )


def _expect_error(graph, *fragments):
    with pytest.raises(neuronsim.NeuronCompileError) as error:
        _compile(graph)
    for fragment in fragments:
        assert fragment in str(error.value), str(error.value)
    return str(error.value)


# --- 3: crafted graph files ------------------------------------------------------------------


def test_overflowing_source_line_is_a_compile_error():
    _expect_error(_relu_graph("m.py:99999999999999999999999 in f"), "source line number",
                  "out of range")


def test_huge_source_is_parsed_without_regex():
    program = _compile(_relu_graph("x" * 100_000 + ":12 in f: " + "y" * 1000))
    assert program is not None
    # An unsupported op lists its (shortened) source.
    graph = _relu_graph("z" * 100_000)
    graph["nodes"][0]["target"] = "aten.special_airy_ai.default"
    message = _expect_error(graph, "unsupported operators (1)", "aten.special_airy_ai.default at zzz")
    assert len(message) < 1000


def test_zero_channels_in_training_batch_norm():
    node = _node(
        "bn", "aten._native_batch_norm_legit_functional.default",
        [{"node": "x"}, None, None, {"node": "rm"}, {"node": "rv"}, True, 0.1, 1e-5],
        [{"shape": [4, 0, 3], "dtype": "f32"}, {"shape": [0], "dtype": "f32"},
         {"shape": [0], "dtype": "f32"}, {"shape": [0], "dtype": "f32"},
         {"shape": [0], "dtype": "f32"}],
    )
    graph = _graph([node], [("x", [4, 0, 3], "f32"), ("rm", [0], "f32"), ("rv", [0], "f32")],
                   ["bn"])
    _expect_error(graph, "node 'bn'", "empty input")


def test_missing_output_of_a_multi_output_node():
    node = _node("m", "aten.max.dim", [{"node": "x"}, 1], [{"shape": [3], "dtype": "f32"}])
    graph = _graph([node], [("x", [3, 5], "f32")], ["m"])
    _expect_error(graph, "node 'm'", "records 1 output(s)", "without a tensor output 1")


@pytest.mark.parametrize(
    "target,args,outputs,fragment",
    [
        ("aten.slice.Tensor", [{"node": "x"}, 1, 0, 2], [{"shape": [2], "dtype": "f32"}],
         "must have rank 1"),
        ("aten.split_with_sizes.default", [{"node": "x"}, [2, 3], 1],
         [{"shape": [3], "dtype": "f32"}, {"shape": [3, 3, 3], "dtype": "f32"}],
         "must have the input's rank"),
        ("aten.native_layer_norm.default", [{"node": "x"}, [5, 5, 5], None, None, 1e-5],
         [{"shape": [3, 5], "dtype": "f32"}] * 3, "layer norm over 3 dims"),
        ("aten.convolution.default",
         [{"node": "x"}, {"node": "x"}, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1],
         [{"shape": [1], "dtype": "f32"}], "with 1 to 3 spatial dims, got rank 2"),
        ("aten.constant_pad_nd.default", [{"node": "x"}, [1, 1, 1, 1, 1, 1], 0.0],
         [{"shape": [5, 7], "dtype": "f32"}], "two per padded dim"),
        ("aten.select.int", [{"node": "x"}, 0, 7], [{"shape": [5], "dtype": "f32"}],
         "out of range"),
        ("aten.mm.default", [{"node": "x"}, {"node": "x"}], [{"shape": [3, 3, 3], "dtype": "f32"}],
         "do not fit the op"),
    ],
)
def test_ranks_from_the_file_are_checked(target, args, outputs, fragment):
    graph = _graph([_node("n", target, args, outputs)], [("x", [3, 5], "f32")], ["n"])
    _expect_error(graph, "node 'n'", fragment)


def _pool_graph(kernel, stride=None, padding=0, shape=(1, 2, 6, 6)):
    out = [{"shape": [1, 2, 3, 3], "dtype": "f32"}, {"shape": [1, 2, 3, 3], "dtype": "i64"}]
    node = _node("p", "aten.max_pool2d_with_indices.default",
                 [{"node": "x"}, kernel, stride or [], padding], out)
    return _graph([node], [("x", list(shape), "f32")], ["p"])


@pytest.mark.parametrize(
    "kernel,stride,padding,fragment",
    [
        ([1_000_000_000, 1_000_000_000], None, 0, "does not fit the input size"),
        ([2, 2], [0, 0], 0, "must be positive"),
        ([2, 2], None, [5, 5], "more than half the kernel"),
        ([18446744073709551615, 2], None, 0, "out of range"),
        ([], None, 0, "should have 1 or 2 values, got 0"),
    ],
)
def test_pooling_window_is_validated(kernel, stride, padding, fragment):
    _expect_error(_pool_graph(kernel, stride, padding), "node 'p'", fragment)


def test_huge_expanded_window_is_rejected_quickly():
    graph = _pool_graph([200, 200], [1, 1], 0, shape=(1, 1, 200, 200))
    graph["nodes"][0]["args"].append(0)
    graph["nodes"][0]["args"].append([1, 1])  # dilation
    graph["nodes"][0]["args"].append(True)  # ceil_mode: the expanded path
    graph["nodes"][0]["args"][4:] = [[1, 1], True]
    graph["nodes"][0]["outputs"] = [{"shape": [1, 1, 1, 1], "dtype": "f32"}] * 2
    _expect_error(graph, "too large to expand")


def test_non_utf8_graph_file_is_a_compile_error():
    _expect_error(b'{"format": "\xff\xfe neuronsim"}', "malformed graph file")


def test_non_utf8_bytes_in_strings_never_raise_unicode_errors():
    raw = json.dumps(_relu_graph()).encode().replace(b"m.py", b"m\xff.py")
    with pytest.raises(neuronsim.NeuronCompileError, match="malformed graph file"):
        _compile(raw)


@pytest.mark.parametrize(
    "shape,fragment",
    [
        ([2**62, 2**62], "more elements than a 64-bit count holds"),
        ([18446744073709551615], "out of range"),
        ([2**40], "more than the 12.0 GiB of HBM of one trn2 NeuronCore"),
    ],
)
def test_oversized_input_shapes(shape, fragment):
    graph = _relu_graph()
    graph["inputs"][0]["shape"] = shape
    _expect_error(graph, "graph input 'x'", fragment)


def test_constant_values_are_checked():
    graph = _graph([], [], ["c"], constants=[
        {"name": "c", "shape": [2], "dtype": "i8", "data": [1, 300]}])
    _expect_error(graph, "does not fit an i8")
    graph["constants"][0]["data"] = [1, 2.5]
    _expect_error(graph, "non-integer value")
    graph["constants"][0]["shape"] = [2**33, 2**33]
    _expect_error(graph, "more elements than a 64-bit count holds")


def test_unknown_tensor_output_index():
    graph = _relu_graph()
    graph["outputs"] = [{"node": "relu", "index": 18446744073709551615}]
    _expect_error(graph, "out of range")
    graph["outputs"] = [{"node": "relu", "index": -1}]
    _expect_error(graph, "has no tensor output -1")


@needs_tools
def test_crafted_files_through_neuron_import(tmp_path):
    cases = {
        "line": _relu_graph("m.py:99999999999999999999 in f"),
        "pool": _pool_graph([1_000_000_000, 1_000_000_000]),
    }
    for name, graph in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(graph))
        proc = _run_tool(NEURON_IMPORT, str(path))
        assert proc.returncode == 1, proc.stderr
        assert b"error: invalid graph file" in proc.stderr
    proc = _run_tool(NEURON_IMPORT, "-", stdin=b'{"a": "\xff"}')
    assert proc.returncode == 1 and b"malformed graph file" in proc.stderr


# --- 2 and 4: huge and dynamic shapes --------------------------------------------------------


def test_broadcast_intermediate_larger_than_hbm_is_rejected_fast():
    import time

    def f(a, b):
        return (a + b).sum()

    compiled = torch.compile(f, backend="neuron", dynamic=False)
    start = time.monotonic()
    with pytest.raises(neuronsim.NeuronCompileError) as error:
        compiled(torch.randn(65536, 1), torch.randn(1, 65536))
    assert time.monotonic() - start < 30  # mostly Dynamo; the compiler answers at once
    message = str(error.value)
    assert "[65536,65536] f32 needs 16.0 GiB" in message
    assert "12.0 GiB of HBM of one trn2 NeuronCore" in message
    assert "aten.add.Tensor" in message


@needs_tools
def test_neuron_opt_rejects_huge_and_dynamic_shapes(tmp_path):
    huge = tmp_path / "huge.mlir"
    huge.write_text(
        "func.func @main(%a: tensor<2147483648x200xf32>) -> tensor<2147483648x200xf32> {\n"
        "  %0 = ntorch.unary relu %a : tensor<2147483648x200xf32> -> tensor<2147483648x200xf32>\n"
        "  return %0 : tensor<2147483648x200xf32>\n}\n"
    )
    proc = _run_tool(NEURON_OPT, "--neuron-lower", str(huge))
    assert proc.returncode == 1
    assert b"argument 0 of @main" in proc.stderr and b"1600.0 GiB" in proc.stderr
    dynamic = tmp_path / "dynamic.mlir"
    dynamic.write_text(
        "func.func @main(%a: tensor<?x200xf32>, %b: tensor<?x200xf32>) -> tensor<?x200xf32> {\n"
        "  %0 = ntorch.binary add %a, %b : tensor<?x200xf32>, tensor<?x200xf32>"
        " -> tensor<?x200xf32>\n"
        "  return %0 : tensor<?x200xf32>\n}\n"
    )
    for flag in ("--neuron-lower", "--convert-ntorch-to-ntile"):
        proc = _run_tool(NEURON_OPT, flag, str(dynamic))
        assert proc.returncode == 1, flag
        assert (b"argument 0 of @main has type 'tensor<?x200xf32>' with a dynamic shape"
                in proc.stderr), proc.stderr


# --- 5: dumps parse with neuron-opt ------------------------------------------------------------


@needs_tools
def test_dumped_ir_parses_with_neuron_opt(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    compiled = torch.compile(model, backend="neuron", dynamic=False,
                             options={"dump_dir": str(tmp_path)})
    with torch.no_grad():
        compiled(torch.randn(3, 8))
    (graph_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    dumps = sorted(graph_dir.glob("*.mlir"))
    assert [p.name for p in dumps] == ["0-import.mlir", "1-ntorch.mlir", "2-ntile.mlir",
                                       "3-nisa.mlir"]
    for path in dumps:
        proc = _run_tool(NEURON_OPT, str(path))
        assert proc.returncode == 0, (path.name, proc.stderr[-2000:])
    for name in ("0-import.mlir", "1-ntorch.mlir"):
        proc = _run_tool(NEURON_OPT, "--neuron-lower", str(graph_dir / name))
        assert proc.returncode == 0, (name, proc.stderr[-2000:])
        assert b"nisa.nc_matmul" in proc.stdout


# --- 1 and 7: max pooling ----------------------------------------------------------------------

_POOL_CONFIGS = [
    # kernel, stride, padding, dilation, ceil_mode, input shape
    (2, 2, 0, 1, False, (2, 3, 8, 8)),
    (3, 1, 1, 1, False, (1, 2, 7, 7)),  # overlapping windows, padding
    (3, 2, 1, 2, False, (2, 2, 9, 9)),  # dilation 2
    (2, 2, 0, 1, True, (1, 2, 7, 7)),  # ceil_mode
    (3, 2, 1, 1, True, (1, 3, 8, 6)),  # ceil_mode with padding
    ((2, 3), (1, 2), (1, 0), (2, 1), True, (2, 2, 7, 9)),  # everything differs per dim
    (3, 2, 1, 1, False, (3, 9, 9)),  # 3-D input
    (2, 1, 0, 2, True, (2, 7, 7)),  # 3-D, dilation, ceil_mode
]


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode,shape", _POOL_CONFIGS)
def test_max_pool_forward_and_backward_match_eager(kernel, stride, padding, dilation,
                                                    ceil_mode, shape):
    def f(x):
        return F.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode)

    x = torch.randn(shape)
    x_ref = x.clone().requires_grad_()
    x_dev = x.clone().requires_grad_()
    expected = f(x_ref)
    grad = torch.randn(expected.shape)
    expected.backward(grad)
    got = torch.compile(f, backend="neuron", dynamic=False)(x_dev)
    got.backward(grad)
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
    torch.testing.assert_close(x_dev.grad, x_ref.grad, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode,shape", _POOL_CONFIGS)
def test_max_pool_backward_op_matches_eager(kernel, stride, padding, dilation, ceil_mode, shape):
    op = torch.ops.aten.max_pool2d_with_indices_backward.default
    pair = lambda v: list(v) if isinstance(v, tuple) else [v, v]  # noqa: E731
    args = (pair(kernel), pair(stride), pair(padding), pair(dilation), ceil_mode)

    def f(grad, x, indices):
        return op(grad, x, *args, indices)

    # Ties (repeated values) make the first index win; grads add up where windows overlap.
    x = torch.randint(0, 4, shape).float()
    y, indices = torch.ops.aten.max_pool2d_with_indices.default(x, *args)
    grad = torch.randn(y.shape)
    expected = f(grad, x, indices)
    got = torch.compile(f, backend="neuron", dynamic=False)(grad, x, indices)
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)
    assert got.sum().item() == pytest.approx(grad.sum().item(), abs=1e-4)


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode,shape", _POOL_CONFIGS)
def test_max_pool_indices_match_eager_with_ties(kernel, stride, padding, dilation, ceil_mode,
                                                shape):
    def f(x):
        return F.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode, return_indices=True)

    x = torch.randint(0, 3, shape).float()
    expected = f(x)
    got = torch.compile(f, backend="neuron", dynamic=False)(x)
    torch.testing.assert_close(got[0], expected[0], rtol=0, atol=0)
    assert torch.equal(got[1], expected[1])


# --- 8: NaN in argmax, max(dim), max-pool indices --------------------------------------------


def _with_nans(shape, positions):
    x = torch.randn(shape)
    for p in positions:
        x[p] = float("nan")
    return x


def test_argmax_and_max_dim_with_nan_match_eager():
    x = _with_nans((4, 6), [(0, 3), (2, 0), (2, 4)])

    def f(x):
        values, indices = x.max(dim=1)
        return torch.argmax(x), torch.argmax(x, dim=1), values, indices

    expected = f(x)
    got = torch.compile(f, backend="neuron", dynamic=False)(x)
    assert got[0].item() == expected[0].item()
    assert torch.equal(got[1], expected[1])
    torch.testing.assert_close(got[2], expected[2], equal_nan=True)
    assert torch.equal(got[3], expected[3])


def test_max_pool_indices_with_nan_match_eager():
    x = _with_nans((1, 1, 4, 4), [(0, 0, 0, 1), (0, 0, 1, 0), (0, 0, 3, 3)])

    def f(x):
        return F.max_pool2d(x, 2, return_indices=True)

    expected = f(x)
    got = torch.compile(f, backend="neuron", dynamic=False)(x)
    torch.testing.assert_close(got[0], expected[0], equal_nan=True)
    assert torch.equal(got[1], expected[1])


# --- 6: uint8: test_uint8.py (uint8 is a real unsigned type, compared with eager) ------------


# --- empty tensors (found by bench/opinfo_sweep.py: SIGFPE in the tiled lowering) -------------


def test_empty_tensors_compile_to_nothing_or_a_clear_error():
    x = torch.ones(1, 0, 3)
    got = torch.compile(lambda x: (x * 2, x), backend="neuron", dynamic=False)(x)
    assert [tuple(t.shape) for t in got] == [(1, 0, 3), (1, 0, 3)]
    # A non-empty result from an empty tensor: sums (and what is built on them) are zeros, as
    # in eager; another op would stay unwritten and is refused (test/Pipeline/reject_sizes.mlir).
    for fn in (lambda x: x.sum(1) + 1, lambda x: x.mean(1), lambda x: x.logsumexp(1),
               lambda x: x.prod(1), lambda x: x.mT @ x):  # fmt: skip
        torch._dynamo.reset()
        got = torch.compile(fn, backend="neuron", dynamic=False)(x)
        torch.testing.assert_close(got, fn(x), equal_nan=True)
