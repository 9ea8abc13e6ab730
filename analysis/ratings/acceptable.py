"""The acceptable-rating threshold: ratings made binary at the acceptable point, the
psychometric engine's pooled fit, the logit with a normal effect per participant, and
separated ratings (see `analysis.ratings`)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict, cast

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

from analysis.bootstrap import cluster_resample_weights
from analysis.separation import (
    LatencySeparation,
    Wording,
    find_people_separation,
    find_separation,
)

if TYPE_CHECKING:
    from analysis.psychometric import PsychometricFitter


class _EngineSettings(TypedDict):
    direction: str
    guess: float
    lapse: float


# Psychometric-engine settings for the acceptable-rating threshold (see `analysis.ratings`).
RATING_FIT: _EngineSettings = {"direction": "auto", "guess": 0.0, "lapse": 0.0}

Cells = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""(person index, ln latency, k, n) per non-empty (person, level) cell, sorted by person."""

Derivatives = tuple[np.ndarray, np.ndarray, np.ndarray]
"""(log-likelihood [B, ...], gradient [B, ..., 3], Hessian [B, ..., 3, 3])."""


def acceptable_binary(ratings: pd.Series, acceptable_at: float) -> pd.Series:
    """1 where the rating is at or above the acceptable point, 0 below, NaN where unrated."""
    out = (ratings >= acceptable_at).astype(float)
    return out.where(ratings.notna())


def acceptability_threshold(
    trials: pd.DataFrame,
    rating: str,
    stimulus: str,
    acceptable_at: float,
    n_boot: int = 1000,
    seed: int = 0,
    progress: bool = False,
) -> PsychometricFitter:
    """Fit the psychometric engine to "rating >= acceptable_at" against `stimulus`."""
    from analysis.psychometric import PsychometricFitter

    df = trials.dropna(subset=[rating, stimulus])
    y = acceptable_binary(df[rating], acceptable_at).to_numpy(dtype=int)
    fitter = PsychometricFitter(**RATING_FIT)
    return fitter.fit_trials(
        df[stimulus].to_numpy(dtype=float), y, n_boot=n_boot, seed=seed, progress=progress
    )


# -- the acceptable-rating threshold with participant effects --------------------------------

Z_GRID = np.linspace(-5.0, 5.0, 51)
"""Standard-normal nodes for the person effect (trapezoid rule, step 0.2): a fixed grid stays
accurate when one person's data pin their effect down more narrowly than Gauss-Hermite
nodes are spaced (the trapezoid rule on a smooth peak of SD 0.2 errs by ~1e-9). The prior
mass beyond ±5 SD (6e-7) is left out."""
_Z_LOGW = stats.norm.logpdf(Z_GRID)
_Z_LOGW -= np.logaddexp.reduce(_Z_LOGW)


def _expit(x: np.ndarray) -> np.ndarray:
    result: np.ndarray = 0.5 * (1.0 + np.tanh(0.5 * x))
    return result


class RatingSeparation(LatencySeparation):
    """Ratings the latency separates (`analysis.separation.LatencySeparation`), named in
    the rating's words."""

    @property
    def all_acceptable_ms(self) -> float | None:
        """The slowest level where every rating was acceptable (None: not even the fastest)."""
        return self.all_ok_ms

    @property
    def none_acceptable_ms(self) -> float | None:
        """The fastest level where no rating was acceptable (None: not even the slowest)."""
        return self.none_ok_ms

    def describe(self, acceptable_at: float, stimulus: str) -> str:
        """One sentence for the report: what separates, and which levels bracket it."""
        return self.explain(rating_words(acceptable_at), stimulus)


def rating_words(acceptable_at: float) -> Wording:
    """How the report names ratings on either side of `acceptable_at`."""
    return Wording("ratings", f"{acceptable_at:g} or better", f"below {acceptable_at:g}")


def acceptable_separation(
    latency_ms: npt.ArrayLike, acceptable: npt.ArrayLike
) -> RatingSeparation | None:
    """The separation of trials (latency in ms, 1 = acceptable, 0 = not), pooled by latency,
    or None when acceptable and unacceptable ratings overlap in latency."""
    found = find_separation(latency_ms, acceptable)
    return None if found is None else RatingSeparation(found.levels)


