"""A pooled threshold's interval for few participants: the participant jackknife with t.

The percentile cluster bootstrap (`analysis.psychometric.population_threshold`) is too
narrow with few participants: a resample only recombines the N people there are, so its
spread is about sqrt((N - 1) / N) of the sampling spread, and its 2.5 / 97.5% points are
normal-like where the small-sample distribution of an estimate over N clusters has t-like
tails. The classical remedy for few clusters (Cameron & Miller 2015, "A practitioner's
guide to cluster-robust inference", sections VI.B-C; Bell & McCaffrey 2002) is a
leave-one-cluster-out jackknife standard error with the t distribution on N - 1 degrees
of freedom:

    theta_(i)  = the pooled fit without participant i        (N refits)
    SE_jack^2  = (N - 1) / N * sum_i (theta_(i) - mean theta_(.))^2
    interval   = theta_hat -/+ t_{N-1, 0.975} * SE_jack      (on ln ms)

It is computed on ln ms (thresholds are positive and their sampling distribution is
closer to symmetric there). As in `population_threshold`, each end is then at least as
far out as the parametric bootstrap's of the pooled counts: when everyone's answers
separate at the same gap, every leave-one-out pool separates there too and the jackknife
alone would give zero width. docs/explanation/small-samples.md says how well it covers by
N, why this method, and from which N the report prints it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

from analysis.batch_mle import BOOT_TOLERANCES, maximise
from analysis.psychometric import DEFAULT_LEVELS, PsychometricFitter, threshold_logs
from analysis.psychometric.groups import floored_threshold_frame, participant_counts
from analysis.separation import LatencySeparation, find_people_separation, find_separation

if TYPE_CHECKING:
    from analysis.ratings import MixedAcceptabilityFit

METHOD = "participant jackknife, t on N - 1 df, on ln ms"
POPULATION_SIGMOID = "normal"
"""The family of the pooled (population) curve: a cumulative normal on ln ms. The curve of a
population is each person's curve averaged over how their thresholds spread; with a spread
in ln ms of the order of a person's width or wider that average is close to a cumulative
normal, whatever a person's own family (a person's own fit stays logistic)."""


def jackknife_t(
    estimate: np.ndarray, leave_one_out: np.ndarray, alpha: float = 0.05
) -> tuple[np.ndarray, np.ndarray]:
    """estimate [J] -/+ t_{N-1} * jackknife SE from leave-one-out estimates [N, J]
    (NaN rows, refits that failed, are dropped; NaN bounds with fewer than 2 left)."""
    est = np.asarray(estimate, dtype=float)
    jack = np.asarray(leave_one_out, dtype=float)
    low, high = np.full(est.shape, np.nan), np.full(est.shape, np.nan)
    for j in range(est.size):
        col = jack[:, j][np.isfinite(jack[:, j])]
        if col.size < 2 or not np.isfinite(est[j]):
            continue
        n = col.size
        se = np.sqrt((n - 1) / n * np.sum((col - col.mean()) ** 2))
        half = stats.t.ppf(1.0 - alpha / 2.0, n - 1) * se
        low[j], high[j] = est[j] - half, est[j] + half
    return low, high


def population_threshold_small_n(
    df: pd.DataFrame,
    stimulus: str,
    response: str,
    participant: str,
    n_boot: int = 1000,
    seed: int = 0,
    *,
    levels: Sequence[float] = DEFAULT_LEVELS,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Pooled thresholds (the same estimate as `population_threshold` with
    `sigmoid=POPULATION_SIGMOID`) with the participant
    jackknife-t interval, each end at least as far out as the pooled counts' parametric
    bootstrap (`n_boot` datasets, seed + 1, as `population_threshold` draws them).

    Columns: level, estimate, ci_low, ci_high, n_trials, n_participants.
    """
    levels_ms, n_yes, n_total, per_k, per_n = participant_counts(
        df, stimulus, response, participant
    )
    pooled = PsychometricFitter(POPULATION_SIGMOID, levels=levels, alpha=alpha).fit(
        levels_ms, n_yes, n_total, n_boot=n_boot, seed=seed + 1, sensitivity=False
    )
    res = pooled.result_
    est = threshold_logs(res.layout, res.theta[None, :], levels)[0]
    people = per_k.shape[0]
    keep = 1.0 - np.eye(people)  # row i: everyone but participant i
    k_loo, n_loo = keep @ per_k, keep @ per_n
    k_rise = k_loo if pooled.direction_ == "rising" else n_loo - k_loo
    theta, ll, _ = maximise(
        res.layout, np.tile(res.theta, (people, 1)), k_rise, n_loo, **BOOT_TOLERANCES
    )
    theta[~np.isfinite(ll)] = np.nan
    low, high = jackknife_t(est, threshold_logs(res.layout, theta, levels), alpha)
    return floored_threshold_frame(pooled, est, low, high, levels, alpha, n_boot, people)


