"""torch.distributed with the `neuron` backend: the topology cost model, and 2- and 4-rank DDP,
FSDP2, tensor- and pipeline-parallel training (one process per rank, gloo on loopback underneath)
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


def test_algorithm_follows_the_documented_message_size_ranges():
    """trn2 (intranode-collective-comm, a whole instance): mesh up to 1 MiB, recursive
    halving-doubling up to 56 MB, KangaRing above; a smaller group at the same bytes per rank
    (C4's 16 ranks: mesh at 128 KiB, halving-doubling at 2 MiB, KangaRing at 32 MiB, as
    nccom-test names them); trn1 (no documented choice): ring at every size."""
    t = Topology.of_target("trn2")
    assert [topology.algorithm(t, n) for n in (4, 1 << 20, (1 << 20) + 1, 55_999_999, 56_000_000)] == [
        topology.MESH, topology.MESH, topology.HALVING_DOUBLING, topology.HALVING_DOUBLING,
        topology.RING,
    ]  # fmt: skip
    assert [topology.algorithm(t, n, 16) for n in (128 << 10, 2 << 20, 32 << 20)] == [
        topology.MESH, topology.HALVING_DOUBLING, topology.RING,
    ]  # fmt: skip
    trn1 = Topology.of_target("trn1")
    assert {topology.algorithm(trn1, n) for n in (4, 1 << 20, 1 << 30)} == {topology.RING}


def test_all_reduce_is_a_launch_then_steps_and_engine_bytes():
    t = Topology.of_target("trn2")
    e, on, link = t.engine, t.on_chip, t.chip_link
    red, gat = e.reduce_step_ns, e.gather_step_ns
    assert red > gat > 0  # a reduce-scatter step also reduces what it received
    ranks = list(range(16))  # 4 chips of 4 logical cores
    # halving-doubling (2 MiB): per phase one step on the chip and log2 4 over NeuronLink,
    # 15/16 of the buffer through each rank's engines at the halving-doubling bandwidth
    nbytes = 2 << 20
    hops = on.latency_ns + 2 * link.latency_ns
    data = 15 / 16 * nbytes / e.rhd_bytes_per_ns
    rs, ag = 3 * red + hops + data, 3 * gat + hops + data
    assert topology.collective_ns(t, topology.ALL_REDUCE, nbytes, ranks) == pytest.approx(
        e.launch_ns + rs + ag
    )
    assert topology.collective_ns(t, topology.REDUCE_SCATTER, nbytes, ranks) == pytest.approx(
        e.launch_ns + rs
    )
    # mesh (4 KiB): one step across the chips, one inside
    phase = 2 * gat + link.latency_ns + on.latency_ns + 15 / 16 * 4096 / e.rhd_bytes_per_ns
    assert topology.collective_ns(t, topology.ALL_GATHER, 4096, ranks) == pytest.approx(
        e.launch_ns + phase
    )
    # ring (512 MiB): a chunk crosses 15 of the 16 hops (12 on-chip, 4 NeuronLink), a step each
    nbytes = 512 << 20
    hops = 11 * on.latency_ns + 4 * link.latency_ns
    data = 15 / 16 * nbytes / e.ring_bytes_per_ns
    total = e.launch_ns + 15 * (red + gat) + 2 * (hops + data)
    assert topology.collective_ns(t, topology.ALL_REDUCE, nbytes, ranks) == pytest.approx(total)
    # the engines, not the links, bound these: the links alone would be faster
    assert topology.level_bound_ns(t, topology.ALL_REDUCE, nbytes, ranks) < 0.2 * total


def test_fitted_collective_points_are_reproduced():
    """The nccom-test points the collective engines were fitted on (runtime/HARDWARE.md,
    Target.cpp) come out as published; bench/fidelity.py reports the others."""
    trn1, trn2 = Topology.of_target("trn1"), Topology.of_target("trn2")
    cases = [
        (trn1, topology.ALL_REDUCE, 1024, range(2), 58.0),  # C1
        (trn1, topology.ALL_REDUCE, 1 << 30, range(2), 18930.0),  # C1
        (trn1, topology.ALL_REDUCE, 1 << 20, range(64), 1328.0),  # C3, two instances
        (trn2, topology.ALL_GATHER, 1024, range(64), 101.1),  # C7
        (trn2, topology.ALL_GATHER, 1 << 20, range(64), 117.7),  # C7
        (trn2, topology.ALL_REDUCE, 4, range(16), 300.0),  # C4
        (trn2, topology.ALL_REDUCE, 512 << 20, range(16), 9690.0),  # C4
    ]
    for t, kind, nbytes, ranks, us in cases:
        assert topology.collective_ns(t, kind, nbytes, list(ranks)) / 1e3 == pytest.approx(
            us, rel=2e-3
        )


def test_checked_collective_points_stay_within_their_recorded_error():
    """Points no number was fitted on: the step costs fitted on the floors give C4's
    KangaRing 32 MiB (30 steps) within a few percent; the multi-instance all-reduce (C3) runs
    hierarchically at mid sizes and as trn1's flat ring at large ones."""
    trn1, trn2 = Topology.of_target("trn1"), Topology.of_target("trn2")
    c4 = topology.collective_ns(trn2, topology.ALL_REDUCE, 32 << 20, list(range(16))) / 1e3
    assert c4 == pytest.approx(2754, rel=0.05)
    ranks = list(range(64))
    assert topology.describe(trn1, topology.ALL_REDUCE, 1 << 20, ranks).startswith("hierarchical")
    assert topology.describe(trn1, topology.ALL_REDUCE, 1 << 30, ranks) == "flat ring"
    for nbytes, us in ((16 << 20, 2138), (64 << 20, 3963), (256 << 20, 11954), (1 << 30, 41806)):
        got = topology.collective_ns(trn1, topology.ALL_REDUCE, nbytes, ranks) / 1e3
        assert got == pytest.approx(us, rel=0.1)


