"""The acceptable-rating threshold: ratings made binary at the acceptable point, the
psychometric engine's pooled fit, the logit with a normal effect per participant, and
separated ratings (see `analysis.ratings`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from analysis.bootstrap import cluster_resample_weights
from analysis.ratings.mixed_likelihood import (
    Z_GRID,
    Z_LOGW,
    expit,
    maximise_mixed,
    mixed_loglik_derivs,
)
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
# (its likelihood and optimiser: `analysis.ratings.mixed_likelihood`)


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
            np.ndarray, (np.exp(Z_LOGW) * expit(self.a + self.b * u + self.s * Z_GRID)).sum(-1)
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
        estimates = thresholds_ms_at(np.array([[self.a, self.b, self.s]]), levels)[0]
        boots = thresholds_ms_at(self.boot, levels)
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
    return thresholds_ms_at(theta, [level])[:, 0]


def thresholds_ms_at(theta: np.ndarray, levels: Sequence[float]) -> np.ndarray:
    """[B, J] `MixedAcceptabilityFit.threshold_ms` for each (a, b, s) row of `theta` and
    each of `levels`, solved together (each row and level is its own Newton iteration).

    The population share depends on v = a + b ln x and s only: solve E logistic(v + s z) =
    1 - level for v by Newton steps (the share rises monotonically in v), then x from v.
    """
    a, b, s = theta[:, 0, None], theta[:, 1, None], theta[:, 2, None]  # [B, 1]
    target = 1.0 - np.asarray(levels, dtype=float)[None, :]  # [1, J]
    v = np.log(target / (1.0 - target)) * np.sqrt(1.0 + 0.35 * s**2)  # [B, J]
    wz = np.exp(Z_LOGW)
    for _ in range(40):
        p = expit(v[..., None] + s[..., None] * Z_GRID)
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
    df = acceptable_rows(trials, rating, stimulus, acceptable_at)
    separation = acceptable_separation(df[stimulus], df["_acceptable"])
    person, u, k, n = person_level_cells(df, "_acceptable", stimulus, participant)
    fit = fit_mixed_cells(person, u, k, n, 0 if separation else n_boot, seed)
    if separation is None and fit.unbounded:
        own = find_people_separation(df[participant], df[stimulus], df["_acceptable"])
        separation = None if own is None else RatingSeparation(own.levels, own.people)
    fit.separation = separation
    return fit


def acceptable_rows(
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
    df = acceptable_rows(trials, rating, stimulus, acceptable_at)
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
