"""Linear algebra of static-shape matrices as decompositions into ops the compiler lowers.

Each factorization is unrolled: its step count is the (static) matrix size, and every step is
a few whole-tensor ops, vectorized over the batch and over the step's row or column. Matrices
larger than MAX_SIZE x MAX_SIZE are not unrolled: the decomposition declines and the op is
reported unsupported with that reason (see size_problem), or runs on the CPU with
fallback="cpu".

The algorithms are LAPACK's unblocked ones, so that the results are eager's at fp32
tolerance, including what eager defines for singular inputs:
- LU (getrf): partial pivoting by the first largest |a| of the column; a zero pivot sets info
  to its 1-based step (the first one) and skips that column's scaling, as dgetf2 does, so the
  factorization of a singular matrix is eager's and its solves divide by zero as eager's do.
- Cholesky (potrf): info is the order of the first leading minor that is not positive
  definite, and L what LAPACK's unblocked potf2 leaves then (the columns before it, the
  failing Schur value on the diagonal, A's lower triangle after it).
- The *_ex ops' info outputs are eager's; the error checks of the non-_ex ops are runtime
  checks on the host (runtime_asserts.py), and so are the checks eager's cholesky and
  cholesky_inverse kernels make themselves (their decompositions add the check node).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

aten = torch.ops.aten

MAX_SIZE = 128
"""The largest matrix dim the decompositions unroll. Compile time grows with it (first call,
Dynamo and AOTAutograd included, 2 shared cores): inv of 64x64 about 5 s, 128x128 about 11 s,
256x256 about 58 s (30 s of it the native compile); at 128x128 Cholesky 2.4 s, solve 9 s,
QR 9 s, LDL 32 s (both pivot kinds per step); Jacobi (linalg_jacobi.py, about log2(n) + 3
sweeps of n - 1 steps) is the heaviest: svdvals 59 s, eigvalsh 107 s at 128x128 (25-30 s at
64x64, on loaded cores)."""


# ---------------------------------------------------------------------------------------------
# Helpers


def _rows(m: int, like: torch.Tensor) -> torch.Tensor:
    """[m, 1] int64 row numbers."""
    return torch.arange(m, device=like.device).unsqueeze(-1)


def _batch(*tensors: torch.Tensor) -> tuple[int, ...]:
    return tuple(torch.broadcast_shapes(*(t.shape[:-2] for t in tensors)))


def _identity(n: int, like: torch.Tensor) -> torch.Tensor:
    r = torch.arange(n, device=like.device)
    return (r.unsqueeze(-1) == r).to(like.dtype)


def _select_rows(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The one row of x ([..., m, n]) where mask ([..., m, 1]) is true, as [..., 1, n]: a sum
    of that row and zeros, exact (other rows' inf or NaN are not read)."""
    return torch.where(mask, x, torch.zeros((), dtype=x.dtype)).sum(-2, keepdim=True)


def _swap_rows(x: torch.Tensor, i: int, p: torch.Tensor) -> torch.Tensor:
    """x with rows i and p swapped; p is an int tensor [..., 1, 1] of row numbers."""
    rows = _rows(x.shape[-2], x)
    at_p = rows == p
    row_i = x[..., i : i + 1, :]
    row_p = _select_rows(x, at_p)
    return torch.where(rows == i, row_p, torch.where(at_p, row_i, x))


def _check_errors(info: torch.Tensor, api_name: str, a: torch.Tensor) -> None:
    """The error check eager's kernel makes itself, as a graph node (hoisted to the host after
    the run, runtime_asserts.py)."""
    torch.ops.aten._linalg_check_errors(info, api_name, is_matrix=a.dim() == 2)


def _tril(x: torch.Tensor, diagonal: int = 0) -> torch.Tensor:
    m, n = x.shape[-2:]
    keep = _rows(m, x) + diagonal >= torch.arange(n, device=x.device)
    return torch.where(keep, x, torch.zeros((), dtype=x.dtype))


