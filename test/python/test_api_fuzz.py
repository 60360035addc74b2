"""A fuzzer of the Python API: random small graphs of elementwise, reduction and fusion-prone
ops (several outputs, in-place intermediates, broadcasts, keepdim reductions feeding
elementwise ops) compiled with the neuron backend and compared with eager.

Each graph is built from a seed, so a failure names the seed that reproduces it:
`NEURONSIM_API_FUZZ_SEED=<seed> NEURONSIM_API_FUZZ_GRAPHS=1 pytest test/python/test_api_fuzz.py`.
CI runs NEURONSIM_API_FUZZ_GRAPHS graphs (default 48, a few seconds); more find more (2000
ran clean when it was written).
"""

from __future__ import annotations

import os
import random

import pytest
import torch

GRAPHS = int(os.environ.get("NEURONSIM_API_FUZZ_GRAPHS", "48"))
FIRST_SEED = int(os.environ.get("NEURONSIM_API_FUZZ_SEED", "1000"))

SHAPES = [(4, 8), (3, 130), (2, 5, 7), (16, 33), (1, 64), (6, 1, 9)]

# Elementwise functions defined on every real input (no NaN from the domain).
UNARY = {
    "relu": torch.relu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "abs": torch.abs,
    "neg": torch.neg,
    "square": torch.square,
    "sin": torch.sin,
    "exp_clamped": lambda x: torch.exp(torch.clamp(x, -8, 8)),
    "sqrt_abs": lambda x: torch.sqrt(torch.abs(x) + 1e-3),
    "gelu": torch.nn.functional.gelu,
}
BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "div_safe": lambda x, y: x / (torch.abs(y) + 1.0),
}
# dim reductions, each with keepdim (so the result broadcasts back against its input).
REDUCE = {
    "sum": lambda x, d: x.sum(d, keepdim=True),
    "mean": lambda x, d: x.mean(d, keepdim=True),
    "amax": lambda x, d: x.amax(d, keepdim=True),
    "amin": lambda x, d: x.amin(d, keepdim=True),
    "logsumexp": lambda x, d: torch.logsumexp(x, d, keepdim=True),
}
ROWWISE = {
    "softmax": lambda x, d: torch.softmax(x, d),
    "log_softmax": lambda x, d: torch.log_softmax(x, d),
}


def make_graph(seed: int):
    """A random function of 1-2 inputs of one shape, its inputs, and a description."""
    rng = random.Random(seed)
    shape = rng.choice(SHAPES)
    n_inputs = rng.choice([1, 2])
    steps: list[tuple] = []
    n_values = n_inputs
    for _ in range(rng.randint(3, 7)):
        kind = rng.choice(["unary", "binary", "binary", "reduce", "rowwise", "inplace"])
        a = rng.randrange(n_values)
        if kind == "unary":
            steps.append(("unary", rng.choice(sorted(UNARY)), a))
        elif kind == "binary":
            steps.append(("binary", rng.choice(sorted(BINARY)), a, rng.randrange(n_values)))
        elif kind == "reduce":
            steps.append(("reduce", rng.choice(sorted(REDUCE)), a, rng.randrange(len(shape))))
        elif kind == "rowwise":
            steps.append(("rowwise", rng.choice(sorted(ROWWISE)), a, rng.randrange(len(shape))))
        else:  # an in-place update of a fresh copy, whose old value stays in use
            steps.append(("inplace", rng.choice(["mul_", "add_", "clamp_"]), a))
        n_values += 1
    outputs = sorted(rng.sample(range(n_inputs, n_values), k=min(rng.choice([1, 2, 3]),
                                                                  n_values - n_inputs)))

    def fn(*inputs):
        values = list(inputs)
        for step in steps:
            kind, name, a = step[0], step[1], values[step[2]]
            if kind == "unary":
                values.append(UNARY[name](a))
            elif kind == "binary":
                values.append(BINARY[name](a, values[step[3]]))
            elif kind == "reduce":
                values.append(REDUCE[name](a, step[3]))
            elif kind == "rowwise":
                values.append(ROWWISE[name](a, step[3]))
            else:
                copy = a.clone()
                if name == "mul_":
                    copy.mul_(0.5)
                elif name == "add_":
                    copy.add_(a)
                else:
                    copy.clamp_(-1.0, 1.0)
                values.append(copy)
        return tuple(values[i] for i in outputs)

    gen = torch.Generator().manual_seed(seed)
    inputs = [torch.randn(shape, generator=gen) * 2 for _ in range(n_inputs)]
    return fn, inputs, f"seed {seed}: shape {shape}, steps {steps}, outputs {outputs}"


@pytest.mark.parametrize("seed", range(FIRST_SEED, FIRST_SEED + GRAPHS))
def test_random_graph_matches_eager(seed):
    fn, inputs, what = make_graph(seed)
    expected = fn(*inputs)
    compiled = torch.compile(fn, backend="neuron", dynamic=False)
    with torch.no_grad():
        actual = compiled(*inputs)
    assert len(actual) == len(expected), what
    for got, want in zip(actual, expected, strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype, what
        scale = max(1.0, want.abs().max().item())
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5 * scale, msg=what)
