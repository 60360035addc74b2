"""How compile time, compile memory and program size scale with the problem size.

    python bench/compile_scaling.py            # all -> bench/results/compile_scaling.{md,csv}
    python bench/compile_scaling.py --quick    # matmuls up to 4096 and the one-layer step
    python bench/compile_scaling.py --sizes 2048,16384 --steps none

Every case runs in its own process (no compile cache, memory or import state is shared between
cases), with NEURONSIM_DISABLE_CACHE=1: every graph compiles, nothing touches the user's cache.

Matmuls: torch.mm of two bf16 [n, n] tensors, default target.
  graph file    written by a process with torch: Dynamo + AOTAutograd with neuronsim's core-ATen
                decompositions, then neuronsim.graph_export.export_graph (the graph file, name
                and hash that torch.compile(backend="neuron") compiles)
  compile       wall time of neuronsim._C.compile(graph file, {"target": ...}) alone (graph file
                -> Program; no Dynamo, no export), in a process that loads the native module
                from its file without importing torch or the neuronsim package: the median of
                --repeats compiles in that process (fewer past 20 s); "first" is the first one
  vs 2048       compile / compile of n = 2048 (medians)
  base RSS      that process's peak RSS (getrusage(RUSAGE_SELF).ru_maxrss) just before the
                first compile: Python, the native module and its libraries (libtorch_cpu, MLIR,
                LLVM) loaded, the graph file read
  compile mem   peak RSS right after the first compile minus base RSS: what the compile itself
                added at its peak (held against the memory target)
  peak RSS      the process's peak RSS right after the first compile (base + compile mem)
  program       bytes of the disk-cache entry: programs/<key>.nprog written by
                neuronsim.disk_cache.DiskCache.store (binary + JSON header, then the CBOR of
                Program.to_bytes()); the csv also has the CBOR and Program.to_json() sizes
  static instr  Program.num_instructions: instructions in the program
  executed      neuronsim.last_run_stats()["instructions"] after a timing-only run of that
                program (neuronsim.runner.CompiledGraph, timing_only=True) in the same process,
                after the measurements above: executed instruction instances
  sim           last_run_stats()["sim_ns"] of that run
Training steps: bench/train_step.py's GPT (embeddings, pre-LN blocks, tied head, cross-entropy),
d_model 768, 12 heads, seq 1024, batch 8; loss.backward() and a compiled AdamW step, all with
options={"timing_only": True}, as train_step.py does.
  first step    wall time of the first step: Dynamo, AOTAutograd, export, native compile and
                simulation of the forward, backward and optimizer graphs
    of which    native: cache_stats()["compile_s"] (per graph in the note: the forward, the
                backward, then the optimizer step); export: time in graph_export.export_graph;
                sim: time in Program.run; Dynamo/AOT: the rest (Dynamo tracing, AOTAutograd,
                one-time initialization of both, Python)
  later step    wall time of the second step (timing-only simulation and call overheads)
  sim step      simulated time of the second step (neuronsim.measure())
  peak RSS      the process's peak RSS (ru_maxrss) at the end

Targets: compile(16384) <= 3 x compile(2048); compile mem(16384) < 300 MB; program(16384)
< 1 MB on disk; one-layer first step <= 15 x a later step; GPT-2 small first step < 90 s.
A case that fails or times out is listed with its error instead of numbers.
"""

from __future__ import annotations

import argparse
import csv
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The benchmarks measure one physical NeuronCore (trn2 unless --target says otherwise) and
# compare outputs where eager puts them: NeuronSim's placement, not TorchNeuron's defaults of
# a two-core logical device and device-resident outputs (README, The neuron device).
os.environ.setdefault("NEURON_LOGICAL_NC_CONFIG", "1")
os.environ.setdefault("TORCH_NEURONX_RETAIN_DEVICE_MODE", "1")

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
MiB = 1024 * 1024
STEPS = {"1layer": (1, 8192), "gpt2": (12, 50257)}  # name: (layers, vocab)
TARGETS = {"compile_ratio": 3.0, "compile_mem_mb": 300.0, "program_mb": 1.0,
           "first_vs_later": 15.0, "gpt2_first_s": 90.0}  # fmt: skip


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # ru_maxrss is in KiB


