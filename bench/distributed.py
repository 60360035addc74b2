"""Data-parallel scaling of a GPT-2-style training step across simulated NeuronCores.

For 1, 2, 4, 8 and 16 ranks as processes (gloo on loopback, one simulated logical core each)
and 64 / 512 ranks in representative-rank mode (one process, NEURONSIM_SIMULATED_WORLD_SIZE),
each rank runs the same per-rank batch through DDP(torch.compile(model, backend="neuron",
options={"timing_only": True})): forward, backward and DDP's bucketed gradient all-reduce
(the optimizer step is left out). Reported per world size: the simulated step time of the
slowest rank, weak-scaling efficiency (step time at 1 rank / at N), the share of exposed
communication, and the modelled all-reduce time against the bandwidth bound of a ring on
the group's busiest level, for the same bytes.

    python bench/distributed.py [--layers 2] [--seq 256] [--ranks 1 2 4 8 16] [--big 64 512]

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

import torch


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    model = GPT2LMHeadModel(model_config).to("neuron")
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    run = torch.compile(ddp, backend="neuron", dynamic=False, options={"timing_only": True})
    ids = torch.randint(0, 50257, (config["batch"], config["seq"]),
                        generator=torch.Generator().manual_seed(rank)).to("neuron")  # fmt: skip
    steps = []
    for _ in range(2):  # the first step compiles; the second is measured
        with neuronsim.measure() as step:
            run(ids, labels=ids).loss.backward()
        steps.append(step)
        model.zero_grad(set_to_none=True)
    per_rank = steps[-1].per_rank()
    if rank == 0:
        with open(os.path.join(out, "result.json"), "w") as f:
            json.dump({"world": world, "per_rank": per_rank,
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


def _ring_bound_ns(ranks: int, nbytes: int, target: str) -> float:
    from neuronsim.distributed import topology

    topo = topology.Topology.of_target(target)
    return topology.level_bound_ns(topo, topology.ALL_REDUCE, nbytes, list(range(ranks)))


def summarize(result: dict, base_step_ns: float, target: str) -> dict:
    ranks = result["per_rank"]
    step_ns = max(r["device_ns"] for r in ranks)
    slowest = max(ranks, key=lambda r: r["device_ns"])
    reduces = [
        c for c in slowest["collectives"] if c["kind"] == "all_reduce" and c["nbytes"] > 4096
    ]
    reduce_ns = sum(c["end_ns"] - c["start_ns"] for c in reduces)
    reduce_bytes = sum(c["nbytes"] for c in reduces)
    bound_ns = sum(_ring_bound_ns(result["ranks"], c["nbytes"], target) for c in reduces)
    return {
        "ranks": result["ranks"],
        "mode": result["mode"],
        "step_us": step_ns / 1e3,
        "efficiency": base_step_ns / step_ns,
        "comm_share": slowest["exposed_comm_ns"] / step_ns,
        "allreduce_us": reduce_ns / 1e3,
        "allreduce_mib": reduce_bytes / 2**20,
        "ring_bound_us": bound_ns / 1e3,
        "vs_bound": (reduce_ns / bound_ns) if bound_ns else None,
        "wall_s": result["wall_s"],
        "params": result["params"],
    }


def write(rows: list[dict], config: dict, command: str, path: str, target: str) -> None:
    def fmt(value, spec):
        return "" if value is None else format(value, spec)

    lines = [
        "# Data-parallel scaling across simulated NeuronCores",
        "",
        f"Produced by: `{command}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
        f"target {target}. Date: {datetime.date.today().isoformat()}.",
        "",
        f"Model: GPT-2 width (d 768, 12 heads, vocab 50257), {config['layers']} layers, "
        f"{rows[0]['params'] / 1e6:.0f}M parameters, seq {config['seq']}, "
        f"{config['batch']} sequences per rank (weak scaling), fp32, timing-only; one step = "
        "forward + backward with DDP's bucketed all-reduce (25 MiB buckets), the second step "
        "of each run. The full 12-layer GPT-2 small does not fit 16 processes in this "
        "machine's 24 GiB; --layers 12 runs it on fewer ranks.",
        "",
        "```",
        "step          simulated step time of the slowest rank",
        "efficiency    weak scaling: step time at 1 rank / step time at N ranks",
        "comm share    exposed communication (collectives and waiting for slower ranks) / step",
        "all-reduce    modelled time of the gradient all-reduces (buckets over 4 KiB)",
        "ring bound    bandwidth bound of a ring all-reduce of the same bytes on the group's",
        "              busiest level (the logical cores of a chip, the chips of an instance",
        "              over NeuronLink, or the instances over EFA): 2 (m-1)/m B / bw of that",
        "              level's m members and link",
        "mode          processes: one process per rank; representative: one process timing",
        "              its collectives for the full world (NEURONSIM_SIMULATED_WORLD_SIZE)",
        "```",
        "",
        "| ranks | mode | step (us) | efficiency | comm share | all-reduce (us) | MiB | "
        "ring bound (us) | all-reduce / bound | wall (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['ranks']} | {r['mode']} | {r['step_us']:.1f} | {r['efficiency']:.3f} | "
            f"{r['comm_share']:.1%} | {r['allreduce_us']:.1f} | {r['allreduce_mib']:.1f} | "
            f"{fmt(r['ring_bound_us'], '.1f')} | {fmt(r['vs_bound'], '.3f')} | "
            f"{r['wall_s']:.0f} |"
        )
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--big", type=int, nargs="+", default=[64, 512])
    parser.add_argument("--check", type=int, nargs="*", default=[4, 16],
                        help="world sizes also run in representative mode, to compare")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                      "distributed.md"))  # fmt: skip
    args = parser.parse_args()
    config = {"layers": args.layers, "seq": args.seq, "batch": args.batch}
    target = os.environ.get("NEURONSIM_TARGET", "trn2")
    rows = []
    base = None
    for world in args.ranks:
        result = run_processes(world, config)
        base = base or max(r["device_ns"] for r in result["per_rank"])
        rows.append(summarize(result, base, target))
        print(rows[-1], flush=True)
    for world in sorted(set(args.check) | set(args.big)):
        result = run_processes(1, config, simulated=world)
        rows.append(summarize(result, base, target))
        print(rows[-1], flush=True)
    command = "python bench/distributed.py " + " ".join(sys.argv[1:])
    write(rows, config, command.strip(), args.out, target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
