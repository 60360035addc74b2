"""The trn2-lnc2 target: a logical core of two physical trn2 cores (LNC=2).

Models compiled for it match eager, parallel loop nests run on both cores, and the simulated
time of large matmuls and elementwise ops is about half of the single-core trn2 target's.
"""

from __future__ import annotations

import json

import pytest
import torch

import neuronsim
from models import MLP, TOLERANCE, relative_error

LNC2 = {"target": "trn2-lnc2"}
# Queues of physical core 1 start here (runtime::queueOf(1, 0) = kQueuesPerCore).
CORE1_QUEUES = 21


def _run(fn, *args, options=None):
    with torch.no_grad():
        out = torch.compile(fn, backend="neuron", dynamic=False, options=options or LNC2)(*args)
    return out, neuronsim.last_run_stats()


def _check(dump, fn, *args, dtype=torch.float32):
    """fn on trn2-lnc2 matches eager, and some of its instructions run on core 1."""
    with torch.no_grad():
        expected = fn(*args)
    actual, stats = _run(fn, *args, options={**LNC2, "dump_dir": str(dump)})
    assert stats["target"] == "trn2-lnc2"
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    assert relative_error(actual, expected) <= TOLERANCE[dtype]
    queues = {
        instruction["queue"]
        for program in dump.glob("*/program.json")
        for instruction in json.loads(program.read_text())["instructions"]
    }
    assert min(queues) < CORE1_QUEUES <= max(queues), "both physical cores run instructions"
    return stats


def test_target_is_listed():
    assert "trn2-lnc2" in neuronsim.targets()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_matmul_matches_eager(dtype, tmp_path):
    a = torch.randn(384, 320, dtype=dtype)
    b = torch.randn(320, 1536, dtype=dtype)
    _check(tmp_path, torch.matmul, a, b, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_mlp_matches_eager(dtype, tmp_path):
    # 384 rows: a matmul whose rows leave a remainder keeps that remainder's rows resident
    # outside its column loop and stays on core 0 (README: Two physical cores); with the
    # bias adds as matmul epilogues, the matmuls are the MLP's only nests.
    model = MLP(256, 1024, 130).to(dtype)
    _check(tmp_path, model, torch.randn(384, 256, dtype=dtype), dtype=dtype)


def test_layernorm_and_softmax_match_eager(tmp_path):
    norm = torch.nn.LayerNorm(200)
    x = torch.randn(1000, 200)
    _check(tmp_path / "layernorm", norm, x)
    _check(tmp_path / "softmax", lambda t: torch.softmax(t * 0.5, dim=-1), x)


class Block(torch.nn.Module):
    """A GPT-style block: causal self-attention and an MLP, each with a pre-LayerNorm."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
        self.qkv, self.proj = torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim)
        self.fc1, self.fc2 = torch.nn.Linear(dim, 4 * dim), torch.nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


def test_gpt_block_matches_eager(tmp_path):
    block = Block(128, 4)
    _check(tmp_path, block, torch.randn(2, 256, 128))


def _speedup(fn, *args):
    _, one = _run(fn, *args, options={"target": "trn2", "timing_only": True})
    _, two = _run(fn, *args, options={"target": "trn2-lnc2", "timing_only": True})
    return one["sim_ns"], two["sim_ns"]


def test_large_matmul_takes_about_half_the_time():
    a = torch.randn(4096, 4096, dtype=torch.bfloat16)
    one, two = _speedup(torch.matmul, a, a)
    print(f"bf16 4096^3 matmul: trn2 {one / 1e3:.1f} us, trn2-lnc2 {two / 1e3:.1f} us")
    assert 0.45 <= two / one <= 0.6


def test_large_elementwise_op_takes_about_half_the_time():
    x = torch.randn(8192, 4096)
    one, two = _speedup(lambda t: torch.relu(t * 2.0 + 1.0), x)
    print(f"fp32 8192x4096 elementwise: trn2 {one / 1e3:.1f} us, trn2-lnc2 {two / 1e3:.1f} us")
    assert 0.45 <= two / one <= 0.6
