"""What both NKI dialects share: dtypes (NKI's, numpy's and torch's), ops given as numpy
functions, and the current kernel's dialect."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch

from ..kernels import ir
from ..kernels.tracer import _current, error

# neuronsim.nki's own frames are skipped when naming a kernel's source line.
ir.LANGUAGE_DIRS.add(os.path.dirname(os.path.abspath(__file__)))


class UnsupportedDType:
    """An NKI dtype the simulator has no device type for: using it is an error naming it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.__name__ = name

    def __repr__(self) -> str:
        return f"nl.{self.name}"


_NUMPY = {
    np.dtype(np.float32): torch.float32,
    np.dtype(np.float16): torch.float16,
    np.dtype(np.int32): torch.int32,
    np.dtype(np.int64): torch.int64,
    np.dtype(np.int16): torch.int16,
    np.dtype(np.int8): torch.int8,
    np.dtype(np.uint8): torch.uint8,
    np.dtype(np.uint32): torch.uint32,
    np.dtype(np.uint16): torch.uint16,
    np.dtype(np.bool_): torch.bool,
    np.dtype(np.float64): torch.float32,  # NeuronCores have no float64 (as compiled graphs)
}


def torch_dtype(dtype: Any, what: str = "dtype") -> torch.dtype:
    """A torch dtype from an NKI, numpy or torch dtype (or a name)."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if isinstance(dtype, UnsupportedDType):
        raise error(f"{what} {dtype.name}: NeuronSim's kernels do not support it yet "
                    "(float32, bfloat16, float16, float8_e4m3fn, float8_e5m2, int32, int16, int8, "
                    "uint8, uint16, uint32 and bool are)"
                    + ("; NKI's float8_e4m3 is IEEE-style e4m3 (max 240), which has no PyTorch "
                       "dtype" if dtype.name == "float8_e4m3" else ""))
    if isinstance(dtype, str) and dtype == "bfloat16":
        return torch.bfloat16
    try:
        npd = np.dtype(dtype)
    except TypeError:
        raise error(f"{what} {dtype!r} is not a dtype") from None
    if npd.name == "bfloat16":  # ml_dtypes' bfloat16
        return torch.bfloat16
    found = _NUMPY.get(npd)
    if found is None:
        raise error(f"{what} {npd.name} is not supported by NeuronSim's kernels")
    return found


def dialect() -> str | None:
    return _current[-1].dialect if _current else None


def is_dst_first() -> bool:
    return dialect() == "nki"


# numpy functions accepted where NKI takes an op (nl.add, nl.exp, ...): resolved by name.
NUMPY_OPS = {
    "add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "divide",
    "true_divide": "divide", "maximum": "maximum", "minimum": "minimum", "power": "power",
    "equal": "equal", "not_equal": "not_equal", "less": "less", "less_equal": "less_equal",
    "greater": "greater", "greater_equal": "greater_equal", "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or", "exp": "exp", "log": "log", "tanh": "tanh", "sqrt": "sqrt",
    "square": "square", "abs": "abs", "absolute": "abs", "negative": "negative", "sin": "sin",
    "cos": "cos", "arctan": "arctan", "reciprocal": "reciprocal", "sum": "sum", "max": "max",
    "min": "min", "amax": "max", "amin": "min", "copy": "copy",
}


def resolve_op(op: Any) -> Any:
    """An nl op for `op` (an nl op, or a numpy function such as np.add / np.exp)."""
    from . import language as nl

    if isinstance(op, np.ufunc) or (callable(op) and getattr(op, "__module__", "") == "numpy"):
        name = NUMPY_OPS.get(getattr(op, "__name__", ""))
        if name is None:
            raise error(f"numpy function {getattr(op, '__name__', op)!r} is not an op NKI "
                        "instructions take")
        return getattr(nl, name)
    return op
