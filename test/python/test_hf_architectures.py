"""A subset of the HuggingFace architecture sweep (bench/hf_sweep.py) in CI: one tiny-config
model of each family compiles through the neuron backend with no op on the CPU and matches
eager within the sweep's tolerance (max relative error 1e-4, fp32). The whole sweep is a
benchmark (bench/results/hf_architectures.md)."""

import importlib.util
import os
import sys

import pytest

pytest.importorskip("transformers")

_SWEEP = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "hf_sweep.py")
_spec = importlib.util.spec_from_file_location("hf_sweep", _SWEEP)
sweep = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = sweep  # dataclasses look their module up
_spec.loader.exec_module(sweep)

# encoder, decoder (rotary, ALiBi), encoder-decoder, vision (windowed attention), MoE
ARCHS = ["roberta", "gptj", "bloom", "bart", "swin", "mixtral"]


@pytest.mark.parametrize("name", ARCHS)
def test_architecture_compiles_with_no_fallback_and_matches_eager(name):
    (arch,) = [a for a in sweep.ARCHS if a.name == name]
    result, detail = sweep.run_one(arch, "neuron")
    assert result == "pass", detail


def test_gpt2_trains_five_adamw_steps_like_eager():
    """A HuggingFace GPT-2 (tiny config, its default SDPA attention, dropout off) trains 5
    AdamW steps through the neuron backend, forward and backward, with no op on the CPU; each
    loss within 1e-3 (relative) of eager's."""
    import copy

    import torch
    import transformers

    import neuronsim

    config = transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=128,
                                     n_positions=32, resid_pdrop=0.0, embd_pdrop=0.0,
                                     attn_pdrop=0.0)  # fmt: skip
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).train()
    assert model.config._attn_implementation == "sdpa"
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1))

    def train(model, compiled):
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        run = torch.compile(model, backend="neuron", dynamic=False) if compiled else model
        losses = []
        for _ in range(5):
            loss = run(ids, labels=ids).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            losses.append(loss.item())
        return losses

    torch._dynamo.reset()
    expected = train(copy.deepcopy(model), compiled=False)
    got = train(model, compiled=True)
    assert neuronsim.get_fallback_ops() == {}
    for step, (a, b) in enumerate(zip(got, expected)):
        assert abs(a - b) <= 1e-3 * abs(b), f"step {step}: loss {a} vs eager {b}"
    assert got[-1] < got[0]
