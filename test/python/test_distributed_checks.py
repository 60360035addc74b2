"""The `neuron` process group on strided views (gloo moves storage as if it were contiguous:
the backend stages them) and on ranks whose tensors differ in shape or dtype (a ValueError on
every rank, where gloo would abort the process)."""

from __future__ import annotations

import os
import socket
import time

import pytest
import torch
import torch.multiprocessing as mp

import distributed_check_workers as workers

TIMEOUT_S = 120


def _run(fn, world: int, tmp_path) -> list[dict]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    context = mp.start_processes(
        fn, args=(world, port, str(tmp_path)), nprocs=world, join=False, start_method="spawn"
    )
    deadline = time.monotonic() + TIMEOUT_S
    while not context.join(timeout=2):
        if time.monotonic() > deadline:
            for process in context.processes:
                process.kill()
            pytest.fail(f"{fn.__name__} on {world} ranks did not finish in {TIMEOUT_S} s")
    return [torch.load(os.path.join(tmp_path, f"rank{r}.pt")) for r in range(world)]


def test_collectives_into_strided_views(tmp_path):
    world = 2
    for r in _run(workers.strided, world, tmp_path):
        assert torch.equal(r["broadcast"], torch.tensor([1.0, 0, 2, 0, 3, 0, 4, 0]))
        expected = torch.arange(8.0) * torch.tensor([1.0, 3.0] * 4)  # odd elements summed
        assert torch.equal(r["all_reduce"][1::2], expected[1::2])
        assert r["all_gather"].shape == (4, world)
        assert torch.equal(r["all_gather"], torch.tensor([[1.0, 2.0]] * 4))
        assert torch.equal(r["cpu_broadcast"], torch.tensor([5.0, 0, 0, 6.0, 0, 0]))


def test_mismatched_all_reduce_raises_on_every_rank(tmp_path):
    results = _run(workers.mismatched, 2, tmp_path)
    for r in results:
        shape_error, dtype_error = r["errors"]
        assert shape_error == (
            "all_reduce: every rank must pass tensors of the same dtypes and shapes, got "
            "rank 0: (float32[4]); rank 1: (float32[5])"
        )
        assert dtype_error == (
            "all_reduce: every rank must pass tensors of the same dtypes and shapes, got "
            "rank 0: (float32[4]); rank 1: (int64[4])"
        )
        assert torch.equal(r["good"], torch.full((3,), 3.0))  # the group still works