@dataclass
class MixedAcceptabilityFit:
    """logit P(acceptable) = a + b * ln(latency ms) + s * z, z ~ N(0, 1) per participant.

    `b` is per ln ms (negative when ratings fall with latency), `s` the SD of the person
    effect in log-odds; `boot` holds one (a, b, s) row per participant resample (NaN rows:
    refits that did not converge). `n_trials_`, `n_participants_` count what was fitted.
    `separation`: set when the ratings separate by latency (`RatingSeparation`); then
    (a, b, s) are where the optimiser stopped, not estimates, and no threshold is given.
    """

    a: float
    b: float
    s: float
    loglik: float
    boot: np.ndarray
    n_trials_: int
    n_participants_: int
    separation: RatingSeparation | None = None
    converged: bool = True
    unbounded: bool = False  # the likelihood rises along the fit's ray: no finite maximum

    def population_share(self, latency_ms: npt.ArrayLike) -> np.ndarray:
        """P(acceptable) in the population (marginal over the person effect)."""
        u = np.log(np.asarray(latency_ms, dtype=float))[..., None]
        return cast(
            np.ndarray, (np.exp(_Z_LOGW) * _expit(self.a + self.b * u + self.s * Z_GRID)).sum(-1)
        )

    def threshold_ms(self, level: float = 0.5) -> float:
        """Latency where the population's share of unacceptable ratings reaches `level`.

        At 0.5 this is also the median person's own 50% point (the person effect is
        symmetric); at other levels it is the population's, flatter than one person's.
        NaN when ratings do not fall with latency, or separate by it (`separation`).
        """
        if self.separation is not None:
            return math.nan
        return float(_thresholds_ms(np.array([[self.a, self.b, self.s]]), level)[0])

    def thresholds(
        self, levels: Sequence[float] = (0.25, 0.5, 0.75), alpha: float = 0.05
    ) -> pd.DataFrame:
        """level, estimate, ci_low, ci_high (participant-resampling percentiles), counts;
        NaN estimates and intervals when the ratings separate by latency (`separation`)."""
        rows = []
        estimates = _thresholds_ms_at(np.array([[self.a, self.b, self.s]]), levels)[0]
        boots = _thresholds_ms_at(self.boot, levels)
        if self.separation is not None:
            estimates = np.full(len(levels), np.nan)
            boots = np.full((0, len(levels)), np.nan)
        for j, level in enumerate(levels):
            boot = boots[:, j][np.isfinite(boots[:, j])]
            low, high = (
                np.percentile(boot, [100 * alpha / 2, 100 * (1 - alpha / 2)])
                if boot.size
                else (np.nan, np.nan)
            )
            rows.append(
                {
                    "level": level,
                    "estimate": float(estimates[j]),
                    "ci_low": float(low),
                    "ci_high": float(high),
                    "n_trials": self.n_trials_,
                    "n_participants": self.n_participants_,
                }
            )
        return pd.DataFrame(rows)


def _thresholds_ms(theta: np.ndarray, level: float) -> np.ndarray:
    """`MixedAcceptabilityFit.threshold_ms` for each (a, b, s) row of `theta`."""
    return _thresholds_ms_at(theta, [level])[:, 0]


def _thresholds_ms_at(theta: np.ndarray, levels: Sequence[float]) -> np.ndarray:
    """[B, J] `MixedAcceptabilityFit.threshold_ms` for each (a, b, s) row of `theta` and
    each of `levels`, solved together (each row and level is its own Newton iteration).

    The population share depends on v = a + b ln x and s only: solve E logistic(v + s z) =
    1 - level for v by Newton steps (the share rises monotonically in v), then x from v.
    """
    a, b, s = theta[:, 0, None], theta[:, 1, None], theta[:, 2, None]  # [B, 1]
    target = 1.0 - np.asarray(levels, dtype=float)[None, :]  # [1, J]
    v = np.log(target / (1.0 - target)) * np.sqrt(1.0 + 0.35 * s**2)  # [B, J]
    wz = np.exp(_Z_LOGW)
    for _ in range(40):
        p = _expit(v[..., None] + s[..., None] * Z_GRID)
        f = (wz * p).sum(-1) - target
        slope = (wz * p * (1.0 - p)).sum(-1)
        step = np.clip(f / np.maximum(slope, 1e-12), -2.0, 2.0)
        v = v - step
        if not (np.abs(step) > 1e-13).any():  # converged (NaN rows: nothing to solve)
            break
    ok = np.isfinite(a) & np.isfinite(s) & (b < 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ok, np.exp((v - a) / np.where(ok, b, -1.0)), np.nan)


def person_level_cells(df: pd.DataFrame, y: str, stimulus: str, participant: str) -> Cells:
    """Non-empty (person, level) cells sorted by person: person index, ln latency, k, n."""
    g = df.groupby([participant, stimulus], sort=True)[y].agg(["sum", "count"]).reset_index()
    person = pd.factorize(g[participant], sort=True)[0]
    return (
        person,
        np.log(g[stimulus].to_numpy(dtype=float)),
        g["sum"].to_numpy(dtype=float),
        g["count"].to_numpy(dtype=float),
    )


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
    ll_pg = cells.sum(cells.n, log_p) - cells.sum(cells.no, eta) + _Z_LOGW
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


def fit_mixed_acceptability(
    trials: pd.DataFrame,
    rating: str,
    stimulus: str,
    acceptable_at: float,
    participant: str = "participant",
    n_boot: int = 1000,
    seed: int = 0,
) -> MixedAcceptabilityFit:
    """Fit the random-intercept logit of "rating >= acceptable_at" on ln(`stimulus`).

    Rows without a rating (abandoned trials) or without a positive stimulus are left out.
    The intervals come from resampling participants: `n_boot` refits with each person
    weighted by how often the resample drew them, all solved together from the estimate.
    Ratings that separate by latency get no threshold (`MixedAcceptabilityFit.separation`;
    no resamples are drawn: every one would separate too); so do ratings that separate
    within every participant when the fit then has no finite maximum
    (`MixedAcceptabilityFit.unbounded`; `separation.people` names each person's levels).
    """
    df = _acceptable_rows(trials, rating, stimulus, acceptable_at)
    separation = acceptable_separation(df[stimulus], df["_acceptable"])
    person, u, k, n = person_level_cells(df, "_acceptable", stimulus, participant)
    fit = fit_mixed_cells(person, u, k, n, 0 if separation else n_boot, seed)
    if separation is None and fit.unbounded:
        own = find_people_separation(df[participant], df[stimulus], df["_acceptable"])
        separation = None if own is None else RatingSeparation(own.levels, own.people)
    fit.separation = separation
    return fit


