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

# encoder, decoder (rotary, ALiBi), encoder-decoder, vision (windowed attention)
ARCHS = ["roberta", "gptj", "bloom", "bart", "swin"]


@pytest.mark.parametrize("name", ARCHS)
def test_architecture_compiles_with_no_fallback_and_matches_eager(name):
    (arch,) = [a for a in sweep.ARCHS if a.name == name]
    result, detail = sweep.run_one(arch, "neuron")
    assert result == "pass", detail
