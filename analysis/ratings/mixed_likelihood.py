"""The random-intercept logit of an acceptable rating: its marginal likelihood over a fixed
grid of the person effect, the likelihood's derivatives for many parameter rows at once, and
the batched Levenberg-Marquardt that maximises it (see `analysis.ratings`)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import cast

import numpy as np
from scipy import stats

Z_GRID = np.linspace(-5.0, 5.0, 51)
"""Standard-normal nodes for the person effect (trapezoid rule, step 0.2): a fixed grid stays
accurate when one person's data pin their effect down more narrowly than Gauss-Hermite
nodes are spaced (the trapezoid rule on a smooth peak of SD 0.2 errs by ~1e-9). The prior
mass beyond ±5 SD (6e-7) is left out."""
Z_LOGW = stats.norm.logpdf(Z_GRID)
Z_LOGW -= np.logaddexp.reduce(Z_LOGW)


def expit(x: np.ndarray) -> np.ndarray:
    result: np.ndarray = 0.5 * (1.0 + np.tanh(0.5 * x))
    return result


Derivatives = tuple[np.ndarray, np.ndarray, np.ndarray]
"""(log-likelihood [B, ...], gradient [B, ..., 3], Hessian [B, ..., 3, 3])."""


_CHUNK_ELEMENTS = 2_000_000
"""Rows of parameters are evaluated in blocks of about this many [row, level or cell or
person, node] values: the same arithmetic, but the temporaries stay small (one [B, C, G]
block of a 1,000-row bootstrap over 200 people is ~800 MB, and allocating it dominated the
time)."""


@dataclass(frozen=True)
class _PersonLevels:
    """The cells of `mixed_loglik_derivs` grouped by distinct latency: the likelihood's curve
    terms are evaluated once per (row, latency, node), [B, U, G], and summed into each
    person's with the person x latency count matrices (one matrix product each), instead of
    once per (row, cell, node). With few distinct latencies (a design's levels, an adaptive
    grid) that is many times fewer exp/log and array passes; with nearly one latency per
    cell (measured latencies) the dense matrices would be mostly zeros, so the cells are
    then gathered and summed per person as they are (`dense` False)."""

    starts: np.ndarray  # [P] first cell of each person
    u: np.ndarray  # [U] distinct (centred) ln latencies
    at: np.ndarray  # [C] each cell's index into u
    n_cells: np.ndarray  # [C] trials per cell
    dense: bool
    n: np.ndarray  # [P, U] trials (dense) or [C] per cell
    nu: np.ndarray  # n * u
    nu2: np.ndarray  # n * u^2
    no: np.ndarray  # n - k: the "no" answers
    k_sum: np.ndarray  # [P] sum of k
    ku_sum: np.ndarray  # [P] sum of k * u

    @classmethod
    def of(cls, starts: np.ndarray, u: np.ndarray, k: np.ndarray, n: np.ndarray) -> _PersonLevels:
        levels, at = np.unique(u, return_inverse=True)
        people = starts.size
        person = np.repeat(np.arange(people), np.diff(np.r_[starts, u.size]))
        dense = people * levels.size <= 4 * u.size

        def per_person(x: np.ndarray) -> np.ndarray:
            if not dense:
                return x
            out = np.zeros((people, levels.size))
            np.add.at(out, (person, at), x)
            return out

        uc = levels[at]
        return cls(
            starts,
            levels,
            at,
            n,
            dense,
            per_person(n),
            per_person(n * uc),
            per_person(n * uc * uc),
            per_person(n - k),
            np.add.reduceat(k, starts),
            np.add.reduceat(k * uc, starts),
        )

    def sum(self, weights: np.ndarray, x: np.ndarray) -> np.ndarray:
        """sum over each person's cells of weight * x(latency): x [B, U, G] -> [B, P, G]."""
        if self.dense:
            return cast(np.ndarray, weights @ x)
        summed: np.ndarray = np.add.reduceat(
            weights[:, None] * x[:, self.at, :], self.starts, axis=1
        )
        return summed

    def row_size(self) -> int:
        """Values per parameter row in one evaluation's largest temporaries."""
        cells = self.u.size if self.dense else self.at.size
        return (cells + 8 * self.starts.size) * Z_GRID.size


