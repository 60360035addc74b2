"""Data-parallel scaling of a GPT-2 small training step across simulated NeuronCores.

For 1, 2, 4, 8 and 16 ranks as processes (gloo on loopback, one simulated logical core each;
a count whose processes would not fit the machine's available memory is skipped, with a note)
and 4 / 8 / 16 / 64 / 512 ranks in representative-rank mode (one process,
NEURONSIM_SIMULATED_WORLD_SIZE), each rank runs the same per-rank batch through
DDP(torch.compile(GPT2LMHeadModel, backend="neuron", options={"timing_only": True})):
forward, backward with DDP's bucketed gradient all-reduce, and an SGD step. Reported per world
size: the simulated step time of the slowest rank, weak-scaling efficiency (step time at 1
rank / at N), the share of exposed communication, the modelled all-reduce time against the
textbook ring all-reduce of the same bytes on the same links (topology.ring_ns) and against
the bandwidth-only bound of the group's busiest level (topology.level_bound_ns), and the
peak memory of a process.

    python bench/distributed.py [--layers 12] [--seq 1024] [--dtype bfloat16] [--ranks 1 2 4 8 16]
                                [--big 64 512] [--check 4 8 16]

Writes bench/results/distributed.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import socket
import sys
import tempfile
import time

# The benchmarks measure one physical NeuronCore (trn2 unless --target says otherwise) and
# compare outputs where eager puts them: NeuronSim's placement, not TorchNeuron's defaults of
# a two-core logical device and device-resident outputs (README, The neuron device).
os.environ.setdefault("NEURON_LOGICAL_NC_CONFIG", "1")
os.environ.setdefault("TORCH_NEURONX_RETAIN_DEVICE_MODE", "1")

import torch


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss_mib() -> float:
    """This process's peak resident memory so far (ru_maxrss, KiB on Linux)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _pss_mib() -> float:
    """This process's proportional set size now: its resident memory, with pages shared with
    other processes (libraries) divided among them; what N processes add up to."""
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _available_mib() -> float:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    return 0.0


def worker(rank: int, world: int, port: int, out: str, config: dict) -> None:
    import torch.distributed as dist

    import neuronsim
    from transformers import GPT2Config, GPT2LMHeadModel

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("neuron", rank=rank, world_size=world)
    torch.manual_seed(0)
    model_config = GPT2Config(
        n_layer=config["layers"], n_embd=768, n_head=12, vocab_size=50257,
        n_positions=config["seq"], resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )  # fmt: skip
    dtype = getattr(torch, config["dtype"])
    with torch.device("meta"):  # no CPU copy of the weights: they are created on the device
        model = GPT2LMHeadModel(model_config)
    model = model.to_empty(device="neuron").to(dtype)
    model.tie_weights()  # to_empty made the head a separate tensor
    assert model.lm_head.weight is model.transformer.wte.weight
    with torch.no_grad():  # timing-only: the values do not matter, only finite ones
        for p in model.parameters():
            p.normal_(0.0, 0.02)
    # Gradients as views of DDP's buckets: one copy of them, not two (DDP's memory option).
    ddp = torch.nn.parallel.DistributedDataParallel(
        model, bucket_cap_mb=config["bucket_mb"], gradient_as_bucket_view=True
    )
    run = torch.compile(ddp, backend="neuron", dynamic=False, options={"timing_only": True})
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)  # no optimizer state
    ids = torch.randint(0, 50257, (config["batch"], config["seq"]),
                        generator=torch.Generator().manual_seed(rank)).to("neuron")  # fmt: skip
    rss_model = _rss_mib()
    steps = []
    for _ in range(2):  # the first step compiles; the second is measured
        with neuronsim.measure() as step:
            run(ids, labels=ids).loss.backward()
            optimizer.step()
        steps.append(step)
        optimizer.zero_grad(set_to_none=True)
    per_rank = steps[-1].per_rank()
    rss = neuronsim.distributed.gather.gather_summaries(
        {"model": rss_model, "peak": _rss_mib(), "pss": _pss_mib()}
    )
    if rank == 0:
        with open(os.path.join(out, "result.json"), "w") as f:
            json.dump({"world": world, "per_rank": per_rank, "rss_mib": rss,
                       "params": sum(p.numel() for p in model.parameters())}, f)  # fmt: skip
    dist.destroy_process_group()


