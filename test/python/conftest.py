"""Shared fixtures of the neuronsim pytest suite: a clean Dynamo and neuronsim per test."""

from __future__ import annotations

import pytest
import torch

import neuronsim


@pytest.fixture(autouse=True)
def _fresh_state():
    torch._dynamo.reset()
    neuronsim.reset()
    torch.manual_seed(0)
    yield
    torch._dynamo.reset()
