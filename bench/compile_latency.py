"""Compile latency of the neuron backend, side by side with Inductor (issue 6).

For a GPT-2-style and a ResNet-style small model, each measurement in a fresh process:

  neuron cold      empty disk cache: first call minus one steady call (= the compile part of the
                   first call: Dynamo + AOTAutograd + graph export + native compile)
  neuron warm      a new process over the disk cache the cold run filled: the same measure; the
                   native compiler must not run (all disk hits)
  hit overhead     per call on a cache hit (same shapes, compiled frame reused), excluding
                   simulation: the wall time of the compiled call minus the wall time inside
                   neuronsim._C.Program.run, with Program.run
                     stub        replaced by a stub returning the outputs of a first real run
                                 (so: everything but the simulator; the number held against
                                 the goal),
                     timing      running timing-only simulation (no numbers computed),
                     functional  running the full simulation: the simulation evicts the CPU
                                 caches, so the Python code after it runs slower;
                   and, for reference, the same model through Dynamo + AOTAutograd with a
                   backend that costs nothing (the framework floor under any backend)
  inductor cold    torch.compile(backend="inductor") with an empty Inductor cache
                   (TORCHINDUCTOR_CACHE_DIR in a new temporary folder): first call minus a
                   steady call

Each worker process first compiles and runs a one-op function with the same backend, so
one-time imports and initialization (about 1-3 s for either backend) are not counted as the
model's compile time.

    python bench/compile_latency.py                    # both models, writes bench/results/
    python bench/compile_latency.py --models gpt2 --repeats 3

Goals (issue 6): neuron cold <= 0.5 x Inductor cold; warm <= 0.1 x neuron cold; hit overhead
< 50 us.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import os
import platform
import shutil
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

import torch
import torch.nn.functional as F
from torch import nn

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


# --- Models ------------------------------------------------------------------------------------


class GPT2Block(nn.Module):
    def __init__(self, dim: int, heads: int, max_tokens: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(dim)
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.ln_2 = nn.LayerNorm(dim)
        self.c_fc = nn.Linear(dim, 4 * dim)
        self.mlp_proj = nn.Linear(4 * dim, dim)
        causal = torch.tril(torch.ones(max_tokens, max_tokens, dtype=torch.bool))
        self.register_buffer("bias", causal.view(1, 1, max_tokens, max_tokens))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, channels = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(channels, dim=2)
        q, k, v = (t.view(batch, tokens, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
        scores = scores.masked_fill(~self.bias[:, :, :tokens, :tokens], float("-inf"))
        y = (F.softmax(scores, dim=-1) @ v).transpose(1, 2).contiguous().view(x.shape)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    """GPT-2 architecture, small: 2 layers, 128 wide, 4 heads, vocabulary 512, 64 tokens."""

    def __init__(self, vocab=512, dim=128, heads=4, layers=2, max_tokens=64) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(max_tokens, dim)
        self.h = nn.ModuleList([GPT2Block(dim, heads, max_tokens) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as in GPT-2

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(positions)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class ResNet(nn.Module):
    """ResNet architecture (BasicBlocks), small: stem, 3 stages of 1 block (16/32/64), 32x32."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16))
        self.stages = nn.Sequential(
            BasicBlock(16, 16, 1), BasicBlock(16, 32, 2), BasicBlock(32, 64, 2)
        )
        self.fc = nn.Linear(64, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stages(F.relu(self.stem(x)))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def gpt2() -> tuple[nn.Module, list[torch.Tensor]]:
    torch.manual_seed(0)
    return GPT2().eval(), [torch.randint(0, 512, (2, 64))]


def resnet() -> tuple[nn.Module, list[torch.Tensor]]:
    torch.manual_seed(0)
    return ResNet().eval(), [torch.randn(2, 3, 32, 32)]


def mlp() -> tuple[nn.Module, list[torch.Tensor]]:
    """Not a goal model: a Linear-ReLU-Linear, as a reference that always compiles."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(200, 300), nn.ReLU(), nn.Linear(300, 10))
    return model.eval(), [torch.randn(3, 200)]


MODELS = {"gpt2": gpt2, "resnet": resnet, "mlp": mlp}


# --- Worker (one measurement, in its own process) ---------------------------------------------


def _warm_up(backend: str) -> None:
    """Compiles and runs a one-op function, so imports/initialization are not counted."""
    with torch.no_grad():
        torch.compile(lambda t: t * 2.0 + 1.0, backend=backend, dynamic=False)(torch.randn(4, 4))
    torch._dynamo.reset()


def _time_call(fn, inputs) -> float:
    start = time.perf_counter()
    with torch.no_grad():
        fn(*inputs)
    return time.perf_counter() - start


def worker(phase: str, model_name: str, calls: int) -> dict:
    backend = "inductor" if phase == "inductor-cold" else "neuron"
    _warm_up(backend)
    model, inputs = MODELS[model_name]()
    compiled = torch.compile(model, backend=backend)  # the default, dynamic=None
    result: dict = {"phase": phase, "model": model_name}
    if backend == "neuron":
        import neuronsim

        neuronsim.reset()
    try:
        first = _time_call(compiled, inputs)
    except Exception as error:  # noqa: BLE001 - reported in the results
        result["error"] = f"{type(error).__name__}: {error}"
        return result
    steady = min(_time_call(compiled, inputs) for _ in range(2))
    result.update(first_call_s=first, steady_call_s=steady, compile_s=max(first - steady, 0.0))
    if backend == "neuron":
        import neuronsim

        stats = neuronsim.cache_stats()
        result.update(
            native_compile_s=stats["compile_s"],
            compiles=stats["compiles"],
            disk_hits=stats["disk_hits"],
            memory_hits=stats["memory_hits"],
            graphs=len(stats["signatures"]),
            sim_ns=(neuronsim.last_run_stats() or {}).get("sim_ns"),
        )
        if phase == "neuron-warm":
            result.update(_hit_overhead(compiled, inputs, calls))
            result["framework_floor_us"] = _framework_floor_us(model, inputs, calls)
    return result


def _framework_floor_us(model, inputs, calls: int) -> float:
    """Per-call time of the same model through Dynamo + AOTAutograd with a backend that costs
    nothing (it returns the outputs of its first call): the floor under any backend's overhead."""
    from torch._decomp import core_aten_decompositions
    from torch._dynamo.backends.common import aot_autograd

    def forward_compiler(gm, example_inputs):
        outputs = []

        def run(args):
            if not outputs:
                outputs.append(list(gm(*args)))
            return list(outputs[0])

        run._boxed_call = True
        return run

    backend = aot_autograd(fw_compiler=forward_compiler, decompositions=core_aten_decompositions())
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=backend)
    times = []
    with torch.no_grad():
        compiled(*inputs)
        for _ in range(max(calls, 200)):
            start = time.perf_counter()
            compiled(*inputs)
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


