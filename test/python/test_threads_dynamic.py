"""One compiled model called cold from several threads with dynamic=None and different batch
sizes (issue: InternalTorchDynamoError / "Detected that you are using FX to symbolically trace
a dynamo-optimized function" in 2-3 of 4 threads). Graphs with symbolic sizes are specialized
per shape without tracing at call time (specialize.AtenShapeSpecializer), and what does trace at
call time (eager ops on a program-cache miss) does it as Dynamo does (tracing.py)."""

from __future__ import annotations

import threading

import pytest
import torch

import neuronsim
from neuronsim.specialize import specialize_aten_graph


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def _in_threads(work, batches) -> list[str]:
    errors: list[str] = []

    def run(batch: int) -> None:
        try:
            work(batch)
        except Exception as error:  # noqa: BLE001 - reported by the test
            errors.append(f"batch {batch}: {type(error).__name__}: {str(error)[:300]}")

    threads = [threading.Thread(target=run, args=(b,)) for b in batches]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread is stuck"
    return errors


def test_cold_inference_from_four_threads():
    model = _model()
    compiled = torch.compile(model, backend="neuron")
    results = {}

    def work(batch: int) -> None:
        for size in (batch, batch + 1):  # the second size makes the batch symbolic
            x = torch.randn(size, 8)
            with torch.no_grad():
                results[size] = (compiled(x).cpu(), model(x))

    assert _in_threads(work, (3, 5, 7, 9)) == []
    assert sorted(results) == [3, 4, 5, 6, 7, 8, 9, 10]
    for out, expected in results.values():
        torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)


def test_cold_training_from_four_threads():
    model = _model()
    compiled = torch.compile(model, backend="neuron")
    reference = _model()
    grads = {}

    def work(batch: int) -> None:
        for size in (batch, batch + 1):
            x = torch.randn(size, 8)
            w = model[0].weight
            out = compiled(x)
            # torch.autograd.grad: per-thread gradients (.grad would accumulate across threads)
            (grad,) = torch.autograd.grad(out.sum(), [w])
            (expected,) = torch.autograd.grad(reference(x).sum(), [reference[0].weight])
            grads[size] = (grad.cpu(), expected)

    assert _in_threads(work, (3, 5, 7, 9)) == []
    assert sorted(grads) == [3, 4, 5, 6, 7, 8, 9, 10]
    for got, expected in grads.values():
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)


def test_symbolic_training_graph_keeps_its_size_outputs():
    # AOTAutograd's forward of a graph with symbolic sizes returns the sizes its backward
    # needs; the specialized static graph returns them as Python ints again.
    model = _model()
    compiled = torch.compile(model, backend="neuron")
    for size in (2, 3, 4, 6):
        x = torch.randn(size, 8, requires_grad=True)
        out = compiled(x)
        out.square().sum().backward()
        x_ref = x.detach().clone().requires_grad_()
        model(x_ref).square().sum().backward()
        torch.testing.assert_close(x.grad.cpu(), x_ref.grad, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(out.detach().cpu(), model(x.detach()), rtol=1e-4, atol=1e-5)
    # one static program per size for the forward and for the backward
    graphs = [s["graph"] for s in neuronsim.cache_stats()["signatures"]]
    assert sum(g.startswith("backward_") for g in graphs) >= 3


def test_specialize_aten_graph_folds_sizes_and_checks():
    # x, n -> (view(x, [n, -1]) * 2, n * 3), with the check n >= 2, as AOTAutograd emits them
    import operator

    graph = torch.fx.Graph()
    x, n = graph.placeholder("x"), graph.placeholder("n")
    ok = graph.call_function(operator.ge, (n, 2))
    graph.call_function(torch.ops.aten._assert_scalar.default, (ok, "n >= 2"))
    viewed = graph.call_function(torch.ops.aten.view.default, (x, [n, -1]))
    doubled = graph.call_function(torch.ops.aten.mul.Tensor, (viewed, 2))
    tripled = graph.call_function(operator.mul, (n, 3))
    graph.output((doubled, tripled))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)

    static, sizes = specialize_aten_graph(gm, [torch.ones(4, 3), 4])
    assert sizes == [(1, 12)]
    ops = [n.op for n in static.graph.nodes]
    assert ops.count("placeholder") == 1 and ops.count("call_function") == 2
    (out,) = static(torch.ones(4, 3))
    torch.testing.assert_close(out, torch.full((4, 3), 2.0))
    with pytest.raises(RuntimeError, match="n >= 2"):
        specialize_aten_graph(gm, [torch.ones(1, 3), 1])  # the check fails for n = 1
