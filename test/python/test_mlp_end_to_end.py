"""End to end: the MLP through torch.compile(backend="neuron") matches eager; run stats."""

from __future__ import annotations

import pytest
import torch

import neuronsim
from models import MLP, TOLERANCE, relative_error

SHAPES = [
    pytest.param((3, 200, 300, 10), id="batch3-200-300-10"),
    pytest.param((128, 256, 128, 128), id="multiples-of-128"),
    # batch 1: the bias [N] and the matmul result [1, N] have the same element count;
    # the fused epilogue must iterate over their broadcast shape.
    pytest.param((1, 20, 50, 5), id="batch1"),
]


def _compare(dtype: torch.dtype, batch: int, features: int, hidden: int, classes: int):
    model = MLP(features, hidden, classes).to(dtype)
    x = torch.randn(batch, features, dtype=dtype)
    with torch.no_grad():
        expected = model(x)
        actual = torch.compile(model, backend="neuron", dynamic=False)(x)
    return actual, expected


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("shape", SHAPES)
def test_mlp_matches_eager(dtype, shape):
    actual, expected = _compare(dtype, *shape)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert actual.device.type == "cpu"
    assert relative_error(actual, expected) <= TOLERANCE[dtype]


def test_fp32_matches_elementwise():
    actual, expected = _compare(torch.float32, 3, 200, 300, 10)
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5 * expected.abs().max())


def test_forward_with_grad_enabled():
    model = MLP(200, 300, 10)
    x = torch.randn(3, 200)
    actual = torch.compile(model, backend="neuron", dynamic=False)(x)
    assert relative_error(actual.detach(), model(x).detach()) <= TOLERANCE[torch.float32]


def test_float64_runs_as_float32_and_returns_float64():
    model = MLP(20, 30, 5).double()
    x = torch.randn(3, 20, dtype=torch.float64)
    with torch.no_grad(), pytest.warns(UserWarning, match="float64"):
        actual = torch.compile(model, backend="neuron", dynamic=False)(x)
    expected = model(x)
    assert actual.dtype == torch.float64
    assert relative_error(actual, expected) <= 1e-5


def test_non_contiguous_input():
    model = MLP(20, 30, 5)
    x = torch.randn(20, 3).t()
    with torch.no_grad():
        actual = torch.compile(model, backend="neuron", dynamic=False)(x)
    assert relative_error(actual, model(x)) <= TOLERANCE[torch.float32]


def test_run_stats_are_reported():
    _compare(torch.float32, 3, 200, 300, 10)
    stats = neuronsim.last_run_stats()
    assert stats["sim_ns"] > 0
    assert stats["instructions"] > 0
    assert stats["flops"] >= 2 * 3 * (200 * 300 + 300 * 10)
    assert stats["hbm_bytes"] > 0
    assert set(stats["engine_busy_ns"]) == {"tensor", "vector", "scalar", "gpsimd", "dma"}
    assert stats["engine_busy_ns"]["tensor"] > 0


def test_simulated_time_grows_with_size():
    _compare(torch.float32, 3, 200, 300, 10)
    small = neuronsim.last_run_stats()["sim_ns"]
    _compare(torch.float32, 256, 512, 1024, 256)
    large = neuronsim.last_run_stats()["sim_ns"]
    assert large > small > 0


def test_dump_dir_receives_the_graph_file(tmp_path):
    model = MLP(20, 30, 5)
    compiled = torch.compile(
        model, backend="neuron", dynamic=False, options={"dump_dir": str(tmp_path)}
    )
    with torch.no_grad():
        compiled(torch.randn(3, 20))
    graph_dirs = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert len(graph_dirs) == 1 and graph_dirs[0].name.startswith("forward_")
    assert (graph_dirs[0] / "graph.json").is_file()


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-4), (torch.bfloat16, 2e-2)])
def test_elementwise_over_two_matmuls(dtype, tol):
    # (a @ b - c @ d) + e: one fusion reads both products (neither matmul's epilogue).
    def f(a, b, c, d, e):
        return (a @ b - c @ d) + e

    xs = [torch.randn(64, 96, dtype=dtype), torch.randn(96, 80, dtype=dtype)]
    xs += [torch.randn(64, 96, dtype=dtype), torch.randn(96, 80, dtype=dtype)]
    xs += [torch.randn(64, 80, dtype=dtype)]
    actual = torch.compile(f, backend="neuron", dynamic=False)(*xs)
    torch.testing.assert_close(actual, f(*xs), rtol=tol, atol=tol * 10)