def run_processes(world: int, config: dict, simulated: int | None = None) -> dict:
    import torch.multiprocessing as mp

    out = tempfile.mkdtemp(prefix="neuronsim-dist-bench-")
    env_before = os.environ.get("NEURONSIM_SIMULATED_WORLD_SIZE")
    if simulated:
        os.environ["NEURONSIM_SIMULATED_WORLD_SIZE"] = str(simulated)
    try:
        start = time.monotonic()
        mp.start_processes(worker, args=(world, _free_port(), out, config), nprocs=world,
                           start_method="spawn")  # fmt: skip
        wall = time.monotonic() - start
    finally:
        if env_before is None:
            os.environ.pop("NEURONSIM_SIMULATED_WORLD_SIZE", None)
        else:
            os.environ["NEURONSIM_SIMULATED_WORLD_SIZE"] = env_before
    with open(os.path.join(out, "result.json")) as f:
        result = json.load(f)
    result["wall_s"] = wall
    result["ranks"] = simulated or world
    result["mode"] = "representative" if simulated else "processes"
    return result


def _bounds_ns(ranks: int, nbytes: int, target: str) -> tuple[float, float]:
    """(ring, bandwidth bound) of an all-reduce of `nbytes` over ranks 0..ranks-1, on the links
    the model uses: the flat ring algorithm's time (bandwidth and latency terms) and the
    bandwidth-only bound of the group's busiest level."""
    from neuronsim.distributed import topology

    topo = topology.Topology.of_target(target)
    group = list(range(ranks))
    return (
        topology.ring_ns(topo, topology.ALL_REDUCE, nbytes, group),
        topology.level_bound_ns(topo, topology.ALL_REDUCE, nbytes, group),
    )


def summarize(result: dict, base_step_ns: float, target: str) -> dict:
    ranks = result["per_rank"]
    step_ns = max(r["device_ns"] for r in ranks)
    slowest = max(ranks, key=lambda r: r["device_ns"])
    reduces = [
        c for c in slowest["collectives"] if c["kind"] == "all_reduce" and c["nbytes"] > 4096
    ]
    reduce_ns = sum(c["end_ns"] - c["start_ns"] for c in reduces)
    reduce_bytes = sum(c["nbytes"] for c in reduces)
    bounds = [_bounds_ns(result["ranks"], c["nbytes"], target) for c in reduces]
    ring_ns = sum(b[0] for b in bounds)
    bw_ns = sum(b[1] for b in bounds)
    return {
        "ranks": result["ranks"],
        "mode": result["mode"],
        "step_us": step_ns / 1e3,
        "compute_us": slowest["compute_ns"] / 1e3,
        "efficiency": base_step_ns / step_ns,
        "comm_share": slowest["exposed_comm_ns"] / step_ns,
        "allreduce_us": reduce_ns / 1e3,
        "allreduce_mib": reduce_bytes / 2**20,
        "ring_us": ring_ns / 1e3,
        "vs_ring": (reduce_ns / ring_ns) if ring_ns else None,
        "bw_bound_us": bw_ns / 1e3,
        "vs_bw_bound": (reduce_ns / bw_ns) if bw_ns else None,
        "wall_s": result["wall_s"],
        "params": result["params"],
        "rss_model_mib": max(r["model"] for r in result["rss_mib"]),
        "rss_peak_mib": max(r["peak"] for r in result["rss_mib"]),
        "pss_mib": sum(r["pss"] for r in result["rss_mib"]) / len(result["rss_mib"]),
        "buckets_mib": [round(c["nbytes"] / 2**20, 1) for c in reduces],
    }


