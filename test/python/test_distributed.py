"""torch.distributed with the `neuron` backend: the topology cost model, and 2-rank DDP, FSDP2,
tensor- and pipeline-parallel training (one process per rank, gloo on loopback underneath)
compared with a single-process run."""

import os
import socket
import time

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import distributed_workers as workers
from neuronsim.distributed import topology
from neuronsim.distributed.topology import Link, Topology

TIMEOUT_S = 240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(fn, world: int, tmp_path, *extra) -> list[dict]:
    """Runs fn(rank, world, port, out, *extra) in `world` processes; their saved results."""
    context = mp.start_processes(
        fn, args=(world, _free_port(), str(tmp_path), *extra), nprocs=world, join=False,
        start_method="spawn",
    )  # fmt: skip
    deadline = time.monotonic() + TIMEOUT_S
    while not context.join(timeout=5):
        if time.monotonic() > deadline:
            for process in context.processes:
                process.kill()
            pytest.fail(f"{fn.__name__} on {world} ranks did not finish in {TIMEOUT_S} s")
    return [torch.load(os.path.join(tmp_path, f"rank{r}.pt")) for r in range(world)]


def _assert_params_close(got, expected, tol=1e-5):
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e, rtol=tol, atol=tol)


# ---------------------------------------------------------------------------------------------
# Cost model


def test_backend_is_registered_for_neuron_and_cpu():
    assert "neuron" in dist.Backend.backend_list
    assert dist.Backend.default_device_backend_map.get("neuron") == "neuron"


def test_trn2_places_four_ranks_per_chip_and_64_per_instance():
    t = Topology.of_target("trn2")
    assert (t.cores_per_chip, t.chips_per_node, t.ranks_per_node) == (4, 16, 64)
    assert [t.chip_of(r) for r in (0, 3, 4, 63, 64)] == [0, 0, 1, 15, 16]
    assert [t.node_of(r) for r in (0, 63, 64, 130)] == [0, 0, 1, 2]


def test_ring_all_reduce_is_the_textbook_formula():
    t = Topology.of_target("trn2")
    nbytes = 64 << 20
    for ranks in ([0, 1, 2, 3], list(range(16))):
        p = len(ranks)
        link = t.flat_link(ranks)
        expected = 2 * (p - 1) / p * nbytes / link.bytes_per_ns + 2 * (p - 1) * link.latency_ns
        assert topology.collective_ns(t, topology.ALL_REDUCE, nbytes, ranks) == pytest.approx(
            expected
        )
        bound = topology.ring_bound_ns(link, topology.ALL_REDUCE, nbytes, p)
        # the ring's bandwidth bound plus one latency per step
        assert expected - bound == pytest.approx(2 * (p - 1) * link.latency_ns)
    # Ranks of one chip use the on-chip path; four chips share NeuronLink per chip.
    assert t.flat_link([0, 1, 2, 3]) == t.on_chip
    assert t.flat_link(list(range(16))) == Link(t.chip_link.bytes_per_ns / 4, t.chip_link.latency_ns)


def test_costs_grow_with_bytes_ranks_and_distance():
    t = Topology.of_target("trn2")
    one_chip = topology.collective_ns(t, topology.ALL_REDUCE, 1 << 20, [0, 1, 2, 3])
    four_chips = topology.collective_ns(t, topology.ALL_REDUCE, 1 << 20, [0, 4, 8, 12])
    two_nodes = topology.collective_ns(t, topology.ALL_REDUCE, 1 << 20, [0, 64])
    assert one_chip < four_chips < two_nodes
    assert topology.collective_ns(t, topology.ALL_REDUCE, 1 << 24, [0, 1]) > topology.collective_ns(
        t, topology.ALL_REDUCE, 1 << 20, [0, 1]
    )
    assert topology.collective_ns(t, topology.ALL_GATHER, 1 << 20, [0]) == 0.0
    with pytest.raises(ValueError, match="unknown collective kind 'gossip'"):
        topology.collective_ns(t, "gossip", 1, [0, 1])


# ---------------------------------------------------------------------------------------------
# Two ranks