def mixed_loglik_derivs(
    theta: np.ndarray,
    starts: np.ndarray,
    u: np.ndarray,
    k: np.ndarray,
    n: np.ndarray,
    w: np.ndarray,
    cells: _PersonLevels | None = None,
) -> Derivatives:
    """`_loglik_derivs_block` over blocks of rows (identical results, bounded memory);
    `cells`: `_PersonLevels.of(starts, u, k, n)` when the caller has it already."""
    cells = _PersonLevels.of(starts, u, k, n) if cells is None else cells
    rows = max(1, _CHUNK_ELEMENTS // max(1, cells.row_size()))
    if theta.shape[0] <= rows:
        return _loglik_derivs_block(theta, cells, w)

    def block(i: int) -> Derivatives:
        return _loglik_derivs_block(theta[i : i + rows], cells, w[i : i + rows])

    # numpy's ufuncs release the GIL on large arrays: blocks run on every core at once.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        parts = list(pool.map(block, range(0, theta.shape[0], rows)))
    ll, grad, hess = (np.concatenate(x) for x in zip(*parts, strict=True))
    return ll, grad, hess


def _loglik_derivs_block(theta: np.ndarray, cells: _PersonLevels, w: np.ndarray) -> Derivatives:
    """Marginal log-likelihood, gradient and Hessian for B parameter rows at once.

    theta [B, 3] (a, b, s) with u centred; `cells` the data by person and latency; w [B, P]
    person weights. Returns ll [B], grad [B, 3], hess [B, 3, 3].
    """
    ll_p, g, hess_p = _person_derivs(theta, cells)
    ll = (w * ll_p).sum(1)
    grad = np.einsum("bp,bpi->bi", w, g)
    hess = np.einsum("bp,bpij->bij", w, hess_p)
    return ll, grad, hess


# Where each (row, column) of a person's Hessian is among the posterior means `m` of
# `_person_derivs`: m[w, x] = E[z^w * x-th term], terms (r0, r1, h0 + r0^2, h1 + r0 r1,
# h2 + r1^2); (a, a) = E[h0 + r0^2], (a, s) = E[(h0 + r0^2) z], (s, s) = E[(h0 + r0^2) z^2]...
_HESS_W = np.array([[0, 0, 1], [0, 0, 1], [1, 1, 2]])
_HESS_X = np.array([[2, 3, 2], [3, 4, 3], [2, 3, 2]])


def _person_derivs(theta: np.ndarray, cells: _PersonLevels) -> Derivatives:
    """Per row and person: marginal log-likelihood ll_p [B, P], gradient [B, P, 3] and
    Hessian [B, P, 3, 3]. Gradient = posterior mean of the grid's gradients, Hessian =
    posterior mean of the grid's Hessians + their posterior covariance (Louis' identity).
    """
    a, b, s = theta[:, 0, None, None], theta[:, 1, None, None], theta[:, 2, None, None]
    uu = cells.u[None, :, None]
    eta = (a + b * uu) + s * Z_GRID  # [B, U, G]
    # p = logistic(eta) and ln p from one exp and one log1p: t = exp(-|eta|)
    t = np.exp(-np.abs(eta))
    one_t = 1.0 + t
    log_p = np.minimum(eta, 0.0) - np.log1p(t)
    p = np.where(eta >= 0.0, 1.0, t) / one_t
    q = t / (one_t * one_t)  # p (1 - p), d p / d eta
    # per person and node [B, P, G]: log-likelihood, and the sums over trials of
    # d ll / d eta = k - n p (times 1, u) and d2 ll / d eta2 = -n p (1 - p) (times 1, u, u^2)
    ll_pg = cells.sum(cells.n, log_p) - cells.sum(cells.no, eta) + Z_LOGW
    top = ll_pg.max(axis=2, keepdims=True)
    post = np.exp(ll_pg - top)
    total = post.sum(axis=2, keepdims=True)
    ll_p = (top + np.log(total))[..., 0]  # [B, P]
    post /= total
    z = Z_GRID
    weights = np.empty((*post.shape[:2], 3, z.size))  # posterior weights of x, x z, x z^2
    weights[:, :, 0], weights[:, :, 1], weights[:, :, 2] = post, post * z, post * (z * z)
    terms = np.empty((*post.shape[:2], 5, z.size))
    r0 = terms[:, :, 0] = cells.k_sum[:, None] - cells.sum(cells.n, p)
    r1 = terms[:, :, 1] = cells.ku_sum[:, None] - cells.sum(cells.nu, p)
    terms[:, :, 2] = r0 * r0 - cells.sum(cells.n, q)
    terms[:, :, 3] = r0 * r1 - cells.sum(cells.nu, q)
    terms[:, :, 4] = r1 * r1 - cells.sum(cells.nu2, q)
    m = weights @ terms.swapaxes(-1, -2)  # [B, P, 3, 5]
    g = m[:, :, [0, 0, 1], [0, 1, 0]]  # E[r0], E[r1], E[r0 z]
    hess_p = m[:, :, _HESS_W, _HESS_X] - g[..., :, None] * g[..., None, :]
    return ll_p, g, hess_p


def maximise_mixed(
    theta: np.ndarray,
    starts: np.ndarray,
    u: np.ndarray,
    k: np.ndarray,
    n: np.ndarray,
    w: np.ndarray,
    max_iter: int = 200,
    tol: float = 1e-6,
    *,
    at_start: Derivatives | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Levenberg-Marquardt ascent of every row at once; returns theta, ll, converged.

    `at_start`: (ll, grad, hess) of the rows at `theta` when the caller has them (then the
    first evaluation is skipped)."""
    theta = theta.copy()
    lam = np.full(theta.shape[0], 1e-3)
    cells = _PersonLevels.of(starts, u, k, n)
    if at_start is None:
        ll, grad, hess = mixed_loglik_derivs(theta, starts, u, k, n, w, cells)
    else:
        ll, grad, hess = (x.copy() for x in at_start)
    done = np.zeros(theta.shape[0], dtype=bool)
    eye = np.eye(3)
    for _ in range(max_iter):
        active = ~done
        if not active.any():
            break
        scale = np.abs(np.diagonal(hess[active], axis1=1, axis2=2)) + 1e-9
        system = -hess[active] + lam[active, None, None] * scale[:, :, None] * eye
        step = np.linalg.solve(system, grad[active][..., None])[..., 0]
        trial = theta[active] + step
        trial[:, 2] = np.abs(trial[:, 2])  # s and -s give the same likelihood
        ll_t, grad_t, hess_t = mixed_loglik_derivs(trial, starts, u, k, n, w[active], cells)
        better = ll_t >= ll[active] - 1e-12
        idx = np.flatnonzero(active)
        up = idx[better]
        newton = lam[up] < 1e-2  # a (nearly) full Newton step, not a damped one
        converged = (np.abs(grad_t[better]).max(1) < tol) | (
            newton & (np.abs(step[better]).max(1) < 1e-7)
        )
        theta[up], ll[up] = trial[better], ll_t[better]
        grad[up], hess[up] = grad_t[better], hess_t[better]
        lam[up] = np.maximum(lam[up] / 10.0, 1e-12)
        lam[idx[~better]] *= 10.0
        done[up[converged]] = True
        done[idx[~better][lam[idx[~better]] > 1e12]] = True
    ok = done & (np.abs(grad).max(1) < 1e-3)
    return theta, ll, ok


def maximise_leave_one_out(
    theta: np.ndarray, starts: np.ndarray, u: np.ndarray, k: np.ndarray, n: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`maximise_mixed` of every leave-one-person-out likelihood from the full fit theta [1, 3]
    (u centred): [P, 3] rows, ll, converged. The refits start at the full fit, where their
    likelihoods, gradients and Hessians are the full fit's per-person sums less the person
    left out: one evaluation of P rows fewer than evaluating them there."""
    cells = _PersonLevels.of(starts, u, k, n)
    people = starts.size
    ll_p, g, h = _person_derivs(theta, cells)  # [1, P], [1, P, 3], [1, P, 3, 3]
    at_full = (ll_p.sum(1) - ll_p[0], g.sum(1) - g[0], h.sum(1) - h[0])
    return maximise_mixed(
        np.repeat(theta, people, 0),
        starts,
        u,
        k,
        n,
        1.0 - np.eye(people),
        at_start=at_full,
    )
