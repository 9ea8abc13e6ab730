"""Ratings: MOS with CI, SOS, %GoB / %PoW per condition, and a proportional-odds model.

* MOS = mean opinion score per condition, with a t-interval over the condition's ratings
  (`interval="t"`) or, as the report uses it, a percentile interval from resampling
  participants (`interval="participants"`: each person rates several times, and a mean
  of ratings on 1..K stays in [1, K], so the interval respects the scale by construction);
  SOS = their standard deviation (Hossfeld et al. 2016, "QoE beyond the MOS").
* %GoB (good or better) = share of ratings above the scale midpoint, %PoW (poor or worse) =
  share below it: on a 5-point ACR scale, 4-5 and 1-2.
* Ordinal model: P(rating <= j) = logistic(c_j - b * log2(latency)), statsmodels
  `OrderedModel`, errors clustered by participant (it has no random effects). b is the change
  in log-odds of a better rating per doubling of the latency (negative: worse when slower).
* The acceptable-rating threshold: ratings at or above the study's "acceptable" point become
  1, the rest 0. `fit_mixed_acceptability` fits logit P(acceptable) = a + b ln(latency) +
  s z with a normal effect z per participant (marginal likelihood on a fixed grid over z,
  Levenberg-Marquardt), and reports the population's thresholds: the latency where the
  share of unacceptable ratings over all people reaches 25/50/75% (at 50% also the median
  person's own point, since the effect is symmetric). Intervals: participants resampled,
  every replicate refitted. Why not the psychometric engine on the pooled trials: when the
  latencies a person sees depend on that person (an adaptive procedure places each
  person's trials around their own judgement threshold), a pooled fit without person
  effects is biased (measured in docs/explanation/statistics.md, "Ratings"); with person
  effects the design depends only on answers the model explains. With fixed levels both agree.
  Abandoned trials have no rating and are left out; that is harmless when abandoning
  depends on the latency and the person, not on the rating the trial would have had.
  The psychometric engine's pooled fit (`acceptability_threshold`, guess and lapse fixed
  at 0, `RATING_FIT`: a rating has no chance floor, and a free lapse moves the 50% point)
  remains for a single curve over all trials.
* Separated ratings (`RatingSeparation`): when every acceptable rating lies at or below a
  latency and every other rating at or above it (e.g. 3 levels: all acceptable at the
  fastest, none at the slowest, both only at the middle one), the logit's slope has no
  finite maximum: the fit steepens until the optimiser stops, every participant resample
  separates the same way, and the "interval" is a sliver around the middle level, which
  holds the truth in almost no such study (docs/explanation/statistics.md, "Separated
  ratings"). Then no threshold
  and no interval are given (NaN), and the separation says which levels bracket it.
"""

from __future__ import annotations

import math
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from analysis.fitter import Fitter
from analysis.separation import (
    LatencySeparation,
    Wording,
    find_people_separation,
    find_separation,
)

# Psychometric-engine settings for the acceptable-rating threshold (see the module docstring).
RATING_FIT = {"direction": "auto", "guess": 0.0, "lapse": 0.0}


def scale_midpoint(scale_size: int) -> float:
    """(n + 1) / 2: 3 on a 5-point scale."""
    return (scale_size + 1) / 2


