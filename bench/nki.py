"""Real NKI kernels, unchanged, on NeuronSim (issue 26): writes bench/results/nki.md.

    python bench/nki.py [--skip-k1] [--only SUBSTRING]
    python bench/nki.py --k6     # adds the K6 section (fused Mamba) to an existing nki.md

1. Every tutorial / example kernel file of github:aws-neuron/nki-samples (at 7af4e4d, the
   last commit with the legacy tutorials, and at HEAD) and github:aws-neuron/aws-neuron-sdk
   (`nki/examples` at HEAD, and at 1db4d74e, the legacy examples) is run unchanged, with
   `import nki` / `import neuronxcc.nki` resolved to neuronsim.nki by its import hook:
   files with a numpy `__main__` are run as scripts (their own check against numpy), the
   others are called by this script on numpy inputs against a numpy reference written here.
   Each run is a subprocess with a timeout; the table says which run and why the others do not.
2. K1 (FIDELITY.md): the matmul tutorial's four versions at 4096x8192x8192 bf16 on trn1,
   simulated (timing-only) through nki.benchmark, against the published 51.80 / 42.96 /
   22.07 / 6.97 ms, with each run's wall time and engine utilization.

The repositories are read from the fetch tool's mirrors (/work/.mirror/...) with git; set
NKI_SAMPLES_GIT / NEURON_SDK_GIT to other bare git dirs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.environ.get("NKI_SAMPLES_GIT", "/work/.mirror/aws-neuron+nki-samples/repo")
SDK = os.environ.get("NEURON_SDK_GIT", "/work/.mirror/aws-neuron+aws-neuron-sdk/repo")
TIMEOUT = int(os.environ.get("NKI_BENCH_TIMEOUT", "300"))


def export(git_dir: str, commit: str, paths: list[str], into: str) -> str:
    """`git archive` of paths at commit into a new folder; returns it."""
    out = os.path.join(into, os.path.basename(git_dir.rstrip("/").replace("/repo", "")) +
                       "-" + commit[:8])
    os.makedirs(out, exist_ok=True)
    arch = subprocess.run(["git", "--git-dir", git_dir, "archive", commit, *paths],
                          check=True, capture_output=True).stdout
    subprocess.run(["tar", "x", "-C", out], input=arch, check=True)
    return out


def rev(git_dir: str, commit: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, "rev-parse", "--short=8", commit],
                          check=True, capture_output=True, text=True).stdout.strip()


# Kernel files without a numpy __main__: called here on numpy inputs. Each entry: a function
# body (Python source) run in the kernel file's folder with `m` = the imported module; it
# returns (result, reference, atol, rtol).
MAMBA = """
    b, c, s, n = 1, 256, 512, 16
    delta = (np.random.rand(b, c, s) * 0.1).astype(np.float32)
    u = np.random.rand(b, c, s).astype(np.float32)
    A = -np.random.rand(c, n).astype(np.float32)
    B = np.random.rand(b, n, s).astype(np.float32)
    C = np.random.rand(b, n, s).astype(np.float32)
    dA = np.exp(delta[:, :, None, :] * A[None, :, :, None])
    dBu = delta[:, :, None, :] * B[:, None, :, :] * u[:, :, None, :]
    h = np.zeros_like(dA)
    acc = np.zeros(dA.shape[:-1], np.float64)
    for t in range(s):
        acc = dA[..., t] * acc + dBu[..., t]
        h[..., t] = acc
    ref = (C[:, None, :, :] * h).sum(axis=-2)
    outs, refs = [], []
    for name in ("mamba_v1", "mamba_v2", "mamba_v3"):
        outs.append(getattr(m, name)(delta, u, A, B, C).ravel()); refs.append(ref.ravel())
    return np.concatenate(outs), np.concatenate(refs), 1e-4, 1e-3
