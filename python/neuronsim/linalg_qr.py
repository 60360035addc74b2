"""Householder QR as decompositions (see linalg.py for the unrolling and the size cap).

geqrf is LAPACK's dgeqr2: for each column j, the reflector H_j = I - tau_j v_j v_j^T
(v_j[j] = 1, zero above) that maps the column's part from row j to beta e_j, with
beta = -sign(alpha) * ||x|| (dlarfg; tau = 0 and H = I when the part below the diagonal is
zero), applied to the columns right of j. The result stores R on and above the diagonal and
v_j below it. Q = H_0 H_1 ... H_{k-1} is accumulated backwards (dorg2r), and ormqr applies
the reflectors to C in the order that op(Q) C or C op(Q) needs (dorm2r).
"""

from __future__ import annotations

import torch

from .linalg import _rows, _triu


def _reflector(a: torch.Tensor, j: int) -> torch.Tensor:
    """v_j [..., m, 1] from column j of a compact QR: 0 above row j, 1 at j, a[i, j] below."""
    rows = _rows(a.shape[-2], a)
    unit = (rows == j).to(a.dtype)
    return torch.where(rows > j, a[..., :, j : j + 1], unit)


def _reflect(c: torch.Tensor, v: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """H C = C - tau v (v^T C), with v [..., m, 1] and tau [..., 1, 1]."""
    return c - (tau * v) * (v.mT @ c)


def geqrf(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """aten.geqrf: (R and the reflectors, tau [..., min(m, n)])."""
    m, n = a.shape[-2:]
    work = a
    taus: list[torch.Tensor] = []
    for j in range(min(m, n)):
        x = work[..., j:, j : j + 1]
        alpha, tail = x[..., :1, :], x[..., 1:, :]
        if m - j == 1:  # nothing below the diagonal: H = I
            taus.append(torch.zeros_like(alpha))
            continue
        tail_norm = torch.sqrt((tail * tail).sum(-2, keepdim=True))
        identity = tail_norm == 0
        beta = -torch.copysign(torch.hypot(alpha, tail_norm), alpha)
        tau = torch.where(identity, 0.0, (beta - alpha) / beta)
        v_tail = torch.where(identity, tail, tail * (1.0 / (alpha - beta)))
        diagonal = torch.where(identity, alpha, beta)
        column = torch.cat([work[..., :j, j : j + 1], diagonal, v_tail], -2)
        right = work[..., :, j + 1 :]
        if n - j > 1:
            v = torch.cat([torch.ones_like(alpha), v_tail], -2)
            lower = _reflect(right[..., j:, :], v, tau)
            right = torch.cat([right[..., :j, :], lower], -2)
        work = torch.cat([work[..., :, :j], column, right], -1)
        taus.append(tau)
    if not taus:
        return a.clone(), a.new_zeros((*a.shape[:-2], 0))
    return work, torch.cat(taus, -1).reshape(*a.shape[:-2], len(taus))


def _apply_reflectors(
    a: torch.Tensor, tau: torch.Tensor, c: torch.Tensor, forward: bool
) -> torch.Tensor:
    """H_0 H_1 ... H_{k-1} C (forward=False: H_{k-1} applied first) or H_{k-1} ... H_0 C
    (forward: H_0 first), with v_j from a's columns."""
    k = tau.shape[-1]
    order = range(k) if forward else range(k - 1, -1, -1)
    for j in order:
        c = _reflect(c, _reflector(a, j), tau[..., j : j + 1].unsqueeze(-1))
    return c


def householder_product(a: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """aten.linalg_householder_product: the first n columns of H_0 ... H_{k-1} ([..., m, n])."""
    m, n = a.shape[-2:]
    identity = (_rows(m, a) == torch.arange(n, device=a.device)).to(a.dtype)
    batch = torch.broadcast_shapes(a.shape[:-2], tau.shape[:-1])
    return _apply_reflectors(a, tau, identity.expand(*batch, m, n), forward=False)


def ormqr(
    a: torch.Tensor, tau: torch.Tensor, c: torch.Tensor, left: bool = True, transpose: bool = False
) -> torch.Tensor:
    """aten.ormqr: op(Q) C (left) or C op(Q), Q = H_0 ... H_{k-1}, op(Q) = Q^T if transpose."""
    if left:  # Q C applies H_{k-1} first; Q^T C = H_{k-1} ... H_0 C applies H_0 first
        return _apply_reflectors(a, tau, c, forward=transpose)
    # C Q = (Q^T C^T)^T, C Q^T = (Q C^T)^T
    return _apply_reflectors(a, tau, c.mT, forward=not transpose).mT


def linalg_qr(a: torch.Tensor, mode: str = "reduced") -> tuple[torch.Tensor, torch.Tensor]:
    """aten.linalg_qr: (Q, R) for mode 'reduced' (Q m x k, R k x n), 'complete' (Q m x m,
    R m x n) or 'r' (Q empty, R k x n)."""
    m, n = a.shape[-2:]
    k = min(m, n)
    compact, tau = geqrf(a)
    if mode == "r":
        return a.new_empty((0,)), _triu(compact[..., :k, :])
    if mode == "complete" and m > n:
        identity = (_rows(m, a) == torch.arange(m, device=a.device)).to(a.dtype)
        q = _apply_reflectors(compact, tau, identity.expand(*a.shape[:-2], m, m), forward=False)
        return q, _triu(compact)
    return householder_product(compact[..., :, :k], tau), _triu(compact[..., :k, :])
