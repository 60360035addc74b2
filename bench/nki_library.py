"""github:aws-neuron/nki-library on NeuronSim (issue 26): which kernel files trace and run.

    python bench/nki.py --library    # adds/replaces the nki-library section of nki.md

A kernel file is a file of `src/nkilib_src/nkilib` with an `@nki.jit` kernel. Each is tried in
its own subprocess, the repository's `src/nkilib_src` on sys.path and `import nki` resolved to
neuronsim.nki: first its import, then (where a call is written below) a call on small numpy
inputs against a reference (the library's own `*_torch.py` reference where it has one, else
numpy written here). The kernels' code is read from the fetch tool's mirror, never copied.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

LIBRARY = os.environ.get("NKI_LIBRARY_GIT", "/work/.mirror/aws-neuron+nki-library/repo")
TIMEOUT = int(os.environ.get("NKI_BENCH_TIMEOUT", "300"))
PREFIX = "src/nkilib_src/"

# Calls on small shapes: a function body run with `m` = the imported module; it returns a list
# of (result, reference, atol, rtol). Shapes follow the library's own fast tests where they
# are small.
CALLS = {
    "nkilib/core/cumsum/cumsum.py": """
        import torch
        from nkilib.core.cumsum.cumsum_torch import cumsum_torch_ref
        x = np.random.randn(64, 4096).astype(np.float32)  # two 2048-column tiles (a carry)
        y = m.cumsum(x)
        ref = cumsum_torch_ref(torch.from_numpy(x))["output_0"].numpy()
        return [(y, ref, 2e-3, 1e-4)]
    """,
    "nkilib/core/max/cascaded_max.py": """
        import torch
        from nkilib.core.max.cascaded_max_torch import cascaded_max_torch_ref
        x = np.random.randn(4, 2048).astype(np.float32)
        v, i = m.cascaded_max(x)
        ref = cascaded_max_torch_ref(torch.from_numpy(x))
        return [(v, ref["max_values"].numpy(), 0, 0), (i, ref["max_indices"].numpy(), 0, 0)]
    """,
    "nkilib/experimental/conv/depthwise_conv1d.py": """
        img = np.random.randn(1, 4, 1, 64).astype(np.float32)
        w = np.random.randn(4, 1, 1, 3).astype(np.float32)
        y = m.depthwise_conv1d_implicit_gemm(img, w, feature_group_count=4)
        q = 64 - 3 + 1
        ref = np.zeros((1, 4, 1, q), np.float32)
        for c in range(4):
            for t in range(q):
                ref[0, c, 0, t] = (img[0, c, 0, t:t + 3] * w[c, 0, 0]).sum()
        return [(y, ref, 1e-4, 1e-4)]
    """,
    "nkilib/core/embeddings/rope.py": """
        import torch
        from nkilib.core.embeddings.rope_torch import rope_torch_ref
        x = np.random.randn(64, 1, 2, 128).astype(np.float32)
        cos = np.random.rand(32, 1, 128).astype(np.float32)
        sin = np.random.rand(32, 1, 128).astype(np.float32)
        y = m.RoPE(x, cos, sin)
        ref = rope_torch_ref(*(torch.from_numpy(t) for t in (x, cos, sin)))["x_out"].numpy()
        return [(y, ref, 1e-4, 1e-4)]
    """,
    "nkilib/experimental/conv/conv1d.py": """
        x = np.random.randn(1, 64, 100).astype(np.float32)
        w = np.random.randn(3, 64, 32).astype(np.float32)
        y = m.conv1d(x, w)
        ref = np.zeros((1, 32, 98), np.float32)
        for k in range(3):
            ref[0] += w[k].T @ x[0, :, k:k + 98]
        return [(y, ref, 1e-3, 1e-4)]
    """,
    "nkilib/core/qkv/qkv.py": """
        import torch  # bf16 (the kernel's DMAs load bf16 tiles)
        x = (torch.randn(1, 128, 512) * 0.1).to(torch.bfloat16)
        w = (torch.randn(512, 384) * 0.1).to(torch.bfloat16)
        y = m.qkv(x, w).float().numpy()
        return [(y, (x.float() @ w.float()).numpy(), 2e-2, 2e-2)]
    """,
    "nkilib/core/output_projection/output_projection_cte/output_projection_cte.py": """
        a = (np.random.randn(1, 2, 128, 128) * 0.1).astype(np.float32)
        w = (np.random.randn(256, 512) * 0.1).astype(np.float32)
        y = m.output_projection_cte(a, w)
        ref = np.transpose(a, (0, 3, 1, 2)).reshape(1, 128, 256) @ w
        return [(y, ref, 1e-3, 1e-3)]
    """,
    "nkilib/core/attention/attention_cte.py": """
        import torch
        from nkilib.core.attention.attention_cte_torch import attention_cte_torch_ref
        q = (torch.randn(1, 256, 64) * 0.5).to(torch.bfloat16)  # bf16, as its DMAs load
        k = (torch.randn(1, 64, 256) * 0.5).to(torch.bfloat16)
        v = torch.randn(1, 256, 64).to(torch.bfloat16)
        out = m.attention_cte(q, k, v, scale=0.125, causal_mask=False)
        ref = attention_cte_torch_ref(q, k, v, scale=0.125, causal_mask=False)
        causal = m.attention_cte(q, k, v, scale=0.125, causal_mask=True)  # affine_select
        cref = attention_cte_torch_ref(q, k, v, scale=0.125, causal_mask=True)
        return [(out.float().numpy(), ref.numpy(), 3e-2, 3e-2),
                (causal.float().numpy(), cref.numpy(), 3e-2, 3e-2)]
    """,
    "nkilib/core/topk/rotational_topk.py": """
        x = np.random.permutation(4 * 4096).reshape(4, 4096).astype(np.float32)  # no ties
        v, i = m.topk[1](x, k=16, sorted_flag=True)
        order = np.argsort(-x, axis=1)[:, :16]
        return [(v, np.take_along_axis(x, order, 1), 0, 0),
                (np.asarray(i).astype(np.int64), order, 0, 0)]
    """,
    "nkilib/core/subkernels/find_nonzero_indices.py": """
        import torch
        from nkilib.core.subkernels.find_nonzero_indices_torch import (
            find_nonzero_indices_torch_ref)
        x = (np.random.rand(256, 16) < 0.2).astype(np.float32)
        idx, cnt = m.find_nonzero_indices(x)
        ref = find_nonzero_indices_torch_ref(torch.from_numpy(x))
        return [(idx, ref["indices"].numpy(), 0, 0), (cnt, ref["nonzero_counts"].numpy(), 0, 0)]
    """,
    "nkilib/experimental/benchmark/find_nonzero_indices_with_count.py": """
        x = (np.random.rand(1, 512) < 0.1).astype(np.float32)
        out = m.find_nonzero_indices_with_count(x)
        nz = np.nonzero(x[0])[0]
        ref = np.full((1, 513), -1, np.int32)
        ref[0, :len(nz)] = nz
        ref[0, 512] = len(nz)
        return [(out, ref, 0, 0)]
    """,
    "nkilib/core/output_projection/output_projection_tkg.py": """
        a = (np.random.randn(64, 1, 2, 4) * 0.1).astype(np.float32)
        w = (np.random.randn(128, 256) * 0.1).astype(np.float32)
        y = m.output_projection_tkg(a, w)
        ref = np.transpose(a, (1, 3, 2, 0)).reshape(4, 128) @ w
        return [(y, ref.reshape(np.shape(y)), 1e-3, 1e-3)]
    """,
    "nkilib/experimental/dynamic_shapes/dynamic_elementwise_add.py": """
        a = np.random.randn(256, 512).astype(np.float32)
        b = np.random.randn(256, 512).astype(np.float32)
        n = np.array([[2]], dtype=np.int32)
        y = m.dynamic_elementwise_add(a, b, n)
        ref = (a.astype(np.float32) + b.astype(np.float32))
        return [(np.asarray(y, np.float32), ref, 2e-2, 2e-2)]
    """,
    "nkilib/core/embeddings/rope_hf.py": """
        q = np.random.randn(1, 2, 128, 64).astype(np.float32)
        k = np.random.randn(1, 1, 128, 64).astype(np.float32)
        ang = np.random.rand(128, 32).astype(np.float32) * 3
        cos = np.concatenate([np.cos(ang), np.cos(ang)], -1).astype(np.float32)
        sin = np.concatenate([np.sin(ang), np.sin(ang)], -1).astype(np.float32)
        qo, ko = np.zeros_like(q), np.zeros_like(k)
        rq, rk = m.rope_hf(q, k, qo, ko, cos=cos, sin=sin)
        def rot(x):
            return np.concatenate([-x[..., 32:], x[..., :32]], -1)
        return [(rq, q * cos + rot(q) * sin, 1e-4, 1e-4), (rk, k * cos + rot(k) * sin, 1e-4, 1e-4)]
    """,
    "nkilib/experimental/loss/cross_entropy.py": """
        logits = np.random.randn(32, 1024).astype(np.float32)
        t = np.random.randint(0, 1024, size=(32,)).astype(np.int32)
        out = m.cross_entropy_forward(logits, t, positions_per_batch=32, chunk_size=1024,
                                      dtype=np.float32)
        loss = out[0] if isinstance(out, tuple) else out
        mx = logits.max(1, keepdims=True)
        lse = np.log(np.exp(logits - mx).sum(1)) + mx[:, 0]
        ref = lse - logits[np.arange(32), t]
        return [(np.asarray(loss).reshape(-1), ref, 1e-4, 1e-4)]
    """,
}

# What NeuronSim's NKI does not have yet, by the names a kernel's folder uses: the reason
# given for a file that imports but has no small-shape call here (no call was written for it
# because it needs one of these).
UNSUPPORTED = [
    ("nc_matmul_mx", "MX matmuls (trn3)"), ("quantize_mx", "MX quantization (trn3)"),
    ("float8", "fp8 dtypes"), ("sendrecv", "sendrecv between cores"),
    ("core_barrier", "core barriers"), ("ncc.", "collectives"), ("nccl.", "collectives"),
    ("register_alloc", "registers / dynamic loops"), ("dynamic_range", "dynamic loops"),
    ("vector_offset", "indirect (dynamic) access patterns"),
    ("scalar_offset", "dynamic access patterns"), ("local_gather", "local_gather"),
    ("dma_compute", "DMA compute"), ("uint16", "uint16 tiles"),
    ("oob_mode.skip", "out-of-bounds skipping DMAs"), ("tile_position", "PE row/column tiling"),
]


def needs(folder: str, rel: str) -> str:
    """The unsupported features the kernel file's folder uses (its own code and helpers)."""
    d = os.path.dirname(os.path.join(folder, rel))
    text = ""
    for f in os.listdir(d):
        if f.endswith(".py") and not f.endswith("_torch.py"):
            text += open(os.path.join(d, f), encoding="utf-8", errors="replace").read()
    found = []
    for key, label in UNSUPPORTED:
        if key in text and label not in found:
            found.append(label)
    return ("no call written: its folder uses what NeuronSim's NKI lacks: " + ", ".join(found)
            if found else "")


