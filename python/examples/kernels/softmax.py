"""Row softmax kernel: y = exp(x - max(x)) / sum(exp(x - max(x))) along the last dim,
128 rows per tile: a max and a sum reduction (Vector), exp (Scalar), one subtract and one
multiply by the reciprocal (Vector)."""

from __future__ import annotations

import torch

from neuronsim import kernels
from neuronsim.kernels import language as nl


@kernels.jit
def softmax_kernel(x):
    rows, d = x.shape
    out = nl.ndarray((rows, d), dtype=x.dtype, buffer=nl.shared_hbm)
    full, rest = divmod(rows, 128)

    def block(start, p):
        xt = nl.load(x[nl.ds(start, p), :])
        shifted = nl.subtract(xt, nl.max(xt, axis=1), dtype=nl.float32)
        e = nl.exp(shifted)
        r = nl.reciprocal(nl.sum(e, axis=1))
        nl.store(out[nl.ds(start, p), :], value=nl.multiply(e, r, dtype=x.dtype))

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
