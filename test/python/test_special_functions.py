"""lgamma, digamma and trigamma (polygamma n=1) through their decompositions
(python/neuronsim/special_functions.py), compared with eager: fp32 at rtol 1.3e-4, atol 1e-5
(OpInfo's tolerance), bf16 at 2e-2, over positive and negative values, poles, +-0, +-inf and
NaN."""

import math
import re

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


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("n", [2, 3, 4, 6, 9])
def test_polygamma_of_higher_orders_matches_eager(n, dtype):
    """Through the Hurwitz zeta: both signs (the negative side regroups the terms nearest 0,
    which cancel for odd orders), the poles, +-0, +-inf, NaN, tiny and large values."""
    x = _values().to(dtype)
    actual = _compiled(lambda t: torch.polygamma(n, t), x)
    tolerance = _TOLERANCE[dtype]
    torch.testing.assert_close(actual, torch.polygamma(n, x), equal_nan=True, **tolerance)


def test_polygamma_of_a_negative_order_raises_eagers_error():
    torch._dynamo.reset()
    with pytest.raises(Exception, match="polygamma\\(n, x\\) does not support negative n"):
        torch.compile(lambda t: torch.polygamma(-1, t), backend="neuron", dynamic=False)(
            torch.rand(8) + 0.5
        )


def _zeta_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    """x above 1 (integers and not; near 1; large) against q positive, negative (integers:
    poles; non-integers: defined for integer x only), +-0, +-inf, NaN; x below 1, 1, inf."""
    torch.manual_seed(5)
    x = torch.cat([torch.rand(200) * 20 + 1, torch.randint(2, 12, (300,)).float(),
                   1 + torch.rand(50) * 1e-3, torch.rand(50) * 100])  # fmt: skip
    q = torch.cat([torch.rand(200) * 30, torch.randn(300) * 10, torch.rand(100) * 5])
    edge_x = [1.0, 0.5, -2.0, math.inf, math.inf, math.inf, math.inf, math.nan, 2.0, 2.0, 3.0,
              3.0, 2.0, 2.0, 2.0, 2.5, 4.0, 5.0, 3.0, 2.0]  # fmt: skip
    edge_q = [5.0, 5.0, 5.0, 2.0, 1.0, 0.5, -2.5, 1.0, 0.0, -0.0, -3.0, -2.5, math.inf,
              -math.inf, math.nan, -2.5, 1e-30, 1e10, -1e4 - 0.5, -0.5]  # fmt: skip
    return torch.cat([x, torch.tensor(edge_x)]), torch.cat([q, torch.tensor(edge_q)])


def test_hurwitz_zeta_matches_eager():
    x, q = _zeta_inputs()
    _assert_matches_eager(torch.special.zeta, x, q)
    _assert_matches_eager(lambda t: torch.special.zeta(3.0, t), q)  # a Python x
    _assert_matches_eager(lambda t: torch.special.zeta(t, 2.5), x)  # a Python q


def _compiled(fn, *inputs):
    torch._dynamo.reset()
    result = torch.compile(fn, backend="neuron", dynamic=False)(*inputs)
    assert neuronsim.get_fallback_ops() == {}
    return result