RUNNER = r'''
import os, sys, json, importlib, traceback
sys.path.insert(0, sys.argv[1])
os.environ.setdefault("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")
import numpy as np
import neuronsim
np.random.seed(0)
mod = sys.argv[2]
try:
    m = importlib.import_module(mod)
except BaseException as e:
    print("NKILIB " + json.dumps({"stage": "import", "error": f"{type(e).__name__}: {e}"}))
    raise SystemExit(0)
body = sys.argv[3]
if not body:
    print("NKILIB " + json.dumps({"stage": "imported"}))
    raise SystemExit(0)
ns = {"np": np, "m": m}
exec("def _case():\n" + body, ns)
try:
    checks = ns["_case"]()
except BaseException as e:
    msg = str(e).strip().splitlines()
    print("NKILIB " + json.dumps({"stage": "call", "error": f"{type(e).__name__}: "
                                  f"{msg[0] if msg else ''}"}))
    raise SystemExit(0)
worst = 0.0
for got, ref, atol, rtol in checks:
    got = np.asarray(got, dtype=np.float64).reshape(np.shape(ref))
    ref = np.asarray(ref, dtype=np.float64)
    err = float(np.max(np.abs(got - ref))) if ref.size else 0.0
    worst = max(worst, err)
    if not np.allclose(got, ref, atol=atol, rtol=rtol):
        print("NKILIB " + json.dumps({"stage": "mismatch", "error": f"max abs error {err:.3g}"}))
        raise SystemExit(0)
print("NKILIB " + json.dumps({"stage": "matches", "error": f"max abs error {worst:.3g}"}))
'''