def participant_bootstrap_mean(
    ratings: np.ndarray,
    participants: np.ndarray,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> tuple[float, float]:
    """Percentile interval of the mean rating, resampling participants with all their ratings.

    Every replicate is a mean of observed ratings, so the interval lies within the range of
    the ratings (and the scale). NaN with fewer than 2 participants or no resamples.
    """
    keys, inv = np.unique(np.asarray(participants).astype(str), return_inverse=True)
    if keys.size < 2 or n_boot < 1:
        return float("nan"), float("nan")
    sums = np.bincount(inv, weights=np.asarray(ratings, dtype=float), minlength=keys.size)
    counts = np.bincount(inv, minlength=keys.size).astype(float)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, keys.size, size=(n_boot, keys.size))
    weights = np.zeros((n_boot, keys.size))
    np.add.at(weights, (np.repeat(np.arange(n_boot), keys.size), draws.ravel()), 1.0)
    means = (weights @ sums) / (weights @ counts)
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def participant_jackknife_mean(
    ratings: np.ndarray, participants: np.ndarray, scale_size: int, alpha: float = 0.05
) -> tuple[float, float]:
    """The mean rating -/+ t on N - 1 df x its leave-one-participant-out jackknife SE (the
    report's interval for every figure over participants), cut to the scale 1..scale_size
    (the population's mean rating lies on it). NaN with fewer than 2 participants."""
    keys, inv = np.unique(np.asarray(participants).astype(str), return_inverse=True)
    if keys.size < 2:
        return float("nan"), float("nan")
    r = np.asarray(ratings, dtype=float)
    sums = np.bincount(inv, weights=r, minlength=keys.size)
    counts = np.bincount(inv, minlength=keys.size).astype(float)
    loo = (sums.sum() - sums) / (counts.sum() - counts)
    n = keys.size
    se = np.sqrt((n - 1) / n * np.sum((loo - loo.mean()) ** 2))
    half = stats.t.ppf(1 - alpha / 2, n - 1) * se
    mean = sums.sum() / counts.sum()
    return float(max(mean - half, 1.0)), float(min(mean + half, float(scale_size)))


