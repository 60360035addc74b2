"""Simulated training-step time of a GPT-style model on one NeuronCore (issue 4).

Usage: python bench/train_step.py [--layers 2] [--vocab 8192] [--batch 8] [--seq 1024]
Writes bench/results/train_step.md. The step (forward, backward, AdamW) runs with
options={"timing_only": True}: the simulator times every instruction but skips the
numbers (computing them would take far longer than the step itself).
"""

import argparse
import math
import os
import pathlib
import platform
import time

# The benchmarks measure one physical NeuronCore (trn2 unless --target says otherwise) and
# compare outputs where eager puts them: NeuronSim's placement, not TorchNeuron's defaults of
# a two-core logical device and device-resident outputs (README, The neuron device).
os.environ.setdefault("NEURON_LOGICAL_NC_CONFIG", "1")
os.environ.setdefault("TORCH_NEURONX_RETAIN_DEVICE_MODE", "1")

import torch
import torch.nn as nn
import torch.nn.functional as F

import neuronsim


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        a = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        a = F.softmax(a.masked_fill(~mask, float("-inf")), dim=-1)
        x = x + self.proj((a @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, d, heads, seq, layers):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, idx, targets):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--d", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    a = p.parse_args()
    torch.manual_seed(0)
    model = GPT(a.vocab, a.d, a.heads, a.seq, a.layers)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    options = {"timing_only": True}
    loss_fn = torch.compile(model, backend="neuron", dynamic=False, options=options)
    step = torch.compile(lambda: opt.step(), backend="neuron", options=options)
    idx = torch.randint(0, a.vocab, (a.batch, a.seq))
    tgt = torch.randint(0, a.vocab, (a.batch, a.seq))
    t0 = time.perf_counter()
    loss_fn(idx, tgt).backward()
    step()
    compile_s = time.perf_counter() - t0
    opt.zero_grad(set_to_none=False)
    t0 = time.perf_counter()
    with neuronsim.measure() as m:
        loss_fn(idx, tgt).backward()
        step()
    wall = time.perf_counter() - t0
    tokens = a.batch * a.seq
    params = sum(p.numel() for p in model.parameters())
    flops = 6 * params * tokens  # the usual estimate, embeddings included
    rows = [
        (
            "model",
            f"GPT-style, {a.layers} layers, d_model {a.d}, {a.heads} heads, seq {a.seq}, "
            f"batch {a.batch}, vocab {a.vocab}, {params / 1e6:.1f}M parameters",
        ),
        ("graphs run in the step", str(len(m.runs))),
        ("simulated step time", f"{m.sim_ns / 1e6:.2f} ms"),
        ("simulated tokens / s", f"{tokens / (m.sim_ns * 1e-9):,.0f}"),
        ("per layer (step time / layers, upper bound)", f"{m.sim_ns / 1e6 / a.layers:.2f} ms"),
        ("graph FLOPs counted by the compiler", f"{m.flops / 1e12:.2f} TFLOP"),
        ("6 x params x tokens", f"{flops / 1e12:.2f} TFLOP"),
        ("first step wall time (compile + simulate)", f"{compile_s:.1f} s"),
        ("measured step wall time (timing-only simulation)", f"{wall:.1f} s"),
    ]
    text = [
        "# Simulated GPT-style training step (trn2, timing only)",
        "",
        f"Produced by: `python bench/train_step.py --layers {a.layers} --vocab {a.vocab} "
        f"--batch {a.batch} --seq {a.seq}` on {platform.machine()}, "
        f"torch {torch.__version__}, neuronsim {neuronsim.compiler_version()}.",
        "",
        "| quantity | value |",
        "|---|---|",
    ]
    text += [f"| {k} | {v} |" for k, v in rows]
    out = pathlib.Path(__file__).parent / "results" / "train_step.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(text) + "\n")
    print("\n".join(text))


if __name__ == "__main__":
    main()
