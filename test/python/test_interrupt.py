"""Ctrl-C during a simulation: the run loop polls Python's signal handlers (about every 50 ms
of wall time), so SIGINT stops the run with KeyboardInterrupt instead of waiting for it."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

# A looped program of 3 * ITERATIONS instructions that runs for several seconds: y = x * 2
# on one row, again and again (the SBUF tile rotates over two buffers).
ITERATIONS = 10_000_000
CHILD = textwrap.dedent(
    f"""
    import json, sys, time
    import torch
    from neuronsim import _C

    def row(buffer, space, offset, terms):
        ap = {{"space": space, "dtype": "f32", "offset": offset, "dims": [[1, 1], [1, 3]]}}
        ap.update({{"buffer": buffer}} if space == "hbm" else {{"partition": 0}})
        return {{**ap, "terms": terms}} if terms else ap

    rotating = [[0, 64, 2]]
    doc = {{
        "format": "neuronsim-program", "version": _C.PROGRAM_FORMAT_VERSION, "target": "trn2",
        "flops": 0, "origins": ["x"],
        "buffers": [
            {{"name": "x", "kind": "input", "index": 0, "dtype": "f32", "shape": [1, 3]}},
            {{"name": "y", "kind": "output", "index": 0, "dtype": "f32", "shape": [1, 3]}},
        ],
        "instructions": [
            {{"op": "dma_copy", "queue": 4, "waits": [[1, -1, [[0, 1, 0]]]],
             "dst": row(0, "sbuf", 0, rotating), "srcs": [row(0, "hbm", 0, [])]}},
            {{"op": "tensor_scalar", "queue": 1, "alu": "mul", "imm": [2.0, 0.0],
             "waits": [[4, 1, [[0, 1, 0]]]], "dst": row(0, "sbuf", 128, rotating),
             "srcs": [row(0, "sbuf", 0, rotating)]}},
            {{"op": "dma_copy", "queue": 5, "waits": [[1, 1, [[0, 1, 0]]]],
             "dst": row(1, "hbm", 0, []), "srcs": [row(0, "sbuf", 128, rotating)]}},
        ],
        "loops": [[0, 3, {ITERATIONS}]],
    }}
    program = _C.Program.from_json(json.dumps(doc))
    print("running", flush=True)
    start = time.monotonic()
    try:
        program.run([torch.ones(1, 3)])
    except KeyboardInterrupt:
        print(f"interrupted after {{time.monotonic() - start:.2f}} s", flush=True)
        sys.exit(3)
    print("finished", flush=True)
    """
)


def test_sigint_stops_a_long_simulation():
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "running"
        time.sleep(0.5)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
        waited = time.monotonic() - sent
    finally:
        child.kill()
    assert child.returncode == 3, (out, err)
    assert out.startswith("interrupted after"), out
    # the whole run takes several seconds; the poll answers within about 50 ms
    assert waited < 1.5, f"the run stopped {waited:.2f} s after SIGINT"
