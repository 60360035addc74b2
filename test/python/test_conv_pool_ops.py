"""Convolution, pooling and normalization ops compiled vs eager, forward and backward.

The importer expands them in compiler/Import/AtenConvolution.cpp (1-D/3-D, grouped, dilated
and transposed convolutions and their backward), AtenPooling.cpp (N-d average, max and
adaptive pooling and their backward) and the batch norm importers. Each case runs a
function through torch.compile(backend="neuron") and eager on the same inputs and compares
the outputs and the gradients of every float input for one fixed random upstream gradient:
fp32 at rtol 1e-4 / atol 1e-4, bf16 at rtol 2e-2 / atol 2e-2 times the output's scale (eager
rounds bf16 results once; the compiled expansions accumulate in fp32 and round once too, but
the order of the sums differs). Integer outputs (pooling indices) are compared exactly.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import neuronsim

aten = torch.ops.aten
FP32 = {"rtol": 1e-4, "atol": 1e-4}


def bf16_tolerance(reference: torch.Tensor) -> dict:
    if reference.numel() == 0:
        return {"rtol": 0, "atol": 0}
    scale = max(reference.detach().float().abs().max().item(), 1.0)
    return {"rtol": 2e-2, "atol": 2e-2 * scale}


def tolerance(reference: torch.Tensor) -> dict:
    return bf16_tolerance(reference) if reference.dtype == torch.bfloat16 else FP32


def leaves(args, grad: bool):
    return [
        a.detach().clone().requires_grad_(grad and a.is_floating_point())
        if isinstance(a, torch.Tensor)
        else a
        for a in args
    ]


def as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def eager_in_fp32(fn):
    """fn on fp32 copies of its bf16 inputs, float outputs rounded back to bf16: the reference
    where eager has no bf16 CPU kernel (avg_pool3d, antialiased interpolation)."""

    def wrapped(*args):
        up = [a.float() if isinstance(a, torch.Tensor) and a.is_floating_point() else a
              for a in args]
        out = as_tuple(fn(*up))
        return tuple(o.bfloat16() if o.is_floating_point() else o for o in out)

    return wrapped


def check(fn, *args, backward: bool = True, seed: int = 0, reference=None):
    """fn compiled vs eager (or `reference`): every output, then (backward) the gradients of
    the float inputs for the upstream gradient g of the first output: d(sum(out * g))/d input."""
    torch._dynamo.reset()
    compiled_args, eager_args = leaves(args, backward), leaves(args, backward)
    got = as_tuple(torch.compile(fn, backend="neuron", dynamic=False)(*compiled_args))
    assert neuronsim.last_run_stats()["instructions"] > 0
    want = as_tuple((reference or fn)(*eager_args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        if w.is_floating_point():
            torch.testing.assert_close(g, w, equal_nan=True, **tolerance(w))
        else:
            torch.testing.assert_close(g, w, rtol=0, atol=0)
    if not backward:
        return
    upstream = torch.randn(want[0].shape, generator=torch.Generator().manual_seed(seed))
    upstream = upstream.to(want[0].dtype)
    inputs_c = [a for a in compiled_args if isinstance(a, torch.Tensor) and a.requires_grad]
    inputs_e = [a for a in eager_args if isinstance(a, torch.Tensor) and a.requires_grad]
    grads_c = torch.autograd.grad(got[0], inputs_c, upstream)
    grads_e = torch.autograd.grad(want[0], inputs_e, upstream)
    for gc, ge in zip(grads_c, grads_e):
        assert gc.shape == ge.shape and gc.dtype == ge.dtype
        torch.testing.assert_close(gc, ge, **tolerance(ge))


def randn(*shape, dtype=torch.float32, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


DTYPES = [torch.float32, torch.bfloat16]

# --- convolutions -------------------------------------------------------------------------

CONVS = {
    # name: (functional, input shape, weight shape, kwargs)
    "conv1d": (F.conv1d, (2, 4, 11), (6, 2, 3), dict(stride=2, padding=1, dilation=2, groups=2)),
    "conv1d_depthwise": (F.conv1d, (1, 3, 9), (3, 1, 4), dict(padding=2, groups=3)),
    "conv2d_grouped": (F.conv2d, (2, 4, 7, 6), (8, 2, 3, 2),
                       dict(stride=(2, 1), padding=1, groups=2)),
    "conv3d": (F.conv3d, (2, 4, 5, 6, 7), (6, 2, 2, 3, 2),
               dict(stride=(1, 2, 1), padding=(1, 0, 1), dilation=(2, 1, 1), groups=2)),
    "conv3d_plain": (F.conv3d, (1, 2, 4, 4, 4), (3, 2, 3, 3, 3), dict()),
    "conv_transpose1d": (F.conv_transpose1d, (2, 4, 11), (4, 5, 3), dict(stride=3)),
    "conv_transpose2d": (F.conv_transpose2d, (2, 4, 5, 6), (4, 3, 3, 2),
                         dict(stride=2, padding=1, output_padding=1, groups=2, dilation=(1, 2))),
    "conv_transpose2d_plain": (F.conv_transpose2d, (1, 3, 4, 4), (3, 2, 2, 2), dict(stride=2)),
    "conv_transpose3d": (F.conv_transpose3d, (1, 4, 3, 4, 3), (4, 3, 2, 2, 3),
                         dict(stride=2, padding=1, output_padding=(1, 0, 1))),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(CONVS))
def test_convolution_forward_and_backward(name, dtype):
    fn, x_shape, w_shape, kwargs = CONVS[name]
    transposed = "transpose" in name
    out_channels = w_shape[1] * kwargs.get("groups", 1) if transposed else w_shape[0]
    x = randn(*x_shape, dtype=dtype, seed=1)
    w = randn(*w_shape, dtype=dtype, seed=2)
    b = randn(out_channels, dtype=dtype, seed=3)
    check(lambda x, w, b: fn(x, w, b, **kwargs), x, w, b)


def test_convolution_without_bias_backward_of_input_only():
    w = randn(5, 3, 3)
    check(lambda x: F.conv1d(x, w, padding=1), randn(2, 3, 8))


# --- pooling --------------------------------------------------------------------------------

POOLS = {
    "avg_pool1d_ceil": (lambda x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True), (2, 3, 10)),
    "avg_pool2d_ceil_exclude_pad": (
        lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), (2, 3, 9, 10)),
    "avg_pool2d_ceil_include_pad": (
        lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), (2, 3, 8, 8)),
    "avg_pool2d_divisor": (
        lambda x: F.avg_pool2d(x, (3, 2), 2, 1, divisor_override=5), (2, 3, 9, 10)),
    "avg_pool2d_chw": (lambda x: F.avg_pool2d(x, 2), (3, 6, 8)),
    "avg_pool3d": (lambda x: F.avg_pool3d(x, 2, (1, 2, 2), 1, ceil_mode=True), (2, 3, 5, 6, 7)),
    "avg_pool3d_exclude_pad": (
        lambda x: F.avg_pool3d(x, 3, 2, 1, count_include_pad=False, divisor_override=None),
        (1, 2, 5, 5, 6)),
    "adaptive_avg_pool1d": (lambda x: F.adaptive_avg_pool1d(x, 4), (2, 3, 11)),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, (4, 3)), (2, 3, 9, 10)),
    "adaptive_avg_pool2d_upscale": (lambda x: F.adaptive_avg_pool2d(x, (7, 5)), (1, 2, 3, 4)),
    "adaptive_avg_pool3d": (lambda x: F.adaptive_avg_pool3d(x, (2, 4, 3)), (2, 3, 5, 6, 7)),
    "interpolate_area": (lambda x: F.interpolate(x, size=(4, 7), mode="area"), (2, 3, 9, 10)),
    "interpolate_antialias_down": (
        lambda x: F.interpolate(x, size=(4, 13), mode="bilinear", antialias=True), (2, 3, 9, 10)),
    "interpolate_antialias_scale": (
        lambda x: F.interpolate(x, scale_factor=0.4, mode="bilinear", antialias=True),
        (1, 2, 11, 8)),
    "interpolate_antialias_align_corners": (
        lambda x: F.interpolate(x, size=(11, 3), mode="bilinear", antialias=True,
                                align_corners=True), (1, 2, 5, 6)),
    "adaptive_max_pool1d": (lambda x: F.adaptive_max_pool1d(x, 4, return_indices=True), (2, 3, 11)),
    "adaptive_max_pool2d": (lambda x: F.adaptive_max_pool2d(x, (4, 3), return_indices=True),
                            (2, 3, 9, 10)),
    "adaptive_max_pool2d_upscale": (lambda x: F.adaptive_max_pool2d(x, (5, 6), return_indices=True),
                                    (3, 4, 3)),
    "adaptive_max_pool3d": (lambda x: F.adaptive_max_pool3d(x, (2, 4, 3), return_indices=True),
                            (2, 3, 5, 6, 7)),
    "max_pool3d": (
        lambda x: F.max_pool3d(x, 2, (1, 2, 2), 1, return_indices=True), (2, 3, 5, 6, 7)),
    "max_pool3d_dilation_ceil": (
        lambda x: F.max_pool3d(x, 2, 2, 1, dilation=(1, 2, 1), ceil_mode=True, return_indices=True),
        (1, 2, 6, 7, 5)),
    "max_pool2d_chw": (lambda x: F.max_pool2d(x, 3, 2, 1), (3, 9, 10)),
    "max_pool2d_chw_dilation": (lambda x: F.max_pool2d(x, 2, 2, 1, dilation=2, ceil_mode=True),
                                (2, 7, 7)),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(POOLS))
def test_pooling_forward_and_backward(name, dtype):
    fn, shape = POOLS[name]
    x = randn(*shape, dtype=dtype, seed=4)
    reference = None
    if dtype == torch.bfloat16 and name.startswith(("avg_pool3d", "interpolate_antialias")):
        with pytest.raises(NotImplementedError):  # eager has no bf16 CPU kernel
            fn(x)
        reference = eager_in_fp32(fn)
    check(fn, x, reference=reference)


def test_max_pooling_indices_with_ties_and_nan():
    # Small integers: many equal maxima (the first in row-major order wins); a NaN wins.
    x = torch.randint(-2, 3, (1, 2, 5, 6, 7), generator=torch.Generator().manual_seed(5)).float()
    x[0, 1, 2, 3, 4] = float("nan")
    check(lambda x: F.max_pool3d(x, 2, 2, 1, return_indices=True), x, backward=False)
    check(lambda x: F.adaptive_max_pool3d(x, (3, 4, 2), return_indices=True), x, backward=False)


def test_adaptive_average_of_non_finite_values_stays_in_its_windows():
    """An inf or NaN reaches only the outputs whose windows hold it (a zero weight never
    multiplies it)."""
    x = randn(1, 2, 9, 10, seed=7)
    x[0, 0, 3, 4] = float("inf")
    x[0, 1, 8, 0] = float("nan")
    check(lambda x: F.adaptive_avg_pool2d(x, (4, 3)), x, backward=False)
    check(lambda x: F.interpolate(x, size=(4, 6), mode="bilinear", antialias=True), x,
          backward=False)


def test_max_pool2d_backward_on_unbatched_input_in_a_module():
    """The issue's report: max_pool2d backward on a 3-D [C, H, W] input killed the process."""
    pool = torch.nn.MaxPool2d(2)
    x = randn(4, 8, 6, seed=6)
    check(lambda x: pool(torch.relu(x)), x)


