"""The compiler's use of the real NeuronCore instructions (issue 25): two-op tensor_scalar and
scalar_tensor_tensor, checked end to end against eager and in the program they compile to."""

from __future__ import annotations

import pathlib

import pytest
import torch

import neuronsim  # noqa: F401  (registers the backend)


def _compile(fn, tmp_path, target=None):
    options = {"dump_dir": str(tmp_path)}
    if target:
        options["target"] = target
    return torch.compile(fn, backend="neuron", dynamic=False, options=options)


def _nisa(tmp_path) -> str:
    return "\n".join(p.read_text() for p in pathlib.Path(tmp_path).glob("*/3-nisa.mlir"))


def test_clamp_and_affine_steps_are_two_op_tensor_scalars(tmp_path):
    # max then min, a division then an add: one instruction each, the same ops in the same
    # order in fp32, so bit-exact against eager.
    def fn(x):
        return torch.clamp(x, -3.0, 6.0) / 3.0 + 0.5

    x = torch.randn(512, 1024) * 5
    torch.testing.assert_close(_compile(fn, tmp_path)(x), fn(x), rtol=0, atol=0)
    nisa = _nisa(tmp_path)
    assert "max on" in nisa and "then min 6.000000e+00" in nisa
    assert "then add 5.000000e-01" in nisa
    assert "nisa.tensor_scalar min" not in nisa  # folded into the max's instruction


def test_fp32_scale_plus_residual_is_one_scalar_tensor_tensor(tmp_path):
    def fn(x, r):
        return x * 0.5 + r

    x, r = torch.randn(1024, 768), torch.randn(1024, 768)
    torch.testing.assert_close(_compile(fn, tmp_path)(x, r), fn(x, r), rtol=0, atol=0)
    nisa = _nisa(tmp_path)
    assert "nisa.scalar_tensor_tensor mul add" in nisa
    assert "nisa.tensor_tensor add" not in nisa


def test_bf16_scale_plus_residual_stays_two_instructions_on_trn2(tmp_path):
    # trn2's performance modes make tensor_scalar (N/4) plus tensor_tensor (N/2) cheaper than
    # scalar_tensor_tensor (2N): the cost model keeps them.
    def fn(x, r):
        return x * 0.5 + r

    x, r = (torch.randn(1024, 768, dtype=torch.bfloat16) for _ in range(2))
    torch.testing.assert_close(_compile(fn, tmp_path)(x, r), fn(x, r), rtol=0, atol=0)
    assert "scalar_tensor_tensor" not in _nisa(tmp_path)


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-5), (torch.bfloat16, 2e-2)])
def test_softmax_backward_uses_scalar_tensor_tensor(tmp_path, dtype, tol):
    # grad_x = y * g - y * sum(y * g): the per-row product and the subtraction are one
    # scalar_tensor_tensor with the row sum as its per-partition scalar.
    def fn(g, y):
        return torch.ops.aten._softmax_backward_data(g, y, -1, dtype)

    y = torch.softmax(torch.randn(512, 768), -1).to(dtype)
    g = torch.randn(512, 768).to(dtype)
    got = _compile(fn, tmp_path)(g, y)
    expected = torch.ops.aten._softmax_backward_data(g.double(), y.double(), -1, torch.float64)
    scale = expected.abs().max().item()
    assert (got.double() - expected).abs().max().item() <= tol * scale
    assert "nisa.scalar_tensor_tensor mul sub" in _nisa(tmp_path)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("shape, dim", [((300, 700), 1), ((130, 3000), 1), ((64, 9), 0)])
def test_half_scans_round_like_eagers_loop(tmp_path, op, shape, dim):
    # tensor_tensor_scan accumulates in fp32 and rounds each output once, as eager's loop over
    # bf16 does: bit-exact where each row is scanned in one piece (enough rows for the
    # partitions: no sub-row split).
    x = torch.randn(shape).to(torch.bfloat16)
    if op == "cumprod":
        x = (1 + x * 0.01).to(torch.bfloat16)

    def fn(t):
        return getattr(torch, op)(t, dim)

    torch.testing.assert_close(_compile(fn, tmp_path)(x), fn(x), rtol=0, atol=0)
    assert "nisa.tensor_tensor_scan" in _nisa(tmp_path)


@pytest.mark.parametrize("shape", [(4, 1000), (100_000,), (2, 3, 4097)])
def test_fp32_scans_are_sequential_fp32(tmp_path, shape):
    # fp32 sums one element after another in fp32 (eager's CPU loop accumulates in double):
    # within the error of a sequential fp32 sum, sqrt(L) roundings of the running value.
    x = torch.randn(shape)
    got = _compile(lambda t: torch.cumsum(t, -1), tmp_path)(x)
    expected = torch.cumsum(x.double(), -1)
    length = shape[-1]
    bound = 4 * length**0.5 * 2**-24 * expected.abs().max().item() + 1e-6
    assert (got.double() - expected).abs().max().item() <= bound
    prod = _compile(lambda t: torch.cumprod(1 + t * 1e-3, -1), tmp_path / "p")(x)
    torch.testing.assert_close(prod.double(), torch.cumprod(1 + x.double() * 1e-3, -1),
                               rtol=4 * length**0.5 * 2**-24, atol=0)


def test_scans_keep_signed_zeros_and_special_values(tmp_path):
    x = torch.tensor([[-0.0, -0.0, 1.0, float("inf"), float("nan"), 2.0],
                      [-0.0, 0.0, -0.0, -1.0, 1.0, -0.0]])
    for op in ("cumsum", "cumprod"):
        got = _compile(lambda t, op=op: getattr(torch, op)(t, 1), tmp_path / op)(x)
        expected = getattr(torch, op)(x, 1)
        torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True)
        assert torch.equal(torch.signbit(got), torch.signbit(expected)), op


@pytest.mark.parametrize("target", ["trn1", "trn2"])
@pytest.mark.parametrize(
    "shape, dims",
    [((300, 700), (1, 0)), ((2, 12, 256, 64), (0, 1, 3, 2)), ((3, 5, 7), (2, 1, 0)),
     ((4, 130, 129), (0, 2, 1))],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_transposing_permutes_go_through_the_pe_array(tmp_path, target, shape, dims, dtype):
    # Rows load contiguously, nc_transpose moves 128 x 128 blocks bit-exactly.
    x = (torch.randn(shape) * 100).to(dtype)

    def fn(t):
        return t.permute(dims).contiguous() * 1

    got = _compile(fn, tmp_path, target=target)(x)
    assert torch.equal(got, fn(x))
    assert "nisa.nc_transpose on 0" in _nisa(tmp_path)


@pytest.mark.parametrize("transpose_rhs", [False, True])
def test_trn1_matmul_operands_transpose_on_the_pe_array(tmp_path, transpose_rhs):
    # trn1 has no dma_transpose: operands whose K is contiguous load by rows and transpose on
    # the Tensor engine, instead of a DMA that moves one element per descriptor.
    a = torch.randn(513, 1000)
    b = torch.randn(257, 1000) if transpose_rhs else torch.randn(1000, 257)

    def fn(x, y):
        return x @ y.T if transpose_rhs else x @ y

    got = _compile(fn, tmp_path, target="trn1")(a, b)
    expected = fn(a.double(), b.double())
    assert ((got.double() - expected).abs().max() / expected.abs().max()).item() < 1e-6
    nisa = _nisa(tmp_path)
    assert "nisa.nc_transpose on 0" in nisa and "dma_transpose" not in nisa