def mixed_threshold_small_n(
    trials: pd.DataFrame,
    acceptable: str,
    stimulus: str,
    participant: str = "participant",
    n_boot: int = 1000,
    seed: int = 0,
    *,
    levels: Sequence[float] = DEFAULT_LEVELS,
    alpha: float = 0.05,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The random-intercept logit's population thresholds (`analysis.ratings.
    fit_mixed_acceptability`, the report's model on adaptive designs) with two intervals:
    (participant bootstrap percentile as the report prints it, participant jackknife-t).

    `acceptable` is 1 / 0 per trial (1 = acceptable, i.e. not too slow). Both tables have
    the columns of `MixedAcceptabilityFit.thresholds`.
    """
    bootstrap, jackknife, _ = _mixed_thresholds(
        trials, acceptable, stimulus, participant, n_boot, seed, levels, alpha
    )
    return bootstrap, jackknife


def adaptive_mixed_thresholds(
    trials: pd.DataFrame,
    acceptable: str,
    stimulus: str,
    participant: str = "participant",
    *,
    levels: Sequence[float] = DEFAULT_LEVELS,
    alpha: float = 0.05,
) -> tuple[pd.DataFrame, LatencySeparation | str | None]:
    """The report's thresholds on an adaptive design (`mixed_threshold_small_n`'s
    jackknife-t table, `n_boot = 0`) and why they are withheld, if they are
    (`withheld_reason`): then the table's estimates and intervals are NaN."""
    _, jackknife, why = _mixed_thresholds(
        trials, acceptable, stimulus, participant, 0, 0, levels, alpha
    )
    return jackknife, why


class WithheldFit(ValueError):
    """The random-intercept logit has no finite maximum or did not converge (the reason
    is `why`, a `LatencySeparation` or words): no threshold is given."""

    def __init__(self, why: LatencySeparation | str):
        super().__init__(why if isinstance(why, str) else "the answers separate by latency")
        self.why = why


NOT_CONVERGED = (
    "the participant-effects model did not converge on these answers (its fit stopped "
    "without reaching a maximum), so its thresholds are where the optimiser stopped, not "
    "estimates: no threshold and no interval are given"
)
NO_MAXIMUM = (
    "the participant-effects model has no finite maximum on these answers (its likelihood "
    "keeps rising as every curve steepens and the spread between people widens), so its "
    "thresholds are where the optimiser stopped, not estimates: no threshold and no "
    "interval are given"
)


def withheld_reason(
    fit: MixedAcceptabilityFit,
    person: np.ndarray,
    u: np.ndarray,
    k: np.ndarray,
    n: np.ndarray,
    names: npt.ArrayLike | None = None,
) -> LatencySeparation | str | None:
    """Why the random-intercept fit `fit` of the cells (`analysis.ratings.person_level_cells`:
    person, ln latency, k acceptable of n) gives no threshold, or None when it gives one: the
    answers separate pooled by latency (`find_separation`); the fit has no finite maximum
    (`MixedAcceptabilityFit.unbounded`), named by each participant's own separation
    (`find_people_separation`) where there is one; or it did not converge. `names`: the
    participants' ids by index (default: the indices)."""
    counts = np.rint(n).astype(int)
    x = np.repeat(np.round(np.exp(u), 6), counts)  # the levels in ms, back from ln ms
    y = np.concatenate(
        [np.r_[np.ones(int(kk)), np.zeros(c - int(kk))] for kk, c in zip(k, counts, strict=True)]
    )
    who = np.repeat(person if names is None else np.asarray(names)[person], counts)
    pooled = find_separation(x, y)
    if pooled is not None:
        return pooled
    if fit.unbounded:
        return find_people_separation(who, x, y) or NO_MAXIMUM
    if not fit.converged:
        return NOT_CONVERGED
    return None


def _mixed_thresholds(
    trials: pd.DataFrame,
    acceptable: str,
    stimulus: str,
    participant: str,
    n_boot: int,
    seed: int,
    levels: Sequence[float],
    alpha: float,
) -> tuple[pd.DataFrame, pd.DataFrame, LatencySeparation | str | None]:
    """(bootstrap table, jackknife-t table, why withheld or None); both tables NaN when
    withheld."""
    from analysis.ratings.acceptable import acceptable_rows, fit_mixed_cells, person_level_cells

    rows = acceptable_rows(trials, acceptable, stimulus, 1.0)
    cells = person_level_cells(rows, "_acceptable", stimulus, participant)
    fit = fit_mixed_cells(*cells, n_boot, seed)
    why = withheld_reason(fit, *cells, names=np.sort(rows[participant].unique()).astype(str))
    bootstrap = fit.thresholds(levels, alpha)
    if why is not None:
        blank = bootstrap.assign(estimate=np.nan, ci_low=np.nan, ci_high=np.nan)
        return blank, blank.copy(), why
    est = np.log(bootstrap["estimate"].to_numpy(float))
    low, high = jackknife_t(est, _mixed_leave_one_out(fit, *cells, levels), alpha)
    with np.errstate(over="ignore"):  # a refit without its maximum: no bound, said as such
        jackknife = bootstrap.assign(ci_low=np.exp(low), ci_high=np.exp(high))
    return bootstrap, jackknife, None


def mixed_threshold_counts(
    levels_ms: np.ndarray,
    k: np.ndarray,
    n: np.ndarray,
    *,
    levels: Sequence[float] = DEFAULT_LEVELS,
    alpha: float = 0.05,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`mixed_threshold_small_n` with `n_boot=0` (the report's figures on an adaptive
    design) from counts: k "acceptable" of n trials [P, L] per participant and level
    (`levels_ms` [L]; participants without trials are left out). Returns the estimate and
    the jackknife-t interval (ms) [J], the same numbers as from the trial table; raises
    the same ValueError when the model has nothing to fit, and `WithheldFit` (a
    ValueError) where the report withholds the thresholds (`withheld_reason`)."""
    from analysis.ratings.acceptable import fit_mixed_cells, thresholds_ms_at

    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    person, level = np.nonzero(
        n > 0
    )  # row-major: by person, then latency (as `person_level_cells`)
    kk, nn = k[person, level], n[person, level]
    if kk.sum() in (0.0, nn.sum()) or np.unique(level).size < 2:
        raise ValueError("need answers on both sides at 2+ levels for a threshold")
    person = np.unique(person, return_inverse=True)[1]
    u = np.log(np.asarray(levels_ms, dtype=float)[level])
    fit = fit_mixed_cells(person, u, kk, nn, 0, 0)
    why = withheld_reason(fit, person, u, kk, nn)
    if why is not None:
        raise WithheldFit(why)
    est = np.log(thresholds_ms_at(np.array([[fit.a, fit.b, fit.s]]), levels)[0])
    low, high = jackknife_t(est, _mixed_leave_one_out(fit, person, u, kk, nn, levels), alpha)
    return np.exp(est), np.exp(low), np.exp(high)


def _mixed_leave_one_out(
    fit: MixedAcceptabilityFit,
    person: np.ndarray,
    u: np.ndarray,
    k: np.ndarray,
    n: np.ndarray,
    levels: Sequence[float],
) -> np.ndarray:
    """[P, J] ln thresholds of the random-intercept model refitted without each participant
    in turn (NaN where a refit did not converge), all refits solved together from `fit`."""
    from analysis.ratings.acceptable import thresholds_ms_at
    from analysis.ratings.mixed_likelihood import maximise_leave_one_out

    starts = np.flatnonzero(np.r_[True, person[1:] != person[:-1]])
    u_mid = float(np.average(u, weights=n))
    centred = np.array([[fit.a + fit.b * u_mid, fit.b, fit.s]])
    theta, _, ok = maximise_leave_one_out(centred, starts, u - u_mid, k, n)
    theta[~ok] = np.nan
    theta[:, 0] -= theta[:, 1] * u_mid
    with np.errstate(divide="ignore"):
        return cast(np.ndarray, np.log(thresholds_ms_at(theta, levels)))
