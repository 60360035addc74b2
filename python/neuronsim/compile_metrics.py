"""One record per graph the neuron backend compiles: TorchNeuron's get_dynamo_metrics()
(torch.neuron.get_dynamo_metrics, torch_neuronx.get_dynamo_metrics) and Dynamo's counters
(torch._dynamo.utils.counters["neuron"])."""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass

_lock = threading.Lock()
_records: list[NeuronCompilationMetrics] = []
_ids = itertools.count()


@dataclass
class NeuronCompilationMetrics:
    graph_id: str
    graph_name: str  # options["model_name"] (or "graph"), then the graph's kind and number
    kind: str  # "forward", "backward" or "inference"
    graph_node_count: int  # FX nodes of the graph the backend compiled
    has_collectives: bool
    torch_neuronx_compile_us: float  # wall time of compiling it (compile-cache hits: ~0)
    fell_back_to_eager: bool = False  # options["fallback_execution"] ran it op by op instead


def record(metrics: NeuronCompilationMetrics) -> None:
    from torch._dynamo.utils import counters

    with _lock:
        _records.append(metrics)
    counters["neuron"]["compiled_graphs"] += 1
    if metrics.has_collectives:
        counters["neuron"]["graphs_with_collectives"] += 1


def next_graph_id() -> str:
    return f"g{next(_ids)}"


def get_dynamo_metrics() -> list[NeuronCompilationMetrics]:
    """The graphs compiled so far (since reset_dynamo_metrics()), oldest first."""
    with _lock:
        return list(_records)


def reset_dynamo_metrics() -> None:
    from torch._dynamo.utils import counters

    with _lock:
        _records.clear()
    counters["neuron"].clear()
