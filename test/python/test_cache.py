"""In-memory compile cache: same shapes compile nothing, new shapes compile once more."""

from __future__ import annotations

import torch

import neuronsim
from models import MLP


def _run(compiled, batch: int) -> None:
    with torch.no_grad():
        compiled(torch.randn(batch, 200))


def test_same_shape_compiles_once_and_new_shape_once_more():
    compiled = torch.compile(MLP(200, 300, 10), backend="neuron", dynamic=False)
    _run(compiled, 3)
    assert neuronsim.cache_stats()["compiles"] == 1
    _run(compiled, 3)
    assert neuronsim.cache_stats()["compiles"] == 1
    _run(compiled, 5)
    assert neuronsim.cache_stats()["compiles"] == 2
    _run(compiled, 5)
    _run(compiled, 3)
    stats = neuronsim.cache_stats()
    assert stats["compiles"] == 2 and stats["misses"] == 2


def test_recompiling_the_same_graph_hits_the_cache():
    model = MLP(200, 300, 10)
    _run(torch.compile(model, backend="neuron", dynamic=False), 3)
    torch._dynamo.reset()  # Dynamo forgets its compiled frame; our cache keeps the program
    _run(torch.compile(model, backend="neuron", dynamic=False), 3)
    stats = neuronsim.cache_stats()
    assert stats["compiles"] == 1 and stats["hits"] == 1


def test_target_is_part_of_the_key():
    model = MLP(200, 300, 10)
    for target in ("trn2", "trn1"):
        if target not in neuronsim.targets():
            continue
        torch._dynamo.reset()
        _run(torch.compile(model, backend="neuron", dynamic=False, options={"target": target}), 3)
    expected = len([t for t in ("trn2", "trn1") if t in neuronsim.targets()])
    assert neuronsim.cache_stats()["compiles"] == expected


def test_reset_clears_counters():
    _run(torch.compile(MLP(200, 300, 10), backend="neuron", dynamic=False), 3)
    neuronsim.reset()
    assert neuronsim.cache_stats()["compiles"] == 0
    assert neuronsim.last_run_stats() is None
