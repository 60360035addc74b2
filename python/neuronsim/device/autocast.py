"""torch.autocast("neuron"): ops that run in the autocast dtype on the device, as on the CPU
(matmuls, linear, convolutions, attention); every other op runs in its own dtype."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils import _pytree as pytree

# The lower-precision ops of PyTorch's CPU autocast policy that exist as ATen overloads here.
LOWER_PRECISION = (
    "mm.default", "bmm.default", "addmm.default", "baddbmm.default", "addbmm.default",
    "linear.default", "matmul.default", "conv1d.default", "conv2d.default", "conv3d.default",
    "conv_transpose1d.default", "conv_transpose2d.input", "conv_transpose3d.input",
    "_convolution.default", "prelu.default", "scaled_dot_product_attention.default",
)  # fmt: skip

_AUTOCAST_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)


def _lower(op: torch._ops.OpOverload):
    def kernel(*args: Any, **kwargs: Any) -> Any:
        dtype = torch.get_autocast_dtype("neuron")

        def cast(t: torch.Tensor) -> torch.Tensor:
            return t.to(dtype) if t.is_floating_point() and t.device.type == "neuron" else t

        args, kwargs = pytree.tree_map_only(torch.Tensor, cast, (args, kwargs))
        with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_KEYS):
            return op(*args, **kwargs)

    return kernel


def register(fallthrough: torch.library.Library, kernels: torch.library.Library) -> None:
    fallthrough.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    for name in LOWER_PRECISION:
        op_name, overload = name.split(".")
        op = getattr(getattr(torch.ops.aten, op_name), overload)
        kernels.impl(op, _lower(op), "AutocastPrivateUse1")
