"""Small models and comparison helpers shared by the end-to-end tests."""

from __future__ import annotations

import torch

# Largest |compiled - eager| divided by max |eager|, per dtype.
TOLERANCE = {torch.float32: 1e-5, torch.bfloat16: 2e-2}


class MLP(torch.nn.Module):
    """Linear-ReLU-Linear."""

    def __init__(self, features: int, hidden: int, classes: int) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(features, hidden)
        self.fc2 = torch.nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """max |actual - expected| / max |expected|, computed in float64."""
    actual, expected = actual.detach().double(), expected.detach().double()
    scale = expected.abs().max().clamp_min(1e-30)
    return float((actual - expected).abs().max() / scale)
