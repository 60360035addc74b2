"""Complex tensors and FFTs through the neuron backend (complex_lowering.py), against eager.

Complex values run as real planes; FFTs as DFT matrix products accumulated in fp32. Stated
tolerances: elementwise complex arithmetic rtol 1e-5, atol 1e-6 (a few fp32 roundings);
FFTs rtol 1e-4, atol 1e-5 for the transform lengths here (n <= 64; one dot product of length
2n per output); exact where no arithmetic happens (layout ops, conversions).
"""

from __future__ import annotations

import math

import pytest
import torch
from torch.utils import _pytree as pytree

import neuronsim
from neuronsim.complex_fft import _c2r_matrix, _dft_matrix
from neuronsim.complex_lowering import lower_complex
from neuronsim.graph_export import export_graph

FFT_TOL = dict(rtol=1e-4, atol=1e-5)
ARITH_TOL = dict(rtol=1e-5, atol=1e-6)


def _compile(fn, **options):
    torch._dynamo.reset()
    return torch.compile(fn, backend="neuron", dynamic=False, options=options or None)


def _check(fn, *args, tol=ARITH_TOL, exact=False):
    with torch.no_grad():
        expected = fn(*args)
        got = _compile(fn)(*args)
    pairs = zip(pytree.tree_leaves(got), pytree.tree_leaves(expected), strict=True)
    for g, e in pairs:
        assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, e.dtype, g.shape, e.shape)
        if exact:
            torch.testing.assert_close(g, e, equal_nan=True, rtol=0, atol=0)
        else:
            torch.testing.assert_close(g, e, equal_nan=True, **tol)


def _cplx(*shape, dtype=torch.complex64):
    return torch.randn(*shape, dtype=dtype)


# ---------------------------------------------------------------------------------------------
# FFTs

NORMS = [None, "ortho", "forward"]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("shape,dim,n", [((16,), -1, None), ((3, 10), 0, None),
                                         ((2, 7, 5), 1, 12), ((4, 9), -1, 6)])  # fmt: skip
def test_fft_of_a_real_input(shape, dim, n, norm):
    _check(lambda x: torch.fft.fft(x, n=n, dim=dim, norm=norm), torch.randn(shape), tol=FFT_TOL)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("shape,dim", [((3, 16), -1), ((5, 7), 0), ((2, 6, 4), 1)])
def test_fft_and_ifft_of_a_complex_input(shape, dim, norm):
    x = _cplx(*shape)
    _check(lambda x: torch.fft.fft(x, dim=dim, norm=norm), x, tol=FFT_TOL)
    _check(lambda x: torch.fft.ifft(x, dim=dim, norm=norm), x, tol=FFT_TOL)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("shape,n", [((4, 16), None), ((3, 9), None), ((2, 3, 10), 7)])
