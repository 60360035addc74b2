"""torch.distributed with the `neuron` backend: the topology cost model, and 2- and 4-rank DDP,
FSDP2, tensor- and pipeline-parallel training (one process per rank, gloo on loopback underneath)
compared with a single-process run."""

import math
import os
import socket
import time

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import distributed_workers as workers
from neuronsim.distributed import topology
from neuronsim.distributed.topology import Topology

TIMEOUT_S = 240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(fn, world: int, tmp_path, *extra) -> list[dict]:
    """Runs fn(rank, world, port, out, *extra) in `world` processes; their saved results."""
    tmp_path.mkdir(parents=True, exist_ok=True)
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


def test_large_all_reduce_is_hierarchical_recursive_halving():
    t = Topology.of_target("trn2")
    nbytes = 64 << 20
    on, link = t.on_chip, t.chip_link

    def transfer(m, bw):
        return (m - 1) / m * nbytes / bw

    def steps(m, lat):
        return math.ceil(math.log2(m)) * lat

    # 4 ranks of one chip: reduce-scatter and all-gather on the chip
    one_chip = 2 * (transfer(4, on.bytes_per_ns) + steps(4, on.latency_ns))
    assert topology.collective_ns(t, topology.ALL_REDUCE, nbytes, [0, 1, 2, 3]) == pytest.approx(
        one_chip
    )
    # 16 ranks on 4 chips: chunks pipeline through the chip and NeuronLink levels (the chip's
    # link carries the buffer once for its ranks); the busiest level sets the pace
    busiest = max(transfer(4, on.bytes_per_ns), transfer(4, link.bytes_per_ns))
    latency = steps(4, on.latency_ns) + steps(4, link.latency_ns)
    four_chips = 2 * (busiest + latency)
    assert topology.collective_ns(t, topology.ALL_REDUCE, nbytes, list(range(16))) == (
        pytest.approx(four_chips)
    )
    # all-gather / reduce-scatter are one direction of it
    assert topology.collective_ns(t, topology.ALL_GATHER, nbytes, list(range(16))) == (
        pytest.approx(four_chips / 2)
    )
    # large buffers: within 10% of the bandwidth bound on the busiest level, for any group
    for ranks in ([0, 1], [0, 1, 2, 3], list(range(16)), list(range(64)), [0, 64]):
        bound = topology.level_bound_ns(t, topology.ALL_REDUCE, 4 * nbytes, ranks)
        modelled = topology.collective_ns(t, topology.ALL_REDUCE, 4 * nbytes, ranks)
        assert bound < modelled < 1.1 * bound, ranks


def test_ring_is_the_textbook_ring_on_the_links_it_crosses():
    t = Topology.of_target("trn2")
    nbytes = 24 << 20
    on, link, efa = t.on_chip, t.chip_link, t.node_link
    # one kind of link: 2 (p-1)/p B / bw + 2 (p-1) latency
    assert topology.ring_ns(t, topology.ALL_REDUCE, nbytes, [0, 1, 2, 3]) == pytest.approx(
        2 * 3 / 4 * nbytes / on.bytes_per_ns + 2 * 3 * on.latency_ns
    )
    assert topology.ring_ns(t, topology.ALL_GATHER, nbytes, [0, 4, 8]) == pytest.approx(
        2 / 3 * nbytes / link.bytes_per_ns + 2 * link.latency_ns
    )
    # 8 ranks on 2 chips: the busiest link of a step is a core's own on-chip bandwidth; a
    # chunk crosses 7 of the 8 hops (6 on-chip, 2 NeuronLink): all latencies but the smallest
    assert topology.ring_ns(t, topology.ALL_REDUCE, nbytes, list(range(8))) == pytest.approx(
        2 * (7 / 8 * nbytes / on.bytes_per_ns + 5 * on.latency_ns + 2 * link.latency_ns)
    )
    # two instances, one rank each: both hops over EFA
    assert topology.ring_ns(t, topology.ALL_REDUCE, nbytes, [0, 64]) == pytest.approx(
        2 * (nbytes / 2 / efa.bytes_per_ns + efa.latency_ns)
    )


