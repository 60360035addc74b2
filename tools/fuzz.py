#!/usr/bin/env python3
"""Mutation fuzzer of the command-line tools, over the seeds in test/fuzz/seeds/.

Targets (one seed folder each):
  import  neuron-import FILE                 seeds/graph/   (graph files)
  opt     neuron-opt --neuron-lower FILE     seeds/mlir/    (ntorch IR)
  run     neuron-run --timing-only FILE      seeds/program/ (program files, JSON and CBOR)

A mutant crashes a tool if the tool dies of a signal (a segfault, an abort from an uncaught
exception or an assertion, a sanitizer report: tools/sanitize.sh makes those abort), or runs
longer than --timeout. Any other exit status, 0 or not, is a clean answer. Each crash whose
signature (tool, signal, top stack frame or last message line) is not yet known is saved as
test/fuzz/crashes/<target>/<hash>.<ext> (the reproducer, run as is) with <hash>.log (command,
signal, stderr).

  tools/fuzz.py --seconds 120 --seed 1     fuzz; exit 1 if a new crash was found
  tools/fuzz.py --regress                  every saved reproducer must give a clean answer,
                                           except those listed in test/fuzz/crashes/open.txt
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FUZZ_DIR = ROOT / "test" / "fuzz"
TARGETS = {"import": "graph", "opt": "mlir", "run": "program"}


# --- tools -----------------------------------------------------------------------------------


def find_tools(build_dir: str | None) -> dict[str, Path]:
    """The tool binaries: --build-dir (its tools/<name>/<name>), else the newest build/*/."""
    names = {"import": "neuron-import", "opt": "neuron-opt", "run": "neuron-run"}
    if build_dir is None:
        caches = sorted(ROOT.glob("build/*/CMakeCache.txt"), key=lambda p: p.stat().st_mtime)
        build_dir = str(caches[-1].parent) if caches else ""
    tools = {}
    for target, name in names.items():
        path = Path(build_dir) / "tools" / name / name
        if path.exists():
            tools[target] = path
    return tools


def command(target: str, tool: Path, file: Path) -> list[str]:
    if target == "opt":
        return [str(tool), "--neuron-lower", str(file)]
    if target == "run":
        return [str(tool), "--timing-only", str(file)]
    return [str(tool), str(file)]


@dataclass
class Outcome:
    crashed: bool
    kind: str  # "exit 1", "SIGSEGV", "timeout", ...
    stderr: str
    signature: str


# Frames of the crash machinery itself (signal handlers, abort, sanitizer runtimes).
_NOISE = re.compile(r"llvm::sys::|SignalHandler|PrintStackTrace|__sanitizer|__asan|__ubsan|"
                    r"raise|abort|__GI_|__pthread_kill|pthread_kill|__restore_rt|killpg|"
                    r"__cxa_|__gnu_cxx::__verbose_terminate|std::terminate|__terminate|"
                    r"_Unwind|\?\?|<signal handler")


def _simplify(function: str) -> str:
    """A frame's function without template arguments and parameters."""
    previous = None
    while previous != function:
        previous, function = function, re.sub(r"<[^<>]*>", "", function)
    return re.sub(r"\(.*$", "", function).strip()


def frames(text: str) -> list[str]:
    """Function names of the stack frames printed by LLVM, ASan/UBSan or gdb, innermost first."""
    out = []
    for line in text.splitlines():
        m = re.match(r"\s*#\d+\s+(?:0x[0-9a-fA-F]+\s+)?(?:in\s+)?(.+)", line)
        if m:
            function = _simplify(m.group(1))
            if function and not _NOISE.search(function):
                out.append(function)
    return out


def signature_of(target: str, kind: str, stderr: str) -> str:
    """What tells one crash from another: the two innermost stack frames outside the crash
    machinery, else the first sanitizer / exception / assertion line, else the last line;
    without addresses and numbers (they differ between mutants)."""
    stack = frames(stderr)
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    summary = next((ln for ln in lines if "SUMMARY:" in ln or "what():" in ln
                    or "runtime error:" in ln or "Assertion" in ln), "")
    text = " < ".join(stack[:2]) or summary or (lines[-1] if lines else "")
    text = re.sub(r"0x[0-9a-fA-F]+|\d+", "N", text)[:300]
    # Not the signal: the same stack overflow is a SIGSEGV, or a SIGABRT under ASan.
    return f"{target}|crash|{text}" if text else f"{target}|{kind}|"


_gdb_budget: dict[str, int] = {}


