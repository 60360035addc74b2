"""Functional collectives inside compiled graphs run as instructions of the program's
collective engine: the data moves between the ranks' processes through gloo, the ranks'
clocks meet, and compute that does not need the result overlaps the communication."""

import pytest
import torch

import collective_program_workers as workers
from test_distributed import _run  # one process per rank, loopback gloo, bounded time


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_every_collective_kind_computes_across_ranks(tmp_path, dtype):
    for rank in _run(workers.kinds, 2, tmp_path, dtype):
        # Twelve collectives in the program, none left to the process group or the CPU.
        assert rank["collectives"] == 12
        assert rank["fallbacks"] == {}
        tol = 0 if dtype == "float32" else 1e-2
        for got, expected in zip(rank["got"], rank["expected"], strict=True):
            torch.testing.assert_close(got, expected, rtol=tol, atol=tol)


def test_independent_compute_overlaps_the_all_reduce(tmp_path):
    independent = _run(workers.overlap, 2, tmp_path / "independent", False, False)
    dependent = _run(workers.overlap, 2, tmp_path / "dependent", True, False)
    for rank in independent + dependent:
        assert rank["collectives"] == 1
        torch.testing.assert_close(rank["reduced"], torch.full((1 << 20,), 1.5))
        torch.testing.assert_close(rank["y"], rank["expected_y"], rtol=1e-4, atol=1e-3)
        summary = rank["summary"]
        # The measurement sees the collective's time and how much of it compute hid.
        assert summary["comm_ns"] > 0
        assert summary["overlapped_comm_ns"] == pytest.approx(
            rank["collective_ns"] - rank["exposed_ns"]
        )
        assert summary["exposed_comm_ns"] == pytest.approx(
            summary["comm_ns"] + summary["comm_wait_ns"] - summary["overlapped_comm_ns"]
        )
    for free, bound in zip(independent, dependent, strict=True):
        # The fp32 1024 x 1024 x 4096 matmul (about 430 us on trn2) runs while the 4 MiB
        # all-reduce (a 2-rank ring: one reduce and one gather step, about 180 us) is in
        # flight: the collective
        # is hidden, and the step is shorter than with the matmul waiting for it (then only
        # the loads of w overlap the collective).
        assert free["exposed_ns"] < 0.25 * free["collective_ns"]
        assert bound["exposed_ns"] > 0.5 * bound["collective_ns"]
        assert free["sim_ns"] < bound["sim_ns"]


def test_timing_only_runs_time_the_same_collectives(tmp_path):
    functional = _run(workers.overlap, 2, tmp_path / "functional", False, False)
    timing = _run(workers.overlap, 2, tmp_path / "timing", False, True)
    for f, t in zip(functional, timing, strict=True):
        assert t["collectives"] == 1
        assert t["sim_ns"] == pytest.approx(f["sim_ns"])
        assert t["collective_ns"] == pytest.approx(f["collective_ns"])