MODES = ("stub", "timing", "functional")


def _hit_overhead(compiled, inputs, calls: int) -> dict:
    """Per call: wall time minus the time inside Program.run (`{mode}_overhead_us`), and the
    part of it in neuronsim's runner, CompiledGraph.__call__ minus Program.run
    (`{mode}_runner_us`), for each of MODES (see the module docstring)."""
    from torch.utils.dlpack import to_dlpack

    from neuronsim import _C, runner

    original_run = _C.Program.run
    original_call = runner.CompiledGraph.__call__
    inside = {"run": 0.0, "runner": 0.0}
    mode = ["functional"]
    first_outputs: dict[int, tuple] = {}

    def timed_run(self, capsules, **kwargs):
        start = time.perf_counter()
        try:
            if mode[0] != "stub":
                return original_run(self, capsules, **kwargs)
            cached = first_outputs.get(id(self))
            if cached is None:
                outputs, stats = original_run(self, capsules, **kwargs)
                cached = ([torch.from_dlpack(o).clone() for o in outputs], stats)
                first_outputs[id(self)] = cached
            return [to_dlpack(t) for t in cached[0]], dict(cached[1])
        finally:
            inside["run"] += time.perf_counter() - start

    def timed_call(self, args):
        self.timing_only = mode[0] == "timing"
        start = time.perf_counter()
        try:
            return original_call(self, args)
        finally:
            inside["runner"] += time.perf_counter() - start

    _C.Program.run = timed_run
    runner.CompiledGraph.__call__ = timed_call
    result = {"overhead_calls": calls}
    try:
        for mode[0] in MODES:
            overheads, runner_parts, runs = [], [], []
            with torch.no_grad():
                compiled(*inputs)  # the stub's first real run
                for _ in range(calls):
                    inside["run"] = inside["runner"] = 0.0
                    start = time.perf_counter()
                    compiled(*inputs)
                    wall = time.perf_counter() - start
                    overheads.append(wall - inside["run"])
                    runner_parts.append(inside["runner"] - inside["run"])
                    runs.append(inside["run"])
            result[f"{mode[0]}_overhead_us"] = statistics.median(overheads) * 1e6
            result[f"{mode[0]}_runner_us"] = statistics.median(runner_parts) * 1e6
            result[f"{mode[0]}_run_ms"] = statistics.median(runs) * 1e3
    finally:
        _C.Program.run = original_run
        runner.CompiledGraph.__call__ = original_call
    return result


# --- Driver ------------------------------------------------------------------------------------


