"""The instruction set, instruction by instruction: each instruction of runtime/program/Isa.def
(the table behind neuronsim._C.isa_table()) with its engines, the generations that have it and
its documented cost formula, and what the simulator charges for it at three sizes on each
target, checked against the formula evaluated here from the documentation (runtime/HARDWARE.md).
Writes bench/results/isa.md.

    python bench/isa.py

Each point is a one-instruction program on SBUF tiles of 128 partitions run timing-only; the
cycles are the engine's busy time at its clock without the ~60-cycle SBUF access overhead
(matmuls and Tensor-engine transposes: their initiation interval). DMA rows give nanoseconds
on one queue: the descriptor model (runs of 1 KiB or more: at least 2438 bytes' time; shorter
runs at the 1 KiB run's 42%, none faster than 256 bytes) or dma_transpose's
90% / 50% share; the 1.3 us start latency is left out (it is hidden behind queued transfers).
"""

from __future__ import annotations

import datetime
import json
import os
import platform

import torch
import torch.utils.dlpack

from neuronsim import _C

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = ["trn1", "trn2", "trn3"]
SIZES = [64, 256, 512]
DMA_SIZES = [64, 1024, 4096]
MIN_II = 64
STATIC = 100  # HARDWARE.md: the static overhead of tiny instructions (staticOverheadCycles)
ACCESS = 60   # HARDWARE.md: the per-access start-up (accessOverheadCycles)


def sbuf(dtype, free, offset=0, parts=128, partition=0):
    return {"space": "sbuf", "dtype": dtype, "partition": partition, "offset": offset,
            "dims": [[1, parts], [1, free]]}


def psum(dtype, free, offset=0, parts=128):
    return {"space": "psum", "dtype": dtype, "partition": 0, "offset": offset,
            "dims": [[1, parts], [1, free]]}


def broadcast(tile):
    t = json.loads(json.dumps(tile))
    t["dims"][-1][0] = 0
    return t


QUEUES = {"tensor": 0, "vector": 1, "scalar": 2, "gpsimd": 3, "dma": 4}


