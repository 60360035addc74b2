"""Symmetric eigenvalues and singular values by unrolled cyclic Jacobi (see linalg.py for the
unrolling and the size cap).

The rotations of a sweep are ordered round-robin (a chess tournament): the n indices (one
zero pad when n is odd) are split into k = n/2 disjoint pairs (top[i], bottom[i]), all k
rotated at once as a few whole-tensor ops, then the pairing moves on (top[0] fixed, the others
cycle), so n - 1 steps visit every pair once. sweeps(n) sweeps are unrolled; the permutation
is static, so where the pad ends up is known when the graph is built.
- Symmetric eigenvalues (two-sided Jacobi, Rutishauser's updates): each rotation J^T A J
  sets a[p, q] to 0 and the pivots to a[p, p] - t a[p, q], a[q, q] + t a[p, q] (without these
  updates rounding errors build up to 1e-5 of the norm at 64x64); the eigenvalues are the
  final diagonal, the eigenvectors the accumulated rotations.
- Singular values (one-sided Jacobi, Hestenes): columns of A are rotated in pairs until they
  are orthogonal, A V = B; the singular values are B's column norms, so small ones keep
  their relative precision (no A^T A is formed). Matrices with more columns than rows are
  transposed.
The matrix is first divided by its largest |entry| (so no square overflows or underflows)
and the results scaled back. Converged to fp32 rounding within sweeps(n) sweeps for the sizes
allowed (see sweeps and test_linalg_jacobi.py).

What the decompositions give is unique: eigenvalues (ascending) and singular values
(descending), and the ops built on them (matrix_rank, cond, nuclear norm, pinv, whose
result does not depend on the vectors' signs). Eigen- and singular vectors themselves are
not: eager's come from LAPACK's tridiagonal/bidiagonal algorithms, whose signs Jacobi cannot
reproduce, so _linalg_eigh and _linalg_svd with vectors asked for (of non-empty matrices)
stay unsupported.
"""

from __future__ import annotations

import functools
import math

import torch

from .linalg import _tril, _triu
from .linalg_qr import linalg_qr

def sweeps(n: int) -> int:
    """Jacobi sweeps unrolled for n x n. Measured in fp64 (sweeps until the results are within
    1e-9 of LAPACK's, or the columns orthogonal to 1e-7): symmetric, n = 128: 7 (random), 10
    (eigenvalues graded over 5 decades), 7 (clustered); n = 64: 7, 8, 6; n = 16: 5, 6, 3;
    one-sided on R^T of A = QR, n = 128: 8 (random), 9 (graded singular values or rows);
    n = 64: 7, 8; n = 16: 5, 7; n = 5: 3, 4. fp32 needs no more; one sweep is kept in hand."""
    return max(5, (n - 1).bit_length() + 3)


def _round_robin_index(k: int, like: torch.Tensor) -> torch.Tensor:
    """[2k] int64: the next pairing's order of the 2k positions [top, bottom]: top = [t0, b0,
    t1, ..., t_{k-2}], bottom = [b1, ..., b_{k-1}, t_{k-1}] (built from arange: a constant
    tensor would be a lifted constant in the traced graph)."""
    p = torch.arange(2 * k, device=like.device)
    top = torch.where(p == 1, k, p - 1)  # p in [1, k): b0 at 1, t_{p-1} after
    bottom = torch.where(p == 2 * k - 1, k - 1, p + 1)  # p in [k, 2k - 1): b_{p-k+1}
    return torch.where(p == 0, 0, torch.where(p < k, top, bottom))


def _order_after(k: int, steps: int) -> list[int]:
    """Which original index sits at each position after `steps` round-robin moves."""
    order = list(range(2 * k))
    for _ in range(steps):
        order = order[:1] + order[k : k + 1] + order[1 : k - 1] + order[k + 1 :] + order[k - 1 : k]
    return order


