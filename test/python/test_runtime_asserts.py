"""torch._assert_async in compiled graphs: the condition is computed with the graph on the
simulator and checked on the host after the run (python/neuronsim/runtime_asserts.py), with
eager's RuntimeError and message when it fails; the outputs are the graph's own."""

import pytest
import torch

import neuronsim


def _compiled(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="neuron", dynamic=False)


def _checked(x):
    y = torch.softmax(x * 2.0, -1)
    torch._assert_async(torch.isfinite(y).all(), "softmax went non-finite")
    torch._assert_async((y >= 0).all())
    return y + 1.0


def test_holding_asserts_leave_the_outputs_unchanged():
    x = torch.randn(4, 9)
    actual = _compiled(_checked)(x)
    torch.testing.assert_close(actual, _checked(x), rtol=1e-5, atol=1e-6)
    assert neuronsim.get_fallback_ops() == {}


def test_a_failing_assert_raises_eager_s_error_with_its_message():
    x = torch.randn(4, 9)
    x[2, 3] = float("nan")
    with pytest.raises(RuntimeError, match="^softmax went non-finite$"):
        _checked(x)  # eager
    with pytest.raises(RuntimeError, match="^softmax went non-finite$"):
        _compiled(_checked)(x)


def test_an_assert_without_message_raises_eager_s_default_text():
    def fn(x):
        torch._assert_async((x > 0).all())
        return x * 3.0

    compiled = _compiled(fn)
    x = torch.rand(5) + 0.1
    torch.testing.assert_close(compiled(x), fn(x), rtol=0, atol=0)
    message = "Expected Tensor with single nonzero value, but got zero"
    with pytest.raises(RuntimeError, match=message):
        fn(-torch.ones(5))
    with pytest.raises(RuntimeError, match=message):
        compiled(-torch.ones(5))