def kernel_files(git_dir: str, commit: str) -> list[str]:
    names = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", commit],
                           check=True, capture_output=True, text=True).stdout.split()
    out = []
    for n in names:
        if not (n.startswith(PREFIX + "nkilib/") and n.endswith(".py")):
            continue
        text = subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{n}"],
                              check=True, capture_output=True, text=True).stdout
        if "@nki.jit" in text:
            out.append(n)
    return out


def run(folder: str, rel: str) -> dict:
    mod = rel.removesuffix(".py").replace("/", ".")
    body = textwrap.indent(textwrap.dedent(CALLS.get(rel, "")), "    ")
    env = dict(os.environ)
    env.setdefault("NEURONSIM_DISABLE_CACHE", "1")
    t0 = time.time()
    try:
        p = subprocess.run([sys.executable, "-c", RUNNER, folder, mod, body], cwd=folder,
                           capture_output=True, text=True, env=env, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"stage": "timeout", "error": f"over {TIMEOUT} s", "wall": time.time() - t0}
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("NKILIB ")), None)
    r = json.loads(line[7:]) if line else {"stage": "crash", "error": p.stderr.strip()[-300:]}
    r["wall"] = time.time() - t0
    return r


STATUS = {"import": "does not import", "imported": "imports; not called",
          "call": "imports; the call fails", "mismatch": "runs, does not match",
          "matches": "runs, matches", "timeout": "timeout", "crash": "crash"}