def test_rfft_and_irfft(shape, n, norm):
    x = torch.randn(shape)
    _check(lambda x: torch.fft.rfft(x, n=n, norm=norm), x, tol=FFT_TOL)
    spectrum = torch.fft.rfft(x)
    # irfft of even and odd output lengths (the Nyquist term is weighted once for even n).
    for size in (None, 2 * (shape[-1] // 2), 2 * (shape[-1] // 2) + 1):
        _check(lambda s, n=size: torch.fft.irfft(s, n=n, norm=norm), spectrum, tol=FFT_TOL)


def test_irfft_ignores_the_imaginary_parts_of_dc_and_nyquist_as_eager_does():
    spectrum = _cplx(3, 9)  # imaginary DC and Nyquist terms: not a Hermitian spectrum
    _check(lambda s: torch.fft.irfft(s, n=16), spectrum, tol=FFT_TOL)


@pytest.mark.parametrize("norm", NORMS)
def test_fft2_fftn_and_their_inverses(norm):
    x = torch.randn(2, 6, 10)
    _check(lambda x: torch.fft.fft2(x, norm=norm), x, tol=FFT_TOL)
    _check(lambda x: torch.fft.fftn(x, s=(4, 12), dim=(0, 2), norm=norm), x, tol=FFT_TOL)
    c = _cplx(3, 8, 5)
    _check(lambda c: torch.fft.ifft2(c, norm=norm), c, tol=FFT_TOL)
    _check(lambda x: torch.fft.rfft2(x, norm=norm), x, tol=FFT_TOL)
    _check(lambda c: torch.fft.irfftn(c, s=(8, 8), norm=norm), c, tol=FFT_TOL)


def test_hermitian_ffts():
    x = torch.randn(4, 9)
    _check(lambda x: torch.fft.hfft(x, n=16), x, tol=FFT_TOL)
    _check(lambda x: torch.fft.ihfft(x), x, tol=FFT_TOL)
    _check(lambda x: torch.fft.hfft2(x.to(torch.complex64)), x, tol=FFT_TOL)


def test_stft_and_spectrogram_power():
    signal = torch.randn(2, 200)
    window = torch.hann_window(32)

    def fn(x, w):
        spec = torch.stft(x, n_fft=32, hop_length=8, window=w, return_complex=True)
        return spec, spec.abs() ** 2

    _check(fn, signal, window, tol=FFT_TOL)


def test_fft_length_64_matches_pocketfft():
    _check(lambda x: torch.fft.fft(x), _cplx(8, 64), tol=FFT_TOL)


def test_dft_matrices_match_torch_fft_in_float64():
    """The host-built matrices (signs, scaling, onesided columns, Hermitian weights) against
    torch.fft on the identity in float64: every coefficient of the transform."""
    for n in (1, 2, 5, 8, 13):
        eye = torch.eye(n, dtype=torch.float64)
        full = torch.fft.fft(eye, norm="ortho")
        matrix = _dft_matrix(n, n // 2 + 1, -1, 1 / math.sqrt(n), real_input=True)
        half = full[:, : n // 2 + 1]
        torch.testing.assert_close(matrix, torch.cat([half.real, half.imag], 1), rtol=0,
                                   atol=1e-15)  # fmt: skip
        inverse = _dft_matrix(n, n, 1, 1 / n, real_input=False)
        expected = torch.fft.ifft(torch.eye(n, dtype=torch.complex128))
        top = torch.cat([expected.real, expected.imag], 1)
        bottom = torch.cat([-expected.imag, expected.real], 1)
        torch.testing.assert_close(inverse, torch.cat([top, bottom], 0), rtol=0, atol=1e-15)
        m = n // 2 + 1
        c2r = _c2r_matrix(n, m, 1.0)
        rows = torch.cat([torch.eye(m, dtype=torch.complex128),
                          1j * torch.eye(m, dtype=torch.complex128)])  # fmt: skip
        torch.testing.assert_close(c2r, torch.fft.irfft(rows, n=n, norm="forward"), rtol=0,
                                   atol=1e-13)  # fmt: skip


def test_fft_backward_matches_autograd():
    x = torch.randn(4, 16, requires_grad=True)
    x_compiled = x.detach().clone().requires_grad_()

    def loss(x):
        return (torch.fft.rfft(x, norm="ortho").abs() ** 2 * torch.arange(9.0)).sum()

    loss(x).backward()
    _compile(loss)(x_compiled).backward()
    torch.testing.assert_close(x_compiled.grad, x.grad, rtol=1e-4, atol=1e-5)


def test_backward_of_a_zero_padded_fft_crops_with_negative_padding():
    """rfft(x, n > size) pads with zeros; its backward pads by negative amounts (a crop)."""
    x = torch.randn(3, 10, requires_grad=True)
    x_compiled = x.detach().clone().requires_grad_()

    def loss(x):
        return (torch.view_as_real(torch.fft.rfft(x, n=16)) * torch.arange(18.0).view(9, 2)).sum()

    loss(x).backward()
    _compile(loss)(x_compiled).backward()
    torch.testing.assert_close(x_compiled.grad, x.grad, rtol=1e-4, atol=1e-5)


def test_negative_constant_padding_is_a_crop_then_a_pad():
    x = torch.randn(4, 7, 6)
    pads = [(-1, 2), (2, -3, -1, 1), (0, -2, 0, 0, -1, -1)]
    for pad in pads:
        _check(lambda x, p=pad: torch.nn.functional.pad(x, p, value=0.5), x, exact=True)


# ---------------------------------------------------------------------------------------------
# Complex arithmetic and layout


def test_elementwise_arithmetic():
    a, b, r = _cplx(4, 6), _cplx(4, 6), torch.randn(4, 6)

    def fn(a, b, r):
        return (a + b, a - 2 * b, a * b, a / b, -a, a.conj() * b, a * r, r / a, a + 1.5j,
                (2 - 1j) * a, a / (0.5 + 2j), a.reciprocal(), a.exp(), a.sgn())  # fmt: skip

    _check(fn, a, b, r)


def test_real_valued_results_of_complex_inputs():
    a = _cplx(5, 3)
    a[0, 0] = 0
    a[1, 1] = complex(-2.0, 0.0)

    def fn(a):
        return a.abs(), a.angle(), a.real * 2, a.imag + 1, torch.view_as_real(a), a == a.conj()

    _check(fn, a)


def test_division_by_large_and_small_complex_values_does_not_overflow():
    a = _cplx(8)
    b = torch.complex(torch.full((8,), 3e30), torch.full((8,), -4e30))
    small = torch.complex(torch.full((8,), 3e-30), torch.full((8,), 4e-30))
    _check(lambda a, b, s: (a / b, a / s), a, b, small)


def test_construction_and_conversion():
    re, im = torch.randn(3, 4), torch.randn(3, 4)
    _check(lambda re, im: torch.complex(re, im), re, im, exact=True)
    _check(lambda m, t: torch.polar(m, t), re.abs(), im)
    _check(lambda x: torch.view_as_complex(x), torch.randn(3, 4, 2), exact=True)
    _check(lambda x: (x.to(torch.complex64), x.cfloat() * 1j), re, exact=True)
    _check(lambda x: torch.full((2, 3), 1 - 2j) + x, _cplx(2, 3), exact=True)


def test_layout_ops_on_complex_values():
    a = _cplx(4, 6, 5)

    def fn(a):
        return (a[1:3, ::2].permute(2, 0, 1).reshape(5, -1), torch.cat([a, a.conj()], 1),
                torch.nn.functional.pad(a, (1, 2)), a.flip(0), a.sum(1), a.mean(-1),
                a.transpose(0, 2).contiguous(), a[:, 2],
                a.unsqueeze(1).expand(4, 3, 6, 5))  # fmt: skip

    _check(fn, a)


def test_complex_matmul():
    _check(lambda a, b: (a @ b, torch.bmm(a.unsqueeze(0), b.unsqueeze(0))), _cplx(5, 8),
           _cplx(8, 3))  # fmt: skip


def test_matmul_with_bias():
    a, b, bias = _cplx(5, 8), _cplx(8, 3), _cplx(5, 3)

    def fn(a, b, bias):
        return (torch.addmm(bias, a, b, beta=0.5, alpha=2 - 1j), torch.addmm(bias, a, b, beta=0),
                torch.baddbmm(bias.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0)))  # fmt: skip

    _check(fn, a, b, bias)


def test_transcendental_functions_and_reductions():
    a = _cplx(4, 6)

    def fn(a):
        return (a.sin(), a.cos(), a.sinh(), a.cosh(), a.log(), a**2, a**3, a.cumsum(1),
                a.var(1), torch.var_mean(a, 0), torch.linalg.vector_norm(a, dim=1),
                torch.logical_not(a), a.any(1), a.all())  # fmt: skip

    _check(fn, a, tol=dict(rtol=1e-5, atol=1e-5))


def test_scatter_and_index_writes_of_complex_values():
    a, src = _cplx(4, 6), _cplx(4, 6)
    index = torch.randint(0, 4, (4, 6))

    def fn(a, src, index):
        return (a.scatter(0, index, src), a.scatter_add(0, index, src),
                a.masked_fill(index > 1, 2 - 3j), torch.where(index > 2, a, 0.5))  # fmt: skip

    _check(fn, a, src, index)


def test_alpha_and_dtype_arguments():
    def fn(a, b):
        return (torch.rsub(a, b, alpha=2), torch.sub(a, b, alpha=1j), torch.add(a, b, alpha=3),
                1 - a, a.sum(0, dtype=torch.complex128), a.sum(dtype=torch.complex64))  # fmt: skip

    _check(fn, _cplx(3, 4), _cplx(3, 4))


# ---------------------------------------------------------------------------------------------
# The boundary


def test_complex_inputs_and_outputs_keep_their_dtypes():
    a, b = _cplx(3, 5), _cplx(3, 5)
    _check(lambda a, b: (a * b, (a * b).abs()), a, b)
    # A conjugated (conj bit) input view: its values, not the unconjugated storage.
    _check(lambda a: a * 2, a.conj())
    _check(lambda a: a[:, 1:4] + 1, a.t().contiguous().t())  # non-contiguous input


def test_complex128_runs_as_float32_pairs_with_the_float64_warning():
    a = _cplx(4, 8, dtype=torch.complex128)
    with pytest.warns(UserWarning, match="float64 tensors run as float32"):
        _check(lambda a: torch.fft.fft(a) * a, a, tol=FFT_TOL)


def test_complex32_runs_as_float16_pairs():
    x = torch.randn(3, 4)
    _check(lambda x: x.chalf(), x, exact=True)
    with torch.no_grad():
        got = _compile(lambda c: c + c)(x.chalf())
    assert got.dtype == torch.complex32
    assert torch.equal(torch.view_as_real(got), torch.view_as_real(x.chalf() + x.chalf()))


def test_lowered_graph_has_no_complex_values():
    """The graph the exporter sees: real [..., 2] inputs and outputs, no complex node; run
    in eager PyTorch behind the boundary, it computes the complex function."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    seen = {}

    def capture(gm, inputs):
        lowered = lower_complex(gm)
        seen["lowered"], seen["gm"] = lowered, gm
        export_graph(gm, lowered.example_inputs(inputs))  # raises on a complex dtype
        return lowered.wrap(make_boxed_func(gm.forward))

    torch._dynamo.reset()
    fn = torch.compile(lambda a, x: (torch.fft.fft(x) * a, x.sum()),
                       backend=aot_autograd(fw_compiler=capture))  # fmt: skip
    a, x = _cplx(2, 8), torch.randn(2, 8)
    with torch.no_grad():
        got = fn(a, x)
    torch.testing.assert_close(got[0], torch.fft.fft(x) * a, **FFT_TOL)
    # (Dynamo orders the graph's inputs by first use: x, then a.)
    assert seen["lowered"].complex_inputs == [False, True]
    assert seen["lowered"].complex_outputs == [True, False]
    for node in seen["gm"].graph.nodes:
        values = node.meta.get("val")
        for value in values if isinstance(values, (list, tuple)) else [values]:
            assert not (isinstance(value, torch.Tensor) and value.dtype.is_complex), node
    placeholders = [n for n in seen["gm"].graph.nodes if n.op == "placeholder"]
    assert [tuple(p.meta["val"].shape) for p in placeholders] == [(2, 8), (2, 8, 2)]


# ---------------------------------------------------------------------------------------------
# Ops without a real rewrite, and real angle


def test_a_complex_op_without_a_rewrite_is_an_unsupported_op_with_its_source_line():
    def fn(a):
        return torch.tan(a) + 1

    with pytest.raises(neuronsim.NeuronCompileError) as error:
        _compile(fn)(_cplx(3, 4))
    text = str(error.value)
    assert "unsupported operators (1):" in text
    assert "aten.tan.default (complex64 tensors: no real rewrite of this complex op) at " in text
    assert "test_complex_fft.py:" in text and "return torch.tan(a) + 1" in text


def test_a_complex_op_without_a_rewrite_runs_on_the_cpu_with_fallback():
    a = _cplx(3, 4)
    fn = lambda a: torch.fft.fft(torch.tan(a)).abs()  # noqa: E731
    with torch.no_grad():
        got = _compile(fn, fallback="cpu")(a)
    torch.testing.assert_close(got, fn(a), **FFT_TOL)
    assert neuronsim.get_fallback_ops() == {"aten.tan.default": 1}


def test_angle_of_a_real_input():
    x = torch.tensor([-2.0, -0.0, 0.0, 3.0, float("nan"), float("-inf"), float("inf")])
    _check(torch.angle, x, exact=True)
    _check(torch.angle, torch.tensor([-3, 0, 4]), exact=True)