def rating_summary(
    trials: pd.DataFrame,
    rating: str,
    by: list[str],
    scale_size: int,
    alpha: float = 0.05,
    interval: str = "t",
    n_boot: int = 1000,
    seed: int = 0,
    min_participants: int = 2,
) -> pd.DataFrame:
    """Per condition: n, MOS, its CI, SOS, %GoB, %PoW (ratings on 1..scale_size).

    `interval`: "t" (a t-interval over the ratings), "participants"
    (`participant_bootstrap_mean`) or "jackknife" (`participant_jackknife_mean`); the last
    two NaN below `min_participants` in a condition.
    """
    df = trials.dropna(subset=[rating])
    mid = scale_midpoint(scale_size)
    groups = df.groupby(by) if by else [((), df)]
    rows = []
    for i, (key, part) in enumerate(groups):
        key = key if isinstance(key, tuple) else (key,)
        r = part[rating].to_numpy(dtype=float)
        n = len(r)
        mos = r.mean()
        sos = r.std(ddof=1) if n > 1 else np.nan
        if interval in ("participants", "jackknife"):
            low, high = float("nan"), float("nan")
            if part["participant"].nunique() >= min_participants and interval == "jackknife":
                low, high = participant_jackknife_mean(
                    r, part["participant"].to_numpy(), scale_size, alpha
                )
            elif part["participant"].nunique() >= min_participants:
                low, high = participant_bootstrap_mean(
                    r, part["participant"].to_numpy(), n_boot, seed + i, alpha
                )
        else:
            half = stats.t.ppf(1 - alpha / 2, n - 1) * sos / np.sqrt(n) if n > 1 else np.nan
            low, high = mos - half, mos + half
        row = dict(zip(by, key, strict=True))
        row.update(
            {
                "n": n,
                "n_participants": part["participant"].nunique(),
                "mos": mos,
                "ci_low": low,
                "ci_high": high,
                "sos": sos,
                "pct_gob": 100 * np.mean(r > mid),
                "pct_pow": 100 * np.mean(r < mid),
            }
        )
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass
class OrdinalLatencyFitter(Fitter):
    """Proportional-odds (ordinal logit) model of a rating on log2 of a latency factor.

    Fitted attributes: `slope_` (log-odds per doubling), `slope_ci_` (low, high; participant-
    clustered), `cutpoints_` (c_1..c_{K-1} on the log2 scale), `levels_` (rating values),
    `n_trials_`, `n_clusters_`, `clustered_`, `result_` (the statsmodels result).
    With fewer than `min_clusters` participants the covariance is the model's own (trials
    treated as independent: `clustered_` is False); a clustered covariance needs at least
    2 clusters and is too small with few (see `analysis.report.support`).
    """

    alpha: float = 0.05
    min_clusters: int = 2
    _fitted_attribute = "result_"

    def fit(
        self, trials: pd.DataFrame, rating: str, stimulus: str, cluster: str = "participant"
    ) -> OrdinalLatencyFitter:
        """Fit on rows with a rating and a positive stimulus level."""
        from statsmodels.miscmodels.ordinal_model import OrderedModel

        df = trials.dropna(subset=[rating, stimulus])
        df = df[df[stimulus] > 0]
        levels = np.sort(df[rating].unique())
        if len(levels) < 3:
            raise ValueError(f"{rating}: fewer than 3 distinct ratings, no ordinal model")
        endog = pd.Series(pd.Categorical(df[rating], categories=levels, ordered=True), name=rating)
        exog = pd.DataFrame({f"log2_{stimulus}": np.log2(df[stimulus].to_numpy(dtype=float))})
        groups = pd.factorize(df[cluster])[0]
        n_params = len(levels)  # the slope and the cut points
        if len(df) <= n_params:
            raise ValueError(
                f"{rating}: {len(df)} ratings are too few for the ordinal model (it needs "
                f"more rows than its {n_params} parameters)"
            )
        n_clusters = int(groups.max() + 1) if len(groups) else 0
        self.clustered_ = n_clusters >= max(self.min_clusters, 2)
        cov = {"cov_type": "cluster", "cov_kwds": {"groups": groups}}
        model = OrderedModel(endog, exog, distr="logit")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = model.fit(
                method="bfgs",
                disp=False,
                maxiter=500,
                **(cov if self.clustered_ else {"cov_type": "nonrobust"}),
            )
        self.result_ = result
        self.stimulus_ = stimulus
        self.levels_ = levels
        self.slope_ = float(result.params.iloc[0])
        ci = result.conf_int(alpha=self.alpha)
        self.slope_ci_ = (float(ci.iloc[0, 0]), float(ci.iloc[0, 1]))
        self.slope_se_ = float(result.bse.iloc[0])
        self.cutpoints_ = model.transform_threshold_params(result.params.to_numpy())[1:-1]
        self.n_trials_, self.n_clusters_ = len(df), n_clusters
        return self

    def latency_at_half(self, acceptable_at: float) -> float:
        """Latency (ms) where P(rating >= acceptable_at) = 0.5 under the ordinal model."""
        below = int(np.searchsorted(self.levels_, acceptable_at)) - 1
        if below < 0 or self.slope_ == 0:
            return float("nan")
        return float(2 ** (self.cutpoints_[below] / self.slope_))

    def predict_proba(self, stimulus_ms: np.ndarray) -> np.ndarray:
        """[n, K] probability of each rating at each latency."""
        x = np.log2(np.asarray(stimulus_ms, dtype=float))[:, None]
        cum = stats.logistic.cdf(self.cutpoints_[None, :] - self.slope_ * x)
        cum = np.hstack([np.zeros((len(x), 1)), cum, np.ones((len(x), 1))])
        return np.diff(cum, axis=1)

    def _summary_table(self) -> pd.DataFrame:
        """Slope per doubling (with its CI) and cut-points, on the log2 latency scale."""
        rows = [
            {
                "param": f"slope per doubling of {self.stimulus_}",
                "estimate": self.slope_,
                "ci_low": self.slope_ci_[0],
                "ci_high": self.slope_ci_[1],
            }
        ]
        for lv, c in zip(self.levels_[:-1], self.cutpoints_, strict=True):
            rows.append({"param": f"cut {lv:g}|{lv + 1:g}", "estimate": c})
        return pd.DataFrame(rows)

    def _summary_header(self, decimals: int) -> list[str]:
        covariance = "participant-clustered" if self.clustered_ else "model (trials independent)"
        return [
            f"<OrdinalLatencyFitter: proportional odds on log2 {self.stimulus_}>",
            f"  ratings = {self.n_trials_}, participants = {self.n_clusters_}, "
            f"{covariance} covariance",
        ]

    def plot(self, ax=None):
        """Expected rating against latency (log axis)."""
        import matplotlib.pyplot as plt

        ax = ax or plt.gca()
        x = np.geomspace(50, 20000, 200)
        ax.plot(x, self.predict_proba(x) @ self.levels_, color="black", label="ordinal model")
        ax.set_xscale("log")
        return ax


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
):
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


