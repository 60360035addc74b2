"""A subset of the OpInfo sweep (bench/opinfo_sweep.py) in CI: ops of PyTorch's own operator
database that pass through the neuron backend keep passing, on PyTorch's sample inputs,
compared with eager at the sweep's tolerances. The whole sweep is a benchmark
(bench/results/opinfo.md)."""

import importlib.util
import os

import pytest
import torch

pytest.importorskip("expecttest")  # torch.testing's OpInfo database imports it

_SWEEP = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "opinfo_sweep.py")
_spec = importlib.util.spec_from_file_location("opinfo_sweep", _SWEEP)
sweep = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sweep)

# Spread over elementwise, reductions, shapes, indexing, normalization, linear algebra,
# random ops (whose OpInfo wrappers fork the accelerator's RNG state), item, indexed
# writes (indirect DMA scatters), convolution and pooling, factorizations and solvers.
OPS = [
    "abs", "add", "addcmul", "addmm", "amax", "argmax", "bmm", "cat", "clamp",
    "cos", "cumsum", "div.no_rounding_mode", "exp", "flip", "gather",
    "isnan", "log_softmax", "logsumexp", "masked_fill", "matmul", "maximum", "mean", "mm",
    "mul", "nn.functional.gelu", "nn.functional.layer_norm", "nn.functional.relu",
    "nn.functional.silu", "permute", "pow", "prod", "repeat", "rsqrt", "sigmoid", "sign",
    "softmax", "sqrt", "stack", "sum", "tanh", "transpose", "tril", "trunc", "where",
    "item", "uniform", "atan2", "slice_scatter",
    "index_put", "scatter_reduce.mean", "nn.functional.embedding_bag",
    "nn.functional.conv1d", "nn.functional.conv_transpose2d", "nn.functional.avg_pool2d",
    "nn.functional.adaptive_avg_pool2d", "native_batch_norm",
    "linalg.det", "linalg.inv", "linalg.solve", "linalg.cholesky", "linalg.qr", "linalg.lu",
    "linalg.ldl_factor", "linalg.vecdot", "cdist",
]


def _opinfo(name):
    from torch.testing._internal.common_methods_invocations import op_db

    for op in op_db:
        if op.name + (f".{op.variant_test_name}" if op.variant_test_name else "") == name:
            return op
    pytest.skip(f"no OpInfo named {name} in this torch")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("name", OPS)
def test_opinfo_samples_match_eager(name, dtype):
    op = _opinfo(name)
    if dtype not in op.supported_dtypes("cpu"):
        pytest.skip(f"{name} does not take {dtype}")
    samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:2]
    results = [sweep.run_sample(op, s, dtype, "neuron", timeout=120) for s in samples]
    counted = [r for r in results if r[0] != "eager error"]
    assert counted, "every sample failed in eager"
    assert all(r[0] == "pass" for r in counted), results
