"""Linear solves for a stack of small symmetric matrices, with a definiteness test per matrix."""

from __future__ import annotations

import numpy as np

SMALL_BATCH = 48  # up to this many rows, LAPACK tests definiteness (see cholesky_solve)


def cholesky_solve(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Solve a x = b for a stack of symmetric matrices a [B, P, P] and b [B, P].

    Returns (x [B, P], definite [B]): definite says which matrices are positive definite
    (smallest eigenvalue, or Cholesky pivot, above 1e-10 of the largest diagonal entry);
    x is only meaningful there. Small stacks use LAPACK (eigenvalues, then a solve of the
    definite ones); large ones a Cholesky factorisation written as a loop over P of numpy
    operations on all B rows, several times cheaper than B eigen-decompositions.
    """
    floor = 1e-10 * np.max(np.abs(np.diagonal(a, axis1=1, axis2=2)), axis=1)
    if a.shape[0] <= SMALL_BATCH and np.all(np.isfinite(a)):
        definite = np.linalg.eigvalsh(a)[:, 0] > floor
        x = np.zeros_like(b)
        if np.any(definite):
            x[definite] = np.linalg.solve(a[definite], b[definite, :, None])[..., 0]
        return x, definite
    n_p = a.shape[-1]
    low = np.zeros_like(a)
    definite = np.ones(a.shape[0], dtype=bool)
    for j in range(n_p):
        done = low[:, j, :j]
        pivot = a[:, j, j] - np.einsum("bk,bk->b", done, done)
        good = pivot > floor
        definite &= good
        root = np.sqrt(np.where(good, pivot, 1.0))
        low[:, j, j] = root
        if j + 1 < n_p:
            below = a[:, j + 1 :, j] - np.einsum("bik,bk->bi", low[:, j + 1 :, :j], done)
            low[:, j + 1 :, j] = below / root[:, None]
    y = np.empty_like(b)
    for i in range(n_p):
        y[:, i] = (b[:, i] - np.einsum("bk,bk->b", low[:, i, :i], y[:, :i])) / low[:, i, i]
    x = np.empty_like(b)
    for i in reversed(range(n_p)):
        tail = np.einsum("bk,bk->b", low[:, i + 1 :, i], x[:, i + 1 :])
        x[:, i] = (y[:, i] - tail) / low[:, i, i]
    return x, definite
