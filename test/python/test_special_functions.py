"""lgamma, digamma and trigamma (polygamma n=1) through their decompositions
(python/neuronsim/special_functions.py), compared with eager: fp32 at rtol 1.3e-4, atol 1e-5
(OpInfo's tolerance), bf16 at 2e-2, over positive and negative values, poles, +-0, +-inf and
NaN."""

import math

import pytest
import torch

import neuronsim


def _values() -> torch.Tensor:
    torch.manual_seed(0)
    edges = [0.0, -0.0, -1.0, -2.0, -2.5, 1e-30, math.inf, -math.inf, math.nan, 1.0, 2.0, 3.0,
             1e30, 0.5, -0.5, -7.999, 7.999, 8.0]  # fmt: skip
    return torch.cat([torch.randn(400) * 6, torch.rand(100) * 100, torch.tensor(edges)])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize(
    "fn",
    [torch.lgamma, torch.digamma, lambda x: torch.polygamma(1, x),
     lambda x: torch.mvlgamma(x.abs() + 2.0, 3)],  # fmt: skip
    ids=["lgamma", "digamma", "trigamma", "mvlgamma"],
)
def test_special_function_matches_eager(fn, dtype):
    x = _values().to(dtype)
    torch._dynamo.reset()
    actual = torch.compile(lambda t: fn(t), backend="neuron", dynamic=False)(x)
    assert neuronsim.get_fallback_ops() == {}
    tolerance = {"rtol": 1.3e-4, "atol": 1e-5} if dtype == torch.float32 else {"rtol": 2e-2,
                                                                               "atol": 2e-2}
    torch.testing.assert_close(actual, fn(x), equal_nan=True, **tolerance)


def test_higher_polygamma_orders_stay_unsupported_with_the_op_named():
    torch._dynamo.reset()
    with pytest.raises(neuronsim.NeuronCompileError, match="aten.polygamma.default at "):
        torch.compile(lambda t: torch.polygamma(2, t), backend="neuron", dynamic=False)(
            torch.rand(8) + 0.5
        )