def write(rows: list[dict], config: dict, command: str, path: str, target: str,
          notes: list[str]) -> None:  # fmt: skip
    def fmt(value, spec):
        return "" if value is None else format(value, spec)

    buckets = rows[-1]["buckets_mib"]
    lines = [
        "# Data-parallel scaling across simulated NeuronCores",
        "",
        f"Produced by: `{command}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, "
        f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, "
        f"torch {torch.__version__}, target {target}. Date: {datetime.date.today().isoformat()}.",
        "",
        f"Model: GPT-2 small as Hugging Face builds it (GPT2LMHeadModel: {config['layers']} "
        f"layers, d 768, 12 heads, vocab 50257, tied head, {rows[0]['params'] / 1e6:.1f}M "
        f"parameters), seq {config['seq']}, {config['batch']} sequence(s) per rank (weak "
        f"scaling), {config['dtype']} weights and gradients, timing-only "
        "(torch.compile(DDP(model), backend=\"neuron\", options={\"timing_only\": True})). "
        "One step = forward, backward with DDP's bucketed gradient all-reduce "
        f"(bucket_cap_mb {config['bucket_mb']:g}, gradient_as_bucket_view) and an SGD step "
        "(eager, no optimizer state); the second step of each run is measured (the first "
        f"compiles). Gradient all-reduces per step: {len(buckets)} buckets of "
        f"{', '.join(f'{b:g}' for b in buckets)} MiB.",
        "",
        "```",
        "step          simulated step time of the slowest rank (ms)",
        "compute       its compute: step minus exposed communication (ms)",
        "efficiency    weak scaling: step time at 1 rank / step time at N ranks",
        "comm share    exposed communication (collectives, and waiting for slower ranks) / step",
        "all-reduce    modelled time of the gradient all-reduces (buckets over 4 KiB), summed:",
        "              the runtime's algorithm for its size and group (mesh, halving-doubling,",
        "              KangaRing; hierarchical over EFA across instances), topology.collective_ns",
        "ring          a flat ring all-reduce of the same buckets on the same links, whatever",
        "              their size: a launch, 2 (n-1) steps (each a synchronisation of the",
        "              collective cores, FITTED in runtime/HARDWARE.md, and its hop: on-chip",
        "              1.5 us, NeuronLink 2 us, EFA 15 us) and 2 (n-1)/n B at the slower of the",
        "              engines' ring bandwidth and the busiest link, topology.ring_ns",
        "bw bound     bandwidth-only lower bound: 2 (m-1)/m B / bw on the group's busiest",
        "              level (the cores of a chip, the chips of an instance over NeuronLink,",
        "              or the instances over EFA), no latency, topology.level_bound_ns",
        "mode          processes: one process per rank; representative: one process timing",
        "              its collectives for the full world (NEURONSIM_SIMULATED_WORLD_SIZE)",
        "peak RSS      largest peak resident memory (ru_maxrss) of the run's processes (MiB)",
        "wall          wall time of the run (all its processes, 2 CPUs shared)",
        "```",
        "",
        "| ranks | mode | step (ms) | compute (ms) | efficiency | comm share | all-reduce (us) "
        "| ring (us) | all-reduce / ring | bw bound (us) | all-reduce / bw bound "
        "| peak RSS (MiB) | wall (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['ranks']} | {r['mode']} | {r['step_us'] / 1e3:.2f} | "
            f"{r['compute_us'] / 1e3:.2f} | {r['efficiency']:.3f} | {r['comm_share']:.2%} | "
            f"{r['allreduce_us']:.1f} | {fmt(r['ring_us'], '.1f')} | "
            f"{fmt(r['vs_ring'], '.3f')} | {fmt(r['bw_bound_us'], '.1f')} | "
            f"{fmt(r['vs_bw_bound'], '.3f')} | {r['rss_peak_mib']:.0f} | {r['wall_s']:.0f} |"
        )
    lines += ["", *notes]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16"])
    parser.add_argument("--bucket-mb", type=float, default=25.0, help="DDP's bucket_cap_mb")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--big", type=int, nargs="*", default=[64, 512])
    parser.add_argument("--check", type=int, nargs="*", default=[4, 8, 16],
                        help="world sizes also run in representative mode, to compare")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                      "distributed.md"))  # fmt: skip
    args = parser.parse_args()
    config = {"layers": args.layers, "seq": args.seq, "batch": args.batch, "dtype": args.dtype,
              "bucket_mb": args.bucket_mb}  # fmt: skip
    target = os.environ.get("NEURONSIM_TARGET", "trn2")
    rows = []
    notes = []
    base = None
    per_process_mib = None  # peak RSS of a process in the largest run so far
    for world in args.ranks:
        if per_process_mib is not None:
            need, available = world * per_process_mib, _available_mib()
            if need > available:
                last = rows[-1]
                notes.append(
                    f"{world} processes not run (representative mode below): they would need "
                    f"about {need / 1024:.1f} GiB ({world} x {per_process_mib:.0f} MiB, the "
                    f"peak RSS of one process of the {last['ranks']}-process run, whose "
                    f"proportional set size at the end of the step was {last['pss_mib']:.0f} "
                    f"MiB a process: {world} x that = {world * last['pss_mib'] / 1024:.1f} GiB); "
                    f"{available / 1024:.1f} GiB of the machine's memory were available."
                )
                print(notes[-1], flush=True)
                continue
        result = run_processes(world, config)
        base = base or max(r["device_ns"] for r in result["per_rank"])
        rows.append(summarize(result, base, target))
        per_process_mib = rows[-1]["rss_peak_mib"]
        print(rows[-1], flush=True)
    for world in sorted(set(args.check) | set(args.big)):
        result = run_processes(1, config, simulated=world)
        rows.append(summarize(result, base, target))
        print(rows[-1], flush=True)
    command = "python bench/distributed.py " + " ".join(sys.argv[1:])
    write(rows, config, command.strip(), args.out, target, notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