def _triu(x: torch.Tensor, diagonal: int = 0) -> torch.Tensor:
    m, n = x.shape[-2:]
    keep = _rows(m, x) + diagonal <= torch.arange(n, device=x.device)
    return torch.where(keep, x, torch.zeros((), dtype=x.dtype))


def _with_unit_diagonal(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape[-2:]
    diagonal = _rows(m, x) == torch.arange(n, device=x.device)
    return torch.where(diagonal, torch.ones((), dtype=x.dtype), x)


# ---------------------------------------------------------------------------------------------
# Triangular solves


def solve_triangular(
    a: torch.Tensor, b: torch.Tensor, upper: bool, unit: bool = False
) -> torch.Tensor:
    """X with A X = B, A triangular ([..., n, n], only its `upper` or lower triangle read), B
    [..., n, k], batch dims broadcast: substitution one row of X per step, each step updating
    the remaining right-hand sides by that row (column-oriented, like LAPACK's trsm)."""
    n = a.shape[-1]
    batch = _batch(a, b)
    rest = b.expand(*batch, *b.shape[-2:])
    solved: list[torch.Tensor] = []
    order = range(n - 1, -1, -1) if upper else range(n)
    for i in order:
        x = rest[..., -1:, :] if upper else rest[..., :1, :]
        if not unit:
            x = x / a[..., i : i + 1, i : i + 1]
        solved.append(x)
        if upper and i > 0:
            rest = rest[..., :-1, :] - a[..., :i, i : i + 1] * x
        elif not upper and i + 1 < n:
            rest = rest[..., 1:, :] - a[..., i + 1 :, i : i + 1] * x
    if upper:
        solved.reverse()
    return torch.cat(solved, dim=-2) if solved else rest


def _solve_triangular_sided(
    a: torch.Tensor, b: torch.Tensor, upper: bool, left: bool, unit: bool
) -> torch.Tensor:
    """A X = B (left) or X A = B (right: A^T X^T = B^T)."""
    if left:
        return solve_triangular(a, b, upper, unit)
    return solve_triangular(a.mT, b.mT, not upper, unit).mT


def linalg_solve_triangular(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    upper: bool,
    left: bool = True,
    unitriangular: bool = False,
) -> torch.Tensor:
    """aten.linalg_solve_triangular."""
    return _solve_triangular_sided(a, b, upper, left, unitriangular)


def triangular_solve(
    b: torch.Tensor,
    a: torch.Tensor,
    upper: bool = True,
    transpose: bool = False,
    unitriangular: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """aten.triangular_solve: (X with op(A) X = B, a copy of A)."""
    coefficient = a.mT if transpose else a
    x = solve_triangular(coefficient, b, upper != transpose, unitriangular)
    return x, a.clone()


# ---------------------------------------------------------------------------------------------
# Cholesky


def cholesky_lower(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(L, info) of A's lower triangle, right-looking: each step takes the next column of the
    Schur complement and subtracts its outer product. A matrix that is not positive definite
    gets what LAPACK's potf2 leaves: the columns before the failing step j, the failing
    Schur value at (j, j), A's own lower triangle elsewhere."""
    n = a.shape[-1]
    if n == 0:
        return a.clone(), torch.zeros(a.shape[:-2], dtype=torch.int32, device=a.device)
    info = torch.zeros((*a.shape[:-2], 1, 1), dtype=torch.int32, device=a.device)
    failed_value = torch.zeros_like(a[..., :1, :1])
    rest = a
    columns: list[torch.Tensor] = []
    for j in range(n):
        d = rest[..., :1, :1]
        fails = (info == 0) & torch.logical_not(d > 0)
        info = torch.where(fails, j + 1, info)
        failed_value = torch.where(fails, d, failed_value)
        root = torch.sqrt(d)
        below = rest[..., 1:, :1] / root
        columns.append(torch.nn.functional.pad(torch.cat([root, below], -2), (0, 0, j, 0)))
        if j + 1 < n:
            rest = rest[..., 1:, 1:] - below * below.mT
    computed = torch.cat(columns, -1)
    rows, cols = _rows(n, a), torch.arange(n, device=a.device)
    failing = (info - 1).to(torch.int64)
    partial = torch.where(
        (rows == cols) & (cols == failing), failed_value, _tril(a)
    )
    done = (info == 0) | (cols < failing)
    return torch.where(done, computed, partial), info.reshape(a.shape[:-2])


def linalg_cholesky_ex(
    a: torch.Tensor, upper: bool = False, check_errors: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """aten.linalg_cholesky_ex: (L, info); the upper factor reads A's upper triangle."""
    if upper:
        lower, info = cholesky_lower(a.mT)
        lower = lower.mT
    else:
        lower, info = cholesky_lower(a)
    if check_errors:
        _check_errors(info, "linalg.cholesky_ex", a)
    return lower, info


def cholesky(a: torch.Tensor, upper: bool = False) -> torch.Tensor:
    """aten.cholesky (the deprecated API, which raises on its own)."""
    factor, info = linalg_cholesky_ex(a, upper)
    _check_errors(info, "cholesky", a)
    return factor


def cholesky_solve(b: torch.Tensor, factor: torch.Tensor, upper: bool = False) -> torch.Tensor:
    """aten.cholesky_solve: X with (L L^T) X = B, or (U^T U) X = B."""
    lower = factor.mT if upper else factor
    y = solve_triangular(lower, b, upper=False)
    return solve_triangular(lower.mT, y, upper=True)


def cholesky_inverse(factor: torch.Tensor, upper: bool = False) -> torch.Tensor:
    """aten.cholesky_inverse: (L L^T)^-1 or (U^T U)^-1; raises as eager on a zero diagonal
    element of the factor (info: the first, 1-based)."""
    n = factor.shape[-1]
    if n:
        zero = torch.diagonal(factor, 0, -2, -1) == 0
        steps = torch.arange(1, n + 1, device=factor.device)
        info = torch.where(zero, steps, n + 1).amin(-1)
        _check_errors(torch.where(info > n, 0, info).to(torch.int32), "cholesky_inverse", factor)
    return cholesky_solve(_identity(n, factor), factor, upper)


# ---------------------------------------------------------------------------------------------
# LU with partial pivoting


def lu_factor(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(LU, pivots, info) of A [..., m, n], as LAPACK's getrf: LU holds the unit lower L below
    its diagonal and U on and above it; pivots (int32, 1-based) the row swapped with each
    step's row; info the first zero pivot (1-based), 0 if none."""
    m, n = a.shape[-2:]
    rows = _rows(m, a)
    info = torch.zeros(a.shape[:-2], dtype=torch.int32, device=a.device)
    pivots: list[torch.Tensor] = []
    work = a
    for j in range(min(m, n)):
        magnitude = torch.abs(work[..., :, j : j + 1])
        # rows above j and NaN are never chosen; ties go to the first row, as idamax's
        magnitude = torch.where((rows >= j) & (magnitude == magnitude), magnitude, -1.0)
        largest = magnitude.amax(-2, keepdim=True)
        p = torch.where(magnitude == largest, rows, m).amin(-2, keepdim=True)
        p = torch.where(largest < 0, j, p)  # the column is NaN: no swap
        pivots.append(p.reshape(*a.shape[:-2], 1) + 1)
        work = _swap_rows(work, j, p)
        pivot = work[..., j : j + 1, j : j + 1]
        singular = pivot == 0
        info = torch.where((info == 0) & singular.reshape(a.shape[:-2]), j + 1, info)
        if j + 1 < m:
            below = work[..., j + 1 :, j : j + 1]
            scaled = torch.where(singular, below, below * (1.0 / pivot))
            trailing = work[..., j + 1 :, j + 1 :] - scaled * work[..., j : j + 1, j + 1 :]
            lower = torch.cat([work[..., j + 1 :, :j], scaled, trailing], -1)
            work = torch.cat([work[..., : j + 1, :], lower], -2)
    if not pivots:
        return work.clone(), torch.zeros((*a.shape[:-2], 0), dtype=torch.int32), info
    return work, torch.cat(pivots, -1).to(torch.int32), info


def permutation(pivots: torch.Tensor, m: int) -> torch.Tensor:
    """perm [..., m] (int64) with (P^T A)[i] = A[perm[i]] for LAPACK's 1-based row swaps."""
    positions = torch.arange(m, device=pivots.device)
    perm = positions.expand(*pivots.shape[:-1], m)
    for i in range(pivots.shape[-1]):
        p = pivots[..., i : i + 1].to(torch.int64) - 1
        at_i = perm[..., i : i + 1]
        at_p = torch.gather(perm, -1, p)
        perm = torch.where(positions == i, at_p, torch.where(positions == p, at_i, perm))
    return perm


def _permute_rows(b: torch.Tensor, perm: torch.Tensor) -> torch.Tensor:
    """rows b[perm[i]] ([..., m, k]; perm [..., m]), batch dims broadcast."""
    batch = torch.broadcast_shapes(b.shape[:-2], perm.shape[:-1])
    b = b.expand(*batch, *b.shape[-2:])
    index = perm.expand(*batch, perm.shape[-1]).unsqueeze(-1).expand(*batch, *b.shape[-2:])
    return torch.gather(b, -2, index)


def _inverse_permutation(perm: torch.Tensor) -> torch.Tensor:
    """inv with inv[perm[i]] = i, as int64 [..., m]."""
    m = perm.shape[-1]
    positions = torch.arange(m, device=perm.device)
    onehot = perm.unsqueeze(-2) == positions.unsqueeze(-1)  # [..., r, i]: perm[i] == r
    return torch.where(onehot, positions, 0).sum(-1)


def lu_solve(
    lu: torch.Tensor,
    pivots: torch.Tensor,
    b: torch.Tensor,
    left: bool = True,
    adjoint: bool = False,
) -> torch.Tensor:
    """X with A X = B (or A^T X = B with adjoint; X A = B, X A^T = B with left=False), A = P L U
    given as getrf's (LU, pivots)."""
    if not left:  # X A = B <=> A^T X^T = B^T
        return lu_solve(lu, pivots, b.mT, True, not adjoint).mT
    perm = permutation(pivots, lu.shape[-1])
    if not adjoint:  # L U X = P^T B
        y = solve_triangular(lu, _permute_rows(b, perm), upper=False, unit=True)
        return solve_triangular(lu, y, upper=True)
    # U^T L^T P^T X = B
    y = solve_triangular(lu.mT, b, upper=False)
    z = solve_triangular(lu.mT, y, upper=True, unit=True)
    return _permute_rows(z, _inverse_permutation(perm))


def linalg_lu_factor_ex(
    a: torch.Tensor, pivot: bool = True, check_errors: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """aten.linalg_lu_factor_ex: (LU, pivots, info)."""
    if not pivot:
        return NotImplemented  # eager's CPU kernel has no LU without pivoting either
    lu, pivots, info = lu_factor(a)
    if check_errors:
        _check_errors(info, "torch.linalg.lu_factor_ex", a)
    return lu, pivots, info


def lu_unpack(
    lu: torch.Tensor,
    pivots: torch.Tensor,
    unpack_data: bool = True,
    unpack_pivots: bool = True,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """aten.lu_unpack: (P, L, U) with A = P L U; L is m x k, U k x n (k = min(m, n)); the
    parts not unpacked are empty, as in eager."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    empty = lu.new_empty((0,))
    if unpack_data:
        lower = _with_unit_diagonal(_tril(lu[..., :, :k], -1))
        upper = _triu(lu[..., :k, :])
    else:
        lower = upper = empty
    if unpack_pivots:
        perm = permutation(pivots, m)
        p = (_rows(m, lu) == perm.unsqueeze(-2)).to(lu.dtype)  # P[r, c] = (perm[c] == r)
    else:
        p = empty
    return p, lower, upper


def linalg_lu(
    a: torch.Tensor, pivot: bool = True
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """aten.linalg_lu: (P, L, U)."""
    if not pivot:
        return NotImplemented
    lu, pivots, _ = lu_factor(a)
    return lu_unpack(lu, pivots)


def linalg_lu_solve(
    lu: torch.Tensor,
    pivots: torch.Tensor,
    b: torch.Tensor,
    *,
    left: bool = True,
    adjoint: bool = False,
) -> torch.Tensor:
    """aten.linalg_lu_solve."""
    return lu_solve(lu, pivots, b, left, adjoint)


# ---------------------------------------------------------------------------------------------
# Determinants, inverse, solve


def _permutation_sign(pivots: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(-1)^(number of actual swaps), [...]."""
    steps = torch.arange(1, pivots.shape[-1] + 1, device=pivots.device)
    swaps = (pivots != steps).to(torch.int64).sum(-1)
    return 1.0 - 2.0 * (swaps % 2).to(dtype)


def _det_factor(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The LU that eager's det and slogdet return (and their backward formulas solve with):
    of A^T when A is contiguous (det A^T = det A; LAPACK reads it without a copy), else of
    A."""
    return lu_factor(a.mT if a.is_contiguous() else a)


def linalg_det(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """aten._linalg_det: (det, LU, pivots)."""
    lu, pivots, _ = _det_factor(a)
    if a.shape[-1] == 0:
        return torch.ones(a.shape[:-2], dtype=a.dtype), lu, pivots
    diagonal = torch.diagonal(lu, 0, -2, -1)
    return diagonal.prod(-1) * _permutation_sign(pivots, a.dtype), lu, pivots


def linalg_slogdet(a: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """aten._linalg_slogdet: (sign, log|det|, LU, pivots); a singular A has sign 0 and
    log|det| -inf."""
    lu, pivots, _ = _det_factor(a)
    if a.shape[-1] == 0:
        zeros = torch.zeros(a.shape[:-2], dtype=a.dtype)
        return zeros + 1.0, zeros, lu, pivots
    diagonal = torch.diagonal(lu, 0, -2, -1)
    sign = torch.sign(diagonal).prod(-1) * _permutation_sign(pivots, a.dtype)
    return sign, torch.log(torch.abs(diagonal)).sum(-1), lu, pivots


def _solve_vector_case(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether linalg.solve treats B as a (batch of) vector(s), as eager decides."""
    return b.dim() == 1 or (a.dim() - 1 == b.dim() and b.shape == a.shape[:-1])


def linalg_solve_ex(
    a: torch.Tensor, b: torch.Tensor, *, left: bool = True, check_errors: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """aten._linalg_solve_ex: (X, LU, pivots, info)."""
    lu, pivots, info = lu_factor(a)
    vector = _solve_vector_case(a, b)
    rhs = b.unsqueeze(-1) if vector else b
    x = lu_solve(lu, pivots, rhs, left=left)
    if check_errors:
        _check_errors(info, "torch.linalg.solve_ex", a)
    return (x.squeeze(-1) if vector else x), lu, pivots, info


def linalg_inv_ex(
    a: torch.Tensor, check_errors: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """aten.linalg_inv_ex: (A^-1, info), as eager's solve of A X = I."""
    lu, pivots, info = lu_factor(a)
    if check_errors:
        _check_errors(info, "linalg.inv_ex", a)
    return lu_solve(lu, pivots, _identity(a.shape[-1], a)), info


# ---------------------------------------------------------------------------------------------
# The table, and the size cap


def _tensor_arg(args: tuple, kwargs: dict, index: int, name: str):
    return args[index] if index < len(args) else kwargs.get(name)


_Decomposition = Callable[..., object]


class _Capped:
    """A decomposition that declines (NotImplemented) matrices above MAX_SIZE: `matrix` is the
    position and name of the argument whose last two dims are unrolled."""

    def __init__(self, fn: _Decomposition, matrix: tuple[int, str]):
        self.fn = fn
        self.matrix = matrix
        functools.update_wrapper(self, fn)

    def too_large(self, args: tuple, kwargs: dict) -> tuple[int, int] | None:
        value = _tensor_arg(args, kwargs, *self.matrix)
        if isinstance(value, torch.fx.Node):
            value = value.meta.get("val")
        if not isinstance(value, torch.Tensor) or value.dim() < 2:
            return None
        m, n = value.shape[-2:]
        return (int(m), int(n)) if max(m, n) > MAX_SIZE else None

    def __call__(self, *args, **kwargs):
        if self.too_large(args, kwargs):
            return NotImplemented
        return self.fn(*args, **kwargs)


# The QR, exponential and Jacobi modules use the helpers above.
from .linalg_exp import matrix_exp  # noqa: E402
from .linalg_jacobi import VECTOR_OPS_PROBLEMS, linalg_eigh, linalg_pinv, linalg_svd  # noqa: E402
from .linalg_ldl import linalg_ldl_factor_ex, linalg_ldl_solve  # noqa: E402
from .linalg_qr import geqrf, householder_product, linalg_qr, ormqr  # noqa: E402

LINALG_DECOMPOSITIONS: dict[object, _Capped] = {
    op: _Capped(fn, matrix)
    for op, fn, matrix in [
        (aten.linalg_solve_triangular.default, linalg_solve_triangular, (0, "self")),
        (aten.triangular_solve.default, triangular_solve, (1, "A")),
        (aten.linalg_cholesky_ex.default, linalg_cholesky_ex, (0, "self")),
        (aten.cholesky.default, cholesky, (0, "self")),
        (aten.cholesky_solve.default, cholesky_solve, (1, "input2")),
        (aten.cholesky_inverse.default, cholesky_inverse, (0, "self")),
        (aten.linalg_lu_factor_ex.default, linalg_lu_factor_ex, (0, "A")),
        (aten.linalg_lu.default, linalg_lu, (0, "A")),
        (aten.lu_unpack.default, lu_unpack, (0, "LU_data")),
        (aten.linalg_lu_solve.default, linalg_lu_solve, (0, "LU")),
        (aten._linalg_det.default, linalg_det, (0, "A")),
        (aten._linalg_slogdet.default, linalg_slogdet, (0, "A")),
        (aten._linalg_solve_ex.default, linalg_solve_ex, (0, "A")),
        (aten.linalg_inv_ex.default, linalg_inv_ex, (0, "A")),
        (aten.geqrf.default, geqrf, (0, "self")),
        (aten.linalg_qr.default, linalg_qr, (0, "A")),
        (aten.linalg_householder_product.default, householder_product, (0, "input")),
        (aten.ormqr.default, ormqr, (0, "self")),
        (aten.linalg_matrix_exp.default, matrix_exp, (0, "self")),
        (aten.linalg_ldl_factor_ex.default, linalg_ldl_factor_ex, (0, "self")),
        (aten.linalg_ldl_solve.default, linalg_ldl_solve, (0, "LD")),
        (aten._linalg_svd.default, linalg_svd, (0, "A")),
        (aten._linalg_eigh.default, linalg_eigh, (0, "A")),
        (aten.linalg_pinv.atol_rtol_tensor, linalg_pinv, (0, "self")),
    ]
}


def size_problem(node: torch.fx.Node) -> str:
    """Why a linear-algebra node was not decomposed ('' if that is not the reason)."""
    if node.target in VECTOR_OPS_PROBLEMS:
        return VECTOR_OPS_PROBLEMS[node.target]
    capped = LINALG_DECOMPOSITIONS.get(node.target)
    if capped is None:
        return ""
    size = capped.too_large(tuple(node.args), dict(node.kwargs))
    if size is None:
        return ""
    return (
        f"{size[0]}x{size[1]} matrices: the neuron backend unrolls linear algebra up to "
        f"{MAX_SIZE}x{MAX_SIZE}"
    )