def _expit(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


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


def acceptable_separation(latency_ms, acceptable) -> RatingSeparation | None:
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

    def population_share(self, latency_ms) -> np.ndarray:
        """P(acceptable) in the population (marginal over the person effect)."""
        u = np.log(np.asarray(latency_ms, dtype=float))[..., None]
        return (np.exp(_Z_LOGW) * _expit(self.a + self.b * u + self.s * Z_GRID)).sum(-1)

    def threshold_ms(self, level: float = 0.5) -> float:
        """Latency where the population's share of unacceptable ratings reaches `level`.

        At 0.5 this is also the median person's own 50% point (the person effect is
        symmetric); at other levels it is the population's, flatter than one person's.
        NaN when ratings do not fall with latency, or separate by it (`separation`).
        """
        if self.separation is not None:
            return math.nan
        return float(_thresholds_ms(np.array([[self.a, self.b, self.s]]), level)[0])

    def thresholds(self, levels=(0.25, 0.5, 0.75), alpha: float = 0.05) -> pd.DataFrame:
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


def _thresholds_ms_at(theta: np.ndarray, levels) -> np.ndarray:
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


def person_level_cells(df: pd.DataFrame, y: str, stimulus: str, participant: str):
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
    def of(cls, starts, u, k, n) -> _PersonLevels:
        levels, at = np.unique(u, return_inverse=True)
        people = starts.size
        person = np.repeat(np.arange(people), np.diff(np.r_[starts, u.size]))
        dense = people * levels.size <= 4 * u.size

        def per_person(x):
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
            return weights @ x
        return np.add.reduceat(weights[:, None] * x[:, self.at, :], self.starts, axis=1)

    def row_size(self) -> int:
        """Values per parameter row in one evaluation's largest temporaries."""
        cells = self.u.size if self.dense else self.at.size
        return (cells + 8 * self.starts.size) * Z_GRID.size


def mixed_loglik_derivs(theta, starts, u, k, n, w, cells: _PersonLevels | None = None):
    """`_loglik_derivs_block` over blocks of rows (identical results, bounded memory);
    `cells`: `_PersonLevels.of(starts, u, k, n)` when the caller has it already."""
    cells = _PersonLevels.of(starts, u, k, n) if cells is None else cells
    rows = max(1, _CHUNK_ELEMENTS // max(1, cells.row_size()))
    if theta.shape[0] <= rows:
        return _loglik_derivs_block(theta, cells, w)

    def block(i: int):
        return _loglik_derivs_block(theta[i : i + rows], cells, w[i : i + rows])

    # numpy's ufuncs release the GIL on large arrays: blocks run on every core at once.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        parts = list(pool.map(block, range(0, theta.shape[0], rows)))
    return tuple(np.concatenate(x) for x in zip(*parts, strict=True))


def _loglik_derivs_block(theta, cells: _PersonLevels, w):
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


def _person_derivs(theta, cells: _PersonLevels):
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
    theta,
    starts,
    u,
    k,
    n,
    w,
    max_iter: int = 200,
    tol: float = 1e-6,
    *,
    at_start=None,
):
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


def maximise_leave_one_out(theta, starts, u, k, n):
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
):
    """`person_level_cells` of "rating >= acceptable_at" (rows with a rating and a positive
    stimulus), or ValueError when the model has nothing to fit."""
    df = _acceptable_rows(trials, rating, stimulus, acceptable_at)
    return person_level_cells(df, "_acceptable", stimulus, participant)


def fit_mixed_cells(person, u, k, n, n_boot: int, seed: int) -> MixedAcceptabilityFit:
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
        rng = np.random.default_rng(seed)
        draws = rng.integers(0, n_people, size=(n_boot, n_people))
        w = np.zeros((n_boot, n_people))
        np.add.at(w, (np.repeat(np.arange(n_boot), n_people), draws.ravel()), 1.0)
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


def _rises_along_ray(theta, ll, starts, u, k, n) -> bool:
    """Whether the likelihood is as high or higher at (a, b, s) scaled up (u centred) as
    at the fit: every curve steeper and the spread between people wider, each person's
    threshold where it was. At a finite maximum it falls there; when the answers
    separate, pooled or within every participant, it keeps rising (to a limit), so the
    fit has no finite maximum and its thresholds are where the optimiser stopped."""
    rows = np.concatenate([theta * c for c in RAY_SCALES])
    w = np.ones((rows.shape[0], starts.size))
    far, _, _ = mixed_loglik_derivs(rows, starts, u, k, n, w)
    return bool(np.isfinite(ll[0]) and (far >= ll[0] - 1e-9).any())
