"""Custom tile kernels in Python (README: "Custom tile kernels").

    from neuronsim import kernels
    from neuronsim.kernels import language as nl, isa as nisa

    @kernels.jit
    def add_one(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(x.shape[0] // 128):
            t = nl.load(x[i * 128 : (i + 1) * 128, :])
            nl.store(out[i * 128 : (i + 1) * 128, :], value=t + 1.0)
        return out

A kernel traces to ntile loop nests (the compiler's own tile form), runs on the simulator
when called on CPU tensors, and becomes a PyTorch op with kernels.torch_op(...) that
torch.compile(backend="neuron") compiles into the graph's program.
"""

from . import isa, language
from .ir import KernelError
from .kernel import Kernel, jit, torch_op

__all__ = ["Kernel", "KernelError", "isa", "jit", "language", "torch_op"]