# Per instruction: (engine, its operands at free size n, the documented cycles at n on a
# target of generation `gen`). None: not timed here (see the note column).
def cases(n):
    bf, bf2, bf3 = sbuf("bf16", n), sbuf("bf16", n, 32768), sbuf("bf16", n, 65536)
    f32, f32b = sbuf("f32", n), sbuf("f32", n, 32768)
    at_least = lambda c: max(c, MIN_II)  # noqa: E731
    perf4 = lambda gen: 1 if gen == "trn1" else 4  # noqa: E731
    perf2 = lambda gen: 1 if gen == "trn1" else 2  # noqa: E731
    return {
        "nc_matmul": ("tensor", {"dst": psum("f32", n), "srcs": [sbuf("bf16", 128),
                                                                 sbuf("bf16", n, 32768)]},
                      lambda gen: max(min(64, 128), n)),
        "activation": ("scalar", {"dst": f32, "srcs": [f32b], "func": "exp", "imm": [1, 0]},
                       lambda gen: at_least(n)),
        "tensor_tensor": ("vector", {"dst": bf, "srcs": [bf2, bf3], "alu": "add"},
                          lambda gen: at_least(n / perf2(gen))),
        "tensor_scalar": ("vector", {"dst": bf, "srcs": [bf2], "alu": "mul", "alu2": "add",
                                     "two_ops": True, "imm": [2, 1]},
                          lambda gen: at_least(n / perf4(gen))),
        "tensor_copy": ("vector", {"dst": f32, "srcs": [f32b]}, lambda gen: at_least(n)),
        "tensor_reduce": ("vector", {"dst": sbuf("bf16", 1), "srcs": [bf2], "alu": "add",
                                     "axes": 1}, lambda gen: at_least(n / 2)),
        "memset": ("vector", {"dst": bf, "imm": [0, 0]}, lambda gen: at_least(n / 2)),
        "iota": ("gpsimd", {"dst": sbuf("i32", n), "imm": [0, 0]}, lambda gen: at_least(150 + n)),
        "select": ("vector", {"dst": f32, "srcs": [sbuf("f32", n, 8192), f32b,
                                                   sbuf("f32", n, 65536)]},
                   lambda gen: at_least(2 * n)),
        "random": ("gpsimd", {"dst": f32, "imm": [0, 0]}, lambda gen: at_least(150 + n)),
        "scalar_tensor_tensor": ("vector", {"dst": bf, "srcs": [bf2, bf3], "alu": "sub",
                                            "alu2": "mul", "imm": [1, 0]},
                                 lambda gen: at_least(n)),
        "reciprocal": ("vector", {"dst": f32, "srcs": [f32b]}, lambda gen: at_least(8 * n)),
        "bn_stats": ("vector", {"dst": sbuf("f32", 6), "srcs": [f32b]}, lambda gen: at_least(n)),
        "bn_aggr": ("vector", {"dst": sbuf("f32", 2), "srcs": [sbuf("f32", 6 * n, 32768)]},
                    lambda gen: at_least(13 * 6 * n / 3)),
        "tensor_tensor_scan": ("vector", {"dst": f32, "srcs": [f32b, sbuf("f32", n, 65536)],
                                          "alu": "mul", "alu2": "add", "imm": [0, 0]},
                               lambda gen: at_least(2 * n)),
        "tensor_partition_reduce": ("gpsimd", {"dst": sbuf("f32", n, parts=1), "srcs": [f32b],
                                               "alu": "add"},
                                    lambda gen: at_least(150 + 128 * n / 128)),
        "nc_transpose": ("tensor", {"dst": psum("bf16", 128, parts=min(n, 128)),
                                    "srcs": [sbuf("bf16", min(n, 128), 32768)]},
                         lambda gen: max(128, min(64, min(n, 128)))),
        "max8": ("vector", {"dst": sbuf("f32", 8), "srcs": [f32b]}, lambda gen: at_least(n)),
        "nc_find_index8": ("vector", {"dst": sbuf("i32", 8), "srcs": [f32b, sbuf("f32", 8, 65536)]},
                           lambda gen: at_least(n)),
        "nc_match_replace8": ("vector", {"dst": f32, "srcs": [f32b, sbuf("f32", 8, 65536)],
                                         "imm": [0, 0]}, lambda gen: at_least(n)),
        "affine_select": ("gpsimd", {"dst": f32, "srcs": [f32b], "alu": "ge", "affine": [0, 1, -1],
                                     "imm": [0, 0]}, lambda gen: at_least(150 + n)),
        "tensor_scalar_reduce": ("vector", {"dst": f32, "srcs": [f32b, sbuf("f32", 1, 65536)],
                                            "alu": "mul", "alu2": "add", "imm": [2, 0]},
                                 lambda gen: at_least(n) + MIN_II),
        "range_select": ("vector", {"dst": f32, "srcs": [f32b, sbuf("f32", 1, 65536),
                                                    sbuf("f32", 1, 65540), sbuf("f32", 1, 65544)],
                                    "alu": "ge", "alu2": "lt", "imm": [0, -1e30]},
                         lambda gen: at_least(n) + MIN_II),
        "select_reduce": ("vector", {"dst": f32, "srcs": [sbuf("u8", n, 65536), f32b,
                                                     sbuf("f32", 1, 65536 + 1024)],
                                     "imm": [0, 0]},
                          lambda gen: at_least(2 * n) + MIN_II),
        "nc_stream_shuffle": ("vector", {"dst": f32, "srcs": [f32b],
                                         "affine": [31 - i for i in range(32)]},
                              lambda gen: at_least(n)),
        "tensor_scalar_cumulative": ("vector", {"dst": f32, "srcs": [f32b], "alu": "mul",
                                                "alu2": "add", "imm": [2, 0],
                                                "reduce_cmd": "reset_reduce"},
                                     lambda gen: at_least(n)),
        "nc_n_gather": ("gpsimd", {"dst": f32, "srcs": [f32b, sbuf("i32", n, 65536)]},
                        lambda gen: at_least(150 * -(-n // 512) + n)),
        "activate2": ("scalar", {"dst": f32, "srcs": [f32b, sbuf("f32", 1, 65536)], "func": "exp",
                                 "alu": "mul", "alu2": "add", "imm": [2, 1], "accumulate": True,
                                 "reduce_op": "max", "reduce_cmd": "reset_reduce"},
                      lambda gen: at_least(n) + MIN_II),
        "exponential": ("vector", {"dst": f32, "srcs": [f32b, sbuf("f32", 1, 65536)],
                                   "imm": [1, 0], "reduce_cmd": "reset_reduce"},
                        lambda gen: at_least(n) + MIN_II),
        "rng": ("vector", {"dst": sbuf("i32", n)}, lambda gen: at_least(n)),
        "rand2": ("vector", {"dst": f32, "imm": [0, 1]}, lambda gen: at_least(n)),
        "rand_set_state": ("gpsimd", {"dst": sbuf("i32", 6)}, lambda gen: at_least(150 + 6)),
        "rand_get_state": ("gpsimd", {"dst": sbuf("i32", 6)}, lambda gen: at_least(150 + 6)),
        "set_rng_seed": ("vector", {"dst": sbuf("i32", 1, parts=1)}, lambda gen: MIN_II),
        "dropout": ("vector", {"dst": f32, "srcs": [f32b], "imm": [0.25, 0]},
                    lambda gen: at_least(n)),
        "nonzero_with_count": ("gpsimd", {"dst": sbuf("i32", n + 1, 65536), "srcs": [f32b],
                                          "imm": [0, -1]},
                               lambda gen: at_least(150 + n)),
        "tensor_copy_predicated": ("vector", {"dst": f32, "srcs": [f32b, psum("f32", n)]},
                                   lambda gen: at_least(n)),
        "local_gather": ("gpsimd", {"dst": f32, "srcs": [f32b, sbuf("u16", n // 16, 65536)],
                                    "imm": [1, n]},
                         lambda gen: at_least(150 + n)),
        "sequence_bounds": ("gpsimd", {"dst": sbuf("f32", 2 * n, parts=1),
                                       "srcs": [sbuf("f32", n, 32768, parts=1)]},
                            lambda gen: at_least(150 + 2 * n)),
    }


# The sequencer ops (register_*, core_barrier): charged their own overheads (no access
# overhead added, no MIN_II floor). Per instruction: (engine, the instructions before it that
# it needs (an allocation, a value), their cycles, its operands, its cycles). Sizes do not
# matter to them.
SBUF_I32 = {"space": "sbuf", "dtype": "i32", "partition": 0, "offset": 0, "dims": [[1, 1], [1, 1]]}
SEQUENCER = {
    "register_alloc": ("vector", [], 0, {"reg": 0, "reg_init": True, "imm": [5, 0]}, STATIC),
    "register_move": ("vector", [{"op": "register_alloc", "reg": 0}], 0,
                      {"reg": 0, "imm": [5, 0]}, STATIC),
    "register_load": ("vector", [{"op": "register_alloc", "reg": 0}], 0,
                      {"reg": 0, "srcs": [SBUF_I32]}, STATIC + ACCESS),
    "register_store": ("vector", [{"op": "register_alloc", "reg": 0, "reg_init": True,
                                   "imm": [5, 0]}], STATIC,
                       {"reg": 0, "dst": SBUF_I32}, STATIC + ACCESS),
}


def peer_program(target, name, n):
    """sendrecv / core_barrier on the two physical cores of `target`-lnc2: one per core."""
    per_core = 21  # kQueuesPerCore
    insts = []
    for core in range(2):
        if name == "sendrecv":
            tile = dict(sbuf("f32", n), core=core)
            insts.append({"op": name, "queue": core * per_core + QUEUES["dma"], "pipe": 0,
                          "dst": dict(tile, offset=4 * n), "srcs": [tile]})
        else:
            insts.append({"op": name, "queue": core * per_core + QUEUES["gpsimd"],
                          "dst": {"space": "hbm", "dtype": "f32", "buffer": 0, "offset": 0,
                                  "dims": [[1, 1]]}})
    return json.dumps({
        "format": "neuronsim-program", "version": _C.PROGRAM_FORMAT_VERSION,
        "target": target + "-lnc2", "flops": 0, "loops": [], "origins": [],
        "buffers": [{"name": "b0", "kind": "internal", "dtype": "f32", "shape": [1]}],
        "instructions": insts,
    })


def peer_cost(target, name, n, facts):
    """(measured, formula): sendrecv in ns of DMA (both ends move at once), core_barrier in
    GpSimd cycles of one core."""
    prog = _C.Program.from_json(peer_program(target, name, n))
    try:
        _, stats = prog.run([], timing_only=True)
    except RuntimeError as e:
        return str(e), None
    if name == "sendrecv":
        return stats["engine_busy_ns"]["dma"], 128 * descriptor_ns(4 * n, facts)
    return stats["engine_busy_ns"]["gpsimd"] * facts["gpsimd_ghz"] / 2, 2 * STATIC


def descriptor_ns(run, facts):
    """One DMA run of `run` bytes (runtime/HARDWARE.md, DMA efficiency): from the 1 KiB knee
    at full rate but no faster than dma_descriptor_min_bytes; shorter runs at the 1 KiB run's
    rate per byte, none faster than a dma_packet_min_bytes one."""
    bw, desc = facts["dma_bytes_per_ns_per_queue"], facts["dma_descriptor_min_bytes"]
    short, packet = facts["dma_short_run_bytes"], facts["dma_packet_min_bytes"]
    if run >= short:
        return max(run, desc) / bw
    return max(run, packet) * max(desc, short) / short / bw


def dma_cases(n, facts):
    """DMA rows: a [128, n] fp32 load in rows of n elements, and a dma_transpose of [n, 128]."""
    bw = facts["dma_bytes_per_ns_per_queue"]
    run = 4 * n
    hbm_rows = {"space": "hbm", "dtype": "f32", "buffer": 0, "offset": 0,
                "dims": [[n, 128], [1, n]]}
    hbm_t = {"space": "hbm", "dtype": "f32", "buffer": 0, "offset": 0,
             "dims": [[128, n], [1, 128]]}
    return {
        "dma_copy": ({"dst": sbuf("f32", n), "srcs": [hbm_rows]}, [128, n],
                     128 * descriptor_ns(run, facts)),
        "dma_transpose": ({"dst": sbuf("f32", n), "srcs": [hbm_t]}, [n, 128],
                          128 * run / (bw * 0.9)),
    }


EMPTY_DST = {"space": "hbm", "dtype": "f32", "buffer": 0, "offset": 0, "dims": []}


def program(target, name, queue, inst, buffers=(), before=()):
    insts = [dict({"dst": EMPTY_DST}, **b, queue=queue) for b in before]
    return json.dumps({
        "format": "neuronsim-program", "version": _C.PROGRAM_FORMAT_VERSION, "target": target,
        "flops": 0, "loops": [], "origins": [],
        "buffers": [{"name": f"b{i}", "kind": "input", "index": i, "dtype": "f32", "shape": s}
                    for i, s in enumerate(buffers)],
        "instructions": insts + [dict({"dst": EMPTY_DST}, **inst, op=name, queue=queue)],
    })


def simulate(target, name, queue, inst, buffers=(), before=()):
    """Simulated ns of the program (`before`, then the instruction), or the simulator's
    refusal."""
    prog = _C.Program.from_json(program(target, name, queue, inst, buffers, before))
    inputs = [torch.utils.dlpack.to_dlpack(torch.zeros(shape)) for shape in buffers]
    try:
        _, stats = prog.run(inputs, timing_only=True)
    except RuntimeError as e:
        return str(e)
    return stats


def main() -> None:
    table = _C.isa_table()
    facts = {t: _C.target_facts(t) for t in TARGETS}
    rows, mismatches = [], 0
    for info in table:
        name = info["name"]
        cells = []
        note = ""
        for target in TARGETS:
            f = facts[target]
            gen = f["generation"]
            if gen not in info["generations"]:
                cells.append("not on " + target)
                continue
            values = []
            sizes = DMA_SIZES if name in ("dma_copy", "dma_transpose") else SIZES
            for n in sizes:
                if name in SEQUENCER:
                    engine, before, before_cycles, inst, want = SEQUENCER[name]
                    stats = simulate(target, name, QUEUES[engine], inst, before=before)
                    if isinstance(stats, str):
                        values.append("error")
                        note = stats
                        mismatches += 1
                        continue
                    cycles = stats["engine_busy_ns"][engine] * f[f"{engine}_ghz"] - before_cycles
                    ok = abs(cycles - want) < 1e-6 * max(1.0, want)
                    mismatches += not ok
                    values.append(f"{cycles:g}" + ("" if ok else f" (formula {want:g})"))
                    continue
                if name in ("sendrecv", "core_barrier"):
                    got, want = peer_cost(target, name, n, f)
                    if isinstance(got, str):
                        values.append("error")
                        note = got
                        mismatches += 1
                        continue
                    ok = abs(got - want) < 1e-6 * max(1.0, want)
                    mismatches += not ok
                    unit = " ns" if name == "sendrecv" else ""
                    values.append(f"{got:.0f}{unit}" + ("" if ok else f" (formula {want:.0f})"))
                    if not note:
                        note = (f"on {target}-lnc2, one per physical core" +
                                ("; ns of DMA at N = 64 / 256 / 512" if name == "sendrecv"
                                 else "; cycles of one core's GpSimd"))
                    continue
                c = cases(n).get(name)
                if c is not None:
                    engine, inst, formula = c
                    stats = simulate(target, name, QUEUES[engine], inst)
                    if isinstance(stats, str):
                        values.append("error")
                        note = stats
                        mismatches += 1
                        continue
                    ghz = f[f"{engine}_ghz"]
                    busy = stats["engine_busy_ns"][engine] * ghz
                    cycles = busy if engine == "tensor" else busy - f["access_overhead_cycles"]
                    want = formula(gen)
                    ok = abs(cycles - want) < 1e-6 * max(1.0, want)
                    mismatches += not ok
                    values.append(f"{cycles:g}" + ("" if ok else f" (formula {want:g})"))
                    continue
                d = dma_cases(n, f).get(name)
                if d is not None:
                    inst, shape, want = d
                    stats = simulate(target, name, QUEUES["dma"], inst, [shape])
                    if isinstance(stats, str):
                        values.append("error")
                        note = stats
                        mismatches += 1
                        continue
                    ns = stats["engine_busy_ns"]["dma"]
                    ok = abs(ns - want) < 1e-6 * want
                    mismatches += not ok
                    values.append(f"{ns:.0f} ns" + ("" if ok else f" (formula {want:.0f})"))
                    continue
                values.append("-")
            cells.append(" / ".join(values))
        if all(v.startswith("-") for v in cells if not v.startswith("not on")):
            note = note or "timed by its own model (collectives, gathers: see HARDWARE.md)"
        rows.append((name, ", ".join(info["engines"]), "yes" if info["nki"] else "NeuronSim",
                     info["cost"], cells, note))

    out = os.path.join(HERE, "results", "isa.md")
    with open(out, "w") as fh:
        fh.write("# The instruction set and its simulated costs\n\n")
        fh.write(f"`python bench/isa.py`, {datetime.date.today()}, {platform.machine()}. "
                 f"One row per instruction of `runtime/program/Isa.def`; each target cell gives "
                 f"the simulated cycles (DMA: ns on one queue) at N = "
                 f"{' / '.join(map(str, SIZES))} free elements per partition, 128 partitions, "
                 f"checked against the documented formula evaluated independently here "
                 f"({'all match' if mismatches == 0 else f'{mismatches} MISMATCHES'}).\n\n")
        fh.write("Operands: tensor_tensor, tensor_scalar (two ops), scalar_tensor_tensor "
                 "(subtract then multiply), tensor_reduce, memset (zero) and nc_transpose in "
                 "bf16, the rest in fp32; nc_transpose of [min(N, 128), 128]; bn_aggr over N "
                 "bn_stats groups (6N values); tensor_copy_predicated with its predicate in PSUM; "
                 "select_reduce with a u8 predicate and on_true both in SBUF (the 2N case); "
                 "nc_stream_shuffle reversing each quadrant; nc_n_gather of N indices; local_gather "
                 "of N single-element indices per GpSimd core; sequence_bounds of N ids. "
                 "trn2/trn3 rows show the Vector engine's performance modes (4x tensor_scalar "
                 "and tensor_copy on bf16 SBUF rows, 2x bf16 tensor_tensor); the DMA rows are "
                 "a [128, N] fp32 load in rows of 4N bytes (descriptors of fewer than 2438 "
                 "bytes run below full rate, under 1 KiB at 42%) and a dma_transpose of "
                 "[N, 128], at N = "
                 f"{' / '.join(map(str, DMA_SIZES))}.\n\n")
        fh.write("| instruction | engines | nki.isa | documented cost | "
                 + " | ".join(TARGETS) + " | note |\n")
        fh.write("|---|---|---|---|" + "---|" * len(TARGETS) + "---|\n")
        for name, engines, nki, cost, cells, note in rows:
            fh.write(f"| `{name}` | {engines} | {nki} | {cost} | " + " | ".join(cells)
                     + f" | {note} |\n")
    print(open(out).read())
    if mismatches:
        raise SystemExit(f"{mismatches} simulated costs differ from their formulas")


if __name__ == "__main__":
    main()