def _acceptable_rows(
    trials: pd.DataFrame, rating: str, stimulus: str, acceptable_at: float
) -> pd.DataFrame:
    """Rows with a rating and a positive stimulus, with `_acceptable` (1 / 0), or
    ValueError when the model has nothing to fit."""
    df = trials.dropna(subset=[rating, stimulus])
    df = df[df[stimulus] > 0]
    df = df.assign(_acceptable=acceptable_binary(df[rating], acceptable_at))
    if df.empty or df["_acceptable"].nunique() < 2 or df[stimulus].nunique() < 2:
        raise ValueError(
            f"{rating}: need ratings on both sides of {acceptable_at:g} at 2+ levels of "
            f"{stimulus} for a threshold"
        )
    return df


def _acceptable_cells(
    trials: pd.DataFrame, rating: str, stimulus: str, acceptable_at: float, participant: str
) -> Cells:
    """`person_level_cells` of "rating >= acceptable_at" (rows with a rating and a positive
    stimulus), or ValueError when the model has nothing to fit."""
    df = _acceptable_rows(trials, rating, stimulus, acceptable_at)
    return person_level_cells(df, "_acceptable", stimulus, participant)


def fit_mixed_cells(
    person: np.ndarray, u: np.ndarray, k: np.ndarray, n: np.ndarray, n_boot: int, seed: int
) -> MixedAcceptabilityFit:
    """`fit_mixed_acceptability` on its cells (`person_level_cells`: person, ln latency, k, n)."""
    n_people = int(person.max() + 1)
    starts = np.flatnonzero(np.r_[True, person[1:] != person[:-1]])
    u_mid = float(np.average(u, weights=n))
    uc = u - u_mid
    share = min(max(k.sum() / n.sum(), 0.02), 0.98)
    start = np.array([[np.log(share / (1 - share)), -1.0, 0.5]])
    theta, ll, converged = maximise_mixed(start, starts, uc, k, n, np.ones((1, n_people)))
    if not converged[0]:  # stuck (e.g. at a saddle with a wide spread): go on, and from s small
        again = np.vstack([theta, start * np.array([1.0, 1.0, 0.1])])
        theta2, ll2, ok2 = maximise_mixed(again, starts, uc, k, n, np.ones((2, n_people)), 1000)
        if ok2.any():
            best = int(np.argmax(np.where(ok2, ll2, -np.inf)))
            theta, ll, converged = (
                theta2[best : best + 1],
                ll2[best : best + 1],
                ok2[best : best + 1],
            )
    rises = _rises_along_ray(theta, ll, starts, uc, k, n)
    boot = np.empty((0, 3))
    if n_boot > 0:
        w = cluster_resample_weights(np.random.default_rng(seed), n_boot, n_people)
        boot, _, ok = maximise_mixed(np.repeat(theta, n_boot, 0), starts, uc, k, n, w)
        boot[~ok] = np.nan
    # back from centred latency to ln ms: a + b (u - u_mid) = (a - b u_mid) + b u
    theta[:, 0] -= theta[:, 1] * u_mid
    boot[:, 0] -= boot[:, 1] * u_mid
    a, b, s = theta[0]
    return MixedAcceptabilityFit(
        float(a),
        float(b),
        float(s),
        float(ll[0]),
        boot,
        int(n.sum()),
        n_people,
        converged=bool(converged[0]) and bool(np.isfinite(theta).all()),
        unbounded=rises,
    )


RAY_SCALES = (4.0, 16.0)
"""Where `_rises_along_ray` looks: (a, b, s) times each (u centred)."""


def _rises_along_ray(
    theta: np.ndarray,
    ll: np.ndarray,
    starts: np.ndarray,
    u: np.ndarray,
    k: np.ndarray,
    n: np.ndarray,
) -> bool:
    """Whether the likelihood is as high or higher at (a, b, s) scaled up (u centred) as
    at the fit: every curve steeper and the spread between people wider, each person's
    threshold where it was. At a finite maximum it falls there; when the answers
    separate, pooled or within every participant, it keeps rising (to a limit), so the
    fit has no finite maximum and its thresholds are where the optimiser stopped."""
    rows = np.concatenate([theta * c for c in RAY_SCALES])
    w = np.ones((rows.shape[0], starts.size))
    far, _, _ = mixed_loglik_derivs(rows, starts, u, k, n, w)
    return bool(np.isfinite(ll[0]) and (far >= ll[0] - 1e-9).any())
