"""TorchNeuron's NKI entry points over NeuronSim's kernel language (neuronsim.kernels, whose
constructs carry NKI's names): nki_op registers a PyTorch custom op, wrap_nki launches a
kernel with a grid."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from neuronsim import kernels


def nki_op(
    name: str,
    fn: Callable[..., Any] | None = None,
    *,
    mutates_args: str | Sequence[str] = (),
    device_types: str | Sequence[str] | None = None,
    schema: str | None = None,
) -> Any:
    """`@torch_neuronx.nki_op("ns::op", mutates_args=())`: registers `fn` as the PyTorch op
    torch.ops.ns.op, usable in eager mode and inside torch.compile(fullgraph=True).

    - `fn` a kernel (neuronsim.kernels.jit): kernels.torch_op(name, fn), whose instructions are
      spliced into compiled programs; autograd with torch.library.register_autograd(name, ...).
    - `fn` a Python function (calling kernels and PyTorch ops, type-annotated as
      torch.library.custom_op requires): torch.library.custom_op's op (with register_fake and
      register_autograd); inside torch.compile(backend="neuron") a non-mutating one is traced
      through its body, so the kernels it calls compile into the graph's program.
    """

    def register(function: Callable[..., Any]) -> Any:
        if isinstance(function, kernels.Kernel):
            if mutates_args:
                raise ValueError(
                    f"nki_op {name!r}: a kernel returns the tensors it writes; it takes no "
                    f"mutates_args (got {mutates_args!r})"
                )
            return kernels.torch_op(name, function)
        op = torch.library.custom_op(
            name, function, mutates_args=mutates_args, device_types=device_types, schema=schema
        )
        if not mutates_args:
            from neuronsim import grouped_mm

            grouped_mm.LIBRARY_OP_DECOMPOSITIONS[name] = function
        return op

    return register if fn is None else register(fn)


class _Launcher:
    def __init__(self, kernel: kernels.Kernel, grid: tuple[int, ...]) -> None:
        self.kernel, self.grid = kernel, grid

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.kernel(*args, **kwargs)


class wrap_nki:  # noqa: N801 - TorchNeuron's name
    """`torch_neuronx.wrap_nki(kernel)[lnc](*args)`: calls `kernel` on one device. The launch
    grid may be 1 or 2 (the logical core's physical cores): a NeuronSim kernel drives the
    whole logical core (the compiler splits its independent loops across the cores of a
    trn2-lnc2 device), so both run the same program. `wrap_nki(kernel)(*args)` is the same as
    calling the kernel."""

    def __init__(self, kernel: Any) -> None:
        if not isinstance(kernel, kernels.Kernel):
            raise TypeError(
                f"wrap_nki takes a kernel made with neuronsim.kernels.jit, got "
                f"{type(kernel).__name__}"
            )
        self.kernel = kernel

    def __getitem__(self, grid: Any) -> _Launcher:
        dims = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
        if not dims or any(not isinstance(d, int) or d < 1 for d in dims) or (
            dims[0] > 2 or any(d != 1 for d in dims[1:])
        ):
            raise ValueError(
                f"wrap_nki(...)[{grid!r}]: the launch grid must be 1 or 2 (physical cores of a "
                f"logical core); NeuronSim kernels do not take a program grid"
            )
        return _Launcher(self.kernel, dims)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.kernel(*args, **kwargs)