# --- Workers (each in its own process; they print one JSON line) -------------------------------


def export_matmul(n: int, path: str) -> dict:
    """Writes the graph file the neuron backend compiles for torch.mm of bf16 [n, n] inputs."""
    import torch
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    from neuronsim.backend import _decompositions
    from neuronsim.graph_export import export_graph

    names = []

    def forward_compiler(gm, inputs):
        exported = export_graph(gm, inputs, name_prefix="forward")
        Path(path).write_text(exported.text)
        names.append(exported.name)
        return make_boxed_func(lambda *args: [torch.empty(n, n, dtype=torch.bfloat16)])

    backend = aot_autograd(fw_compiler=forward_compiler, decompositions=_decompositions())
    a, b = (torch.empty(n, n, dtype=torch.bfloat16) for _ in range(2))
    with torch.no_grad():
        torch.compile(torch.mm, backend=backend, dynamic=False)(a, b)
    return {"graph": names[0], "graph_bytes": os.path.getsize(path)}


def _load_native():
    """neuronsim._C from its file, without running neuronsim/__init__.py (which imports torch)."""
    package = importlib.util.find_spec("neuronsim").submodule_search_locations[0]
    path = next(p for s in importlib.machinery.EXTENSION_SUFFIXES
                if os.path.exists(p := os.path.join(package, "_C" + s)))  # fmt: skip
    spec = importlib.util.spec_from_file_location("neuronsim._C", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["neuronsim._C"] = module  # a later `import neuronsim` reuses this module
    return module


def compile_matmul(n: int, graph_path: str, repeats: int) -> dict:
    native = _load_native()
    graph = Path(graph_path).read_text()
    options = json.dumps({"target": native.default_target()})
    base = _rss_mb()
    start = time.perf_counter()
    program = native.compile(graph, options)
    times = [time.perf_counter() - start]
    peak = _rss_mb()
    while len(times) < repeats and sum(times) < 20.0:  # more compiles, for a steadier median
        start = time.perf_counter()
        native.compile(graph, options)
        times.append(time.perf_counter() - start)
    result = {"n": n, "first_compile_s": times[0], "compile_s": statistics.median(times),
              "compiles": len(times), "base_rss_mb": base, "peak_rss_mb": peak,
              "compile_mem_mb": peak - base, "torch_imported": "torch" in sys.modules,
              "static_instructions": program.num_instructions,
              "cbor_bytes": len(program.to_bytes()), "json_bytes": len(program.to_json()),
              "compiler": native.version(), "target": native.default_target()}  # fmt: skip
    # Not measured any more: the disk-cache entry and a timing-only run (these import torch).
    import torch

    import neuronsim
    from neuronsim.disk_cache import DiskCache, DiskConfig
    from neuronsim.runner import CompiledGraph, OutputSpec

    with tempfile.TemporaryDirectory() as folder:
        cache = DiskCache(DiskConfig(folder, max_bytes=1 << 40))
        cache.store("compile-scaling", program, graph="matmul")
        result["program_bytes"] = os.path.getsize(cache.path("compile-scaling"))
    bf16 = torch.bfloat16
    run = CompiledGraph(program, "matmul", [OutputSpec((n, n), bf16)], timing_only=True)
    run([torch.empty(n, n, dtype=bf16), torch.empty(n, n, dtype=bf16)])
    stats = neuronsim.last_run_stats()
    result.update(executed_instructions=stats["instructions"], sim_ns=stats["sim_ns"])
    return result


def train_step(name: str) -> dict:
    import torch

    import neuronsim
    from neuronsim import _C, compiler

    sys.path.insert(0, str(HERE))
    from train_step import GPT

    layers, vocab = STEPS[name]
    spent = {"export": 0.0, "sim": 0.0}

    def timed(function, bucket):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[bucket] += time.perf_counter() - start

        return wrapper

    compiler.export_graph = timed(compiler.export_graph, "export")
    _C.Program.run = timed(_C.Program.run, "sim")
    torch.manual_seed(0)
    model = GPT(vocab, 768, 12, 1024, layers)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    options = {"timing_only": True}
    loss_fn = torch.compile(model, backend="neuron", dynamic=False, options=options)
    step = torch.compile(lambda: opt.step(), backend="neuron", options=options)
    idx, tgt = (torch.randint(0, vocab, (8, 1024)) for _ in range(2))

    def one_step() -> float:
        opt.zero_grad(set_to_none=False)
        start = time.perf_counter()
        loss_fn(idx, tgt).backward()
        step()
        return time.perf_counter() - start

    first = one_step()
    cache = neuronsim.cache_stats()
    native_s, export_s, sim_s = cache["compile_s"], spent["export"], spent["sim"]
    with neuronsim.measure() as m:
        later = one_step()
    return {"step": name, "layers": layers, "vocab": vocab, "first_s": first, "later_s": later,
            "native_s": native_s, "export_s": export_s, "first_sim_s": sim_s,
            "dynamo_aot_s": first - native_s - export_s - sim_s, "graphs": cache["compiles"],
            "sim_step_ms": m.sim_ns / 1e6, "peak_rss_mb": _rss_mb(),
            "graph_compile_s": {g["graph"]: g["compile_s"] for g in cache["signatures"]},
            "params_m": sum(p.numel() for p in model.parameters()) / 1e6}  # fmt: skip


# --- Driver ------------------------------------------------------------------------------------


def _run(args: list[str], timeout: float) -> dict:
    env = {**os.environ, "NEURONSIM_DISABLE_CACHE": "1"}
    cmd = [sys.executable, __file__, "--worker", *args]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = [line for line in (proc.stderr or proc.stdout).strip().splitlines() if line][-6:]
        return {"error": f"exit code {proc.returncode}: " + " | ".join(tail)[-700:]}
    return json.loads(lines[-1])


def matmul_case(n: int, repeats: int, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        graph = os.path.join(folder, "graph.json")
        exported = _run(["export", str(n), graph], timeout)
        if "error" in exported:
            return {"n": n, "error": "export: " + exported["error"]}
        result = _run(["compile", str(n), graph, str(repeats)], timeout)
    print(json.dumps(result), file=sys.stderr)
    return {"n": n, **exported, **result}


def _fmt(value, spec: str = "%.3g") -> str:
    return "" if value is None else spec % value


def _verdict(value, limit: float) -> str:
    if value is None:
        return "not measured"
    return f"{'met' if value <= limit else 'MISSED'} ({value:.3g} vs {limit:g})"


def write_results(matmuls: list[dict], steps: list[dict], command: str) -> str:
    base = next((r for r in matmuls if r.get("n") == 2048 and "error" not in r), None)
    ratio = (lambda r: r["compile_s"] / base["compile_s"]) if base else (lambda r: None)
    compiler = next((r["compiler"] for r in matmuls if "compiler" in r), "?")
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text()
                .splitlines() if line.startswith("model name")), platform.machine())  # fmt: skip
    doc = __doc__ or ""
    lines = [
        "# Compile scaling: time, memory and program size", "",
        f"Produced by: `{command}`  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M')}; machine: {cpu}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, torch {importlib.metadata.version('torch')}, neuronsim "
        f"compiler {compiler}; load average at the end {os.getloadavg()[0]:.1f} (a shared "
        "machine: wall times are noisy).", "",
        "```", doc[doc.index("Every case"):doc.index("Targets:")].strip(), "```", "",
        "## Native compile of one bf16 matmul [n, n] @ [n, n]", "",
        "| n | compile (s) | first (s) | vs 2048 | compile mem (MB) | peak RSS (MB) | "
        "base RSS (MB) | program on disk (KB) | static instr | executed | sim (us) | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for r in matmuls:
        if "error" in r:
            lines.append(f"| {r['n']} |" + " |" * 10 + f" ERROR: {r['error']} |")
            continue
        note = "torch was imported before the compile!" if r["torch_imported"] else ""
        lines.append(
            f"| {r['n']} | {r['compile_s']:.4f} | {r['first_compile_s']:.4f} | "
            f"{_fmt(ratio(r), '%.2fx')} | {r['compile_mem_mb']:.0f} | {r['peak_rss_mb']:.0f} | "
            f"{r['base_rss_mb']:.0f} | "
            f"{r['program_bytes'] / 1024:.1f} | {r['static_instructions']:,} | "
            f"{r['executed_instructions']:,} | {r['sim_ns'] / 1e3:.0f} | {note} |"
        )
    lines += [
        "", "## GPT-style training step (timing-only)", "",
        "| model | first step (s) | native compile (s) | export (s) | simulation (s) | "
        "Dynamo/AOT/other (s) | later step (s) | first / later | sim step (ms) | "
        "peak RSS (MB) | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for r in steps:
        what = f"{r['layers']} layer(s), vocab {r['vocab']}"
        if "error" in r:
            lines.append(f"| {what} |" + " |" * 9 + f" ERROR: {r['error']} |")
            continue
        lines.append(
            f"| {what} ({r['params_m']:.1f}M params) | {r['first_s']:.1f} | "
            f"{r['native_s']:.1f} | {r['export_s']:.1f} | {r['first_sim_s']:.1f} | "
            f"{r['dynamo_aot_s']:.1f} | {r['later_s']:.2f} | {r['first_s'] / r['later_s']:.1f}x | "
            f"{r['sim_step_ms']:.1f} | "
            f"{r['peak_rss_mb']:.0f} | native compile per graph, in order: "
            + ", ".join(f"{g} {t:.1f} s" for g, t in r["graph_compile_s"].items()) + " |"
        )
    big = next((r for r in matmuls if r.get("n") == 16384 and "error" not in r), None)
    one = next((r for r in steps if r["step"] == "1layer" and "error" not in r), None)
    gpt2 = next((r for r in steps if r["step"] == "gpt2" and "error" not in r), None)
    lines += [
        "", "## Targets", "",
        f"- compile(16384) / compile(2048) <= 3: "
        f"{_verdict(big and base and ratio(big), TARGETS['compile_ratio'])}",
        f"- compile mem of the 16384 compile < 300 MB: "
        f"{_verdict(big and big['compile_mem_mb'], TARGETS['compile_mem_mb'])}"
        + (f"; the whole process peaked at {big['peak_rss_mb']:.0f} MB" if big else ""),
        f"- 16384 program on disk < 1 MB: "
        f"{_verdict(big and big['program_bytes'] / MiB, TARGETS['program_mb'])}",
        f"- one-layer first step <= 15 x a later step: "
        f"{_verdict(one and one['first_s'] / one['later_s'], TARGETS['first_vs_later'])}",
        f"- GPT-2 small first step < 90 s: "
        f"{_verdict(gpt2 and gpt2['first_s'], TARGETS['gpt2_first_s'])}", "",
    ]  # fmt: skip
    text = "\n".join(lines)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "compile_scaling.md").write_text(text)
    with open(RESULTS / "compile_scaling.csv", "w", newline="") as f:
        rows = [{"case": f"matmul_{r['n']}", **r} for r in matmuls]
        rows += [{"case": f"step_{r['step']}", **r} for r in steps]
        fields = list(dict.fromkeys(k for row in rows for k in row))
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="n <= 4096 and the one-layer step")
    parser.add_argument("--sizes", default="2048,4096,8192,16384", help="matmul sizes n")
    parser.add_argument("--steps", default="1layer,gpt2", help="1layer, gpt2 or none")
    parser.add_argument("--repeats", type=int, default=5, help="native compiles per matmul")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per process")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, *rest = args.worker
        workers = {"export": lambda: export_matmul(int(rest[0]), rest[1]),
                   "compile": lambda: compile_matmul(int(rest[0]), rest[1], int(rest[2])),
                   "train": lambda: train_step(rest[0])}  # fmt: skip
        print(json.dumps(workers[kind]()))
        return
    sizes = [int(s) for s in args.sizes.split(",") if s]
    steps = [s for s in args.steps.split(",") if s in STEPS]
    if args.quick:
        sizes, steps = [n for n in sizes if n <= 4096], ["1layer"]
    matmuls = [matmul_case(n, args.repeats, args.timeout) for n in sizes]
    results = []
    for name in steps:
        result = _run(["train", name], args.timeout)
        print(json.dumps(result), file=sys.stderr)
        results.append({"step": name, "layers": STEPS[name][0], "vocab": STEPS[name][1], **result})
    command = " ".join(["python bench/compile_scaling.py", *sys.argv[1:]])
    print(write_results(matmuls, results, command))


if __name__ == "__main__":
    main()
