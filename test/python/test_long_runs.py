"""Long simulations: Ctrl-C stops them (the run loop polls Python's signal handlers about
every 50 ms of wall time: KeyboardInterrupt instead of waiting for the run), and their memory
does not grow with the executed instructions (each queue keeps its last completion times)."""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from neuronsim import _C


def _row(buffer: int, space: str, offset: int, terms: list) -> dict:
    ap = {"space": space, "dtype": "f32", "offset": offset, "dims": [[1, 1], [1, 3]]}
    ap.update({"buffer": buffer} if space == "hbm" else {"partition": 0})
    return {**ap, "terms": terms} if terms else ap


def _looped(iterations: int) -> dict:
    """y = x * 2 on one row, `iterations` times (3 instructions each; the SBUF tile rotates
    over two buffers, each load waits for the multiply of the iteration before)."""
    rotating = [[0, 64, 2]]
    return {
        "format": "neuronsim-program", "version": _C.PROGRAM_FORMAT_VERSION, "target": "trn2",
        "flops": 0, "origins": ["x"],
        "buffers": [
            {"name": "x", "kind": "input", "index": 0, "dtype": "f32", "shape": [1, 3]},
            {"name": "y", "kind": "output", "index": 0, "dtype": "f32", "shape": [1, 3]},
        ],
        "instructions": [
            {"op": "dma_copy", "queue": 4, "waits": [[1, -1, [[0, 1, 0]]]],
             "dst": _row(0, "sbuf", 0, rotating), "srcs": [_row(0, "hbm", 0, [])]},
            {"op": "tensor_scalar", "queue": 1, "alu": "mul", "imm": [2.0, 0.0],
             "waits": [[4, 1, [[0, 1, 0]]]], "dst": _row(0, "sbuf", 128, rotating),
             "srcs": [_row(0, "sbuf", 0, rotating)]},
            {"op": "dma_copy", "queue": 5, "waits": [[1, 1, [[0, 1, 0]]]],
             "dst": _row(1, "hbm", 0, []), "srcs": [_row(0, "sbuf", 128, rotating)]},
        ],
        "loops": [[0, 3, iterations]],
    }  # fmt: skip


# Runs the program document read from stdin; exit status 3 on KeyboardInterrupt.
CHILD = textwrap.dedent(
    """
    import sys, time
    import torch
    from neuronsim import _C

    program = _C.Program.from_json(sys.stdin.readline())
    print("running", flush=True)
    start = time.monotonic()
    try:
        program.run([torch.ones(1, 3)])
    except KeyboardInterrupt:
        print(f"interrupted after {time.monotonic() - start:.2f} s", flush=True)
        sys.exit(3)
    print("finished", flush=True)
    """
)


def test_sigint_stops_a_long_simulation():
    # 3e8 instructions: about 40 s of functional simulation on an idle machine, minutes on a
    # loaded one; the poll answers within about 50 ms of wall time, so the bound below leaves
    # room for a loaded machine while staying far below the run's length
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        child.stdin.write(json.dumps(_looped(100_000_000)) + "\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "running"
        time.sleep(0.5)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=600)
        waited = time.monotonic() - sent
    finally:
        child.kill()
    assert child.returncode == 3, (out, err)
    assert out.startswith("interrupted after"), out
    assert waited < 10, f"the run stopped {waited:.2f} s after SIGINT"


def test_timing_only_memory_does_not_grow_with_instructions():
    x = [torch.ones(1, 3)]
    program = lambda n: _C.Program.from_json(json.dumps(_looped(n)))  # noqa: E731
    _, short = program(1000).run(x, timing_only=True)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    _, long = program(20_000_000).run(x, timing_only=True)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert long["instructions"] == 60_000_000
    # 60 M instances kept ~11 bytes each (660 MB) before; now a fixed window per queue
    assert grown < 64 * 1024, f"peak memory grew {grown} KiB"
    # the same steady state: each iteration takes the same time in both runs
    per_iteration = (long["sim_ns"] - short["sim_ns"]) / (20_000_000 - 1000)
    assert per_iteration == pytest.approx(short["sim_ns"] / 1000, rel=0.01)