"""

CALLS: dict[str, str] = {
    "examples/index-case-1.py": """
        a = np.random.rand(4, 5).astype(np.float32)
        even, odd = m.tensor_split_kernel_(a)
        return (np.concatenate([even.ravel(), odd.ravel()]),
                np.concatenate([a[:, 0::2].ravel(), a[:, 1::2].ravel()]), 0, 0)
    """,
    "examples/index-case-3.py": """
        a = np.random.rand(2, 6, 6).astype(np.float32)
        out = m.tensor_maxpool_kernel_(a, 2)
        return out, a.reshape(2, 3, 2, 3, 2).max(axis=(2, 4)), 0, 0
    """,
    "examples/layout-pass.py": """
        a = np.random.rand(128, 512).astype(np.float32)
        return m.tensor_exp_kernel_(a), np.exp(a), 1e-6, 1e-5
    """,
    "examples/getting_started_torch.py": """
        a = np.random.rand(4, 3).astype(np.float32); b = np.random.rand(4, 3).astype(np.float32)
        return m.nki_tensor_add_kernel(a, b), a + b, 1e-6, 1e-6
    """,
    "examples/tensor_addition/tensor_addition_nki_kernels.py": """
        a = np.random.rand(256, 1024).astype(np.float32); b = np.random.rand(256, 1024).astype(np.float32)
        f = getattr(m, "nki_tensor_add", None) or getattr(m, "nki_tensor_add_kernel_")
        return f(a, b), a + b, 1e-6, 1e-6
    """,
    "tutorials/fused_mamba/mamba_nki_kernels.py": MAMBA,
    "examples/fused_mamba/mamba_nki_kernels.py": MAMBA,
    "tutorials/softmax/softmax_nki_kernels.py": """
        a = np.random.rand(250, 512).astype(np.float32)
        e = np.exp(a - a.max(axis=1, keepdims=True))
        return m.nki_softmax_kernel(a), e / e.sum(axis=1, keepdims=True), 1e-5, 1e-3
    """,
    "tutorials/matrix_multiplication/matrix_multiplication_nki_kernels.py": """
        lhs = np.random.rand(512, 2048).astype(np.float32)
        rhs = np.random.rand(2048, 2048).astype(np.float32)
        ref = lhs @ rhs
        outs = [m.nki_matmul_tiled_(lhs.T.copy(), rhs), m.nki_matmul_hoist_load_(lhs.T.copy(), rhs),
                m.nki_matmul_block_free_dimension_(lhs.T.copy(), rhs)]
        lhs2 = np.random.rand(2048, 1024).astype(np.float32)
        rhs2 = np.random.rand(1024, 1024).astype(np.float32)
        opt = m.nki_matmul_fully_optimized_(lhs2.T.copy(), rhs2)
        sm = np.random.rand(64, 128).astype(np.float32); sr = np.random.rand(128, 512).astype(np.float32)
        basic = m.nki_matmul_basic_(sm.T.copy(), sr)
        return (np.concatenate([o.ravel() for o in outs] + [opt.ravel(), basic.ravel()]),
                np.concatenate([ref.ravel()] * 3 + [(lhs2 @ rhs2).ravel(), (sm @ sr).ravel()]),
                1e-2, 1e-4)
    """,
    "examples/matrix_multiplication/matrix_multiplication_nki_kernels.py": """
        lhs = np.random.rand(512, 2048).astype(np.float32)
        rhs = np.random.rand(2048, 2048).astype(np.float32)
        ref = lhs @ rhs
        outs = [m.nki_matmul_tiled_(lhs.T.copy(), rhs), m.nki_matmul_hoist_load_(lhs.T.copy(), rhs),
                m.nki_matmul_block_free_dimension_(lhs.T.copy(), rhs)]
        lhs2 = np.random.rand(2048, 1024).astype(np.float32)
        rhs2 = np.random.rand(1024, 1024).astype(np.float32)
        opt = m.nki_matmul_fully_optimized_(lhs2.T.copy(), rhs2)
        return (np.concatenate([o.ravel() for o in outs] + [opt.ravel()]),
                np.concatenate([ref.ravel()] * 3 + [(lhs2 @ rhs2).ravel()]), 1e-2, 1e-4)
    """,
}


RUNNER = r'''
import os, sys, runpy, importlib.util, types
import numpy as np
sys.path.insert(0, os.getcwd())
# Framework modules some kernel files import at their top but their kernels never use: an
# empty stand-in so that the file imports (the kernels run on numpy arrays here).
for name in ("torch_xla", "torch_xla.core", "torch_xla.core.xla_model"):
    if name not in sys.modules:
        try:
            __import__(name)
        except ImportError:
            import importlib.machinery
            mod = types.ModuleType(name); mod.__path__ = []
            mod.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
            sys.modules[name] = mod
path, mode, body = sys.argv[1], sys.argv[2], sys.argv[3]
if mode == "script":
    sys.argv = [path]
    runpy.run_path(path, run_name="__main__")
    print("NEURONSIM-NKI-OK")
else:
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    m = importlib.util.module_from_spec(spec); sys.modules[spec.name] = m
    spec.loader.exec_module(m)
    np.random.seed(0)
    ns = {"m": m, "np": np}
    exec("def _case():\n" + "".join("    " + ln + "\n" for ln in body.splitlines()), ns)
    out, ref, atol, rtol = ns["_case"]()
    out = np.asarray(out, dtype=np.float64); ref = np.asarray(ref, dtype=np.float64)
    err = float(np.max(np.abs(out - ref))) if out.size else 0.0
    ok = out.shape == ref.shape and np.allclose(out, ref, atol=atol, rtol=rtol)
    print(f"NEURONSIM-NKI-ERR {err:.3g}")
    if not ok:
        raise SystemExit(f"mismatch: max abs error {err:.3g} (atol {atol}, rtol {rtol})")
    print("NEURONSIM-NKI-OK")
'''


def kernel_files(root: str, prefix: str) -> list[str]:
    found = []
    for dirpath, _, files in os.walk(os.path.join(root, prefix)):
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            p = os.path.join(dirpath, f)
            text = open(p, encoding="utf-8", errors="replace").read()
            if "nki.jit" not in text and "@nki" not in text and "nki.benchmark" not in text and "spmd_dim" not in text \
                    and "simulate" not in text:
                continue
            found.append(p)
    return sorted(found)


def classify(path: str) -> tuple[str, str]:
    """('script', '') for a file with a __main__ runnable on numpy, ('call', body) for one
    this script calls, ('skip', why) otherwise."""
    text = open(path, encoding="utf-8", errors="replace").read()
    for key, body in CALLS.items():
        if path.endswith(key):
            return "call", textwrap.dedent(body)
    if "__main__" in text:
        main = text[text.index("__main__"):]
        if "torch_xla" in main or "xla_device" in main or "jax" in main.split("\n", 1)[1][:0]:
            return "skip", "its __main__ runs through torch_xla (no reference on numpy here)"
        return "script", ""
    import re

    if re.search(r"^(np\.testing\.assert|assert |test_\w+\()", text, re.M):
        return "script", ""  # a script at module level that checks its own result (simulate)
    return "skip", "no __main__ and no call written here (a helper or framework driver)"


def run_file(path: str, mode: str, body: str) -> tuple[str, str, float]:
    env = dict(os.environ)
    env.setdefault("NEURONSIM_DISABLE_CACHE", "1")
    t0 = time.time()
    try:
        p = subprocess.run([sys.executable, "-c", RUNNER, path, mode, body], cwd=os.path.dirname(path),
                           capture_output=True, text=True, timeout=TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        return "timeout", f"over {TIMEOUT} s", time.time() - t0
    wall = time.time() - t0
    if p.returncode == 0 and "NEURONSIM-NKI-OK" in p.stdout:
        err = ""
        for line in p.stdout.splitlines():
            if line.startswith("NEURONSIM-NKI-ERR"):
                err = "max abs error " + line.split()[1]
        return "runs, matches", err, wall
    tail = (p.stderr.strip().splitlines() or p.stdout.strip().splitlines() or ["?"])[-1]
    return "fails", tail[:300], wall


K1_PUBLISHED = {"nki_matmul_tiled_": 51.80, "nki_matmul_hoist_load_": 42.96,
                "nki_matmul_block_free_dimension_": 22.07, "nki_matmul_fully_optimized_": 6.97}

K1_RUNNER = r'''
import os, sys, time, json
os.environ["NEURON_PLATFORM_TARGET_OVERRIDE"] = "trn1"
sys.path.insert(0, os.getcwd())
import nki, nki.language as nl, nki.typing as nt
import importlib
m = importlib.import_module(sys.argv[1])
f = getattr(m, sys.argv[2])
t0 = time.time()
b = nki.benchmark(warmup=5, iters=10)(f)
b(nt.tensor[[8192, 4096], nl.bfloat16], nt.tensor[[8192, 8192], nl.bfloat16])
s = b.benchmark_result.stats
print("K1JSON " + json.dumps({"ms": b.benchmark_result.nc_latency.get_latency_percentile(50) / 1000,
      "wall": time.time() - t0, "instructions": s["instructions"], "util": s["engine_utilization"],
      "mfu": s.get("mfu")}))
'''


def k1(folder: str) -> list[dict]:
    rows = []
    for name, pub in K1_PUBLISHED.items():
        env = dict(os.environ)
        env.setdefault("NEURONSIM_DISABLE_CACHE", "1")
        p = subprocess.run([sys.executable, "-c", K1_RUNNER, "matrix_multiplication_nki_kernels",
                            name], cwd=folder, capture_output=True, text=True, env=env,
                           timeout=3600)
        line = next((ln for ln in p.stdout.splitlines() if ln.startswith("K1JSON")), None)
        if line is None:
            rows.append({"name": name, "published": pub, "error": p.stderr[-500:]})
            continue
        r = json.loads(line[7:])
        r.update(name=name, published=pub)
        rows.append(r)
        print(f"K1 {name}: {r['ms']:.2f} ms (published {pub}), wall {r['wall']:.0f} s",
              flush=True)
    return rows


K6_RUNNER = r'''
import os, sys, time, json
os.environ["NEURON_PLATFORM_TARGET_OVERRIDE"] = "trn1"
sys.path.insert(0, os.getcwd())
import numpy as np
import neuronsim
import importlib
m = importlib.import_module("mamba_nki_kernels")
b, c, s, n = 1, int(sys.argv[2]), int(sys.argv[3]), 16
np.random.seed(0)
delta = (np.random.rand(b, c, s) * 0.1).astype(np.float32)
u = np.random.rand(b, c, s).astype(np.float32)
A = -np.random.rand(c, n).astype(np.float32)
B = np.random.rand(b, n, s).astype(np.float32)
C = np.random.rand(b, n, s).astype(np.float32)
t0 = time.time()
getattr(m, sys.argv[1])(delta, u, A, B, C)
st = neuronsim.last_run_stats()
print("K6JSON " + json.dumps({"us": st["sim_ns"] / 1e3, "wall": time.time() - t0,
      "util": st["engine_utilization"]}))
'''

# FIDELITY.md K6: the fused Mamba tutorial, fp32, batch 1, state 16 (published, trn1 inferred)
K6_POINTS = [("mamba_v1", 256, 512, 172.93), ("mamba_v1", 4096, 512, 2340.0),
             ("mamba_v2", 4096, 512, 1610.0)]


def k6(folder: str, out: str) -> None:
    """Adds (or replaces) the K6 section of an existing nki.md."""
    rows = ["## K6: the fused Mamba tutorial on trn1 (FIDELITY.md)", "",
            "nki-samples@7af4e4d `tutorials/fused_mamba/mamba_nki_kernels.py`, unchanged, fp32, "
            "batch 1, state 16, random inputs (values checked against numpy in the table below).",
            "", "| kernel | channels | seq | simulated | published | ratio | wall | "
            "Vector / Scalar / GpSimd / DMA utilization |", "|---|---|---|---|---|---|---|---|"]
    for name, c, s, pub in K6_POINTS:
        env = dict(os.environ)
        env.setdefault("NEURONSIM_DISABLE_CACHE", "1")
        p = subprocess.run([sys.executable, "-c", K6_RUNNER, name, str(c), str(s)], cwd=folder,
                           capture_output=True, text=True, env=env, timeout=3600)
        line = next((ln for ln in p.stdout.splitlines() if ln.startswith("K6JSON")), None)
        if line is None:
            rows.append(f"| {name} | {c} | {s} | failed: {p.stderr.strip()[-200:]} | {pub} us "
                        "| | | |")
            continue
        r = json.loads(line[7:])
        u = r["util"]
        rows.append(f"| {name} | {c} | {s} | {r['us']:.1f} us | {pub:.2f} us | "
                    f"{r['us'] / pub:.2f}x | {r['wall']:.0f} s | {u.get('vector', 0):.2f} / "
                    f"{u.get('scalar', 0):.2f} / {u.get('gpsimd', 0):.2f} / {u.get('dma', 0):.2f} |")
        print(rows[-1], flush=True)
    text = open(out).read() if os.path.exists(out) else ""
    start = text.find("## K6:")
    if start >= 0:
        end = text.find("\n## ", start + 1)
        text = text[:start] + (text[end + 1:] if end >= 0 else "")
    anchor = text.find("## Kernel files")
    section = "\n".join(rows) + "\n\n"
    text = text[:anchor] + section + text[anchor:] if anchor >= 0 else text + "\n" + section
    with open(out, "w") as f:
        f.write(text)
    print(f"wrote {out}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-k1", action="store_true")
    ap.add_argument("--only", default=None)
    ap.add_argument("--k6", action="store_true",
                    help="only add/replace the K6 (fused Mamba) section of an existing nki.md")
    ap.add_argument("--library", action="store_true",
                    help="only add/replace the nki-library section of an existing nki.md")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "nki.md"))
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="neuronsim-nki-")
    if args.library:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import nki_library

        replace_section(args.out, "## nki-library", nki_library.section(export, rev))
        return
    if args.k6:
        folder = export(SAMPLES, rev(SAMPLES, "7af4e4d"), ["src/nki_samples/tutorials"], tmp)
        k6(os.path.join(folder, "src/nki_samples/tutorials/fused_mamba"), args.out)
        return
    sources = [
        ("aws-neuron/nki-samples", SAMPLES, "7af4e4d", ["src/nki_samples/tutorials"]),
        ("aws-neuron/nki-samples", SAMPLES, "HEAD", ["src/nki_samples/tutorials"]),
        ("aws-neuron/aws-neuron-sdk", SDK, "HEAD", ["nki/examples"]),
        ("aws-neuron/aws-neuron-sdk", SDK, "1db4d74e", ["nki/examples"]),
    ]
    results = []
    k1_folder = None
    for repo, git_dir, commit, paths in sources:
        sha = rev(git_dir, commit)
        folder = export(git_dir, sha, paths, tmp)
        if repo.endswith("nki-samples") and commit == "7af4e4d":
            k1_folder = os.path.join(folder, "src/nki_samples/tutorials/matrix_multiplication")
        for path in kernel_files(folder, paths[0]):
            rel = os.path.relpath(path, folder)
            if args.only and args.only not in f"{repo}@{sha}/{rel}":
                continue
            mode, body = classify(path)
            if mode == "skip":
                status, why, wall = "not run", body, 0.0
            else:
                status, why, wall = run_file(path, mode, body)
            results.append({"repo": repo, "commit": sha, "path": rel, "how": mode,
                            "status": status, "detail": why, "wall": wall})
            print(f"{repo}@{sha} {rel}: {status} {why} ({wall:.1f} s)", flush=True)
    k1_rows = [] if args.skip_k1 or k1_folder is None else k1(k1_folder)
    if args.only:  # a subset: only its rows of the kernel-file table are replaced
        update_rows(args.out, results)
        return
    write(args.out, results, k1_rows)


def _sections(text: str) -> dict[str, str]:
    """The `## ` sections of a markdown file by heading line."""
    out, pos = {}, text.find("\n## ")
    while pos >= 0:
        end = text.find("\n## ", pos + 1)
        block = text[pos + 1:end + 1 if end >= 0 else len(text)]
        out[block.splitlines()[0]] = block
        pos = end
    return out


def replace_section(out: str, heading: str, lines: list[str]) -> None:
    """Adds or replaces the section whose heading starts with `heading`; keeps the rest."""
    text = open(out).read() if os.path.exists(out) else ""
    start = text.find("\n" + heading)
    new = "\n".join(lines).rstrip("\n") + "\n\n"
    if start >= 0:
        end = text.find("\n## ", start + 1)
        text = text[:start + 1] + new + (text[end + 1:] if end >= 0 else "")
    else:
        anchor = text.find("\n## Kernel files")
        text = (text[:anchor + 1] + new + text[anchor + 1:]) if anchor >= 0 else text + "\n" + new
    with open(out, "w") as f:
        f.write(text)
    print(f"wrote {out}")


def _row(r: dict) -> str:
    detail = r["detail"].replace("|", "\\|")
    return (f"| {r['repo']}@{r['commit']} | `{r['path']}` | {r['how']} | {r['status']} "
            f"| {detail} | {r['wall']:.1f} s |")


def update_rows(out: str, results: list[dict]) -> None:
    """Replaces the kernel-file rows of `results` in an existing nki.md and its count line."""
    text = open(out).read()
    lines = text.splitlines()
    for r in results:
        key = f"| {r['repo']}@{r['commit']} | `{r['path']}` |"
        for i, ln in enumerate(lines):
            if ln.startswith(key):
                lines[i] = _row(r)
    rows = [ln for ln in lines if ln.startswith("| aws-neuron/") and "`" in ln]
    ran = sum(1 for ln in rows if "| runs, matches |" in ln)
    tried = sum(1 for ln in rows if "| not run |" not in ln)
    for i, ln in enumerate(lines):
        if ln.startswith("**") and "kernel files run and match" in ln:
            lines[i] = (f"**{ran} of {len(rows)} kernel files run and match** ({tried} tried; "
                        "the others have no numpy entry point here).")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"updated {len(results)} rows of {out}")


def write(out: str, results: list[dict], k1_rows: list[dict]) -> None:
    run = [r for r in results if r["status"] == "runs, matches"]
    tried = [r for r in results if r["status"] != "not run"]
    lines = ["# Real NKI kernels on NeuronSim (`python bench/nki.py`)", "",
             "Kernel files of the public NKI repositories, run unchanged (the import resolves "
             "to `neuronsim.nki`); numbers on the simulator compared with numpy.", "",
             f"**{len(run)} of {len(results)} kernel files run and match** ({len(tried)} "
             "tried; the others have no numpy entry point here).", ""]
    if k1_rows:
        lines += ["## K1: the matmul tutorial on trn1 (FIDELITY.md)", "",
                  "nki-samples@7af4e4d `matrix_multiplication_nki_kernels.py`, unchanged, "
                  "bf16 lhsT [8192, 4096] @ rhs [8192, 8192], `nki.benchmark` on "
                  "`nt.tensor` inputs (timing-only), target trn1.", "",
                  "| version | simulated | published (trn1) | error | wall (trace+compile+sim) "
                  "| instructions | PE / DMA / Vector utilization |", "|---|---|---|---|---|---|---|"]
        for r in k1_rows:
            if "error" in r:
                lines.append(f"| {r['name']} | failed | {r['published']} ms | | | | |")
                continue
            u = r["util"]
            lines.append(f"| {r['name']} | {r['ms']:.2f} ms | {r['published']:.2f} ms | "
                         f"{(r['ms'] / r['published'] - 1) * 100:+.0f}% | {r['wall']:.0f} s | "
                         f"{r['instructions']} | {u.get('tensor', 0):.2f} / {u.get('dma', 0):.2f}"
                         f" / {u.get('vector', 0):.2f} |")
        lines.append("")
    lines += ["## Kernel files", "", "| repository@commit | file | how | result | detail | wall |",
              "|---|---|---|---|---|---|"]
    for r in results:
        detail = r["detail"].replace("|", "\\|")
        lines.append(f"| {r['repo']}@{r['commit']} | `{r['path']}` | {r['how']} | {r['status']} "
                     f"| {detail} | {r['wall']:.1f} s |")
    old = _sections(open(out).read()) if os.path.exists(out) else {}
    kept = [b for h, b in old.items() if h.startswith(("## K6", "## nki-library")) or (
        h.startswith("## K1") and not k1_rows)]
    table = lines.index("## Kernel files")
    lines[table:table] = [ln for b in kept for ln in b.rstrip("\n").splitlines() + [""]]
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