def _rotation(
    a_pp: torch.Tensor, a_qq: torch.Tensor, a_pq: torch.Tensor, negligible: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(c, s, t) of the rotation that zeroes a_pq: t = s / c the smaller root of
    t^2 + 2 zeta t - 1 = 0, zeta = (a_qq - a_pp) / (2 a_pq), as
    t = sign(d) 2 a_pq / (|d| + hypot(d, 2 a_pq)), d = a_qq - a_pp (sign(0) = 1; no overflow);
    exactly the identity (c = 1, s = 0) where a_pq is 0 or negligible: converged pairs are not
    rotated again, so their rounding errors do not build up (LAPACK's sgesvj skips them the
    same way)."""
    d = a_qq - a_pp
    g = 2 * a_pq
    numerator = torch.where(d >= 0, g, -g)
    denominator = torch.abs(d) + torch.hypot(d, g)
    t = numerator / torch.where(denominator == 0, torch.ones((), dtype=d.dtype), denominator)
    t = torch.where(negligible, torch.zeros((), dtype=t.dtype), t)
    c = torch.rsqrt(1 + t * t)
    return c, c * t, t


def _scaled(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(a / max|a|, max|a|) per matrix (max 1 for a zero matrix)."""
    scale = torch.abs(a).amax((-2, -1), keepdim=True)
    scale = torch.where(scale == 0, torch.ones((), dtype=a.dtype), scale)
    return a / scale, scale


def _pad(a: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    if rows == 0 and cols == 0:
        return a
    return torch.nn.functional.pad(a, (0, cols, 0, rows))


def _rotate_pairs(
    x: torch.Tensor, c: torch.Tensor, s: torch.Tensor, k: int, dim: int
) -> torch.Tensor:
    """Rotate the pairs (top i, bottom i) along dim: top' = c top - s bottom,
    bottom' = s top + c bottom (c, s shaped to broadcast)."""
    top, bottom = x.narrow(dim, 0, k), x.narrow(dim, k, k)
    return torch.cat([c * top - s * bottom, s * top + c * bottom], dim)


def _identity_padded(a: torch.Tensor, n: int, k: int) -> torch.Tensor:
    eye = torch.eye(n, dtype=a.dtype, device=a.device).expand(*a.shape[:-2], n, n)
    return _pad(eye, 2 * k - n, 2 * k - n)


def _unpadded(n: int, k: int, steps: int) -> list[int] | None:
    """The final positions of the n real indices (None if there is no pad)."""
    if n == 2 * k:
        return None
    return [p for p, index in enumerate(_order_after(k, steps)) if index < n]


def symmetric_jacobi(
    a: torch.Tensor, vectors: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(eigenvalues [..., n] unsorted, eigenvectors [..., n, n] as columns or None) of the
    symmetric matrix a [..., n, n]."""
    n = a.shape[-1]
    k = (n + 1) // 2
    a, scale = _scaled(a)
    m = _pad(a, 2 * k - n, 2 * k - n)
    v = _identity_padded(a, n, k) if vectors else None
    tolerance = torch.finfo(a.dtype).eps
    order = _round_robin_index(k, a) if k > 1 else None
    rows = torch.arange(2 * k, device=a.device).unsqueeze(-1)
    distance = torch.abs(rows - torch.arange(2 * k, device=a.device))
    pivots = (distance == 0) | (distance == k)  # (p, p), (q, q), (p, q), (q, p) of every pair
    steps = 0
    for _ in range(sweeps(n) if n > 1 else 0):
        for _ in range(2 * k - 1):
            diagonal = torch.diagonal(m, 0, -2, -1)
            a_pp, a_qq, a_pq = diagonal[..., :k], diagonal[..., k:], torch.diagonal(m, k, -2, -1)
            negligible = torch.abs(a_pq) <= tolerance * torch.sqrt(torch.abs(a_pp * a_qq))
            c, s, t = _rotation(a_pp, a_qq, a_pq, negligible)
            m = _rotate_pairs(m, c.unsqueeze(-1), s.unsqueeze(-1), k, -2)
            m = _rotate_pairs(m, c.unsqueeze(-2), s.unsqueeze(-2), k, -1)
            # Rutishauser: a[p, q] = 0 exactly, a[p, p] - t a[p, q], a[q, q] + t a[p, q]
            shift = t * a_pq
            updated = torch.diag_embed(torch.cat([a_pp - shift, a_qq + shift], -1))
            m = torch.where(pivots, updated, m)
            if vectors:
                v = _rotate_pairs(v, c.unsqueeze(-2), s.unsqueeze(-2), k, -1)
            if order is not None:
                m = m.index_select(-2, order).index_select(-1, order)
                v = v.index_select(-1, order) if vectors else v
                steps += 1
    values = torch.diagonal(m, 0, -2, -1)
    keep = _unpadded(n, k, steps)
    if keep is not None:
        values = values[..., keep]
        v = v[..., :n, keep] if vectors else v
    return values * scale.squeeze(-1), v


def one_sided_jacobi(
    a: torch.Tensor, vectors: bool = True
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(singular values [..., n] unsorted, B = A V [..., m, n], V [..., n, n] or None) of a
    [..., m, n]: B's columns are orthogonal, their norms the singular values (B and the
    values scaled back to a's scale). Converges fastest on R^T of a QR factorization (see
    _preconditioned)."""
    n = a.shape[-1]
    k = (n + 1) // 2
    a, scale = _scaled(a)
    b = _pad(a, 0, 2 * k - n)
    v = _identity_padded(a, n, k) if vectors else None
    tolerance = math.sqrt(a.shape[-2]) * torch.finfo(a.dtype).eps  # sgesvj's
    order = _round_robin_index(k, a) if k > 1 else None
    norms = (b * b).sum(-2)  # squared column norms, updated with each rotation (as sgesvj)
    steps = 0
    for _ in range(sweeps(n) if n > 1 else 0):
        for _ in range(2 * k - 1):
            top, bottom = b[..., :k], b[..., k:]
            alpha, beta, gamma = norms[..., :k], norms[..., k:], (top * bottom).sum(-2)
            negligible = torch.abs(gamma) <= tolerance * torch.sqrt(alpha * beta)
            c, s, t = _rotation(alpha, beta, gamma, negligible)
            norms = torch.cat([alpha - t * gamma, beta + t * gamma], -1)
            c, s = c.unsqueeze(-2), s.unsqueeze(-2)
            b = torch.cat([c * top - s * bottom, s * top + c * bottom], -1)
            if vectors:
                v = _rotate_pairs(v, c, s, k, -1)
            if order is not None:
                b, norms = b.index_select(-1, order), norms.index_select(-1, order)
                v = v.index_select(-1, order) if vectors else v
                steps += 1
    keep = _unpadded(n, k, steps)
    if keep is not None:
        b, norms = b[..., keep], norms[..., keep]
        v = v[..., :n, keep] if vectors else v
    sigma = torch.sqrt(torch.clamp(norms, min=0)) * scale.squeeze(-1)
    return sigma, b * scale, v


# ---------------------------------------------------------------------------------------------
# The ops


def _symmetric(a: torch.Tensor, uplo: str) -> torch.Tensor:
    """The symmetric matrix of a's lower ('L') or upper ('U') triangle."""
    if uplo.upper() == "U":
        return _triu(a) + _triu(a, 1).mT
    return _tril(a) + _tril(a, -1).mT


def _wide(a: torch.Tensor) -> bool:
    return a.shape[-1] > a.shape[-2]


def _preconditioned(a: torch.Tensor, vectors: bool) -> tuple:
    """One-sided Jacobi on R^T, a = QR (a with at least as many rows as columns): R^T W = B,
    so a = (Q W) diag(sigma) U^T with U = B diag(1/sigma). Returns (sigma, B, W, Q or None)."""
    if vectors:
        q, r = linalg_qr(a)
    else:
        q, r = None, linalg_qr(a, "r")[1]
    sigma, b, w = one_sided_jacobi(r.mT, vectors)
    return sigma, b, w, q


def singular_values(a: torch.Tensor) -> torch.Tensor:
    """[..., min(m, n)] in descending order."""
    if _wide(a):
        a = a.mT
    sigma = _preconditioned(a, vectors=False)[0]
    return torch.sort(sigma, -1, descending=True).values


def linalg_svd(a: torch.Tensor, full_matrices: bool = False, compute_uv: bool = True, *,
               driver: str | None = None) -> tuple:  # fmt: skip
    """aten._linalg_svd: the singular values (U and Vh empty) with compute_uv=False; with
    vectors only for empty matrices (identities, as eager's)."""
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    if compute_uv and k > 0:
        u, vh = svd_vectors(a, full_matrices)  # removed as dead code when unused
        return u, singular_values(a), vh
    if compute_uv:
        eye = functools.partial(torch.eye, dtype=a.dtype, device=a.device)
        u = eye(m, m if full_matrices else k).expand(*batch, -1, -1).clone()
        vh = eye(n if full_matrices else k, n).expand(*batch, -1, -1).clone()
        return u, a.new_zeros((*batch, 0)), vh
    if k == 0:
        return a.new_empty((0,)), a.new_zeros((*batch, 0)), a.new_empty((0,))
    return a.new_empty((0,)), singular_values(a), a.new_empty((0,))


def linalg_eigh(a: torch.Tensor, uplo: str = "L", compute_v: bool = True) -> tuple:
    """aten._linalg_eigh: ascending eigenvalues (eigenvectors empty) with compute_v=False;
    with vectors only for empty matrices."""
    n = a.shape[-1]
    if n == 0:
        return a.new_zeros((*a.shape[:-2], 0)), (a.new_zeros(a.shape) if compute_v else
                                                 a.new_empty((0,)))  # fmt: skip
    values, _ = symmetric_jacobi(_symmetric(a, uplo), vectors=False)
    vectors = eigh_vectors(a, uplo) if compute_v else a.new_empty((0,))
    return torch.sort(values, -1).values, vectors


def _tolerance(
    a: torch.Tensor, atol: torch.Tensor | None, rtol: torch.Tensor | None, largest: torch.Tensor
) -> torch.Tensor:
    """eager's get_atol_rtol and max(atol, rtol * largest) ([..., 1] like largest)."""
    m, n = a.shape[-2:]
    zero = torch.zeros((), dtype=a.dtype, device=a.device)
    atol_t = atol.to(a.dtype) if atol is not None else zero
    if rtol is not None:
        rtol_t = rtol.to(a.dtype)
    else:
        default = torch.full((), torch.finfo(a.dtype).eps * max(m, n), dtype=a.dtype)
        rtol_t = torch.where(atol_t > 0, zero, default) if atol is not None else default
    return torch.maximum(atol_t.unsqueeze(-1), rtol_t.unsqueeze(-1) * largest)


def linalg_pinv(
    a: torch.Tensor,
    *,
    atol: torch.Tensor | None = None,
    rtol: torch.Tensor | None = None,
    hermitian: bool = False,
) -> torch.Tensor:
    """aten.linalg_pinv.atol_rtol_tensor: V diag(1/s where s > tol) U^T, tol = max(atol,
    rtol * largest s); by eigenvalues with hermitian (s = |lambda|, only the lower triangle
    read, as linalg.eigh)."""
    m, n = a.shape[-2:]
    if a.numel() == 0:  # eager's early return: the batch of a alone
        return a.new_zeros((*a.shape[:-2], n, m))
    if hermitian:
        values, vectors = symmetric_jacobi(_symmetric(a, "L"), vectors=True)
        magnitude = torch.abs(values)
        tol = _tolerance(a, atol, rtol, magnitude.amax(-1, keepdim=True))
        inverse = torch.where(magnitude > tol, 1 / values, torch.zeros((), dtype=a.dtype))
        return (vectors * inverse.unsqueeze(-2)) @ vectors.mT
    wide = _wide(a)
    sigma, b, w, q = _preconditioned(a.mT if wide else a, vectors=True)
    tol = _tolerance(a, atol, rtol, sigma.amax(-1, keepdim=True))
    # pinv(R) = sum over kept j of u_j w_j^T / sigma_j, u_j = b_j / sigma_j (R^T = B W^T);
    # pinv(QR) = pinv(R) Q^T
    inverse = torch.where(sigma > tol, 1 / sigma, torch.zeros((), dtype=a.dtype)).unsqueeze(-2)
    pinv = (((b * inverse) * inverse) @ w.mT) @ q.mT
    return pinv.mT if wide else pinv


# Eigen- and singular vectors: ops of their own, which the compiler does not support. eager's
# eigvalsh and svdvals ask _linalg_eigh / _linalg_svd for the vectors whenever their input is a
# traced tensor (for autograd), and leave them unused: then the vector op is dead code and
# disappears from the graph; where the vectors are used, it is reported unsupported with the
# reason below (or runs on the CPU with fallback="cpu").


@torch.library.custom_op("neuronsim::linalg_eigh_vectors", mutates_args=())
def eigh_vectors(a: torch.Tensor, uplo: str) -> torch.Tensor:
    """linalg.eigh(a, uplo)'s eigenvectors, by eager."""
    return torch.linalg.eigh(a, uplo).eigenvectors


@eigh_vectors.register_fake
def _(a, uplo):
    return a.new_empty(a.shape)


@torch.library.custom_op("neuronsim::linalg_svd_vectors", mutates_args=())
def svd_vectors(a: torch.Tensor, full_matrices: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """linalg.svd(a, full_matrices)'s U and Vh, by eager."""
    u, _, vh = torch.linalg.svd(a, full_matrices)
    return u, vh


@svd_vectors.register_fake
def _(a, full_matrices):
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    u = a.new_empty((*batch, m, m if full_matrices else k))
    return u, a.new_empty((*batch, n if full_matrices else k, n))


VECTOR_OPS_PROBLEMS = {
    torch.ops.neuronsim.linalg_svd_vectors.default: (
        "singular vectors: the neuron backend computes singular values (Jacobi), but not "
        "LAPACK's signs of the vectors (svdvals, pinv, matrix_rank, cond are supported)"
    ),
    torch.ops.neuronsim.linalg_eigh_vectors.default: (
        "eigenvectors: the neuron backend computes eigenvalues (Jacobi), but not LAPACK's "
        "signs of the vectors (eigvalsh, pinv(hermitian=True) are supported)"
    ),
}