def _float_bits_inputs(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(1)
    edges = [0.0, -0.0, math.inf, -math.inf, 1.0, -1.0, 2.0**-126, -(2.0**-126), 1e-45, -3e-42,
             3.4028234663852886e38, 0.5, 1.5, 2.0**20, 1e-40, 7.0, 2.0**-125, math.nan]  # fmt: skip
    towards = [0.0, 0.0, 0.0, 1.0, 0.0, 5.0, 0.0, 0.0, 0.0, 0.0, math.inf, 0.5, 0.0, 1e9, -1.0,
               math.nan, 0.0, 1.0]  # fmt: skip
    x = torch.cat([torch.randn(300) * 10, torch.randn(100) * 1e-30, torch.randn(100) * 1e30,
                   torch.tensor(edges)])  # fmt: skip
    y = torch.cat([torch.randn(300) * 10, torch.randn(200), torch.tensor(towards)])
    return x.to(dtype), y.to(dtype)


def _assert_identical(actual: torch.Tensor, expected: torch.Tensor) -> None:
    """Equal values, NaN where eager has NaN, and the same sign of zero."""
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)
    if actual.dtype.is_floating_point:
        numbers = ~expected.isnan()
        assert torch.equal(torch.signbit(actual[numbers]), torch.signbit(expected[numbers]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_signbit_frexp_nextafter_are_exact(dtype):
    """Bit-exact against eager: zeros of both signs, subnormals, powers of two (whose step
    towards zero is half a unit), the largest finite value, infinities and NaN."""
    x, y = _float_bits_inputs(dtype)
    numbers = ~x.isnan()  # a NaN's sign bit is not a value the decomposition can read
    _assert_identical(_compiled(torch.signbit, x[numbers]), torch.signbit(x[numbers]))
    for actual, expected in zip(_compiled(torch.frexp, x), torch.frexp(x)):
        _assert_identical(actual, expected)
    _assert_identical(_compiled(torch.nextafter, x, y), torch.nextafter(x, y))


_TOLERANCE = {torch.float32: {"rtol": 1.3e-4, "atol": 1e-5},
              torch.bfloat16: {"rtol": 2e-2, "atol": 2e-2}}  # fmt: skip


def _wide_values() -> torch.Tensor:
    """Both signs, every branch of the decompositions (|x| around 2, 5, 8 and far out), the
    overflow of exp near 88, +-0, tiny values, +-inf and NaN."""
    torch.manual_seed(2)
    edges = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-30, -1e-30, 1.0, -1.0, 2.0, -2.0,
             8.0, -8.0, 7.9999, 8.0001, 100.0, -100.0, 200.0, 88.0, 90.0, -5.0, -5.01, 1e20,
             1000.0, -1000.0, 0.5, -0.4999, 104.0]  # fmt: skip
    return torch.cat([torch.randn(300) * 3, torch.randn(300) * 12, torch.rand(100) * 200 - 100,
                      torch.tensor(edges)])  # fmt: skip


def _assert_matches_eager(fn, *inputs: torch.Tensor) -> None:
    expected = fn(*inputs)
    actual = _compiled(fn, *inputs)
    torch.testing.assert_close(actual, expected, equal_nan=True, **_TOLERANCE[inputs[0].dtype])


_BESSEL = {
    "i0": torch.i0, "i0e": torch.special.i0e, "i1": torch.special.i1, "i1e": torch.special.i1e,
    "modified_bessel_i0": torch.special.modified_bessel_i0,
    "modified_bessel_i1": torch.special.modified_bessel_i1,
    "modified_bessel_k0": torch.special.modified_bessel_k0,
    "modified_bessel_k1": torch.special.modified_bessel_k1,
    "scaled_modified_bessel_k0": torch.special.scaled_modified_bessel_k0,
    "scaled_modified_bessel_k1": torch.special.scaled_modified_bessel_k1,
    "bessel_j0": torch.special.bessel_j0, "bessel_j1": torch.special.bessel_j1,
    "bessel_y0": torch.special.bessel_y0, "bessel_y1": torch.special.bessel_y1,
    "spherical_bessel_j0": torch.special.spherical_bessel_j0,
    "airy_ai": torch.special.airy_ai,
}  # fmt: skip
_BF16_BESSEL = ["i0", "i0e", "i1", "i1e"]  # the others have no bf16 kernel in eager


@pytest.mark.parametrize("name", list(_BESSEL))
def test_bessel_and_airy_functions_match_eager_fp32(name):
    _assert_matches_eager(_BESSEL[name], _wide_values())


@pytest.mark.parametrize("name", _BF16_BESSEL)
def test_bessel_functions_match_eager_bf16(name):
    _assert_matches_eager(_BESSEL[name], _wide_values().to(torch.bfloat16))


def _unit_values(low: float) -> torch.Tensor:
    """[low, 1] densely, values within 1e-6 of the ends (the tails), tiny ones, the ends
    themselves, values outside and NaN."""
    torch.manual_seed(3)
    edges = [0.0, -0.0, 1.0, low, 1.1, low - 0.1, 0.7, -0.7, 0.69999, 0.15, 0.85, 0.5,
             1 - 2**-24, 2**-24, 1e-45, math.nan]  # fmt: skip
    return torch.cat([torch.rand(400) * (1 - low) + low, 1 - torch.rand(100) * 1e-6,
                      low + torch.rand(100) * 1e-5, torch.rand(100) * 1e-30,
                      torch.tensor(edges)])  # fmt: skip


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_erfinv_matches_eager(dtype):
    _assert_matches_eager(torch.erfinv, _unit_values(-1.0).to(dtype))


def test_ndtri_matches_eager_down_to_the_smallest_subnormal():
    _assert_matches_eager(torch.special.ndtri, _unit_values(0.0))


@pytest.mark.parametrize("fn", [torch.special.erfcx, torch.special.log_ndtr],
                         ids=["erfcx", "log_ndtr"])  # fmt: skip
def test_erfcx_and_log_ndtr_match_eager(fn):
    _assert_matches_eager(fn, _wide_values())


_POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
                "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
                "laguerre_polynomial_l", "legendre_polynomial_p"]  # fmt: skip


