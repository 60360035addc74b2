"""Negative and conjugate views of neuron tensors (`_neg_view`, `conj()` of a complex tensor, the
conjugated gradients of complex backward): copies to and from the host and within the device
keep the bits' meaning, against eager CPU results. Before the fix, any copy of such a view
recursed forever in `_copy_from` (a stack overflow: torchtitan's complex RoPE backward died
with a segmentation fault)."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _real(shape=(3, 5), dtype=torch.float32):
    return torch.randn(shape, dtype=dtype)


def _complex(shape=(3, 5)):
    return torch.randn(shape, dtype=torch.complex64)


def test_neg_view_to_host():
    x = _real()
    n = x.to("neuron")._neg_view()
    assert n.is_neg()
    torch.testing.assert_close(n.cpu(), -x, rtol=0, atol=0)
    assert not n.cpu().is_neg()
    torch.testing.assert_close(n.cpu().resolve_neg(), -x, rtol=0, atol=0)


def test_conj_view_to_host():
    z = _complex()
    c = z.to("neuron").conj()
    assert c.is_conj()
    torch.testing.assert_close(c.cpu(), z.conj(), rtol=0, atol=0)
    torch.testing.assert_close(c.resolve_conj().cpu(), z.conj().resolve_conj(), rtol=0, atol=0)


def test_conj_of_neg_to_host():
    z = _complex()
    v = z.to("neuron")._neg_view().conj()
    assert v.is_neg() and v.is_conj()
    torch.testing.assert_close(v.cpu(), -z.conj(), rtol=0, atol=0)


@pytest.mark.parametrize("make", ["neg", "conj"])
def test_views_of_views_keep_the_bit(make):
    z = _complex((4, 6))
    d = z.to("neuron")
    if make == "neg":
        v, ref = d._neg_view(), z._neg_view()
    else:
        v, ref = d.conj(), z.conj()
    for f in (lambda t: t.t(), lambda t: t[1:, ::2], lambda t: t.reshape(6, 4),
              lambda t: t.view(24), lambda t: t.unsqueeze(0).expand(2, 4, 6)):
        torch.testing.assert_close(f(v).cpu(), f(ref).resolve_conj().resolve_neg(),
                                   rtol=0, atol=0)


def test_device_to_device_copy_of_neg_and_conj():
    x, z = _real(), _complex()
    dst = torch.empty(3, 5, device="neuron")
    dst.copy_(x.to("neuron")._neg_view())
    torch.testing.assert_close(dst.cpu(), -x, rtol=0, atol=0)
    zdst = torch.empty(3, 5, dtype=torch.complex64, device="neuron")
    zdst.copy_(z.to("neuron").conj())
    torch.testing.assert_close(zdst.cpu(), z.conj().resolve_conj(), rtol=0, atol=0)
    torch.testing.assert_close(x.to("neuron")._neg_view().clone().cpu(), -x, rtol=0, atol=0)


def test_host_to_device_copy_of_neg_and_conj():
    x, z = _real(), _complex()
    torch.testing.assert_close(x._neg_view().to("neuron").cpu(), -x, rtol=0, atol=0)
    torch.testing.assert_close(z.conj().to("neuron").cpu(), z.conj().resolve_conj(),
                               rtol=0, atol=0)
    dst = torch.zeros(3, 5, device="neuron")
    dst.copy_(x._neg_view())
    torch.testing.assert_close(dst.cpu(), -x, rtol=0, atol=0)


def test_copy_into_a_negated_or_conjugated_destination():
    # Eager CPU semantics: after dst.copy_(src), dst reads as src, so its memory holds -src
    # (a negative view) or conj(src) (a conjugate view).
    x, z = _real(), _complex()
    base = torch.zeros(3, 5, device="neuron")
    base._neg_view().copy_(x.to("neuron"))
    cpu_base = torch.zeros(3, 5)
    cpu_base._neg_view().copy_(x)
    torch.testing.assert_close(base.cpu(), cpu_base, rtol=0, atol=0)
    torch.testing.assert_close(base.cpu(), -x, rtol=0, atol=0)

    zbase = torch.zeros(3, 5, dtype=torch.complex64, device="neuron")
    zbase.conj().copy_(z)  # from the host
    torch.testing.assert_close(zbase.cpu(), z.conj().resolve_conj(), rtol=0, atol=0)
    zbase.conj().copy_(z.to("neuron").conj())  # both conjugated: memory = z
    torch.testing.assert_close(zbase.cpu(), z, rtol=0, atol=0)


def test_dtype_converting_copies():
    x = _real()
    n = x.to("neuron")._neg_view()
    torch.testing.assert_close(n.to(torch.float64).cpu(), -x.double(), rtol=0, atol=0)
    torch.testing.assert_close(n.to(torch.bfloat16).cpu(), (-x).bfloat16(), rtol=0, atol=0)
    z = _complex()
    c = z.to("neuron").conj()
    torch.testing.assert_close(c.to(torch.complex128).cpu(), z.conj().resolve_conj().to(
        torch.complex128), rtol=0, atol=0)


def test_item_of_neg_and_conj():
    x = torch.tensor([2.5])
    assert x.to("neuron")._neg_view().item() == -2.5
    z = torch.tensor([1.0 + 2.0j])
    assert z.to("neuron").conj().item() == 1.0 - 2.0j


def test_ops_on_neg_and_conj_views():
    x, y, z = _real(), _real(), _complex()
    n = x.to("neuron")._neg_view()
    torch.testing.assert_close((n + y.to("neuron")).cpu(), -x + y, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close((n * 2).cpu(), -x * 2, rtol=1e-6, atol=1e-6)
    c = z.to("neuron").conj()
    torch.testing.assert_close((c * z.to("neuron")).cpu(), z.conj() * z, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(torch.view_as_real(c.resolve_conj()).cpu(),
                               torch.view_as_real(z.conj().resolve_conj()), rtol=0, atol=0)


def test_complex_backward_with_conjugated_gradients():
    # Complex multiplication's backward multiplies by conj(other): conjugate views of neuron
    # tensors in the autograd graph (torchtitan's ComplexRoPE). Gradients against eager CPU.
    torch.manual_seed(0)
    xr = torch.randn(2, 8, 4, 2)
    freqs = torch.polar(torch.ones(8, 4), torch.randn(8, 4))

    def rope(x, f):
        xc = torch.view_as_complex(x)
        return torch.view_as_real(xc * f).flatten(-2).square().sum()

    x_cpu = xr.clone().requires_grad_()
    rope(x_cpu, freqs).backward()
    x_dev = xr.to("neuron").requires_grad_()
    loss = rope(x_dev, freqs.to("neuron"))
    loss.backward()
    torch.testing.assert_close(loss.cpu(), rope(xr, freqs), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(x_dev.grad.cpu(), x_cpu.grad, rtol=1e-5, atol=1e-5)


def test_host_alias_keeps_the_bits_and_host_view_resolves_them():
    from neuronsim.device import hbm

    x = _real()
    n = x.to("neuron")._neg_view()
    alias = torch.ops.neuronsim.host_alias(n)
    assert alias.device.type == "cpu" and alias.is_neg()
    torch.testing.assert_close(alias.resolve_neg(), -x, rtol=0, atol=0)
    view = hbm.host_view(n)  # what the simulator, DLPack and gloo read: values, no bit
    assert not view.is_neg()
    torch.testing.assert_close(view, -x, rtol=0, atol=0)
    alias.copy_(torch.ones(3, 5))  # writing through the alias honours the bit
    torch.testing.assert_close(n.cpu(), torch.ones(3, 5), rtol=0, atol=0)
    torch.testing.assert_close(n._neg_view().cpu(), -torch.ones(3, 5), rtol=0, atol=0)


def test_compiled_graph_given_a_negative_view():
    x = _real()

    @torch.compile(backend="neuron", dynamic=False)
    def f(t):
        return t * 2 + 1

    torch.testing.assert_close(f(x.to("neuron")._neg_view()).cpu(), -x * 2 + 1, rtol=1e-6,
                               atol=1e-6)
