"""The batched optimiser: box-constrained Levenberg-Marquardt on a [B, P] array of parameter
vectors (`maximise`), and the bootstrap's entry point that fits identical datasets once
(`refit`)."""

from __future__ import annotations

import dataclasses
from typing import TypedDict, Unpack

import numpy as np

from analysis.batch_mle.layout import Layout
from analysis.batch_mle.stacked_solve import cholesky_solve


class Tolerances(TypedDict, total=False):
    """`maximise`'s stopping rules, as passed on by `refit` and the bootstraps."""

    max_iter: int
    tol: float
    decrement_tol: float


BOOT_TOLERANCES: Tolerances = {"tol": 1e-6, "decrement_tol": 1e-4}  # refits: thresholds count
EXTRAPOLATION = 4.0  # the line search also tries this multiple of the step (flat ridges)
FIRTH_ROUNDS = 60  # re-weightings of a Firth fit; each moves it by a shrinking fraction
FIRTH_TOL = 1e-8  # ... and it has converged when a round moves no parameter more than this


def _damped_step(
    grad: np.ndarray, observed: np.ndarray, pinned: np.ndarray, mu: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Levenberg-Marquardt step [B, P]: Newton on the observed information where the damped
    system is positive definite (newton [B] says where). Elsewhere the system is shifted by
    twice its most negative eigenvalue: still an ascent step, and one that moves along the
    negative curvature away from the saddle (Fisher scoring crept there, in zig-zags, for
    dozens of iterations). Pinned parameters (on a bound, gradient pointing out) do not
    move. Returns (step, newton)."""
    free = ~pinned
    grad = np.where(free, grad, 0.0)
    info = np.where(free[:, :, None] & free[:, None, :], observed, 0.0)
    diag = np.abs(np.diagonal(info, axis1=1, axis2=2)) + 1e-9
    eye = np.eye(grad.shape[1])
    matrix = info + eye * (mu[:, None] * diag + pinned)[:, None, :]
    step, newton = cholesky_solve(matrix, grad)
    other = np.flatnonzero(~newton)
    if other.size:
        step[other] = np.nan
        try:
            eig = np.linalg.eigvalsh(matrix[other])
            shift = 2.0 * np.maximum(-eig[:, 0], 0.0) + 1e-6 * np.abs(eig[:, -1])
            shifted = matrix[other] + shift[:, None, None] * eye
            step[other] = np.linalg.solve(shifted, grad[other, :, None])[..., 0]
        except (np.linalg.LinAlgError, ValueError):
            pass  # non-finite curvature: the gradient step below
    bad = ~np.all(np.isfinite(step), axis=1)
    if np.any(bad):  # scaled gradient ascent
        step[bad] = grad[bad] / diag[bad]
    return np.where(np.isfinite(step), step, 0.0), newton


def _best_point(
    layout: Layout,
    points: list[np.ndarray],
    k: np.ndarray,
    n: np.ndarray,
    ll_now: np.ndarray,
    first_may_tie: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The best of candidate points (a list of [B, P]) per row that gains likelihood.

    Returns (theta [B, P], loglik [B], ok [B], which point [B]); with `first_may_tie` the
    first point is also acceptable when it loses no more than rounding (a converged row's
    last step).
    """
    n_rows, n_c = len(ll_now), len(points)
    cands = np.clip(np.concatenate(points), layout.lo, layout.hi)
    ll_c = layout.loglik(cands, np.tile(k, (n_c, 1)), np.tile(n, (n_c, 1))).reshape(n_c, -1)
    gains = ll_c > ll_now
    if first_may_tie:
        gains[0] = ll_c[0] - ll_now >= -1e-12 * np.abs(ll_now)
    ll_c = np.where(gains & np.isfinite(ll_c), ll_c, -np.inf)
    best = np.argmax(ll_c, axis=0)
    rows = np.arange(n_rows)
    ll_best = ll_c[best, rows]
    return cands[best * n_rows + rows], ll_best, np.isfinite(ll_best), best


def _line_search(
    layout: Layout,
    th: np.ndarray,
    step: np.ndarray,
    k: np.ndarray,
    n: np.ndarray,
    ll_now: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The best acceptable point along each row's step: (theta [B, P], loglik [B], ok [B],
    full [B]), full where that point is the whole step, inside the box.

    Tried at once: the full step projected onto the box; the step cut where it first
    meets a bound (half the step when it meets none); EXTRAPOLATION times the step; and the
    jump along a steep ridge of `Layout.ridge_jump`. Rows where none gains then try 1/10
    and 1/100 of the step (an ascent direction gains when short enough), so a bad
    quadratic model costs one iteration rather than several rounds of damping.
    """
    lo, hi = layout.lo, layout.hi
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.where(step > 0, (hi - th) / step, np.where(step < 0, (lo - th) / step, 1.0))
    to_bound = np.clip(np.min(room, axis=1), 0.0, 1.0)
    short = np.where(to_bound < 1.0, to_bound, 0.5)[:, None]
    points = [
        th + step,
        th + short * step,
        th + EXTRAPOLATION * step,
        layout.ridge_jump(th, step),
    ]
    new, ll_new, ok, which = _best_point(layout, points, k, n, ll_now, first_may_tie=True)
    full = ok & (which == 0) & (to_bound >= 1.0)
    retry = np.flatnonzero(~ok)
    if retry.size:
        t, s = th[retry], step[retry]
        found = _best_point(
            layout, [t + 0.1 * s, t + 0.01 * s], k[retry], n[retry], ll_now[retry], False
        )
        took = retry[found[2]]
        new[took], ll_new[took], ok[took] = found[0][found[2]], found[1][found[2]], True
    return new, ll_new, ok, full


def maximise(
    layout: Layout,
    theta0: np.ndarray,
    k: np.ndarray,
    n: np.ndarray,
    *,
    max_iter: int = 200,
    tol: float = 1e-9,
    decrement_tol: float = 1e-6,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximise the likelihood of B datasets at once from starting points theta0 [B, P].

    k and n are [B, L] (n may be [L]). Returns (theta [B, P], loglik [B], converged [B]).
    A fit has converged when its last accepted step moved every parameter less than `tol`,
    when the Newton decrement (the log-likelihood a full step still promises) fell below
    `decrement_tol`, or when a whole Newton step gained what the quadratic model foretold
    to within `decrement_tol` / 2 (what is left is then smaller still). The sensitivity,
    jackknife and cluster-bootstrap refits use a looser decrement (BOOT_TOLERANCES): only
    their thresholds are used, and the interval ends move by under 1% (inside the
    Monte-Carlo error of a 2.5% quantile from B = 1000). The main bootstrap stays strict:
    its widths (weakly determined for steep data) set the sensitivity model.
    Parameters on a bound whose gradient, or step, points out of the box are frozen for the
    step; `_line_search` then picks the point along it; if none gains, the damping rises
    tenfold. A layout with Firth's penalty is fitted by `_firth_maximise`.
    """
    if layout.firth:
        return _firth_maximise(layout, theta0, k, n, max_iter, tol, decrement_tol)
    lo, hi = layout.lo, layout.hi
    n_b = theta0.shape[0]
    k = np.asarray(k, dtype=float)
    n = np.broadcast_to(np.asarray(n, dtype=float), k.shape)
    theta = np.clip(np.array(theta0, dtype=float), lo, hi)
    ll = layout.loglik(theta, k, n)
    mu = np.full(n_b, 1e-3)
    converged = np.zeros(n_b, dtype=bool)
    active = np.arange(n_b)
    for _ in range(max_iter):
        if active.size == 0:
            break
        th, kk, nn, ll_a, mu_a = theta[active], k[active], n[active], ll[active], mu[active]
        grad, observed, _ = layout.derivatives(th, kk, nn, fisher=False)
        at_lo, at_hi = th <= lo + 1e-12, th >= hi - 1e-12
        pinned = (at_lo & (grad < 0)) | (at_hi & (grad > 0))
        step, newton = _damped_step(grad, observed, pinned, mu_a)
        # a parameter on a bound that the joint step would push out of the box: pin it
        # too and solve again for the others (else the projected step is not a step of
        # theirs, and the damping has to grow until it happens to be)
        push = ((at_lo & (step < 0)) | (at_hi & (step > 0))) & ~pinned
        redo = np.flatnonzero(np.any(push, axis=1))
        if redo.size:
            pinned[redo] |= push[redo]
            step[redo], newton[redo] = _damped_step(
                grad[redo], observed[redo], pinned[redo], mu_a[redo]
            )
        new, ll_best, ok, full = _line_search(layout, th, step, kk, nn, ll_a)
        moved = np.max(np.abs(new - th), axis=1)
        # Newton decrement: the gain a full step still promised; tiny means converged (also
        # where the likelihood flattens out towards a bound, e.g. steep data and w -> 0)
        decrement = np.sum(step * grad, axis=1)
        lightly_damped = mu_a <= 1.0
        # a whole Newton step whose gain the quadratic model foretold: the model's error
        # (third order in the distance) bounds what is left (fourth order), so stop here
        # rather than take one more step to see a tiny decrement
        foretold = (
            newton
            & full
            & (mu_a <= 1e-2)
            & (np.abs(ll_best - ll_a - 0.5 * decrement) < 0.5 * decrement_tol)
        )
        theta[active[ok]] = new[ok]
        ll[active[ok]] = ll_best[ok]
        mu_a = np.where(ok, np.maximum(mu_a * 0.2, 1e-12), mu_a * 10.0)
        mu[active] = mu_a
        done = ok & ((moved < tol) | (lightly_damped & (decrement < decrement_tol)) | foretold)
        stuck = mu_a > 1e12
        converged[active[done]] = True
        active = active[~(done | stuck)]
    return theta, ll, converged


def _firth_maximise(
    layout: Layout,
    theta0: np.ndarray,
    k: np.ndarray,
    n: np.ndarray,
    max_iter: int,
    tol: float,
    decrement_tol: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`maximise` for a layout with Firth's penalty: maximum likelihood on the counts
    k + h/2 of n + h, h the hat values at the last fit (`Layout.firth_terms`), until a round
    moves no parameter by FIRTH_TOL (Heinze & Schemper 2002's pseudo-data form of the
    modified score). Returns the penalised log-likelihood of k of n, like `maximise`."""
    plain = dataclasses.replace(layout, firth=False)
    k = np.asarray(k, dtype=float)
    n = np.broadcast_to(np.asarray(n, dtype=float), k.shape)
    theta = np.clip(np.array(theta0, dtype=float), layout.lo, layout.hi)
    converged = np.zeros(theta.shape[0], dtype=bool)
    active = np.arange(theta.shape[0])
    for _ in range(FIRTH_ROUNDS):
        if active.size == 0:
            break
        _, hat = layout.firth_terms(theta[active], n[active])
        new, _, fitted = maximise(
            plain,
            theta[active],
            k[active] + 0.5 * hat,
            n[active] + hat,
            max_iter=max_iter,
            tol=tol,
            decrement_tol=decrement_tol,
        )
        moved = np.max(np.abs(new - theta[active]), axis=1)
        theta[active] = new
        done = moved < max(tol, FIRTH_TOL)
        converged[active[done]] = fitted[done]
        active = active[~done]
    return theta, layout.loglik(theta, k, n), converged


def _row_keys(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """One sortable key per row of counts k [B, L] (each count in 0..n of its column)."""
    radix = np.asarray(n, dtype=float) + 1.0
    if np.prod(radix) < 2.0**62:
        weights = np.concatenate([[1], np.cumprod(radix[:-1])]).astype(np.int64)
        return k.astype(np.int64) @ weights
    rows = np.ascontiguousarray(k, dtype=float)
    return rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1])))[:, 0]


def refit(
    layout: Layout,
    start: np.ndarray,
    k: np.ndarray,
    n: np.ndarray,
    *,
    known: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    **tolerances: Unpack[Tolerances],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fit B datasets k [B, L] of the same n [L] trials, warm-started at start [P] (or
    row by row at start [B, P]).

    Identical datasets are fitted once (bootstrap draws from a steep curve repeat often),
    and a dataset found in ``known = (k_known, theta_known, loglik_known)`` takes its
    known fit. Returns (theta [B, P], loglik [B], converged [B]) like `maximise`, whose
    tolerances can be passed on.
    """
    k, n, start = (np.asarray(a, dtype=float) for a in (k, n, start))
    n_known = 0 if known is None else len(known[0])
    pool = k if known is None else np.concatenate([np.asarray(known[0], dtype=float), k])
    _, first, inverse = np.unique(_row_keys(pool, n), return_index=True, return_inverse=True)
    theta_u = np.empty((first.size, layout.n_params))
    ll_u = np.empty(first.size)
    conv_u = np.ones(first.size, dtype=bool)
    seen = first < n_known
    if known is not None:
        theta_u[seen] = known[1][first[seen]]
        ll_u[seen] = known[2][first[seen]]
    fresh = np.flatnonzero(~seen)
    if fresh.size:
        rows = first[fresh]
        starts = np.tile(start, (fresh.size, 1)) if start.ndim == 1 else start[rows - n_known]
        theta_u[fresh], ll_u[fresh], conv_u[fresh] = maximise(
            layout, starts, pool[rows], n, **tolerances
        )
    mine = inverse.ravel()[n_known:]
    return theta_u[mine], ll_u[mine], conv_u[mine]