# --- normalization --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_batch_norm_eval_returns_empty_saved_statistics(dtype):
    x = randn(2, 3, 5, 4, dtype=dtype)
    w, b, m = (randn(3, seed=s, dtype=dtype) for s in (1, 2, 3))
    v = randn(3, seed=4, dtype=dtype).abs() + 0.5
    check(lambda x, w, b, m, v: aten.native_batch_norm(x, w, b, m, v, False, 0.1, 1e-5),
          x, w, b, m, v, backward=False)
    check(lambda x, w, b, m, v: aten._native_batch_norm_legit(x, w, b, m, v, False, 0.1, 1e-3),
          x, w, b, m, v, backward=False)


def test_batch_norm_without_running_statistics():
    x = randn(4, 3, 5)
    check(lambda x, w, b: aten._native_batch_norm_legit(x, w, b, True, 0.1, 1e-5),
          x, randn(3, seed=1), randn(3, seed=2), backward=False)


def test_batch_norm_with_update_updates_the_running_statistics():
    def fn(x, w, b, m, v):
        out = aten._batch_norm_with_update(x, w, b, m, v, 0.2, 1e-5)
        return out[0], out[1], out[2], m * 1, v * 1  # the running stats after the update

    x = randn(4, 3, 5, 2)
    stats = [randn(3, seed=1), randn(3, seed=2), randn(3, seed=3), randn(3, seed=4).abs() + 0.5]
    check(fn, x, *stats, backward=False)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_batchnorm_module_training_matches_eager_and_updates_running_stats(dtype):
    torch.manual_seed(0)
    eager = torch.nn.BatchNorm2d(3).to(dtype)
    compiled_module = torch.nn.BatchNorm2d(3).to(dtype)
    compiled_module.load_state_dict(eager.state_dict())
    compiled = torch.compile(compiled_module, backend="neuron", dynamic=False)
    x = randn(4, 3, 5, 6, dtype=dtype)
    xc, xe = x.clone().requires_grad_(), x.clone().requires_grad_()
    got, want = compiled(xc), eager(xe)
    torch.testing.assert_close(got, want, **tolerance(want))
    got.sum().backward()
    (want.sum()).backward()
    torch.testing.assert_close(xc.grad, xe.grad, **tolerance(xe.grad))
    for name in ("running_mean", "running_var"):
        r = getattr(eager, name)
        torch.testing.assert_close(getattr(compiled_module, name), r, **tolerance(r))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_group_norm_module_training(dtype):
    torch.manual_seed(0)
    norm = torch.nn.GroupNorm(3, 6).to(dtype)
    with torch.no_grad():
        norm.weight.copy_(randn(6, seed=1))
        norm.bias.copy_(randn(6, seed=2))
    check(lambda x: norm(x), randn(2, 6, 5, 4, dtype=dtype, seed=3))
    # The parameters' gradients too.
    x = randn(2, 6, 5, 4, dtype=dtype, seed=3)
    torch._dynamo.reset()
    norm.zero_grad()
    torch.compile(norm, backend="neuron", dynamic=False)(x).square().sum().backward()
    got = (norm.weight.grad.clone(), norm.bias.grad.clone())
    norm.zero_grad()
    norm(x).square().sum().backward()
    for g, w in zip(got, (norm.weight.grad, norm.bias.grad)):
        torch.testing.assert_close(g, w, **tolerance(w))


