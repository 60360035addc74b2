"""Shared fixtures of the neuronsim pytest suite: a clean Dynamo and neuronsim per test."""

from __future__ import annotations

import os
import tempfile

import pytest
import torch

# Never write the user's disk compile cache (~/.cache/neuronsim) from the tests, not even from
# code that runs before the per-test fixture below (or from subprocesses, which inherit this).
os.environ["NEURONSIM_CACHE_DIR"] = tempfile.mkdtemp(prefix="neuronsim-test-cache-")
os.environ.pop("NEURONSIM_DISABLE_CACHE", None)
os.environ.pop("NEURONSIM_CACHE_MAX_MB", None)
# The suite compares graphs compiled for CPU tensors with eager CPU results: they run where their
# inputs are (TorchNeuron's TORCH_NEURONX_RETAIN_DEVICE_MODE=1). test_torch_neuronx.py unsets it
# to test TorchNeuron's default, outputs on the neuron device.
os.environ.setdefault("TORCH_NEURONX_RETAIN_DEVICE_MODE", "1")

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
