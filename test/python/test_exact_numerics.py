"""Exact integer arithmetic, NaN through max/min and u8 conversions, compiled vs eager.

The simulator computes instructions whose operands are all integers in int64 with
two's-complement wrap (as torch), so int64 results above 2^53 and on overflow are bit-exact:
compared with torch.equal. Max/min ops and reductions return NaN where torch does: compared
with assert_close(rtol=0, atol=0, equal_nan=True).
"""

from __future__ import annotations

import pytest
import torch

import neuronsim

NAN = float("nan")
I64_MAX, I64_MIN = 2**63 - 1, -(2**63)


def compiled(fn):
    return torch.compile(fn, backend="neuron", dynamic=False)


def run_on_simulator(fn, *args):
    """fn compiled for neuron and run; checks that the simulator ran instructions."""
    out = compiled(fn)(*args)
    assert neuronsim.last_run_stats()["instructions"] > 0
    return out


def big_int64(shape, seed):
    """int64 values spread over the whole range (most above 2^53 in magnitude)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-(2**62), 2**62, shape, generator=g, dtype=torch.int64) * 2 + 1


def with_nans(shape, seed, every=7):
    """Random floats with a NaN at every `every`-th element (in rows, tails, vector bodies)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g)
    x.view(-1)[::every] = NAN
    return x


def assert_same_with_nan(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)


# --- int64 above 2^53 ----------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(3, 200), (130, 7)])
def test_int64_add_exact_above_2p53(shape):
    a, b = big_int64(shape, 1), big_int64(shape, 2)
    got = run_on_simulator(lambda a, b: a + b, a, b)
    assert torch.equal(got, a + b)


def test_int64_add_wraps_on_overflow():
    a = torch.tensor([I64_MAX, I64_MIN, 2**62, 2**53 + 1])
    b = torch.tensor([1, -1, 2**62, 2**53 + 2])
    got = run_on_simulator(lambda a, b: a + b, a, b)
    want = a + b
    assert want.tolist() == [I64_MIN, I64_MAX, I64_MIN, 2**54 + 3]  # eager wraps
    assert torch.equal(got, want)


@pytest.mark.parametrize("shape", [(3, 200), (130, 7)])
def test_int64_mul_by_scalar_exact(shape):
    a = big_int64(shape, 3) // 4  # |a| < 2^61: a * 3 fits, and is exact above 2^53
    got = run_on_simulator(lambda a: a * 3, a)
    assert torch.equal(got, a * 3)
    wrapping = big_int64(shape, 4)  # a * 3 overflows: wraps as eager
    assert torch.equal(run_on_simulator(lambda a: a * 3, wrapping), wrapping * 3)


@pytest.mark.parametrize("shape", [(3, 200), (130, 7), (5000,)])
def test_int64_sum_exact(shape):
    # Values near 2^53 whose double sum would drop the low bits.
    g = torch.Generator().manual_seed(5)
    a = 2**53 + torch.randint(0, 1000, shape, generator=g, dtype=torch.int64)
    got = run_on_simulator(lambda a: a.sum(), a)
    assert torch.equal(got, a.sum())
    # Over the whole int64 range the sum wraps, as eager's.
    wide = big_int64(shape, 6)
    assert torch.equal(run_on_simulator(lambda a: a.sum(), wide), wide.sum())


def test_int64_row_sum_and_comparisons_exact():
    a = big_int64((4, 9), 7)
    b = a + torch.tensor([[0, 1, -1, 0, 1, -1, 0, 1, -1]])
    got_sum, got_lt, got_eq = run_on_simulator(
        lambda a, b: (a.sum(dim=1), a < b, a == b), a, b
    )
    assert torch.equal(got_sum, a.sum(dim=1))
    assert torch.equal(got_lt, a < b)
    assert torch.equal(got_eq, a == b)


# --- NaN through max / min -------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(3, 200), (130, 7)])
def test_maximum_minimum_propagate_nan(shape):
    x, y = with_nans(shape, 8, every=7), with_nans(shape, 9, every=11)
    got_max, got_min = run_on_simulator(
        lambda x, y: (torch.maximum(x, y), torch.minimum(x, y)), x, y
    )
    assert_same_with_nan(got_max, torch.maximum(x, y))
    assert_same_with_nan(got_min, torch.minimum(x, y))
    assert got_max.isnan().any()


def test_maximum_with_scalar_propagates_nan():
    x = with_nans((3, 200), 10)
    got = run_on_simulator(lambda x: torch.clamp(x, min=-0.5, max=0.5), x)
    assert_same_with_nan(got, torch.clamp(x, min=-0.5, max=0.5))
    assert got.isnan().any()


@pytest.mark.parametrize("shape", [(3, 200), (130, 7), (2, 5000)])
def test_amax_amin_with_nan(shape):
    x = with_nans(shape, 11, every=97)
    x[-1] = torch.arange(shape[-1], dtype=torch.float32)  # one row without NaN
    got_amax, got_amin, got_all = run_on_simulator(
        lambda x: (x.amax(dim=-1), x.amin(dim=-1), x.amax()), x
    )
    assert_same_with_nan(got_amax, x.amax(dim=-1))
    assert_same_with_nan(got_amin, x.amin(dim=-1))
    assert_same_with_nan(got_all, x.amax())
    assert got_all.isnan() and not got_amax[-1].isnan()


