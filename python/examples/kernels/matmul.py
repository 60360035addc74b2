"""Tiled matmul kernel: C[M, N] = A_T[K, M]^T @ B[K, N] (A given transposed, the Tensor
engine's stationary layout, as NKI's matmul tutorial takes it).

Each output block of 128 x 512 (one PSUM bank) accumulates over K in tiles of 128; the
rows of B for a block of columns (a panel) stay in SBUF while the row blocks of A stream
past them; two panels alternate so that loading the next overlaps the matmuls.
"""

from __future__ import annotations

import torch

from neuronsim import kernels
from neuronsim.kernels import isa as nisa
from neuronsim.kernels import language as nl


@kernels.jit
def matmul_kernel(a_t, b):
    k, m = a_t.shape
    k2, n = b.shape
    assert k == k2, "contraction sizes differ"
    tm, tk, tn = 128, 128, 512
    assert m % tm == 0 and k % tk == 0 and n % tn == 0, "sizes are multiples of the tiles"
    c = nl.ndarray((m, n), dtype=b.dtype, buffer=nl.shared_hbm)
    # Two K x 512 panels of B, allocated outside the loops: while the row blocks of A pass
    # one panel, the DMA queues fill the other (the semaphores order each panel's reuse).
    panels = 2 if (n // tn) % 2 == 0 else 1
    panel = [nl.ndarray((tk, (k // tk) * tn), dtype=b.dtype, buffer=nl.sbuf)
             for _ in range(panels)]
    for jj in nl.affine_range(n // tn // panels):
        for half in range(panels):  # unrolled
            j = jj * panels + half
            for kk in nl.affine_range(k // tk):
                panel[half][:, nl.ds(kk * tn, tn)] = nl.load(
                    b[nl.ds(kk * tk, tk), nl.ds(j * tn, tn)])
            for i in nl.affine_range(m // tm):
                acc = nl.ndarray((tm, tn), dtype=nl.float32, buffer=nl.psum)
                for kk in nl.affine_range(k // tk):
                    a_tile = nl.load(a_t[nl.ds(kk * tk, tk), nl.ds(i * tm, tm)])
                    acc += nisa.nc_matmul(a_tile, panel[half][:, nl.ds(kk * tn, tn)])
                nl.store(c[nl.ds(i * tm, tm), nl.ds(j * tn, tn)],
                         value=nl.copy(acc, dtype=b.dtype))
    return c


matmul = kernels.torch_op("neuronsim_examples::matmul", matmul_kernel)


if __name__ == "__main__":
    import neuronsim

    a = torch.randn(512, 256)
    b = torch.randn(512, 1024)
    c = matmul_kernel(a, b)
    print("max error vs eager:", (c - a.T @ b).abs().max().item())
    neuronsim.report()