def _run_worker(phase: str, model: str, env: dict[str, str], calls: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", phase, "--models", model, "--calls", str(calls)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-15:]
        return {"phase": phase, "model": model, "error": "worker failed: " + " | ".join(tail)}
    return json.loads(lines[-1])


def _median(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def measure(model: str, repeats: int, calls: int) -> dict:
    summary: dict = {"model": model, "runs": []}
    cold_runs, warm_runs, inductor_runs = [], [], []
    for _ in range(repeats):
        cache_dir = tempfile.mkdtemp(prefix="neuronsim-bench-cache-")
        inductor_dir = tempfile.mkdtemp(prefix="inductor-bench-cache-")
        env = {
            **os.environ,
            "NEURONSIM_CACHE_DIR": cache_dir,
            "TORCHINDUCTOR_CACHE_DIR": inductor_dir,
        }
        env.pop("NEURONSIM_DISABLE_CACHE", None)
        try:
            cold = _run_worker("neuron-cold", model, env, calls)
            warm = _run_worker("neuron-warm", model, env, calls) if "error" not in cold else None
            inductor = _run_worker("inductor-cold", model, env, calls)
        finally:
            shutil.rmtree(cache_dir, ignore_errors=True)
            shutil.rmtree(inductor_dir, ignore_errors=True)
        summary["runs"] += [r for r in (cold, warm, inductor) if r]
        cold_runs.append(cold)
        if warm:
            warm_runs.append(warm)
        inductor_runs.append(inductor)
        for r in (cold, warm, inductor):
            if r:
                print(json.dumps(r), file=sys.stderr)
    errors = {r["phase"]: r["error"] for r in summary["runs"] if "error" in r}
    summary["errors"] = errors
    summary["neuron_cold_s"] = _median(cold_runs, "compile_s")
    summary["neuron_native_compile_s"] = _median(cold_runs, "native_compile_s")
    summary["neuron_graphs"] = _median(cold_runs, "graphs")
    summary["neuron_warm_s"] = _median(warm_runs, "compile_s")
    summary["warm_compiles"] = _median(warm_runs, "compiles")
    summary["warm_disk_hits"] = _median(warm_runs, "disk_hits")
    for key in ["framework_floor_us"] + [
        f"{mode}_{what}" for mode in MODES for what in ("overhead_us", "runner_us", "run_ms")
    ]:
        summary[key] = _median(warm_runs, key)
    summary["steady_call_ms"] = (
        _median(warm_runs, "steady_call_s") * 1e3
        if warm_runs and "error" not in warm_runs[0]
        else None
    )
    summary["inductor_cold_s"] = _median(inductor_runs, "compile_s")
    summary["inductor_steady_call_ms"] = (
        _median(inductor_runs, "steady_call_s") * 1e3
        if _median(inductor_runs, "steady_call_s") is not None
        else None
    )
    return summary


def _fmt(value, digits=3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _ratio(a, b):
    return a / b if a is not None and b else None


def write_results(summaries: list[dict], command: str, repeats: int) -> None:
    import neuronsim

    RESULTS.mkdir(parents=True, exist_ok=True)
    rows = []
    for s in summaries:
        m = s["model"]
        cold_vs_inductor = _ratio(s["neuron_cold_s"], s["inductor_cold_s"])
        warm_vs_cold = _ratio(s["neuron_warm_s"], s["neuron_cold_s"])
        entries = [
            (
                "neuron_cold_compile_s",
                s["neuron_cold_s"],
                "s",
                "first call - steady call, empty cache",
            ),
            (
                "neuron_native_compile_s",
                s["neuron_native_compile_s"],
                "s",
                "of which in the C++ compiler",
            ),
            ("neuron_graphs", s["neuron_graphs"], "", "compiled graphs"),
            ("neuron_warm_start_s", s["neuron_warm_s"], "s", "new process, disk cache"),
            ("warm_compiles", s["warm_compiles"], "", "native compiles in the warm process"),
            ("warm_disk_hits", s["warm_disk_hits"], "", ""),
            (
                "hit_overhead_us",
                s["stub_overhead_us"],
                "us",
                "per call on a hit, excluding simulation (Program.run stubbed); goal < 50",
            ),
            (
                "hit_overhead_runner_us",
                s["stub_runner_us"],
                "us",
                "of which in neuronsim's runner (CompiledGraph.__call__ - Program.run)",
            ),
            (
                "framework_floor_us",
                s["framework_floor_us"],
                "us",
                "per call, Dynamo + AOTAutograd with a zero-cost backend",
            ),
            (
                "timing_only_overhead_us",
                s["timing_overhead_us"],
                "us",
                "per call minus Program.run, timing-only simulation",
            ),
            (
                "functional_overhead_us",
                s["functional_overhead_us"],
                "us",
                "per call minus Program.run, functional simulation (CPU caches evicted)",
            ),
            ("program_run_ms", s["functional_run_ms"], "ms", "simulation per call (Program.run)"),
            (
                "inductor_cold_compile_s",
                s["inductor_cold_s"],
                "s",
                "first call - steady call, empty cache",
            ),
            ("inductor_steady_call_ms", s["inductor_steady_call_ms"], "ms", "real CPU execution"),
            ("cold_vs_inductor", cold_vs_inductor, "x", "goal <= 0.5"),
            ("warm_vs_cold", warm_vs_cold, "x", "goal <= 0.1"),
        ]
        for metric, value, unit, note in entries:
            rows.append({"model": m, "metric": metric, "value": value, "unit": unit, "note": note})
        for phase, error in s["errors"].items():
            rows.append(
                {
                    "model": m,
                    "metric": f"error:{phase}",
                    "value": None,
                    "unit": "",
                    "note": error[:500],
                }
            )
    with open(RESULTS / "compile_latency.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["model", "metric", "value", "unit", "note"])
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "value": "" if row["value"] is None else row["value"]})

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    lines = [
        "# Compile latency: neuron backend vs Inductor",
        "",
        f"Command: `{command}`  ",
        f"Date: {datetime.datetime.now().isoformat(timespec='seconds')}; machine: {cpu}, "
        f"{os.cpu_count()} CPUs; torch {torch.__version__}; neuronsim compiler "
        f"{neuronsim.compiler_version()}; median of {repeats} run(s), each phase in a new process; "
        f"load average at the end {os.getloadavg()[0]:.1f} (the machine is shared: other jobs "
        "make the numbers noisy).",
        "",
        "| model | neuron cold (s) | of which native compile (s) | warm start from disk (s) | "
        "warm / cold (goal <= 0.1) | hit overhead per call (us, goal < 50) | "
        "Inductor cold (s) | neuron cold / Inductor (goal <= 0.5) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        lines.append(
            f"| {s['model']} | {_fmt(s['neuron_cold_s'])} | {_fmt(s['neuron_native_compile_s'])} | "
            f"{_fmt(s['neuron_warm_s'])} | "
            f"{_fmt(_ratio(s['neuron_warm_s'], s['neuron_cold_s']))} | "
            f"{_fmt(s['stub_overhead_us'])} | {_fmt(s['inductor_cold_s'])} | "
            f"{_fmt(_ratio(s['neuron_cold_s'], s['inductor_cold_s']))} |"
        )
    lines += [
        "",
        "Hit overhead per call (us, median), excluding Program.run: with Program.run stubbed "
        "(the number above), of which in neuronsim's runner; Dynamo + AOTAutograd alone with a "
        "zero-cost backend; with timing-only and with functional simulation (after a functional "
        "simulation the CPU caches are cold, which slows the Python code around it).",
        "",
        "| model | stubbed | of which runner | Dynamo + AOTAutograd floor | timing-only | "
        "functional | simulation per call (ms) |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        lines.append(
            f"| {s['model']} | {_fmt(s['stub_overhead_us'])} | {_fmt(s['stub_runner_us'])} | "
            f"{_fmt(s['framework_floor_us'])} | {_fmt(s['timing_overhead_us'])} | "
            f"{_fmt(s['functional_overhead_us'])} | {_fmt(s['functional_run_ms'])} |"
        )
    lines += ["", "Other numbers (median):", ""]
    for s in summaries:
        lines.append(
            f"- {s['model']}: {_fmt(s['neuron_graphs'])} graph(s) compiled; warm process: "
            f"{_fmt(s['warm_compiles'])} native compiles, {_fmt(s['warm_disk_hits'])} disk hits; "
            f"steady call {_fmt(s['steady_call_ms'])} ms; Inductor steady call (real CPU "
            f"execution) {_fmt(s['inductor_steady_call_ms'])} ms."
        )
        for phase, error in s["errors"].items():
            lines.append(f"  - **{phase} failed**: `{error[:600]}`")
    lines += ["", "How each number is measured: see the docstring of bench/compile_latency.py.", ""]
    (RESULTS / "compile_latency.md").write_text("\n".join(lines))
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--models", default="gpt2,resnet", help="comma-separated: " + ",".join(MODELS)
    )
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--calls", type=int, default=50, help="calls for the hit overhead")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.models, args.calls)))
        return
    command = "python bench/compile_latency.py " + " ".join(sys.argv[1:])
    summaries = [measure(m, args.repeats, args.calls) for m in args.models.split(",")]
    write_results(summaries, command.strip(), args.repeats)


if __name__ == "__main__":
    main()