# --- other ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_bilinear_layer(dtype):
    x1, x2 = randn(4, 3, dtype=dtype, seed=1), randn(4, 5, dtype=dtype, seed=2)
    w, b = randn(2, 3, 5, dtype=dtype, seed=3), randn(2, dtype=dtype, seed=4)
    check(lambda x1, x2, w, b: F.bilinear(x1, x2, w, b), x1, x2, w, b)


@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_grid_sample_bilinear(padding_mode, align_corners, dtype):
    # Points inside, on the edges and up to 0.4 outside the input.
    grid = (torch.rand(2, 7, 6, 2, generator=torch.Generator().manual_seed(8)) * 2.8 - 1.4)
    grid[0, 0, 0] = torch.tensor([-1.0, 1.0])
    x = randn(2, 3, 5, 9, dtype=dtype)

    def fn(x, g):
        return F.grid_sample(x, g, mode="bilinear", padding_mode=padding_mode,
                             align_corners=align_corners)

    # In bf16 the sampling positions are rounded to bf16 step by step, as eager's kernel
    # computes them.
    check(fn, x, grid.to(dtype), backward=False)


def test_grid_sample_reflection_is_a_clear_error():
    fn = lambda x, g: F.grid_sample(x, g, padding_mode="reflection")  # noqa: E731
    with pytest.raises(neuronsim.NeuronCompileError, match="reflection"):
        torch.compile(fn, backend="neuron", dynamic=False)(randn(1, 2, 4, 4), randn(1, 3, 3, 2))


def test_unfold_of_a_0d_tensor():
    check(lambda x: x.unfold(0, 1, 1) * 2, torch.tensor(3.0), backward=False)
    # Size 0: an empty [0] result (no instructions to run).
    fn = lambda x: x.unfold(-1, 0, 2) + 1  # noqa: E731
    got = torch.compile(fn, backend="neuron", dynamic=False)(torch.tensor(3.0))
    assert got.shape == (0,) and got.dtype == torch.float32


@pytest.mark.parametrize("mode,kwargs", [
    ("nearest", {}),
    ("bilinear", {"align_corners": True}),
    ("bilinear", {"align_corners": False}),
])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_interpolate_forward(mode, kwargs, dtype):
    x = randn(2, 3, 5, 6, dtype=dtype)
    check(lambda x: F.interpolate(x, scale_factor=2, mode=mode, **kwargs), x, backward=False)
    check(lambda x: F.interpolate(x, size=(7, 4), mode=mode, **kwargs), x, backward=False)