def test_ranks_align_their_clocks_at_a_collective(tmp_path):
    r0, r1 = _run(workers.clock_alignment, 2, tmp_path)
    assert torch.equal(r0["value"], r1["value"])
    assert r0["after"] == pytest.approx(r1["after"])  # both leave at the same simulated time
    assert r0["wait"] > 0 and r1["wait"] == pytest.approx(0.0)  # rank 0 waited for rank 1
    assert r0["comm"] == pytest.approx(r1["comm"]) and r0["comm"] > 0


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_ddp_two_ranks_match_single_process(tmp_path, compiled):
    results = _run(workers.ddp, 2, tmp_path, compiled)
    expected = workers.reference()
    for r in results:
        assert r["losses"] == pytest.approx(expected["losses"], abs=1e-5)
        _assert_params_close(r["params"], expected["params"])
    per_rank = results[0]["per_rank"]
    assert len(per_rank) == 2 and per_rank == results[1]["per_rank"]
    for rank in per_rank:
        assert rank["comm_ns"] > 0 and rank["compute_ns"] > 0
        assert rank["device_ns"] == pytest.approx(
            rank["compute_ns"] + rank["comm_ns"] + rank["comm_wait_ns"]
        )
        kinds = {c["kind"] for c in rank["collectives"]}
        assert "all_reduce" in kinds


def test_fsdp2_two_ranks_match_single_process(tmp_path):
    results = _run(workers.fsdp2, 2, tmp_path)
    expected = workers.reference()
    for r in results:
        assert r["losses"] == pytest.approx(expected["losses"], abs=1e-5)
        _assert_params_close(r["params"], expected["params"])


def test_tensor_parallel_gpt_block_two_ranks_matches_single_process(tmp_path):
    results = _run(workers.tensor_parallel, 2, tmp_path)
    expected = workers.block_reference()
    for r in results:
        assert r["losses"] == pytest.approx(expected["losses"], abs=1e-5)
        _assert_params_close(r["params"], expected["params"])


def test_pipeline_parallel_two_stages_match_single_process(tmp_path):
    first, last = _run(workers.pipeline, 2, tmp_path)
    expected = workers.reference()
    assert last["losses"] == pytest.approx(expected["losses"], abs=1e-5)
    _assert_params_close(first["params"] + last["params"], expected["params"])


# ---------------------------------------------------------------------------------------------
# torchrun, one machine and two "instances"

_EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "python", "examples",
                        "distributed_train.py")  # fmt: skip


def _torchrun(tmp_path, name: str, launches: list[list[str]]) -> list[dict]:
    import json
    import subprocess
    import sys

    out = tmp_path / name
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "torch.distributed.run", *launch, _EXAMPLE, "--steps", "2",
             "--out", str(out), "--timeline", str(tmp_path / f"{name}.png")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
        )  # fmt: skip
        for launch in launches
    ]
    for proc in procs:
        output, _ = proc.communicate(timeout=TIMEOUT_S)
        assert proc.returncode == 0, output[-3000:]
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]


def test_torchrun_one_instance_and_two_instances(tmp_path):
    port = _free_port()
    single = _torchrun(tmp_path, "single", [["--nproc-per-node", "2", "--master-port", str(port)]])
    endpoint = f"127.0.0.1:{_free_port()}"
    two = [
        "--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
        "--rdzv-endpoint", endpoint, "--rdzv-id", "neuronsim-test",
    ]  # fmt: skip
    double = _torchrun(tmp_path, "double", [two, two])
    # Same ranks, same data, same numbers; the two instances only change the simulated time.
    for rank in range(2):
        assert single[rank]["losses"] == double[rank]["losses"]
    efa = Topology.of_target("trn2").node_link.latency_ns
    for rank in range(2):
        one_node = single[0]["per_rank"][rank]
        two_nodes = double[0]["per_rank"][rank]
        assert one_node["comm_ns"] < 2 * efa <= two_nodes["comm_ns"]  # the ring crosses EFA
        assert two_nodes["compute_ns"] == pytest.approx(one_node["compute_ns"])
    assert (tmp_path / "single.png").stat().st_size > 0
