"""LDL^T with Bunch-Kaufman pivoting (linalg.ldl_factor_ex, linalg.ldl_solve) as
decompositions (see linalg.py for the unrolling and the size cap).

ldl_factor is LAPACK's dsytf2 for the lower triangle (what eager's sytrf runs up to 64x64;
its blocked form above computes the same steps with other rounding): at step k the pivot
is 1x1 (column k, possibly after a symmetric swap with row and column imax) or 2x2
(columns k and k+1), chosen by dsytf2's tests with alpha = (1 + sqrt(17)) / 8 on the data. Both kinds are computed and selected per matrix; a
2x2 step makes the next step a no-op for that matrix. The trailing matrix is kept full and
symmetric, so a row of it is a column. pivots are dsytf2's (1-based; -(kp) twice for a 2x2
block), info the first zero column (then that step does nothing, as in dsytf2).
ldl_solve is dsytrs: the swaps and block solves forwards with L and D, backwards with L^T.
"""

from __future__ import annotations

import math

import torch

from .linalg import _rows

_ALPHA = (1.0 + math.sqrt(17.0)) / 8.0


def _pick(x: torch.Tensor, mask: torch.Tensor, dim: int) -> torch.Tensor:
    """The one entry of x along dim where mask holds (a sum with zeros: exact)."""
    return torch.where(mask, x, torch.zeros((), dtype=x.dtype)).sum(dim, keepdim=True)


