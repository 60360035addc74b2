"""Simulated time of the example tile kernels (python/examples/kernels), and of the compiler's
own lowering of the same computation for comparison. Writes bench/results/kernels.md.

    python bench/kernels.py [--target trn2]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys

# The benchmarks measure one physical NeuronCore (trn2 unless --target says otherwise) and
# compare outputs where eager puts them: NeuronSim's placement, not TorchNeuron's defaults of
# a two-core logical device and device-resident outputs (README, The neuron device).
os.environ.setdefault("NEURON_LOGICAL_NC_CONFIG", "1")
os.environ.setdefault("TORCH_NEURONX_RETAIN_DEVICE_MODE", "1")

import torch
import torch.nn.functional as F

import neuronsim

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python", "examples", "kernels"))

import flash_attention as fa  # noqa: E402
import matmul as mm  # noqa: E402
import rmsnorm as rn  # noqa: E402
import softmax as sm  # noqa: E402


def run_kernel(fn, *args):
    fn(*args)
    return dict(neuronsim.last_run_stats())


def run_compiled(fn, *args):
    compiled = torch.compile(fn, backend="neuron", dynamic=False)
    with torch.no_grad():
        compiled(*args)
    return dict(neuronsim.last_run_stats())


def ratio(stats, flops=None):
    """MFU on `flops` (the stats' FLOPs when None) and the roofline ratio."""
    flops = stats["flops"] if flops is None else flops
    mfu = flops / (stats["sim_ns"] * 1e-9) / (stats["peak_tflops"] * 1e12)
    return mfu, stats["roofline_ns"] / stats["sim_ns"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", default="trn2")
    args = parser.parse_args()
    os.environ["NEURONSIM_TARGET"] = args.target
    os.environ["NEURONSIM_TIMING_ONLY"] = "1"  # same times as a functional run, faster
    os.environ["NEURONSIM_DISABLE_CACHE"] = "1"
    bf16 = torch.bfloat16
    rows = []

    a_t = torch.randn(4096, 4096, dtype=bf16)
    b = torch.randn(4096, 4096, dtype=bf16)
    k = run_kernel(mm.matmul_kernel, a_t, b)
    c = run_compiled(lambda x, y: x.T @ y, a_t, b)
    rows.append(("tiled matmul", "[4096, 4096]^T @ [4096, 4096] bf16", k, c, None))

    x = torch.randn(4096, 4096, dtype=bf16)
    w = torch.randn(4096, dtype=bf16)
    k = run_kernel(rn.rmsnorm_kernel, x, w, 1e-6)
    c = run_compiled(lambda t, g: rn.rmsnorm_reference(t, g, 1e-6), x, w)
    rows.append(("fused RMSNorm", "[4096, 4096] bf16", k, c, None))

    k = run_kernel(sm.softmax_kernel, x)
    c = run_compiled(lambda t: torch.softmax(t, -1), x)
    rows.append(("softmax", "[4096, 4096] bf16", k, c, None))

    seq, d = 2048, 128
    q, kk, v = (torch.randn(1, seq, d, dtype=bf16) for _ in range(3))
    k = run_kernel(fa.flash_attention, q, kk, v)
    c = run_compiled(lambda a1, a2, a3: F.scaled_dot_product_attention(a1, a2, a3,
                                                                       is_causal=True), q, kk, v)
    rows.append(("causal flash attention", f"1 head, seq {seq}, head dim {d}, bf16", k, c,
                 fa.causal_flops(1, seq, d)))

    lines = [
        "# Example tile kernels on the simulator",
        "",
        "Produced by: `python bench/kernels.py`",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, torch "
        f"{torch.__version__}, neuronsim {neuronsim.compiler_version()}, target {args.target}. "
        f"Date: {datetime.date.today()}.",
        "",
        "```",
        "kernel     simulated time of the kernel (python/examples/kernels), called eagerly",
        "compiled   the same computation written in PyTorch, through torch.compile(backend=",
        "           \"neuron\") (the compiler's own lowering), for comparison",
        "MFU        FLOPs / simulated time / peak Tensor-engine FLOPs; for flash attention the",
        "           FLOPs of the causal half of Q K^T and P V (2 * seq^2 * d per head), not the",
        "           FLOPs the simulator counts (the kernel computes whole diagonal blocks)",
        "roofline   roofline_ns / sim_ns: 1.0 = as fast as the larger of the compute bound and",
        "           the HBM bound (inputs and outputs moved once)",
        "engines    busy / simulated time of the Tensor, Vector, Scalar engines and DMA queues",
        "Runs are timing-only (the simulated time equals a functional run's).",
        "```",
        "",
        "| kernel | shape | kernel time | MFU | roofline | compiled time | compiled MFU | "
        "compiled roofline | kernel engines (T / V / S / DMA) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, shape, k, c, flops in rows:
        kmfu, kroof = ratio(k, flops)
        cmfu, croof = ratio(c, flops)
        u = k["engine_utilization"]
        lines.append(
            f"| {name} | {shape} | {k['sim_ns'] / 1e3:.1f} us | {kmfu:.3f} | {kroof:.3f} | "
            f"{c['sim_ns'] / 1e3:.1f} us | {cmfu:.3f} | {croof:.3f} | "
            f"{u['tensor']:.2f} / {u['vector']:.2f} / {u['scalar']:.2f} / {u['dma']:.2f} |"
        )
    lines.append("")
    out = os.path.join(HERE, "results", "kernels.md")
    with open(out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
