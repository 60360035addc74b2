"""Row softmax kernel: y = exp(x - max(x)) / sum(exp(x - max(x))) along the last dim,
128 rows per tile: a max and a sum reduction (Vector), exp (Scalar), one subtract and one
multiply by the reciprocal (GpSimd)."""

from __future__ import annotations

import torch

from neuronsim import kernels
from neuronsim.kernels import isa as nisa
from neuronsim.kernels import language as nl


@kernels.jit
def softmax_kernel(x):
    rows, d = x.shape
    out = nl.ndarray((rows, d), dtype=x.dtype, buffer=nl.shared_hbm)
    full, rest = divmod(rows, 128)

    def block(start, p):
        xt = nl.load(x[nl.ds(start, p), :])
        # reductions on the Vector engine, the subtract and the scaling on GpSimd
        shifted = nisa.tensor_tensor(xt, nl.max(xt, axis=1), op=nl.subtract,
                                     dtype=nl.float32, engine=nisa.engine.gpsimd)
        e = nl.exp(shifted)
        r = nl.reciprocal(nl.sum(e, axis=1))
        nl.store(out[nl.ds(start, p), :],
                 value=nisa.tensor_tensor(e, r, op=nl.multiply, dtype=x.dtype,
                                          engine=nisa.engine.gpsimd))

    for i in nl.affine_range(full):
        block(i * 128, 128)
    if rest:
        block(full * 128, rest)
    return out


softmax = kernels.torch_op("neuronsim_examples::softmax", softmax_kernel)


if __name__ == "__main__":
    import neuronsim

    x = torch.randn(256, 1000)
    y = softmax_kernel(x)
    print("max error vs eager:", (y - torch.softmax(x, -1)).abs().max().item())
    neuronsim.report()