def test_ring_is_the_textbook_ring_on_the_links_it_crosses():
    t = Topology.of_target("trn2")
    nbytes = 24 << 20
    e, on, link, efa = t.engine, t.on_chip, t.chip_link, t.node_link
    red, gat = e.reduce_step_ns, e.gather_step_ns
    # one kind of link: (p-1)/p B at the slower of the engine and the link, p - 1 hops
    bw = min(on.bytes_per_ns, e.ring_bytes_per_ns)
    assert topology.ring_ns(t, topology.ALL_REDUCE, nbytes, [0, 1, 2, 3]) == pytest.approx(
        e.launch_ns + 3 * (red + gat) + 2 * (3 / 4 * nbytes / bw + 3 * on.latency_ns)
    )
    # two instances, one rank each: both hops over EFA, whose 400 B/ns outpace the engine
    assert topology.ring_ns(t, topology.ALL_REDUCE, nbytes, [0, 64]) == pytest.approx(
        e.launch_ns + red + gat
        + 2 * (nbytes / 2 / min(efa.bytes_per_ns, e.ring_bytes_per_ns) + efa.latency_ns)
    )  # fmt: skip
    # a link slower than the engine bounds the ring: 8 ranks, one per instance, on trn1
    # (EFA 100 B/ns shared by the instance's one hop, engine 56.9 B/ns): still the engine
    trn1 = Topology.of_target("trn1")
    ranks = [32 * i for i in range(8)]
    e1 = trn1.engine
    assert topology.ring_ns(trn1, topology.ALL_GATHER, nbytes, ranks) == pytest.approx(
        e1.launch_ns + 7 * e1.gather_step_ns + 7 / 8 * nbytes / e1.ring_bytes_per_ns
        + 7 * trn1.node_link.latency_ns
    )  # fmt: skip


def test_instances_run_hierarchically_sharing_their_efa():
    """Across instances (internode-collective-comm): reduce-scatter inside each instance,
    all-reduce of 1/Y of the buffer between instances (the instance's Y groups sharing its EFA),
    all-gather back; one rank per instance is the inter-node stage alone."""
    t = Topology.of_target("trn2")
    e, efa = t.engine, t.node_link
    nbytes = 64 << 20
    # two instances, one rank each: one halving-doubling step per phase over EFA
    expected = e.launch_ns + sum(
        s + efa.latency_ns + max(nbytes / 2 / e.rhd_bytes_per_ns, nbytes / 2 / efa.bytes_per_ns)
        for s in (e.reduce_step_ns, e.gather_step_ns)
    )
    assert topology.collective_ns(t, topology.ALL_REDUCE, nbytes, [0, 64]) == pytest.approx(
        expected
    )
    # 4 ranks of one chip on each of two instances: the chip's stages around the EFA stage
    ranks = [0, 1, 2, 3, 64, 65, 66, 67]
    local = topology.phase_ns(t, topology.algorithm(t, nbytes, 4), nbytes, [0, 1, 2, 3], True)
    local += topology.phase_ns(t, topology.algorithm(t, nbytes, 4), nbytes, [0, 1, 2, 3], False)
    inter = sum(
        s + efa.latency_ns
        + max(nbytes / 4 / 2 / e.rhd_bytes_per_ns, 4 * nbytes / 4 / 2 / efa.bytes_per_ns)
        for s in (e.reduce_step_ns, e.gather_step_ns)
    )  # fmt: skip
    assert topology.collective_ns(t, topology.ALL_REDUCE, nbytes, ranks) == pytest.approx(
        e.launch_ns + local + inter
    )
    assert topology.describe(t, topology.ALL_REDUCE, nbytes, ranks).startswith("hierarchical")


