"""torch.uint8 end to end: compiled results equal eager's exactly (torch.equal, dtype included).

uint8 is unsigned on the device (200 is 200, never -56); its arithmetic wraps mod 256; Python
ints beside it wrap to uint8 as in eager (x > -1 compares with 255); casts from float follow
torch on x86-64 (300.0 -> 44, -1.0 -> 255, NaN -> 0); type promotion is eager's (uint8 + int64
is int64, uint8 * 0.5 is float32, sum is int64). Ops that cannot be exact for uint8 are
rejected with NeuronCompileError naming the op.
"""

from __future__ import annotations

import json

import pytest
import torch

import neuronsim

NAN, INF = float("nan"), float("inf")


def run(fn, *args, **options):
    """fn compiled for neuron and run on the simulator (which must have run instructions)."""
    out = torch.compile(fn, backend="neuron", dynamic=False, options=options)(*args)
    assert neuronsim.last_run_stats()["instructions"] > 0
    return out


def assert_same(got, want):
    """Exactly eager's values and dtypes, for a tensor or a tuple of them."""
    if isinstance(want, torch.Tensor):
        got, want = (got,), (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        assert torch.equal(g, w), (g, w)


def check(fn, *args):
    """fn compiled equals fn in eager; returns eager's result for further asserts."""
    want = fn(*args)
    assert_same(run(fn, *args), want)
    return want


def u8(*values):
    return torch.tensor([list(values)], dtype=torch.uint8)


A = u8(200, 100, 255, 0, 5, 128, 1, 254)
B = u8(100, 200, 1, 1, 250, 128, 255, 3)


def random_u8(shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)


# --- inputs, outputs and the program ------------------------------------------------------


def test_uint8_input_to_output():
    check(lambda a: a + 0, A)
    check(lambda a: a.t().contiguous(), random_u8((130, 7), 1))


def test_uint8_program_dtype_is_u8(tmp_path):
    run(lambda a, b: a + b, A, B, dump_dir=str(tmp_path))
    (program,) = tmp_path.glob("*/program.json")
    dtypes = [b["dtype"] for b in json.loads(program.read_text())["buffers"]]
    assert dtypes.count("u8") == 3 and "i8" not in dtypes, dtypes
    ir = next(tmp_path.glob("*/0-import.mlir")).read_text()
    assert "tensor<1x8xui8>" in ir and "xi8>" not in ir


# --- casts -----------------------------------------------------------------------------------


def test_float_to_uint8_out_of_range_like_eager():
    x = torch.tensor([[200.0, 300.0, -1.0, 255.9, 0.0, 127.5, -3.7, 1000.0, NAN, INF, -INF, 3e9]])
    want = check(lambda x: x.to(torch.uint8), x)
    assert want.tolist() == [[200, 44, 255, 255, 0, 127, 253, 232, 0, 0, 0, 0]]  # x86-64 torch


def test_uint8_times_200_roundtrip():
    # Once silently int8: (x * 200).to(torch.uint8).float() gave -56 where eager gives 200.
    x = torch.tensor([[1.0, 0.5, 2.0]])
    want = check(lambda x: (x * 200).to(torch.uint8).float(), x)
    assert want.tolist() == [[200.0, 100.0, 144.0]]


def test_uint8_to_float_long_bool_bf16_int32():
    check(lambda a: (a.float(), a.long(), a.bool(), a.to(torch.bfloat16), a.to(torch.int32)), A)


def test_integers_to_uint8_wrap():
    i64 = torch.tensor([[-1, 300, 2**40 + 7, -256, 255]])
    i8 = torch.tensor([[-1, -128, 127, 0, -56]], dtype=torch.int8)
    check(lambda i, j: (i.to(torch.uint8), j.to(torch.uint8)), i64, i8)


def test_large_uint8_casts_tile_by_tile():
    x = torch.randn(130, 700, generator=torch.Generator().manual_seed(1)) * 400
    check(lambda x: (x.to(torch.uint8), x.to(torch.bfloat16).to(torch.uint8)), x)


# --- arithmetic and promotion ----------------------------------------------------------------


def test_uint8_arithmetic_wraps():
    want = check(lambda a, b: (a + b, a - b, a * b, -a, a**2), A, B)
    assert want[0].tolist()[0][:2] == [44, 44]  # 200 + 100 wraps


def test_uint8_with_python_ints_wraps_like_eager():
    check(lambda a: (a + 100, a - 1, a + 300, a + (-1), a * 3), A)


def test_uint8_promotion():
    i64 = torch.tensor([[1, 2, 3, -300, 2**40, 0, -1, 7]])
    f = torch.linspace(-2.0, 2.0, 8).reshape(1, 8)
    want = check(
        lambda a, i, f: (a + i, a * 0.5, a / 2, a + f, a / a.clamp_min(1)), A, i64, f
    )
    assert [w.dtype for w in want] == [torch.int64] + [torch.float32] * 4


def test_uint8_large_tensors():
    a, b = random_u8((130, 700), 2), random_u8((130, 700), 3)
    check(lambda a, b: (a + b, a * b, (a - b).float() * 0.5), a, b)


# --- comparisons, where, masks -------------------------------------------------------------


def test_uint8_comparisons_are_unsigned():
    check(lambda a, b: (a > b, a < b, a >= b, a == b, a != b, a <= b), A, B)


def test_uint8_comparisons_with_python_numbers():
    # Eager wraps an int to uint8: a > -1 compares with 255, a > 300 with 44.
    want = check(lambda a: (a > -1, a > 300, a == 255, a < 128, a > 127.5), A)
    assert not want[0].any()


def test_uint8_against_int8_compares_values():
    i8 = torch.tensor([[1, -2, 3, -100, 5, -128, 127, 0]], dtype=torch.int8)
    check(lambda a, i: (a > i, a == i), A, i8)


def test_where_with_uint8():
    x = torch.linspace(-1.0, 1.0, 8).reshape(1, 8)
    i64 = torch.arange(8).reshape(1, 8)
    check(
        lambda a, b, x, i: (
            torch.where(a > b, a, b),
            torch.where(a > 100, a, 7),
            torch.where(a > 100, a, -1),  # -1 wraps to 255
            torch.where(b > 100, x, a.float()),
            torch.where(a > 100, a, i),  # promotes to int64
        ),
        A, B, x, i64,
    )  # fmt: skip


def test_masks_from_uint8():
    x = torch.linspace(-1.0, 1.0, 8).reshape(1, 8)
    m = u8(1, 0, 2, 0, 255, 0, 1, 1)
    check(
        lambda m, x: (x * m, x * m.bool(), x.masked_fill(m.bool(), 0.0), m.bool() & (x > 0)),
        m, x,
    )  # fmt: skip


def test_uint8_max_min_clamp():
    check(
        lambda a, b: (torch.maximum(a, b), torch.minimum(a, b), a.clamp(10, 100), a.amax(1)),
        A, B,
    )  # fmt: skip
    check(lambda a: a.max(), A)


# --- sums --------------------------------------------------------------------------------------


def test_sum_of_uint8_is_int64():
    want = check(lambda a: (a.sum(), a.sum(1), a.sum(0)), random_u8((130, 700), 4))
    assert want[0].dtype == torch.int64 and want[0] > 255


def test_sum_of_uint8_as_uint8_wraps():
    check(lambda a: a.sum(1, dtype=torch.uint8), A)


# --- what cannot be exact is rejected --------------------------------------------------------


def test_uint8_matmul_is_rejected():
    with pytest.raises(neuronsim.NeuronCompileError, match=r"aten\.mm\.default.*uint8"):
        run(lambda a, b: a @ b, A.reshape(2, 4), B.reshape(4, 2))


def test_uint8_mask_index_put_is_rejected():
    # torch takes a uint8 index tensor as a mask (boolean indexing), not as positions.
    x, v = torch.zeros(4, 3), torch.arange(12.0).reshape(4, 3)
    m = torch.tensor([1, 1, 1, 1], dtype=torch.uint8)
    with pytest.raises(neuronsim.NeuronCompileError, match="uint8 index tensor is a mask"):
        run(lambda x, m, v: x.index_put((m,), v, accumulate=True), x, m, v)