def test_collectives_take_the_fastest_algorithm():
    """As a collective library does: never slower than a flat ring; recursive doubling for
    short all-reduces, reduce-scatter + all-gather (hierarchical) for long ones."""
    t = Topology.of_target("trn2")
    for nbytes in (4, 4096, 1 << 20, 25 << 20, 256 << 20):
        for ranks in ([0, 1], [0, 1, 2, 3], list(range(8)), list(range(16)), [0, 4, 8, 12],
                      list(range(64)), [0, 64], list(range(512))):  # fmt: skip
            for kind in (topology.ALL_REDUCE, topology.ALL_GATHER, topology.REDUCE_SCATTER):
                modelled = topology.collective_ns(t, kind, nbytes, ranks)
                assert 0 < modelled <= topology.ring_ns(t, kind, nbytes, ranks)
                assert modelled <= topology.hierarchical_ns(t, kind, nbytes, ranks)
    # 4 bytes on 4 cores of a chip: two recursive-doubling steps, half of reduce-scatter +
    # all-gather's four
    on = t.on_chip
    assert topology.collective_ns(t, topology.ALL_REDUCE, 4, [0, 1, 2, 3]) == pytest.approx(
        2 * (on.latency_ns + 4 / on.bytes_per_ns)
    )
    assert topology.hierarchical_ns(t, topology.ALL_REDUCE, 4, [0, 1, 2, 3]) == pytest.approx(
        4 * on.latency_ns + 2 * 3 / 4 * 4 / on.bytes_per_ns
    )
    # 512 ranks (8 instances): the flat ring pays 2 x 511 hop latencies, the hierarchy
    # 2 x (2 + 4 + 3) steps
    big = list(range(512))
    assert topology.collective_ns(t, topology.ALL_REDUCE, 25 << 20, big) == pytest.approx(
        topology.hierarchical_ns(t, topology.ALL_REDUCE, 25 << 20, big)
    )
    assert topology.collective_ns(t, topology.ALL_REDUCE, 25 << 20, big) < 0.2 * topology.ring_ns(
        t, topology.ALL_REDUCE, 25 << 20, big
    )


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


@pytest.fixture(scope="module")
def ddp_four_ranks(tmp_path_factory) -> list[dict]:
    """4-rank eager DDP, run once for the tests below."""
    return _run(workers.ddp, 4, tmp_path_factory.mktemp("ddp4"), False)


def test_ddp_four_ranks_match_single_process(ddp_four_ranks):
    expected = workers.reference(world=4)
    for r in ddp_four_ranks:
        assert r["losses"] == pytest.approx(expected["losses"], abs=1e-5)
        _assert_params_close(r["params"], expected["params"])
    per_rank = ddp_four_ranks[0]["per_rank"]
    assert len(per_rank) == 4 and all(r["per_rank"] == per_rank for r in ddp_four_ranks)
    for rank in per_rank:
        assert rank["comm_ns"] > 0 and rank["compute_ns"] > 0
        assert "all_reduce" in {c["kind"] for c in rank["collectives"]}


def test_representative_rank_mode_times_the_full_world(ddp_four_ranks, tmp_path, monkeypatch):
    """One process standing for 4 data-parallel ranks gives the 4-process step time."""
    monkeypatch.setenv("NEURONSIM_SIMULATED_WORLD_SIZE", "4")
    (one,) = _run(workers.ddp, 1, tmp_path / "one", False)
    real = ddp_four_ranks[0]["per_rank"][0]
    representative = one["per_rank"][0]
    assert representative["device_ns"] == pytest.approx(real["device_ns"], rel=0.05)
    assert representative["comm_ns"] == pytest.approx(real["comm_ns"], rel=0.05)
    monkeypatch.setenv("NEURONSIM_SIMULATED_WORLD_SIZE", "64")
    (big,) = _run(workers.ddp, 1, tmp_path / "big", False)
    assert big["per_rank"][0]["comm_ns"] > representative["comm_ns"]  # 16 chips, NeuronLink
    assert big["per_rank"][0]["compute_ns"] == pytest.approx(representative["compute_ns"])


@pytest.mark.parametrize(
    "world, compiled", [(2, False), (2, True), (4, False)], ids=["2-eager", "2-compiled", "4-eager"]
)
def test_fsdp2_matches_single_process(tmp_path, world, compiled):
    results = _run(workers.fsdp2, world, tmp_path, compiled)
    expected = workers.reference(world=world)
    for r in results:
        assert r["losses"] == pytest.approx(expected["losses"], abs=1e-5)
        _assert_params_close(r["params"], expected["params"])


@pytest.mark.parametrize(
    "world, compiled", [(2, False), (2, True), (4, False)], ids=["2-eager", "2-compiled", "4-eager"]
)
def test_tensor_parallel_gpt_block_matches_single_process(tmp_path, world, compiled):
    # compiled: the graphs hold functional collectives, which run through the process group
    results = _run(workers.tensor_parallel, world, tmp_path, compiled)
    expected = workers.block_reference()
    for r in results:
        assert r["fallbacks"] == {}  # collectives are not CPU fallbacks
        assert r["losses"] == pytest.approx(expected["losses"], abs=1e-5)
        _assert_params_close(r["params"], expected["params"])


@pytest.mark.parametrize("stages", [2, 4])
def test_pipeline_parallel_matches_single_process(tmp_path, stages):
    results = _run(workers.pipeline, stages, tmp_path)
    expected = workers.reference(world=stages)
    assert results[-1]["losses"] == pytest.approx(expected["losses"], abs=1e-5)
    _assert_params_close([p for r in results for p in r["params"]], expected["params"])


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
        # the gradient all-reduce crosses EFA (one recursive-doubling step between 2 ranks)
        assert one_node["comm_ns"] < efa <= two_nodes["comm_ns"]
        assert two_nodes["compute_ns"] == pytest.approx(one_node["compute_ns"])
    assert (tmp_path / "single.png").stat().st_size > 0