def test_costs_grow_with_bytes_ranks_and_distance():
    t = Topology.of_target("trn2")
    # two ranks: on one chip, on two chips, on two instances (same steps, farther hops)
    one_chip = topology.collective_ns(t, topology.ALL_REDUCE, 1 << 20, [0, 1])
    two_chips = topology.collective_ns(t, topology.ALL_REDUCE, 1 << 20, [0, 4])
    two_nodes = topology.collective_ns(t, topology.ALL_REDUCE, 1 << 20, [0, 64])
    assert one_chip < two_chips < two_nodes
    # more chips, more halving-doubling steps
    assert topology.collective_ns(t, topology.ALL_REDUCE, 1 << 20, [0, 4, 8, 12]) > two_chips
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
    trn2 = Topology.of_target("trn2")
    slower_step = trn2.node_link.latency_ns - trn2.on_chip.latency_ns
    for rank in range(2):
        one_node = single[0]["per_rank"][rank]
        two_nodes = double[0]["per_rank"][rank]
        # the gradient all-reduce's steps cross EFA instead of the chip (at least one step
        # in each of its two phases)
        assert one_node["comm_ns"] + 2 * slower_step <= two_nodes["comm_ns"]
        assert two_nodes["compute_ns"] == pytest.approx(one_node["compute_ns"])
    assert (tmp_path / "single.png").stat().st_size > 0


def test_avg_and_premul_sum_reductions_match_their_definitions(tmp_path):
    world = 2
    results = _run(workers.avg_and_premul_sum, world, tmp_path)
    xs = [torch.arange(8.0) * (r + 1) + 0.5 for r in range(world)]
    total = sum(xs)
    expected = {"avg": total / world, "premul": sum(0.25 * x for x in xs)}
    for rank, got in enumerate(results):
        for name, full in expected.items():
            shard = full.chunk(world)[rank]
            torch.testing.assert_close(got[f"all_reduce_{name}"], full, rtol=1e-6, atol=1e-6)
            torch.testing.assert_close(got[f"all_reduce_coalesced_{name}"], full, rtol=1e-6,
                                       atol=1e-6)
            torch.testing.assert_close(got[f"reduce_scatter_tensor_{name}"], shard, rtol=1e-6,
                                       atol=1e-6)
            torch.testing.assert_close(got[f"reduce_scatter_{name}"][:, 0], shard, rtol=1e-6,
                                       atol=1e-6)
            assert torch.equal(got[f"reduce_scatter_{name}"][:, 1], torch.zeros(4))
            if rank == 0:
                torch.testing.assert_close(got[f"reduce_{name}"], full, rtol=1e-6, atol=1e-6)
            else:  # a reduce's other ranks keep their input
                torch.testing.assert_close(got[f"reduce_{name}"], xs[rank], rtol=0, atol=0)
        assert "allreduce with ReduceOp.AVG needs floating-point tensors" in got["int_error"]


def test_collectives_over_negative_views(tmp_path):
    world = 2
    xs = [torch.arange(4.0) + r for r in range(world)]
    for got in _run(workers.neg_view_collectives, world, tmp_path):
        torch.testing.assert_close(got["view"], -sum(xs), rtol=0, atol=0)
        torch.testing.assert_close(got["base"], sum(xs), rtol=0, atol=0)  # memory: -(view)
        torch.testing.assert_close(got["gathered"], -torch.cat(xs), rtol=0, atol=0)