def _polynomial_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    """x in [-1.5, 1.5] (both sides of the trigonometric forms' |x| < 1) and eager's special
    values; n per element: integers -3..24 (around every threshold), non-integers (eager
    truncates), NaN, +-inf, 1e20 (n < 0 for eager's int64 cast), Hermite's limit 128. (Larger
    random n meets eager's trigonometric forms near their zeros, where n times one ulp of
    acos exceeds the absolute tolerance: that is eager's own rounding.)"""
    torch.manual_seed(4)
    edges = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-30, 2.0, -2.0, math.nan]
    x = torch.cat([torch.rand(600) * 3 - 1.5, torch.tensor(edges).repeat(12)])
    n = torch.randint(-3, 25, x.shape).to(torch.float32)
    n[:40] += torch.rand(40) * 0.99 * torch.sign(n[:40])
    n[40:50] = torch.tensor([math.nan, math.inf, -math.inf, 1e20, -1e20, -0.5, 128, 129, 127, 0])
    # NaN x: eager's value for n >= 2 is uninitialized memory (its loop stops before setting
    # it); n < 2 is defined (0, 1, NaN). The decompositions give NaN (test below).
    nan_x = x.isnan()
    n[nan_x] = torch.tensor([-1.0, 0.0, 1.0]).repeat(12)[: int(nan_x.sum())]
    return x, n


@pytest.mark.parametrize("name", _POLYNOMIALS)
def test_orthogonal_polynomials_with_a_tensor_degree_match_eager(name):
    fn = getattr(torch.special, name)
    x, n = _polynomial_inputs()
    if name.startswith("hermite"):  # n = 129 is Hermite's NaN; elsewhere beyond the bound
        x[47] = 0.0
    else:
        n[47] = 5.0
    _assert_matches_eager(fn, x, n)


@pytest.mark.parametrize("name", _POLYNOMIALS)
def test_orthogonal_polynomials_with_a_python_degree_match_eager(name):
    fn = getattr(torch.special, name)
    x, _ = _polynomial_inputs()
    for degree in (-1, 0, 1, 2, 7, 13.7):
        t = x if degree < 2 else x[~x.isnan()]
        _assert_matches_eager(lambda t, k=degree: fn(t, k), t)
    nan = torch.tensor([math.nan, math.nan])
    assert _compiled(lambda t: fn(t, 5), nan).isnan().all()
    assert _compiled(fn, nan, torch.tensor([2.0, 40.0])).isnan().all()
    n = torch.arange(-2, 12, dtype=torch.float32)
    _assert_matches_eager(lambda k: fn(0.25, k), n)  # a Python x (the x_scalar overload)


def test_polynomial_degree_above_the_bound_fails_on_the_host_unless_a_closed_form_covers_it():
    from neuronsim.orthogonal_polynomials import MAX_DEGREE

    n = torch.tensor([3.0, MAX_DEGREE + 72.0])
    # |x| < 1 and n > 6: eager's cos(n acos x), no recurrence
    _assert_matches_eager(torch.special.chebyshev_polynomial_t, torch.tensor([0.3, 0.4]), n)
    # |x| > 1: the recurrence overflows to NaN within the bound, and stays NaN
    _assert_matches_eager(torch.special.chebyshev_polynomial_t, torch.tensor([0.3, 3.0]), n)
    torch._dynamo.reset()
    message = (f"torch.special.legendre_polynomial_p: n is above {MAX_DEGREE}, the degree to "
               f"which the neuron backend unrolls the recurrence, for an x that needs the "
               f"recurrence")  # fmt: skip
    compiled = torch.compile(torch.special.legendre_polynomial_p, backend="neuron", dynamic=False)
    with pytest.raises(RuntimeError, match=f"^{message}$"):
        compiled(torch.tensor([0.3, 0.4]), n)
    with pytest.raises(RuntimeError, match=f"^{message}$"):
        torch._dynamo.reset()
        torch.compile(lambda t: torch.special.legendre_polynomial_p(t, 300), backend="neuron",
                      dynamic=False)(torch.tensor([0.3, 0.4]))  # fmt: skip
    # the same compiled program runs inputs within the bound
    torch.testing.assert_close(compiled(torch.tensor([0.3, 0.4]), torch.tensor([3.0, 4.0])),
                               torch.special.legendre_polynomial_p(torch.tensor([0.3, 0.4]),
                                                                   torch.tensor([3.0, 4.0])))