def gdb_backtrace(cmd: list[str], target: str) -> str:
    """The backtrace of a crash that printed none (a plain segfault), from gdb: at most 20 per
    target and run of this script, as each takes a second or two."""
    gdb = shutil.which("gdb")
    if not gdb or _gdb_budget.get(target, 0) >= 20:
        return ""
    _gdb_budget[target] = _gdb_budget.get(target, 0) + 1
    try:
        proc = subprocess.run([gdb, "-q", "-batch", "-ex", "run", "-ex", "bt 30", "--args", *cmd],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=60)
    except subprocess.TimeoutExpired:
        return ""
    text = proc.stdout.decode("utf-8", "replace")
    return "\n".join(ln for ln in text.splitlines() if re.match(r"#\d+ ", ln))


def run_one(target: str, tool: Path, file: Path, timeout: float) -> Outcome:
    env = dict(os.environ)
    # Sanitizer reports abort, so that they count as crashes (tools/sanitize.sh sets these too).
    env.setdefault("ASAN_OPTIONS", "abort_on_error=1:halt_on_error=1:detect_leaks=0")
    env.setdefault("UBSAN_OPTIONS", "abort_on_error=1:halt_on_error=1:print_stacktrace=1")
    try:
        proc = subprocess.run(command(target, tool, file), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        err = (e.stderr or b"").decode("utf-8", "replace")
        return Outcome(True, "timeout", err, f"{target}|timeout")
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode < 0:
        try:
            kind = signal.Signals(-proc.returncode).name
        except ValueError:
            kind = f"signal {-proc.returncode}"
        if not frames(err):
            trace = gdb_backtrace(command(target, tool, file), target)
            err += "\ngdb backtrace:\n" + trace if trace else ""
        return Outcome(True, kind, err, signature_of(target, kind, err))
    return Outcome(False, f"exit {proc.returncode}", err, "")


# --- mutators --------------------------------------------------------------------------------

INTERESTING_NUMBERS = [0, -1, 1, -2**31, 2**31, 2**32, 2**53 + 1, 2**63 - 1, 2**63, -2**63,
                       2**64, 10**30, -10**30, 1e308, -1e308, 1e-320, 0.5, 65536, 255, 128]


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        pos = rng.randrange(len(b) + 1) if b else 0
        if op == 0 and b:  # flip a bit
            b[min(pos, len(b) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1 and b:  # random byte
            b[min(pos, len(b) - 1)] = rng.randrange(256)
        elif op == 2:  # insert random bytes (often not UTF-8)
            b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 3 and b:  # delete a chunk
            del b[pos:pos + rng.randint(1, 64)]
        elif op == 4:  # truncate
            del b[pos:]
        elif op == 5 and b:  # duplicate a chunk
            start = rng.randrange(len(b))
            b[pos:pos] = b[start:start + rng.randint(1, 128)]
        else:  # invalid UTF-8 sequences
            b[pos:pos] = rng.choice([b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xf4\x90"])
    return bytes(b)


def _paths(value, path=()):
    """Every (path, value) in a JSON document."""
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, path + (i,))


def _replacement(old, rng: random.Random):
    choice = rng.randrange(10)
    if choice <= 3 or isinstance(old, (int, float)) and not isinstance(old, bool) and choice <= 5:
        n = rng.choice(INTERESTING_NUMBERS)
        if isinstance(old, int) and not isinstance(old, bool) and rng.random() < 0.5:
            n = old + rng.choice([-1, 1, -old - 1, old, 2**32])
        return n
    if choice == 4:
        return rng.choice(["", "x" * rng.choice([1, 1000, 100000]), "\udcff", "f32", "aten.mm.default",
                           "\u202e\u0000"])
    if choice == 5:
        return rng.choice([None, True, False, [], {}, [0], {"node": "x"}])
    if choice == 6:  # deep nesting, spliced in as text by mutate_json (json.dumps would recurse)
        return f"@@DEEP{rng.choice([100, 1000, 20000, 200000])}@@"
    if choice == 7 and isinstance(old, list) and old:  # grow or shrink a list
        return old * rng.choice([0, 2, 50]) if rng.random() < 0.5 else old[:-1]
    if choice == 8 and isinstance(old, dict) and old:  # drop a key
        key = rng.choice(list(old))
        return {k: v for k, v in old.items() if k != key}
    return rng.choice([[old], {"x": old}, str(old)[:50]])


def _set(doc, path, value):
    if not path:
        return value
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


def mutate_json(data: bytes, rng: random.Random) -> bytes:
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return mutate_bytes(data, rng)
    paths = [p for p, _ in _paths(doc)]
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(paths)
        node = doc
        try:
            for key in path:
                node = node[key]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed it
        try:
            doc = _set(doc, path, _replacement(node, rng))
        except (KeyError, IndexError, TypeError):
            continue
    try:
        text = json.dumps(doc, allow_nan=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
    except (RecursionError, ValueError):
        return mutate_bytes(data, rng)
    text = re.sub(rb'"@@DEEP(\d+)@@"', lambda m: b"[" * int(m.group(1)) + b"0" + b"]" * int(m.group(1)),
                  text)
    if rng.random() < 0.1:  # truncated
        text = text[: rng.randrange(len(text) + 1)]
    elif rng.random() < 0.05:  # NaN, Infinity (not JSON)
        text = re.sub(rb"\b\d+(\.\d+)?\b", rng.choice([b"NaN", b"Infinity", b"-Infinity"]), text,
                      count=1)
    return text


def mutate_mlir(data: bytes, rng: random.Random) -> bytes:
    text = data.decode("utf-8", "replace")
    lines = text.splitlines()
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(6)
        if op == 0:  # a number: shape dimension, attribute, index
            matches = list(re.finditer(r"\b\d+\b", text))
            if matches:
                m = rng.choice(matches)
                n = rng.choice([0, 1, -1, 2**31, 2**63, 2**64, 999999999999, 3, 128, 129])
                text = text[:m.start()] + str(n) + text[m.end():]
        elif op == 1 and lines:  # drop, duplicate or swap lines
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            kind = rng.randrange(3)
            if kind == 0:
                del lines[i]
            elif kind == 1:
                lines.insert(i, lines[j])
            else:
                lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
        elif op == 2:  # element types
            text = re.sub(r"\b(f32|bf16|f16|i64|i32|i1)\b",
                          lambda m: rng.choice(["f32", "bf16", "f16", "i64", "i32", "i1", "f64",
                                                "index", "i7", "complex<f32>"]), text, count=1)
        elif op == 3:  # SSA names
            names = re.findall(r"%[\w#]+", text)
            if names:
                text = text.replace(rng.choice(names), rng.choice(names + ["%undefined"]), 1)
        elif op == 4:  # tensor shapes: rank changes
            text = re.sub(r"tensor<([\dx]+)x", lambda m: "tensor<" + rng.choice(
                ["", "1x", "0x", m.group(1) + "x" + m.group(1) + "x"]), text, count=1)
        else:
            return mutate_bytes(text.encode("utf-8", "surrogateescape"), rng)
        lines = text.splitlines()
    return text.encode("utf-8", "surrogateescape")


def mutate(target: str, seed_path: Path, data: bytes, rng: random.Random) -> bytes:
    if rng.random() < 0.2:
        return mutate_bytes(data, rng)
    if target == "opt":
        return mutate_mlir(data, rng)
    if seed_path.suffix == ".json":
        return mutate_json(data, rng)
    return mutate_bytes(data, rng)  # CBOR programs


# --- crash store -----------------------------------------------------------------------------


def crash_dir(target: str) -> Path:
    return FUZZ_DIR / "crashes" / target


def known_signatures() -> set[str]:
    known = set()
    for log in (FUZZ_DIR / "crashes").glob("*/*.log"):
        first = log.read_text(errors="replace").splitlines()[:1]
        if first and first[0].startswith("signature: "):
            known.add(first[0][len("signature: "):])
    return known


def save_crash(target: str, seed: Path, data: bytes, outcome: Outcome, cmd: list[str]) -> Path:
    folder = crash_dir(target)
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1(data).hexdigest()[:12]
    path = folder / f"{digest}{seed.suffix}"
    path.write_bytes(data)
    tail = "\n".join(outcome.stderr.splitlines()[-40:])
    if outcome.kind != "timeout" and shutil.which("gdb"):
        # The outermost frames name the caller even when a deep recursion fills the stack.
        proc = subprocess.run(["gdb", "-q", "-batch", "-ex", "run", "-ex", "bt -10", "--args",
                               *cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=120)
        outer = [ln for ln in proc.stdout.decode("utf-8", "replace").splitlines()
                 if re.match(r"#\d+ ", ln)]
        tail += "\ngdb, outermost frames:\n" + "\n".join(outer)
    shown = " ".join(cmd[:-1] + [str(path.relative_to(ROOT))])
    path.with_suffix(".log").write_text(
        f"signature: {outcome.signature}\nresult: {outcome.kind}\nseed: {seed.name}\n"
        f"command: {shown}\nstderr (last 40 lines):\n{tail}\n", errors="replace")
    return path


def reproducers(target: str) -> list[Path]:
    return sorted(p for p in crash_dir(target).glob("*") if p.suffix != ".log" and p.is_file())


def open_crashes() -> set[str]:
    """test/fuzz/crashes/open.txt: reproducers (target/file) of crashes not fixed yet."""
    listed = FUZZ_DIR / "crashes" / "open.txt"
    if not listed.exists():
        return set()
    return {ln.split("#")[0].strip() for ln in listed.read_text().splitlines()} - {""}


# --- drivers ---------------------------------------------------------------------------------


def fuzz(tools, targets, seconds, seed, timeout, jobs) -> int:
    known = known_signatures()
    new = 0
    per_target = seconds / len(targets)
    scratch = ROOT / "build" / "fuzz"
    scratch.mkdir(parents=True, exist_ok=True)
    for t_index, target in enumerate(targets):
        seeds = sorted((FUZZ_DIR / "seeds" / TARGETS[target]).glob("*"))
        seed_data = [(p, p.read_bytes()) for p in seeds]
        rng = random.Random(f"{seed}-{target}")  # the same mutants for the same --seed
        deadline = time.monotonic() + per_target
        runs = crashes = 0
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            while time.monotonic() < deadline:
                batch = []
                for i in range(jobs * 4):
                    seed_path, data = rng.choice(seed_data)
                    mutant = mutate(target, seed_path, data, rng)
                    file = scratch / f"{target}-{t_index}-{i}{seed_path.suffix}"
                    file.write_bytes(mutant)
                    batch.append((seed_path, mutant, file))
                outcomes = pool.map(lambda b: run_one(target, tools[target], b[2], timeout), batch)
                for (seed_path, mutant, file), outcome in zip(batch, outcomes):
                    runs += 1
                    if not outcome.crashed:
                        continue
                    crashes += 1
                    if outcome.signature in known:
                        continue
                    known.add(outcome.signature)
                    new += 1
                    path = save_crash(target, seed_path, mutant, outcome,
                                      command(target, tools[target], file))
                    print(f"[fuzz] NEW CRASH {target}: {outcome.kind}: {path.relative_to(ROOT)}\n"
                          f"        {outcome.signature}", flush=True)
        print(f"[fuzz] {target}: {runs} mutants, {crashes} crashed "
              f"({per_target:.0f} s, seed {seed})", flush=True)
    print(f"[fuzz] {new} new crash(es)")
    return 1 if new else 0


def regress(tools, targets, timeout) -> int:
    listed = open_crashes()
    failed, still_open, fixed = [], [], []
    count = 0
    for target in targets:
        for path in reproducers(target):
            count += 1
            name = f"{target}/{path.name}"
            outcome = run_one(target, tools[target], path, timeout)
            if outcome.crashed and name in listed:
                still_open.append(f"{name} ({outcome.kind})")
            elif outcome.crashed:
                failed.append(f"{name}: {outcome.kind}\n  {outcome.signature}")
            elif name in listed:
                fixed.append(name)
    for name in still_open:
        print(f"[fuzz] known open crash: {name}")
    for name in fixed:
        print(f"[fuzz] {name} no longer crashes: remove it from test/fuzz/crashes/open.txt")
    for text in failed:
        print(f"[fuzz] REGRESSION {text}")
    print(f"[fuzz] {count} reproducers: {len(failed)} crash, {len(still_open)} known open")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=120, help="total, split over targets")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--targets", default="import,opt,run")
    parser.add_argument("--timeout", type=float, default=10, help="per run, seconds")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--build-dir", help="default: the newest build/*/")
    parser.add_argument("--regress", action="store_true", help="run the saved reproducers")
    args = parser.parse_args()
    targets = [t for t in args.targets.split(",") if t]
    tools = find_tools(args.build_dir)
    missing = [t for t in targets if t not in tools or t not in TARGETS]
    if missing:
        print(f"[fuzz] no tool for target(s) {missing} (build dir: {args.build_dir or 'newest'})",
              file=sys.stderr)
        return 2
    if args.regress:
        return regress(tools, targets, args.timeout)
    return fuzz(tools, targets, args.seconds, args.seed, args.timeout, args.jobs)


if __name__ == "__main__":
    sys.exit(main())