def test_max_dim_with_nan():
    x = with_nans((6, 33), 12, every=29)
    got = run_on_simulator(lambda x: x.max(dim=1).values, x)
    assert_same_with_nan(got, x.max(dim=1).values)


def test_full_max_and_min_with_nan():
    x = with_nans((3, 200), 13)
    assert_same_with_nan(run_on_simulator(lambda x: x.max(), x), x.max())
    assert_same_with_nan(run_on_simulator(lambda x: x.min(), x), x.min())
    y = torch.randn(5, 7)
    assert torch.equal(run_on_simulator(lambda y: y.max(), y), y.max())


# --- uint8 --------------------------------------------------------------------------------


def test_float_to_uint8_and_back():
    x = torch.tensor([[200.0, 300.0, -1.0, 255.9, 0.0, 127.5, -3.7, 1000.0]])
    got_u8, got_back = run_on_simulator(lambda x: (x.to(torch.uint8), x.to(torch.uint8).float()), x)
    want = x.to(torch.uint8)
    assert want.tolist() == [[200, 44, 255, 255, 0, 127, 253, 232]]  # torch on x86-64
    assert torch.equal(got_u8, want)
    assert torch.equal(got_back, want.float())


def test_uint8_arithmetic_is_unsigned():
    a = torch.tensor([[200, 100, 255, 0]], dtype=torch.uint8)
    b = torch.tensor([[100, 200, 1, 1]], dtype=torch.uint8)
    got_add, got_gt, got_sum = run_on_simulator(lambda a, b: (a + b, a > b, a.sum()), a, b)
    assert torch.equal(got_add, a + b)
    assert torch.equal(got_gt, a > b)
    assert torch.equal(got_sum, a.sum())


# --- int64 with float operands ---------------------------------------------------------------


def test_int64_with_float_operands_rounds_like_eager():
    # Eager converts the int64 operand to float32 (rounded once), then computes in float32:
    # 2^62 + 2^38 + 1 rounds up to 2^62 + 2^39 (through double it would round to 2^62).
    a = torch.tensor([5, -5, 2**62 + 2**38 + 1, 2**24 + 1])
    f = torch.tensor([0.5, 0.25, 0.0, 16777216.0])
    got = run_on_simulator(lambda a, f: (a.float(), a / 2, a + f, a > f), a, f)
    for g, w in zip(got, (a.float(), a / 2, a + f, a > f)):
        assert torch.equal(g, w)


def test_int64_with_float_scalars():
    # A Python float promotes an integer tensor's op to float, as in eager.
    a = torch.tensor([5, -5, 7, 2**20])
    assert torch.equal(run_on_simulator(lambda a: a * 0.5, a), a * 0.5)
    assert torch.equal(run_on_simulator(lambda a: a + 0.25, a), a + 0.25)
    assert torch.equal(run_on_simulator(lambda a: a < 0.5, a), a < 0.5)


def test_int64_scalar_above_2p53_is_a_clear_error():
    # Scalars travel as doubles down to the instructions' immediates: rather than adding
    # 2^53 for 2^53 + 1, the compiler refuses. A tensor operand is exact.
    a = torch.tensor([0, 1])
    with pytest.raises(neuronsim.NeuronCompileError, match=r"integer scalar 9007199254740993 is beyond 2\^53"):
        run_on_simulator(lambda a: a + (2**53 + 1), a)
    b = torch.tensor([2**53 + 1, 2**60 + 7])
    assert torch.equal(run_on_simulator(lambda a, b: a + b, a, b), a + b)


def test_argmin_and_min_dim_pick_nan_like_eager():
    x = torch.randn(4, 9)
    x[1, 3] = x[2, 0] = x[2, 5] = float("nan")
    got_arg = run_on_simulator(lambda x: x.argmin(1), x)
    got = run_on_simulator(lambda x: x.min(1), x)
    assert torch.equal(got_arg, x.argmin(1))
    assert torch.equal(got.indices, x.min(1).indices)
    torch.testing.assert_close(got.values, x.min(1).values, equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize(
    "make",
    [
        lambda: big_int64((3, 37), 11),  # sums wrap around, as in torch
        lambda: torch.randint(-5, 5, (2, 7, 3), generator=torch.Generator().manual_seed(3),
                              dtype=torch.int32),  # fmt: skip
        lambda: torch.rand(4, 300, generator=torch.Generator().manual_seed(4)) > 0.5,  # a mask
        lambda: torch.tensor([[1, 1, 0, 1, 0, 0, 1]], dtype=torch.uint8),
    ],
    ids=["int64_wrapping", "int32", "bool_mask", "uint8"],
)
def test_integer_cumsum_is_exact(make):
    """Integer cumsum (position ids from attention masks) is a log-step scan of exact adds."""
    x = make()
    for dim in range(x.dim()):
        got = run_on_simulator(lambda t, d=dim: torch.cumsum(t, d), x)
        expected = torch.cumsum(x, dim)
        assert got.dtype == expected.dtype
        assert torch.equal(got, expected), dim
        torch._dynamo.reset()
