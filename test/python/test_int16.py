"""int16 tensors: held as int32 on the device (the program format has no int16), converted at
the boundary, exact for the ops that move, select or convert values; int16 arithmetic (which
could leave the int16 range and would not wrap around on the device) is an unsupported op, or
runs on the CPU with the fallback."""

from __future__ import annotations

import pytest
import torch

import neuronsim


def _compile(fn, **options):
    torch._dynamo.reset()
    return torch.compile(fn, backend="neuron", dynamic=False, options=options or None)


def test_float_to_int16_conversion_matches_eager_also_out_of_range():
    x = torch.tensor([1.7, -2.9, 300.5, -32768.0, 32767.9, 40000.0, -40000.5, 0.0, -0.5])
    got = _compile(lambda x: x.short())(x)
    assert got.dtype == torch.int16
    assert torch.equal(got, x.short())


def test_int16_inputs_and_outputs_of_layout_selection_and_conversion_ops():
    a = torch.tensor([[1, -5, 32767, -32768], [7, 0, -1, 12]], dtype=torch.int16)

    def fn(a):
        return (a.float() * 0.5, a[:, 1:].t(), a > 3, torch.cat([a, a.flip(0)]), a.amax(1),
                torch.where(a > 0, a, torch.zeros_like(a)), a.to(torch.int32))  # fmt: skip

    got, expected = _compile(fn)(a), fn(a)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and torch.equal(g, e), (g, e)


def test_int16_arithmetic_is_unsupported_with_its_line_and_falls_back_on_the_cpu():
    a = torch.tensor([30000, -5, 2], dtype=torch.int16)

    def fn(a):
        return a * 3 + 1

    with pytest.raises(neuronsim.NeuronCompileError) as error:
        _compile(fn)(a)
    message = str(error.value)
    assert (
        "aten.mul.Tensor (int16 arithmetic: int16 is held as int32 on the device, without "
        "wraparound) at test_int16.py:" in message
    )
    assert "return a * 3 + 1" in message
    got = _compile(fn, fallback="cpu")(a)
    assert torch.equal(got, fn(a))  # wraps around as eager: 30000 * 3 + 1 -> 24465
    assert neuronsim.get_fallback_ops() == {"aten.mul.Tensor": 1, "aten.add.Tensor": 1}
