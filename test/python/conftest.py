"""Shared fixtures of the neuronsim pytest suite: a clean Dynamo and neuronsim per test."""

from __future__ import annotations

import os
import tempfile

# Set before `import torch`, which registers the neuron device (its autoload reads these).
# The suite's numbers (HBM capacity, simulated times, rooflines) are those of one physical trn2
# core: TorchNeuron's default logical core of two (NEURON_LOGICAL_NC_CONFIG=2, target trn2-lnc2)
# is tested by test_torch_neuronx.py, in subprocesses without these.
os.environ.setdefault("NEURON_LOGICAL_NC_CONFIG", "1")
# The suite compares graphs compiled for CPU tensors with eager CPU results: they run where their
# inputs are (TorchNeuron's TORCH_NEURONX_RETAIN_DEVICE_MODE=1). test_torch_neuronx.py unsets it
# to test TorchNeuron's default, outputs on the neuron device.
os.environ.setdefault("TORCH_NEURONX_RETAIN_DEVICE_MODE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

# Never write the user's disk compile cache (~/.cache/neuronsim) from the tests, not even from
# code that runs before the per-test fixture below (or from subprocesses, which inherit this).
os.environ["NEURONSIM_CACHE_DIR"] = tempfile.mkdtemp(prefix="neuronsim-test-cache-")
os.environ.pop("NEURONSIM_DISABLE_CACHE", None)
os.environ.pop("NEURONSIM_CACHE_MAX_MB", None)

import neuronsim  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_state(tmp_path_factory, monkeypatch):
    # An empty disk compile cache per test: counts of compiles do not depend on test order.
    monkeypatch.setenv("NEURONSIM_CACHE_DIR", str(tmp_path_factory.mktemp("neuronsim-cache")))
    torch._dynamo.reset()
    neuronsim.reset()
    torch.manual_seed(0)
    yield
    torch._dynamo.reset()