def _incomplete_gamma_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    """Every branch of eager's choice: small a and x (both series), x > 1.1 on both sides of
    a (series, continued fraction), a up to 300 with x near a (where eager uses Temme's
    expansion), tiny values, and the boundary values: 0, +-inf, NaN, negative."""
    torch.manual_seed(6)
    a = torch.cat([torch.rand(300) * 3, torch.rand(300) * 30, torch.rand(200) * 280 + 20,
                   torch.rand(50) * 1e-3])  # fmt: skip
    x = torch.cat([torch.rand(300) * 3, torch.rand(300) * 40, a[600:800] * (0.7 + 0.6 *
                   torch.rand(200)), torch.rand(50) * 2])  # fmt: skip
    edge_a = [0.0, 0.0, 1.0, math.inf, math.inf, 1.0, math.nan, -1.0, 1.0, 2.0, 0.5, 1e-20,
              3.0, 1.0, 40.0, 250.0]  # fmt: skip
    edge_x = [0.0, 1.0, 0.0, math.inf, 1.0, math.inf, 1.0, 1.0, -1.0, math.nan, 1e-30, 1.0,
              1e-20, 100.0, 40.0, 250.0]  # fmt: skip
    return torch.cat([a, torch.tensor(edge_a)]), torch.cat([x, torch.tensor(edge_x)])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("fn", [torch.igamma, torch.igammac], ids=["igamma", "igammac"])
def test_incomplete_gamma_matches_eager(fn, dtype):
    a, x = _incomplete_gamma_inputs()
    _assert_matches_eager(fn, a.to(dtype), x.to(dtype))


def test_incomplete_gamma_beyond_its_fixed_steps_fails_on_the_host():
    from neuronsim.incomplete_gamma import FRACTION_STEPS, SERIES_TERMS

    a = torch.tensor([2.0, 5000.0])
    x = torch.tensor([1.0, 4990.0])  # the series needs about 6 sqrt(a) = 420 terms
    message = (f"torch.igamma: the neuron backend sums {SERIES_TERMS} series terms and "
               f"{FRACTION_STEPS} continued-fraction steps; an element (a large, x near a) "
               f"needs more")  # fmt: skip
    torch._dynamo.reset()
    compiled = torch.compile(torch.igamma, backend="neuron", dynamic=False)
    with pytest.raises(RuntimeError, match=f"^{re.escape(message)}$"):
        compiled(a, x)
    within = torch.tensor([200.0, 300.0])
    torch.testing.assert_close(compiled(a, within), torch.igamma(a, within), rtol=1.3e-4,
                               atol=1e-5)  # fmt: skip


@pytest.mark.parametrize(
    "fn",
    [lambda t: torch.special.zeta(t + 1, t), lambda t: torch.special.chebyshev_polynomial_t(t, 3)],
    ids=["zeta", "chebyshev_polynomial_t"],
)
def test_ops_eager_lacks_in_bf16_stay_unsupported_with_the_op_named(fn):
    x = torch.rand(4).bfloat16() + 1
    with pytest.raises(NotImplementedError):
        fn(x)
    torch._dynamo.reset()
    with pytest.raises(neuronsim.NeuronCompileError, match="unsupported operator"):
        torch.compile(fn, backend="neuron", dynamic=False)(x)


@pytest.mark.parametrize("name", ["laguerre_polynomial_l", "legendre_polynomial_p"])
def test_polynomial_recurrence_compiles_for_large_computed_inputs(name):
    """x computed in the graph, 30000 elements: the 128 unrolled steps compile (no SBUF
    overflow from fused regions holding every step's values) and match eager. (The bf16
    igamma test above is the one that overflows without special_common.unfused.)"""
    torch.manual_seed(7)
    t = torch.rand(30000) * 3
    n = torch.randint(0, 30, t.shape).to(torch.float32)
    fn = getattr(torch.special, name)
    # (x from exactly rounded ops, so that the device's x is eager's)
    _assert_matches_eager(lambda a, k: fn(a * 0.5 - 0.75, k + 1.0), t, n)
