"""NeuronSim simulator benchmark (issue 5): simulated time, roofline, MFU and wall times.

    python bench/simulator_bench.py                   # all -> bench/results/simulator.{md,csv}
    python bench/simulator_bench.py --quick           # small cases only (a smoke run)
    python bench/simulator_bench.py --only gemm_1024  # cases whose name contains a string

For each graph: torch.compile(model, backend="neuron", dynamic=False) on the default target
(trn2, or --target), with the compile caches off, and
  sim time      simulated device time of one run (neuronsim.last_run_stats()["sim_ns"])
  roofline      roofline_ns / sim_ns: 1.0 = as fast as the larger of the compute bound (graph
                FLOPs at the Tensor-engine peak) and the HBM bound (inputs, outputs and
                constants moved once at the core's HBM bandwidth)
  MFU           achieved / peak Tensor-engine FLOPs (bf16 peak; fp32 peak if all matmuls fp32)
  compile       wall time of the first call (in timing-only mode) minus a later one: Dynamo,
                AOTAutograd, graph export and the MLIR compile
  simulator     wall time of one later call of the compiled model (the best of a few):
                functional simulation plus the Python/DLPack call overhead; timing-only for
                the cases marked "timing only" (their functional run would take too long).
                The simulator runs on one thread.
  eager         wall time of the same model in eager PyTorch on this CPU, same dtype (the
                best of a few runs, with 1 thread or all CPUs, whichever is faster)
  sim / eager   simulator / eager (functional cases only)
  hazard check  extra simulator wall time of the hazard detection (on by default in functional
                runs): simulator / the same run with options={"check_hazards": False} - 1
  TO instr/s    instructions per second of the simulator in timing-only mode (the same
                program run with options={"timing_only": True}; includes the call overhead)
  max rel err   max |compiled - eager| / max |eager| (functional cases)
  tensor / DMA util   busy / sim time of the Tensor engine and of the DMA queues (any active)
A case the compiler cannot compile yet is listed with its error instead of numbers.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import platform
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

# The benchmarks measure one physical NeuronCore (trn2 unless --target says otherwise) and
# compare outputs where eager puts them: NeuronSim's placement, not TorchNeuron's defaults of
# a two-core logical device and device-resident outputs (README, The neuron device).
os.environ.setdefault("NEURON_LOGICAL_NC_CONFIG", "1")
os.environ.setdefault("TORCH_NEURONX_RETAIN_DEVICE_MODE", "1")

# Compile caches off: every case compiles (compile times are real), and nothing is written
# to the user's disk cache.
os.environ["NEURONSIM_DISABLE_CACHE"] = "1"

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import neuronsim  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
BF16 = torch.bfloat16


# ----------------------------------------------------------------------------------------------
# Graphs
# ----------------------------------------------------------------------------------------------


class MatMul(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


class LayerNorm(torch.nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


class Softmax(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """softmax(q k^T / sqrt(d) + causal mask) v, written out (what GPT-2's eager code does)."""
    seq, d = q.shape[-2], q.shape[-1]
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
    mask = torch.ones(seq, seq, dtype=torch.bool, device=q.device).tril()
    scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


class Attention(torch.nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return causal_attention(q, k, v)


class MLP(torch.nn.Module):
    def __init__(self, d: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(d, hidden)
        self.fc2 = torch.nn.Linear(hidden, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


class ScaleShift(torch.nn.Module):
    """x * 2 + 1: memory-bound elementwise work."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2 + 1


class GPT2Block(torch.nn.Module):
    """One GPT-2 transformer block (pre-LN, causal self-attention, GELU-tanh MLP)."""

    def __init__(self, d: int = 768, heads: int = 12) -> None:
        super().__init__()
        self.heads = heads
        self.ln_1 = torch.nn.LayerNorm(d)
        self.c_attn = torch.nn.Linear(d, 3 * d)
        self.c_proj = torch.nn.Linear(d, d)
        self.ln_2 = torch.nn.LayerNorm(d)
        self.mlp = MLP(d, 4 * d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(batch, seq, self.heads, d // self.heads).transpose(1, 2)

        y = causal_attention(heads(q), heads(k), heads(v))
        x = x + self.c_proj(y.transpose(1, 2).reshape(batch, seq, d))
        return x + self.mlp(self.ln_2(x))


@dataclass
class Case:
    name: str
    what: str  # shapes, dtype
    build: Callable[[], tuple[torch.nn.Module, tuple[torch.Tensor, ...]]]
    timing_only: bool = False
    quick: bool = False  # part of --quick
    note: str = ""


def _gemm(m: int, k: int, n: int) -> Callable[[], tuple[torch.nn.Module, tuple]]:
    return lambda: (MatMul(), (torch.randn(m, k, dtype=BF16), torch.randn(k, n, dtype=BF16)))


def cases() -> list[Case]:
    out = []
    for n in (128, 256, 512, 1024, 2048, 4096, 8192):
        out.append(
            Case(
                f"gemm_{n}",
                f"bf16 {n}x{n} @ {n}x{n}",
                _gemm(n, n, n),
                timing_only=n >= 2048,
                quick=n <= 512,
            )
        )
    out.append(
        Case(
            "gemm_ref_12288x8192x8192",
            "bf16 12288x8192 @ 8192x8192",
            _gemm(12288, 8192, 8192),
            timing_only=True,
        )
    )
    out.append(
        Case(
            "gemm_ref_1024x4096x4096",
            "bf16 1024x4096 @ 4096x4096",
            _gemm(1024, 4096, 4096),
        )
    )
    for name, shape in (("elementwise_2d", (4096, 8192)), ("elementwise_1d", (32 * 2**20,)),
                        ("elementwise_3_rows", (3, 5_000_000))):  # fmt: skip
        out.append(
            Case(
                name,
                f"bf16 x * 2 + 1, {list(shape)}",
                lambda shape=shape: (ScaleShift(), (torch.randn(shape, dtype=BF16),)),
                timing_only=True,
            )
        )
    out.append(
        Case(
            "layernorm",
            "bf16 [4096, 768], affine",
            lambda: (LayerNorm(768).to(BF16), (torch.randn(4096, 768, dtype=BF16),)),
            quick=True,
        )
    )
    out.append(
        Case(
            "softmax",
            "bf16 [4096, 1024], last dim",
            lambda: (Softmax(), (torch.randn(4096, 1024, dtype=BF16),)),
            quick=True,
        )
    )
    out.append(
        Case(
            "attention",
            "bf16 causal, 12 heads x seq 1024 x 64",
            lambda: (Attention(), tuple(torch.randn(1, 12, 1024, 64, dtype=BF16) for _ in "qkv")),
        )
    )
    out.append(
        Case(
            "mlp",
            "bf16 [2048, 768] -> 3072 (GELU) -> 768",
            lambda: (MLP(768, 3072).to(BF16), (torch.randn(2048, 768, dtype=BF16),)),
        )
    )
    out.append(
        Case(
            "gpt2_block",
            "bf16 GPT-2 small block: d 768, 12 heads, seq 1024",
            lambda: (GPT2Block().to(BF16), (torch.randn(1, 1024, 768, dtype=BF16),)),
        )
    )
    return out


# ----------------------------------------------------------------------------------------------
# Measurement
# ----------------------------------------------------------------------------------------------


@dataclass
class Result:
    case: Case
    error: str = ""
    sim_ns: float = math.nan
    roofline: float = math.nan
    mfu: float = math.nan
    compile_s: float = math.nan
    sim_wall_s: float = math.nan
    unchecked_wall_s: float = math.nan  # functional, check_hazards=False
    eager_s: float = math.nan
    eager_threads: int = 0
    instructions: int = 0
    to_instr_per_s: float = math.nan
    max_error: float = math.nan  # |compiled - eager| / max |eager| (functional cases)
    extra: dict = field(default_factory=dict)


def _timed(fn: Callable[[], object], budget_s: float, max_runs: int) -> float:
    """Best wall time of fn() over up to max_runs calls (fewer when they are slow; the first
    call is a warm-up unless it alone took more than the budget). The best, not the median:
    this machine is shared, and noise only ever adds time."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    if first > budget_s:
        return first
    times = []
    start = time.perf_counter()
    while len(times) < max_runs and (not times or time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _eager(fn: Callable[[], object], runs: int) -> tuple[float, int]:
    """Eager wall time: the faster of 1 thread and all CPUs (on a busy 2-core machine the
    thread pool can wait for a scheduler slice), with the thread count that gave it."""
    best = (math.inf, 0)
    threads = sorted({1, os.cpu_count() or 1})
    try:
        for n in threads:
            torch.set_num_threads(n)
            best = min(best, (_timed(fn, budget_s=2.0, max_runs=runs), n))
    finally:
        torch.set_num_threads(threads[-1])
    return best


def _short(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:300]}{'...' if len(text) > 300 else ''}"


def measure(case: Case, target: str | None, runs: int) -> Result:
    result = Result(case)
    torch.manual_seed(0)
    model, inputs = case.build()
    model.eval()
    with torch.no_grad():
        # Eager CPU.
        result.eager_s, result.eager_threads = _eager(lambda: model(*inputs), runs)
        expected = None if case.timing_only else model(*inputs)

        options = {"target": target} if target else {}
        torch._dynamo.reset()
        neuronsim.reset()
        # 1. Compile and run in timing-only mode: the first call is the compile (its
        #    timing-only run takes milliseconds), later calls give the timing-only speed.
        timing = torch.compile(
            model, backend="neuron", dynamic=False, options={**options, "timing_only": True}
        )
        try:
            t0 = time.perf_counter()
            timing(*inputs)
            first = time.perf_counter() - t0
        except Exception as error:  # a compiler gap: recorded, not fatal
            result.error = _short(error)
            if os.environ.get("BENCH_TRACEBACK"):
                traceback.print_exc()
            return result
        wall = _timed(lambda: timing(*inputs), budget_s=2.0, max_runs=runs)
        stats = neuronsim.last_run_stats()
        result.compile_s = max(first - wall, 0.0)
        result.to_instr_per_s = stats["instructions"] / wall
        result.sim_wall_s = wall
        # 2. The functional run (same program: the compile cache key ignores timing_only).
        if not case.timing_only:
            compiled = torch.compile(model, backend="neuron", dynamic=False, options=options)
            torch._dynamo.reset()
            try:
                actual = compiled(*inputs)
            except Exception as error:
                result.error = _short(error)
                return result
            result.sim_wall_s = _timed(lambda: compiled(*inputs), budget_s=3.0, max_runs=runs)
            stats = neuronsim.last_run_stats()
            unchecked = torch.compile(
                model, backend="neuron", dynamic=False, options={**options, "check_hazards": False}
            )
            torch._dynamo.reset()
            result.unchecked_wall_s = _timed(lambda: unchecked(*inputs), budget_s=3.0, max_runs=runs)
            scale = expected.double().abs().max().clamp_min(1e-30)
            result.max_error = float((actual.double() - expected.double()).abs().max() / scale)
        result.sim_ns = stats["sim_ns"]
        result.roofline = stats["roofline_ns"] / stats["sim_ns"] if stats["sim_ns"] else math.nan
        result.mfu = stats["mfu"]
        result.instructions = stats["instructions"]
        result.extra = {
            "hbm_bytes": stats["hbm_bytes"],
            "flops": stats["flops"],
            "utilization": stats["engine_utilization"],
        }
    return result


# ----------------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------------

COLUMNS = [
    "case",
    "graph",
    "mode",
    "sim time (us)",
    "roofline ratio",
    "MFU",
    "compile (s)",
    "simulator (s)",
    "eager CPU (s)",
    "sim / eager",
    "hazard check",
    "instructions",
    "TO instr/s",
    "max rel err",
    "tensor util",
    "DMA util",
    "note",
]


def _fmt(value: float, spec: str) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else spec % value


def row(r: Result) -> list[str]:
    c = r.case
    mode = "timing only" if c.timing_only else "functional"
    if r.error:
        return [c.name, c.what, mode, "", "", "", "", "", _fmt(r.eager_s, "%.4f"), "", "", "",
                "", "", "", "", f"COMPILE/RUN ERROR: {r.error}"]  # fmt: skip
    # The ratio is about the functional simulator; a timing-only run computes no numbers.
    ratio = r.sim_wall_s / r.eager_s if r.eager_s and not c.timing_only else math.nan
    util = r.extra.get("utilization", {})
    note = c.note
    return [
        c.name,
        c.what,
        mode,
        _fmt(r.sim_ns / 1000, "%.2f"),
        _fmt(r.roofline, "%.3f"),
        _fmt(100 * r.mfu, "%.1f%%"),
        _fmt(r.compile_s, "%.3f"),
        _fmt(r.sim_wall_s, "%.4f"),
        _fmt(r.eager_s, "%.4f") + (f" ({r.eager_threads}T)" if r.eager_threads else ""),
        _fmt(ratio, "%.2f"),
        _fmt(100 * (r.sim_wall_s / r.unchecked_wall_s - 1), "%+.0f%%"),
        str(r.instructions),
        _fmt(r.to_instr_per_s / 1e6, "%.2fM"),
        _fmt(r.max_error, "%.1e"),
        _fmt(100 * util.get("tensor", math.nan), "%.0f%%"),
        _fmt(100 * util.get("dma", math.nan), "%.0f%%"),
        note,
    ]


def write(results: list[Result], command: str, target: str) -> None:
    os.makedirs(RESULTS, exist_ok=True)
    rows = [row(r) for r in results]
    header = [
        f"Produced by: `{command}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, torch {torch.__version__}, neuronsim "
        f"{neuronsim.compiler_version()}, target {target}. "
        f"Date: {time.strftime('%Y-%m-%d')}. Load average at the end "
        f"{os.getloadavg()[0]:.1f} (wall times are noisy on a shared machine).",
    ]
    with open(os.path.join(RESULTS, "simulator.csv"), "w", newline="") as f:
        f.write("".join(f"# {line}\n" for line in header if line))
        w = csv.writer(f)
        w.writerow(COLUMNS)
        w.writerows(rows)
    doc = __doc__ or ""
    legend = doc[doc.index("For each graph") :] if "For each graph" in doc else doc
    with open(os.path.join(RESULTS, "simulator.md"), "w") as f:
        f.write("# NeuronSim simulator benchmark\n\n")
        f.write("\n".join(header) + "\n\n")
        f.write("```\n" + legend.strip() + "\n```\n\n")
        f.write("| " + " | ".join(COLUMNS) + " |\n")
        f.write("|" + "---|" * len(COLUMNS) + "\n")
        for r in rows:
            f.write("| " + " | ".join(cell.replace("|", "\\|") for cell in r) + " |\n")
        f.write(summary(results))


def summary(results: list[Result]) -> str:
    ok = [r for r in results if not r.error]
    functional = [r for r in ok if not r.case.timing_only]
    lines = ["\n## Summary\n"]
    if functional:
        ratios = [r.sim_wall_s / r.eager_s for r in functional]
        within = sum(x <= 3 for x in ratios)
        median = statistics.median(ratios)
        lines.append(
            f"- Functional simulator / eager CPU wall time: median {median:.2f}x, "
            f"worst {max(ratios):.2f}x; {within} of {len(ratios)} functional graphs within 3x "
            "(target: within 3x)."
        )
    checked = [r for r in functional if not math.isnan(r.unchecked_wall_s)]
    if checked:
        costs = [r.sim_wall_s / r.unchecked_wall_s - 1 for r in checked]
        lines.append(
            f"- Hazard detection (on by default in functional runs) costs a median "
            f"{100 * statistics.median(costs):+.0f}% of simulator wall time (range "
            f"{100 * min(costs):+.0f}% to {100 * max(costs):+.0f}%); "
            '`options={"check_hazards": False}` turns it off.'
        )
    speeds = [r.to_instr_per_s for r in ok if not math.isnan(r.to_instr_per_s)]
    big = [r for r in ok if r.instructions >= 100_000]
    if speeds:
        best = max(ok, key=lambda r: r.to_instr_per_s)
        lines.append(
            f"- Timing-only speed: {min(speeds) / 1e6:.2f}M to {max(speeds) / 1e6:.2f}M "
            f"instructions/s (best: {best.case.name}); graphs of >= 100k instructions: "
            + (", ".join(f"{r.case.name} {r.to_instr_per_s / 1e6:.2f}M" for r in big) or "none")
            + " (target: 20M/s or more on graphs of >= 100k instructions; small graphs are dominated by the per-call overhead)."
        )
    failed = [r for r in results if r.error]
    if failed:
        lines.append(f"- Not compiled yet: {', '.join(r.case.name for r in failed)}.")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small cases only")
    parser.add_argument("--only", action="append", help="cases whose name contains this")
    parser.add_argument("--target", help="simulated target (default: trn2)")
    parser.add_argument("--runs", type=int, default=5, help="most timed runs per measurement")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()

    torch.set_num_threads(os.cpu_count() or 1)
    selected = [
        c
        for c in cases()
        if (not args.quick or c.quick) and (not args.only or any(s in c.name for s in args.only))
    ]
    results = []
    for case in selected:
        print(f"[bench] {case.name}: {case.what}{' (timing only)' if case.timing_only else ''}",
              flush=True)  # fmt: skip
        r = measure(case, args.target, args.runs)
        results.append(r)
        print("        " + " | ".join(f"{k}={v}" for k, v in zip(COLUMNS, row(r), strict=True)
                                      if v and k not in ("case", "graph")), flush=True)  # fmt: skip
    command = "python " + " ".join([os.path.relpath(__file__, os.getcwd())] + sys.argv[1:])
    if not args.no_write:
        write(results, command, args.target or "trn2")
        print(f"[bench] wrote {RESULTS}/simulator.md and simulator.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