def _swap_symmetric(t: torch.Tensor, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """t with rows u and v swapped, then columns u and v (u, v int [..., 1, 1])."""
    n = t.shape[-1]
    rows = _rows(n, t)
    at_u, at_v = rows == u, rows == v
    row_u, row_v = _pick(t, at_u, -2), _pick(t, at_v, -2)
    t = torch.where(at_u, row_v, torch.where(at_v, row_u, t))
    cols_u, cols_v = at_u.mT, at_v.mT
    col_u, col_v = _pick(t, cols_u, -1), _pick(t, cols_v, -1)
    return torch.where(cols_u, col_v, torch.where(cols_v, col_u, t))


def _first_max(values: torch.Tensor, rows: torch.Tensor, n: int):
    """(max, first row of the max) of values [..., n, 1] (-1 where not a candidate)."""
    largest = values.amax(-2, keepdim=True)
    return largest, torch.where(values == largest, rows, n).amin(-2, keepdim=True)


def ldl_factor(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(LD, pivots, info) of the symmetric A's lower triangle, as LAPACK's dsytf2('L')."""
    n = a.shape[-1]
    batch = a.shape[:-2]
    rows = _rows(n, a)
    cols = rows.mT
    zero = torch.zeros((), dtype=a.dtype)
    lower = torch.where(rows >= cols, a, zero)
    t = lower + torch.where(rows > cols, a, zero).mT  # the full symmetric matrix
    ld = torch.zeros_like(t)
    info = torch.zeros(batch, dtype=torch.int32, device=a.device)
    skip = torch.zeros((*batch, 1, 1), dtype=torch.bool, device=a.device)
    pivots: list[torch.Tensor] = []
    for k in range(n):
        column = t[..., :, k : k + 1]
        absakk = torch.abs(t[..., k : k + 1, k : k + 1])
        magnitude = torch.where(rows > k, torch.abs(column), -1.0)
        colmax, imax = _first_max(magnitude, rows, n)
        colmax = torch.clamp_min(colmax, 0.0)
        imax = torch.where(colmax > 0, imax, k)
        singular = (torch.maximum(absakk, colmax) == 0) | torch.isnan(absakk)
        row = _pick(t, rows == imax, -2)  # row imax [..., 1, n]
        others = (cols >= k) & (cols != imax)
        rowmax = torch.where(others, torch.abs(row), -1.0).amax(-1, keepdim=True)
        diag_imax = torch.abs(_pick(row, cols == imax, -1))
        keep = singular | (absakk >= _ALPHA * colmax)
        keep = keep | (absakk >= _ALPHA * colmax * (colmax / rowmax))
        swap1 = torch.logical_not(keep) & (diag_imax >= _ALPHA * rowmax)
        two = torch.logical_not(keep | swap1)
        if k == n - 1:
            two = torch.zeros_like(two)
        kp = torch.where(keep, k, imax)
        kk = torch.where(two, k + 1, k)
        t = torch.where(skip | singular, t, _swap_symmetric(t, kk, kp))
        # 1x1: d = t[k, k], l = t[k+1:, k] / d, T -= x (x / d)^T
        d = t[..., k : k + 1, k : k + 1]
        below = torch.where(rows > k, t[..., :, k : k + 1], zero)
        scaled = below * (1.0 / d)
        one_t = t - below * scaled.mT  # dsyr's lower triangle, mirrored
        one_t = torch.where(rows >= cols, one_t, one_t.mT)
        one_col = torch.where(rows == k, d, scaled)
        # 2x2 (k < n - 1): columns k, k+1; W = [wk, wkp1] rows >= k+2
        if k < n - 1:
            d21 = t[..., k + 1 : k + 2, k : k + 1]
            d11 = t[..., k + 1 : k + 2, k + 1 : k + 2] / d21
            d22 = t[..., k : k + 1, k : k + 1] / d21
            scale = (1.0 / (d11 * d22 - 1.0)) / d21
            a_k = torch.where(rows > k + 1, t[..., :, k : k + 1], zero)
            a_k1 = torch.where(rows > k + 1, t[..., :, k + 1 : k + 2], zero)
            wk = scale * (d11 * a_k - a_k1)
            wkp1 = scale * (d22 * a_k1 - a_k)
            update = t - (a_k * wk.mT + a_k1 * wkp1.mT)
            two_t = torch.where(rows >= cols, update, update.mT)
            head = t[..., :, k : k + 2]
            two_cols = torch.where(rows > k + 1, torch.cat([wk, wkp1], -1), head)
        one = torch.logical_not(skip | singular | two)
        write_one = torch.logical_not(skip | two)  # a singular column is stored as it is
        new_ld = torch.where(write_one & (cols == k), torch.where(singular, column, one_col), ld)
        new_t = torch.where(one, one_t, t)
        if k < n - 1:
            write_two = two & torch.logical_not(skip)
            two_ld = torch.cat([ld[..., :, :k], two_cols, ld[..., :, k + 2 :]], -1)
            new_ld = torch.where(write_two, two_ld, new_ld)
            new_t = torch.where(write_two, two_t, new_t)
        ld, t = new_ld, new_t
        flat = lambda x: x.reshape(*batch, 1)  # noqa: E731
        pivot = torch.where(two, -(kp + 1), kp + 1)
        previous = pivots[-1] if pivots else None
        pivots.append(flat(torch.where(skip, 0, pivot)) if previous is None else
                      torch.where(flat(skip), previous, flat(pivot)))  # fmt: skip
        info = torch.where((info == 0) & (singular & ~skip).reshape(batch), k + 1, info)
        skip = two & torch.logical_not(skip)
    ld = torch.where(rows >= cols, ld, zero)
    if not pivots:
        return ld, torch.zeros((*batch, 0), dtype=torch.int32), info
    return ld, torch.cat(pivots, -1).to(torch.int32), info


def linalg_ldl_factor_ex(
    a: torch.Tensor, hermitian: bool = False, check_errors: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """aten.linalg_ldl_factor_ex (real: hermitian or not is the same factorization)."""
    ld, pivots, info = ldl_factor(a)
    if check_errors:
        torch.ops.aten._linalg_check_errors(
            info, "torch.linalg.ldl_factor_ex", is_matrix=a.dim() == 2
        )
    return ld, pivots, info


def _swap_rows(b: torch.Tensor, u: int, v: torch.Tensor) -> torch.Tensor:
    rows = _rows(b.shape[-2], b)
    at_v = rows == v
    row_u, row_v = b[..., u : u + 1, :], _pick(b, at_v, -2)
    return torch.where(rows == u, row_v, torch.where(at_v, row_u, b))


def linalg_ldl_solve(
    ld: torch.Tensor, pivots: torch.Tensor, b: torch.Tensor, hermitian: bool = False
) -> torch.Tensor:
    """aten.linalg_ldl_solve: X with A X = B from ldl_factor's (LD, pivots), as dsytrs."""
    n = ld.shape[-1]
    batch = torch.broadcast_shapes(ld.shape[:-2], pivots.shape[:-1], b.shape[:-2])
    b = b.expand(*batch, *b.shape[-2:])
    if n == 0:
        return b.clone()
    zero = torch.zeros((), dtype=b.dtype)
    rows = _rows(n, b)
    piv = pivots.to(torch.int64).expand(*batch, n).unsqueeze(-1).unsqueeze(-1)  # [..., n, 1, 1]
    # which steps start a 2x2 block (forwards: a negative pivot not consumed by the previous)
    starts, consumed = [], torch.zeros_like(piv[..., 0, :, :], dtype=torch.bool)
    for k in range(n):
        start = (piv[..., k, :, :] < 0) & torch.logical_not(consumed)
        starts.append(start)
        consumed = start
    # L D Y = P B
    for k in range(n):
        p = piv[..., k, :, :]
        two, inside = starts[k], (k > 0) and starts[k - 1]
        if k > 0:
            active = torch.logical_not(inside)
        else:
            active = torch.ones_like(two)
        one = active & torch.logical_not(two)
        # 1x1
        x1 = torch.where(one & (p - 1 != k), _swap_rows(b, k, p - 1), b)
        d = ld[..., k : k + 1, k : k + 1]
        row_k = x1[..., k : k + 1, :]
        col = torch.where(rows > k, ld[..., :, k : k + 1], zero)
        x1 = torch.where(rows == k, row_k * (1.0 / d), x1)
        x1 = torch.where(rows > k, x1 - col * row_k, x1)  # (0 * inf elsewhere)
        b_new = torch.where(one, x1, b)
        if k < n - 1:
            x2 = torch.where(two & (-p - 1 != k + 1), _swap_rows(b, k + 1, -p - 1), b)
            r0, r1 = x2[..., k : k + 1, :], x2[..., k + 1 : k + 2, :]
            c0 = torch.where(rows > k + 1, ld[..., :, k : k + 1], zero)
            c1 = torch.where(rows > k + 1, ld[..., :, k + 1 : k + 2], zero)
            x2 = torch.where(rows > k + 1, x2 - c0 * r0 - c1 * r1, x2)
            akm1k = ld[..., k + 1 : k + 2, k : k + 1]
            akm1 = ld[..., k : k + 1, k : k + 1] / akm1k
            ak = ld[..., k + 1 : k + 2, k + 1 : k + 2] / akm1k
            denom = akm1 * ak - 1.0
            bkm1, bk = r0 / akm1k, r1 / akm1k
            x2 = torch.where(rows == k, (ak * bkm1 - bk) / denom, x2)
            x2 = torch.where(rows == k + 1, (akm1 * bk - bkm1) / denom, x2)
            b_new = torch.where(two, x2, b_new)
        b = b_new
    # L^T X = Y, backwards; a 2x2 block is handled at its second step (k), with k-1
    for k in range(n - 1, -1, -1):
        p = piv[..., k, :, :]
        second = starts[k - 1] if k > 0 else torch.zeros_like(starts[0])
        one = torch.logical_not(second | starts[k])
        col_k = torch.where(rows > k, ld[..., :, k : k + 1], zero)
        dot_k = torch.where(rows > k, col_k * b, zero).sum(-2, keepdim=True)
        x1 = torch.where(rows == k, b - dot_k, b)
        x1 = torch.where(one & (p - 1 != k), _swap_rows(x1, k, p - 1), x1)
        b_new = torch.where(one, x1, b)
        if k > 0:
            col_m = torch.where(rows > k, ld[..., :, k - 1 : k], zero)
            dot_m = torch.where(rows > k, col_m * b, zero).sum(-2, keepdim=True)
            x2 = torch.where(rows == k, b - dot_k, torch.where(rows == k - 1, b - dot_m, b))
            x2 = torch.where(-p - 1 != k, _swap_rows(x2, k, -p - 1), x2)
            b_new = torch.where(second, x2, b_new)
        b = b_new
    return b
