"""Reductions and normalizations in fp16 and bf16 on inputs that break naive lowerings,
compiled vs eager: rows whose sums overflow the dtype (eager accumulates in fp32, its
acc_type), rows with +-inf, with NaN, of signed zeros, and ordinary rows, several of them
(a lowering that confuses rows shows). Every reduction and normalization op of PyTorch's
OpInfo database is here (test_sweep_covers_opinfo checks the list against this torch's).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import neuronsim

ROW = 48  # elements per row; 6 rows


def _rows(dtype: torch.dtype) -> torch.Tensor:
    """[6, ROW]: overflowing sum, +inf, -inf and +inf, NaN, signed zeros, ordinary values."""
    g = torch.Generator().manual_seed(29)
    big = 20000.0 if dtype == torch.float16 else 1e37  # ROW of them pass the dtype's max
    x = torch.randn(6, ROW, generator=g)
    x[0] = big * (1 + 0.1 * torch.rand(ROW, generator=g))
    x[1, 7] = float("inf")
    x[2, 3], x[2, 40] = float("-inf"), float("inf")
    x[3, 11] = float("nan")
    x[4] = torch.where(torch.rand(ROW, generator=g) < 0.5, -0.0, 0.0)
    return x.to(dtype)


def _nonfinite_free(dtype: torch.dtype) -> torch.Tensor:
    """Rows of the overflowing sum, signed zeros and ordinary values only (normalizations
    of a row with inf or NaN are NaN everywhere, which says nothing about the lowering)."""
    x = _rows(dtype)
    return x[[0, 4, 5, 5]].clone()


# (name, fn, input): fn(x) reduces along the last dim unless its name says otherwise.
CASES = [
    ("sum", lambda x: x.sum(-1), _rows),
    ("sum.all", lambda x: x[4:].sum(), _rows),
    ("mean", lambda x: x.mean(-1), _rows),
    ("mean.all", lambda x: x[[0, 5]].mean(), _rows),
    ("nansum", lambda x: torch.nansum(x, -1), _rows),
    ("nanmean", lambda x: torch.nanmean(x, -1), _rows),
    ("prod", lambda x: x[:, :4].prod(-1), _rows),
    ("amax", lambda x: x.amax(-1), _rows),
    ("amin", lambda x: x.amin(-1), _rows),
    ("max.dim", lambda x: x.max(-1), _rows),
    ("min.dim", lambda x: x.min(-1), _rows),
    ("argmax", lambda x: x.argmax(-1), _rows),
    ("argmin", lambda x: x.argmin(-1), _rows),
    ("aminmax", lambda x: torch.aminmax(x, dim=-1), _rows),
    ("var", lambda x: x.var(-1), _rows),
    ("std", lambda x: x.std(-1), _rows),
    # eager's Welford mean is NaN in a row with an inf (inf - inf) where mean() is +-inf
    ("var_mean", lambda x: torch.var_mean(x, -1, correction=0), _nonfinite_free),
    ("std_mean", lambda x: torch.std_mean(x, -1), _nonfinite_free),
    ("var_mean.var", lambda x: torch.var_mean(x, -1)[0], _rows),
    ("logsumexp", lambda x: torch.logsumexp(x, -1), _rows),
    ("norm", lambda x: torch.linalg.vector_norm(x, dim=-1), _rows),
    ("norm.1", lambda x: torch.linalg.vector_norm(x, 1, dim=-1), _rows),
    ("norm.inf", lambda x: torch.linalg.vector_norm(x, float("inf"), dim=-1), _rows),
    ("count_nonzero", lambda x: torch.count_nonzero(x, -1), _rows),
    ("all", lambda x: x.all(-1), _rows),
    ("any", lambda x: x.any(-1), _rows),
    ("sum.dims", lambda x: x.reshape(3, 2, ROW).sum((-1, -2)), _rows),
    ("softmax", lambda x: torch.softmax(x, -1), _rows),
    ("log_softmax", lambda x: torch.log_softmax(x, -1), _rows),
    ("layer_norm", lambda x: F.layer_norm(x, (ROW,)), _nonfinite_free),
    ("rms_norm", lambda x: F.rms_norm(x, (ROW,)), _nonfinite_free),
    ("group_norm", lambda x: F.group_norm(x.reshape(2, 4, ROW // 2), 2), _nonfinite_free),
    ("batch_norm", lambda x: F.batch_norm(x.t().reshape(ROW, 4, 1), None, None, training=True),
     _nonfinite_free),
    ("instance_norm", lambda x: F.instance_norm(x.reshape(2, 2, ROW)), _nonfinite_free),
    ("normalize", lambda x: F.normalize(x, dim=-1), _nonfinite_free),
    ("local_response_norm", lambda x: F.local_response_norm(x.reshape(2, 2, ROW), 2),
     _nonfinite_free),
    ("linalg.norm", lambda x: torch.linalg.norm(x, dim=-1), _rows),
    ("renorm", lambda x: torch.renorm(x, 2, 0, 1.0), _nonfinite_free),
    ("masked.sum", lambda x: torch.masked.sum(x, -1, mask=_mask(x)), _rows),
    ("masked.mean", lambda x: torch.masked.mean(x, -1, mask=_mask(x)), _rows),
    ("masked.prod", lambda x: torch.masked.prod(x[:, :6], -1, mask=_mask(x[:, :6])), _rows),
    ("masked.amax", lambda x: torch.masked.amax(x, -1, mask=_mask(x)), _rows),
    ("masked.amin", lambda x: torch.masked.amin(x, -1, mask=_mask(x)), _rows),
    ("masked.argmax", lambda x: torch.masked.argmax(x, -1, mask=_mask(x)), _rows),
    ("masked.argmin", lambda x: torch.masked.argmin(x, -1, mask=_mask(x)), _rows),
    ("masked.logsumexp", lambda x: torch.masked.logsumexp(x, -1, mask=_mask(x)), _rows),
    ("masked.norm", lambda x: torch.masked.norm(x, 2.0, -1, mask=_mask(x)), _rows),
    ("masked.var", lambda x: torch.masked.var(x, -1, mask=_mask(x)), _nonfinite_free),
    ("masked.std", lambda x: torch.masked.std(x, -1, mask=_mask(x)), _nonfinite_free),
    ("masked.normalize", lambda x: torch.masked.normalize(x, 2.0, -1, mask=_mask(x)),
     _nonfinite_free),
]  # fmt: skip

# OpInfo reductions and normalizations and the cases that cover them; the others and why not.
COVERED = {
    "all": "all", "amax": "amax", "amin": "amin", "any": "any", "argmax": "argmax",
    "argmin": "argmin", "count_nonzero": "count_nonzero", "linalg.vector_norm": "norm",
    "mean": "mean", "nanmean": "nanmean", "nansum": "nansum", "prod": "prod", "std": "std",
    "sum": "sum", "var": "var", "linalg.norm": "linalg.norm", "norm": "norm",
    "renorm": "renorm", "native_layer_norm": "layer_norm",
    "nn.functional.layer_norm": "layer_norm", "nn.functional.rms_norm": "rms_norm",
    "native_group_norm": "group_norm", "nn.functional.group_norm": "group_norm",
    "native_batch_norm": "batch_norm", "_native_batch_norm_legit": "batch_norm",
    "_batch_norm_with_update": "batch_norm", "nn.functional.batch_norm": "batch_norm",
    "nn.functional.instance_norm": "instance_norm", "nn.functional.normalize": "normalize",
    "nn.functional.local_response_norm": "local_response_norm",
    **{f"masked.{n}": f"masked.{n}" for n in (
        "sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "logsumexp", "norm", "var",
        "std", "normalize")},
}  # fmt: skip
NOT_REDUCTIONS = {
    "hash_tensor": "a hash of the bits, not arithmetic",
    "log_normal": "a random distribution", "normal": "a random distribution",
}  # fmt: skip


def _mask(x: torch.Tensor) -> torch.Tensor:
    """Every third element masked out (none of a row's whole)."""
    return (torch.arange(x.shape[-1]) % 3 != 1).expand(x.shape)

# Relative tolerance per dtype: two roundings apart (eager rounds an fp32 result once).
RTOL = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def _assert_matches(got, want, dtype):
    if isinstance(want, (tuple, list)):
        for g, w in zip(got, want, strict=True):
            _assert_matches(g, w, dtype)
        return
    assert got.dtype == want.dtype and got.shape == want.shape
    if not want.dtype.is_floating_point:
        assert torch.equal(got, want)
        return
    torch.testing.assert_close(got, want, rtol=RTOL[dtype], atol=RTOL[dtype], equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("name,fn,make", CASES, ids=[c[0] for c in CASES])
def test_reduction_matches_eager(name, fn, make, dtype):
    x = make(dtype)
    want = fn(x)
    got = torch.compile(fn, backend="neuron", dynamic=False)(x)
    assert neuronsim.last_run_stats()["instructions"] > 0
    _assert_matches(got, want, dtype)


def test_sweep_covers_opinfo():
    pytest.importorskip("expecttest")  # torch.testing's OpInfo database imports it
    from torch.testing._internal.common_methods_invocations import op_db
    from torch.testing._internal.opinfo.core import ReductionOpInfo

    names = {o.name for o in op_db if isinstance(o, ReductionOpInfo)}
    names |= {o.name for o in op_db if "norm" in o.name and not o.name.startswith("linalg.matrix")}
    cases = {c[0] for c in CASES}
    assert all(case in cases for case in COVERED.values())
    missing = names - set(COVERED) - set(NOT_REDUCTIONS)
    assert not missing, f"OpInfo reductions or normalizations without a case: {sorted(missing)}"