def section(export, rev) -> list[str]:
    """The nki-library section of nki.md (export/rev: bench/nki.py's git helpers)."""
    import tempfile

    sha = rev(LIBRARY, "HEAD")
    folder = os.path.join(export(LIBRARY, sha, ["src"], tempfile.mkdtemp(prefix="nkilib-")),
                          PREFIX)
    rows, counts = [], {}
    for path in kernel_files(LIBRARY, sha):
        rel = path.removeprefix(PREFIX)
        r = run(folder, rel)
        if r["stage"] == "imported":
            r["error"] = needs(folder, rel) or "a call on small shapes is still to be written"
        status = STATUS[r["stage"]]
        counts[status] = counts.get(status, 0) + 1
        detail = (r.get("error") or "").replace("|", "\\|").replace("\n", " ")[:300]
        rows.append(f"| `{rel}` | {status} | {detail} | {r['wall']:.1f} s |")
        print(rows[-1], flush=True)
    n = len(rows)
    ran = counts.get("runs, matches", 0)
    imported = n - counts.get("does not import", 0) - counts.get("crash", 0)
    lines = ["## nki-library (github:aws-neuron/nki-library)", "",
             f"aws-neuron/nki-library@{sha}: {n} kernel files (files of `src/nkilib_src/nkilib` "
             f"with an `@nki.jit` kernel), each tried unchanged in a subprocess "
             f"(`python bench/nki.py --library`). **{ran} of {n} trace, run on small shapes and "
             f"match** their reference; {imported} of {n} import. The target is 80% running. "
             "For a file not called, the features listed are those its folder's code uses "
             "that NeuronSim's NKI does not have yet (a scan of the names, so an upper bound "
             "on what the kernel itself needs).",
             "", "| file | result | detail | wall |", "|---|---|---|---|", *rows, ""]
    return lines
