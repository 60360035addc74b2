"""dtype names of the graph file, and the dtypes the device does not have: float64 runs as
float32 (with a warning), int16 is held as int32 (exact: partition.support_problem admits
int16 results only from ops that select or move values, never from arithmetic that could wrap
around)."""

from __future__ import annotations

import warnings

import torch

from .errors import NeuronCompileError

GRAPH_DTYPE_NAMES: dict[torch.dtype, str] = {
    torch.float32: "f32",
    torch.bfloat16: "bf16",
    torch.float16: "f16",
    torch.float64: "f64",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.int16: "i16",
    torch.int8: "i8",
    torch.uint8: "u8",
    torch.bool: "i1",
}

# Kernels only (NKI's uint32: indices of max8 / nc_find_index8, counts): tiles and HBM tensors
# of a kernel may be uint32; compiled graphs' arithmetic on them is not supported.
# fp8 (OCP e4m3fn, e5m2): kernels' tiles and tensors for now (compiled graphs: issue 32).
KERNEL_DTYPE_NAMES: dict[torch.dtype, str] = {**GRAPH_DTYPE_NAMES, torch.uint32: "u32",
                                               torch.uint16: "u16",
                                               torch.float8_e4m3fn: "f8e4m3fn",
                                               torch.float8_e5m2: "f8e5m2"}

_float64_warned = False


def warn_float64_once() -> None:
    """NeuronCores have no float64: say once per process that it runs as float32."""
    global _float64_warned
    if not _float64_warned:
        _float64_warned = True
        warnings.warn(
            "neuronsim: float64 tensors run as float32 on the neuron backend (NeuronCores have "
            "no float64); inputs are cast to float32 and outputs back to float64",
            UserWarning,
            stacklevel=2,
        )


def reset_float64_warning() -> None:
    global _float64_warned
    _float64_warned = False


def device_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype a tensor of `dtype` has on the simulated device."""
    if dtype == torch.float64:
        warn_float64_once()
        return torch.float32
    if dtype == torch.int16:  # the program format has no int16
        return torch.int32
    return dtype


def graph_dtype(dtype: torch.dtype, context: str, kernel: bool = False) -> str:
    """The graph-file name of `dtype` as it runs on the device (float64 becomes f32, int16
    i32); `kernel`: a tensor a kernel reads or writes (uint32 allowed)."""
    names = KERNEL_DTYPE_NAMES if kernel else GRAPH_DTYPE_NAMES
    name = names.get(device_dtype(dtype))
    if name is None:
        supported = ", ".join(str(d).removeprefix("torch.") for d in names)
        raise NeuronCompileError(
            f"dtype {dtype} of {context} is not supported by the neuron backend; "
            f"supported dtypes: {supported}"
        )
    return name
