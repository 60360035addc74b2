"""HuggingFace-architecture models on the simulated NeuronCore: MFU, roofline and HBM traffic.

Each model is built from its transformers config with random weights, in bf16, and compiled
with torch.compile(backend="neuron", options={"timing_only": True}): the simulator times every
instruction and skips the numbers. Reported per model: simulated time, MFU (achieved / peak
Tensor-engine FLOPs), roofline ratio, HBM traffic against its minimum (inputs, outputs and
weights moved once), and where the time goes (the ATen ops with the most engine/queue time).

    python bench/models.py [--only gpt2_small_fwd] [--target trn2]

Writes bench/results/models.md. The targets these numbers are measured against (GPT-2 small
forward >= 45% MFU with HBM traffic <= 1.5x the minimum, a Llama-style layer >= 55%, a GPT-2
small training step >= 40%) are in the roadmap; this file only measures.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

# The benchmarks measure one physical NeuronCore (trn2 unless --target says otherwise) and
# compare outputs where eager puts them: NeuronSim's placement, not TorchNeuron's defaults of
# a two-core logical device and device-resident outputs (README, The neuron device).
os.environ.setdefault("NEURON_LOGICAL_NC_CONFIG", "1")
os.environ.setdefault("TORCH_NEURONX_RETAIN_DEVICE_MODE", "1")

import torch

import neuronsim

BF16 = torch.bfloat16


@dataclass
class Model:
    name: str
    what: str
    build: Callable[[], tuple[Callable[..., object], tuple]]
    training: bool = False


def _gpt2(layers: int, seq: int):
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=layers, n_positions=seq, resid_pdrop=0.0, embd_pdrop=0.0,
                        attn_pdrop=0.0)  # fmt: skip
    return GPT2LMHeadModel(config).to(BF16)


def gpt2_small_forward():
    model = _gpt2(12, 1024).eval()
    ids = torch.randint(0, 50257, (1, 1024))
    return (lambda i: model(i).logits), (ids,)


def gpt2_block_forward():
    model = _gpt2(1, 1024).eval()
    block = model.transformer.h[0]
    x = torch.randn(1, 1024, 768, dtype=BF16)
    return (lambda h: block(h)[0]), (x,)


def llama_layer_forward():
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

    config = LlamaConfig(hidden_size=2048, intermediate_size=5632, num_attention_heads=32,
                         num_key_value_heads=4, num_hidden_layers=1, max_position_embeddings=2048,
                         torch_dtype=BF16)  # fmt: skip
    config._attn_implementation = "sdpa"
    layer = LlamaDecoderLayer(config, layer_idx=0).to(BF16).eval()
    rotary = LlamaRotaryEmbedding(config)
    x = torch.randn(1, 2048, 2048, dtype=BF16)
    positions = torch.arange(2048).unsqueeze(0)
    cos, sin = rotary(x, positions)
    mask = torch.full((2048, 2048), float("-inf"), dtype=BF16).triu(1)[None, None]

    def run(h, c, s, m):
        out = layer(h, attention_mask=m, position_embeddings=(c, s))
        return out[0] if isinstance(out, tuple) else out

    return run, (x, cos.to(BF16), sin.to(BF16), mask)


def gpt2_small_training_step():
    model = _gpt2(12, 1024).train()
    ids = torch.randint(0, 50257, (1, 1024))

    def step(i):
        loss = model(i, labels=i).loss
        loss.backward()
        return loss

    return step, (ids,)


MODELS = [
    Model("gpt2_block_fwd", "GPT-2 small block, seq 1024, batch 1", gpt2_block_forward),
    Model("llama_layer_fwd", "Llama-style layer: d 2048, 32 q / 4 kv heads, seq 2048",
          llama_layer_forward),  # fmt: skip
    Model("gpt2_small_fwd", "GPT-2 small (12 layers, vocab 50257), seq 1024, batch 1",
          gpt2_small_forward),  # fmt: skip
    Model("gpt2_small_train", "GPT-2 small forward + backward, seq 1024, batch 1",
          gpt2_small_training_step, training=True),  # fmt: skip
]


def measure(model: Model) -> dict:
    torch._dynamo.reset()
    neuronsim.reset()
    fn, inputs = model.build()
    compiled = torch.compile(fn, backend="neuron", dynamic=False, options={"timing_only": True})
    # Forward models run as inference (no autograd graph, so no activations saved for a
    # backward); training models run their step as written.
    grad = torch.enable_grad() if model.training else torch.no_grad()
    with grad:
        start = time.monotonic()
        compiled(*inputs)  # compile
        first = time.monotonic() - start
        with neuronsim.measure() as m:
            compiled(*inputs)
    origins: dict[str, float] = {}
    peak_weighted = 0.0
    min_bytes = 0
    roofline = 0.0
    for run in m.runs:
        for origin, ns in (run.get("origin_busy_ns") or {}).items():
            origins[origin] = origins.get(origin, 0.0) + ns
        peak_weighted += run["flops"] / (run.get("peak_tflops") or 1) if run["flops"] else 0
        min_bytes += run.get("min_hbm_bytes", 0)
        roofline += run.get("roofline_ns", 0.0)
    peak_tflops = m.flops / peak_weighted if peak_weighted else 0.0
    mfu = m.flops / (m.sim_ns * 1e-9) / (peak_tflops * 1e12) if m.sim_ns and peak_tflops else 0.0
    top = sorted(origins.items(), key=lambda kv: -kv[1])[:4]
    busy = sum(origins.values()) or 1.0
    return {
        "model": model,
        "sim_us": m.sim_ns / 1e3,
        "mfu": mfu,
        "roofline": roofline / m.sim_ns if m.sim_ns else 0.0,
        "hbm_ratio": m.hbm_bytes / min_bytes if min_bytes else 0.0,
        "graphs": len(m.runs),
        "compile_s": first,
        "top": ", ".join(f"{name} {ns / busy:.0%}" for name, ns in top),
    }


def write(rows: list[dict], command: str, path: str, target: str) -> None:
    lines = [
        "# HuggingFace-architecture models on the simulated NeuronCore",
        "",
        f"Produced by: `{command}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
        f"target {target}, bf16, random weights, timing-only. "
        f"Date: {datetime.date.today().isoformat()}.",
        "",
        "```",
        "sim time     simulated time of one call (all of its graphs, forward and backward)",
        "MFU          graph FLOPs / sim time / Tensor-engine peak (bf16)",
        "roofline     sum of the graphs' roofline_ns (max of FLOPs at peak and minimal HBM",
        "             traffic at full bandwidth) / sim time",
        "HBM / min    bytes moved between HBM and SBUF / inputs, outputs and weights once",
        "time goes to the ATen ops with the most engine and DMA queue time (share of all)",
        "```",
        "",
        "| model | what | sim time (us) | MFU | roofline | HBM / min | graphs | compile (s) | "
        "time goes to |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model'].name} | {r['model'].what} | error: {r['error']} "
                         "| | | | | | |")  # fmt: skip
            continue
        lines.append(
            f"| {r['model'].name} | {r['model'].what} | {r['sim_us']:.0f} | {r['mfu']:.1%} | "
            f"{r['roofline']:.3f} | {r['hbm_ratio']:.1f}x | {r['graphs']} | "
            f"{r['compile_s']:.0f} | {r['top']} |"
        )
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="model names")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                      "models.md"))  # fmt: skip
    args = parser.parse_args()
    os.environ.setdefault("NEURONSIM_DISABLE_CACHE", "1")
    rows = []
    for model in MODELS:
        if args.only and model.name not in args.only:
            continue
        try:
            rows.append(measure(model))
        except Exception as error:  # noqa: BLE001 - a model that fails is reported, not fatal
            rows.append({"model": model, "error": f"{type(error).__name__}: "
                         f"{str(error).splitlines()[0][:200]}"})  # fmt: skip
        print(rows[-1], flush=True)
    command = "python bench/models.py " + " ".join(sys.argv[1:])
    write(rows, command.strip(), args.out, os.environ.get("NEURONSIM_TARGET", "trn2"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
