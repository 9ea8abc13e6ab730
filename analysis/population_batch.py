"""The report's pooled thresholds for many studies at once (`analysis.small_sample_interval.
population_threshold_small_n`, batched).

Planning a study (how many participants, how many trials) simulates hundreds of studies
per design cell and analyses each like the report does. This module runs exactly the
computation of `population_threshold_small_n` (a pooled binomial fit of all
trials, started from the same grid of starting points and trying both directions, then a
participant jackknife-t interval, `analysis.small_sample_interval`), but for S studies
in one batch of `batch_mle.maximise` calls instead of S separate ones.

Input is counts per participant and stimulus level, ``k`` and ``n`` of shape [S, P, L]
(participant p of study s answered "yes" k times out of n at level l; n = 0 where a
participant had no trial there). Studies whose tested levels span the same range with the
same smallest spacing share a `Layout` (the bounds and starting grid depend on nothing
else; a level without trials adds nothing to the likelihood), so an adaptive design whose
levels differ between studies is fitted in a few groups. With S = 1 the result equals
`population_threshold_small_n` on the same trials and seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from analysis.batch_mle import BOOT_TOLERANCES, Layout, maximise
from analysis.bootstrap import bootstrap_interval
from analysis.psychometric import (
    DEFAULT_LEVELS,
    FitSpec,
    PsychometricFitter,
    build_layout,
    grid_starts,
    threshold_logs,
)
from analysis.small_sample_interval import POPULATION_SIGMOID, jackknife_t
from analysis.steep_tails import widen_steep_tails


@dataclass
class BatchThresholds:
    """Per study s and threshold level j: the pooled estimate and its participant
    jackknife-t interval (ms), as `population_threshold_small_n` reports them."""

    levels: tuple[float, ...]
    estimate_ms: np.ndarray  # [S, J]
    ci_low_ms: np.ndarray  # [S, J]
    ci_high_ms: np.ndarray  # [S, J]
    direction: np.ndarray  # [S] "rising" / "falling"
    n_participants: np.ndarray  # [S] participants with at least one trial


def _signature(u: np.ndarray, present: np.ndarray) -> tuple[float, float, float]:
    """What the layout's bounds depend on: lowest and highest tested level, smallest gap."""
    up = u[present]
    return (float(up[0]), float(up[-1]), float(np.min(np.diff(up))))


def population_thresholds_batch(
    levels_ms: np.ndarray,
    k: np.ndarray,
    n: np.ndarray,
    *,
    n_boot: int = 1000,
    seeds: Sequence[int] | None = None,
    levels: Sequence[float] = DEFAULT_LEVELS,
    alpha: float = 0.05,
    intervals: bool = True,
) -> BatchThresholds:
    """Pooled thresholds with participant jackknife-t intervals for S studies at once.

    levels_ms: [L] increasing stimulus levels; k, n: [S, P, L] "yes" counts and trials per
    participant; seeds: one bootstrap seed per study (default 0, 1, ...). Studies with
    fewer than two levels tried get NaN. `intervals=False`: the estimates and directions
    only (NaN intervals), for a caller that needs no more of most studies; each study's
    figures depend on its own counts only, so the others can be fitted later, alone.
    """
    levels_ms = np.asarray(levels_ms, dtype=float)
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    n_s = k.shape[0]
    seeds = list(range(n_s)) if seeds is None else list(seeds)
    u = np.log(levels_ms)
    pooled_k, pooled_n = k.sum(axis=1), n.sum(axis=1)
    n_j = len(levels)
    est = np.full((n_s, n_j), np.nan)
    low = np.full((n_s, n_j), np.nan)
    high = np.full((n_s, n_j), np.nan)
    direction = np.full(n_s, "", dtype=object)
    groups: dict[tuple[float, float, float], list[int]] = {}
    for s in range(n_s):
        present = pooled_n[s] > 0
        if present.sum() >= 2:
            groups.setdefault(_signature(u, present), []).append(s)
    spec = FitSpec(POPULATION_SIGMOID, None, None, False)
    for (u_lo, u_hi, gap), members in groups.items():
        # the layout `PsychometricFitter` builds for these tested levels, on all L rows
        u_sig = np.array([u_lo, u_lo + gap, u_hi]) if u_hi > u_lo + gap else np.array([u_lo, u_hi])
        layout = build_layout(spec, u_sig, np.zeros(u_sig.size, dtype=int), 1)
        starts = grid_starts(layout, 1)
        layout = replace(layout, u=u, cond=np.zeros(u.size, dtype=int))
        idx = np.array(members)
        theta, rising = _pooled_fits(layout, starts, pooled_k[idx], pooled_n[idx])
        direction[idx] = np.where(rising, "rising", "falling")
        est[idx] = threshold_logs(layout, theta, levels)
        if not intervals:
            continue
        jack = _cluster_jackknife(layout, theta, rising, k[idx], n[idx])  # [m] x [P_s, P]
        for row, s in enumerate(members):
            lo_s, hi_s = jackknife_t(est[s], threshold_logs(layout, jack[row], levels), alpha)
            if n_boot > 0:  # each end at least the pooled counts' parametric bootstrap's
                p_lo, p_hi = _pooled_parametric_interval(
                    levels_ms, pooled_k[s], pooled_n[s], est[s], n_boot, seeds[s], levels, alpha
                )
                lo_s, hi_s = np.fmin(lo_s, p_lo), np.fmax(hi_s, p_hi)
            # a pooled curve steeper than the levels show: over the gap, as the report does
            lo_s, hi_s = widen_steep_tails(
                layout, theta[row], lo_s, hi_s, tested_u=u[pooled_n[s] > 0]
            )
            low[s], high[s] = lo_s, hi_s
    people = (n.sum(axis=2) > 0).sum(axis=1)
    return BatchThresholds(
        tuple(levels), np.exp(est), np.exp(low), np.exp(high), direction, people.astype(int)
    )


def _pooled_parametric_interval(
    levels_ms: np.ndarray,
    k: np.ndarray,
    n: np.ndarray,
    est_log: np.ndarray,
    n_boot: int,
    seed: int,
    levels: Sequence[float],
    alpha: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The parametric bootstrap interval of one study's pooled counts (log ms), exactly as
    `population_threshold_small_n` widens its jackknife interval with it (same fitter, same
    seed)."""
    present = n > 0
    pooled = PsychometricFitter(POPULATION_SIGMOID, levels=levels, alpha=alpha).fit(
        levels_ms[present],
        k[present],
        n[present],
        n_boot=n_boot,
        seed=seed + 1,
        sensitivity=False,
    )
    return bootstrap_interval(
        pooled.log_threshold_draws(levels)[1], est_log, None, None, "percentile", alpha
    )


def _pooled_fits(
    layout: Layout, starts: np.ndarray, k: np.ndarray, n: np.ndarray, top: int = 6
) -> tuple[np.ndarray, np.ndarray]:
    """The pooled MLE of each study [m, P] and whether it is rising (the direction with the
    higher likelihood, as `PsychometricFitter(direction="auto")` picks it).

    `psychometric.best_of` for every study and direction in one batch: each maximises
    from the `top` best starting points and keeps its best fit.
    """
    m, n_starts = len(k), len(starts)
    rows, row_k, row_n = [], [], []
    for counts in (k, n - k):  # rising, then falling
        for i in range(m):
            kk = np.broadcast_to(counts[i], (n_starts, counts.shape[1]))
            ll0 = layout.loglik(starts, kk, np.broadcast_to(n[i], kk.shape))
            order = np.argsort(-np.nan_to_num(ll0, nan=-np.inf))[:top]
            rows.append(starts[order])
            row_k.append(kk[: order.size])
            row_n.append(np.broadcast_to(n[i], (order.size, n.shape[1])))
    theta, ll, _ = maximise(
        layout, np.concatenate(rows), np.concatenate(row_k), np.concatenate(row_n)
    )
    per = len(rows[0])
    theta = theta.reshape(2, m, per, -1)
    ll = np.nan_to_num(ll.reshape(2, m, per), nan=-np.inf)
    best = np.argmax(ll, axis=2)  # [2, m]
    pick = np.arange(m)
    best_theta = np.stack([theta[d, pick, best[d]] for d in range(2)])  # [2, m, P]
    best_ll = np.stack([ll[d, pick, best[d]] for d in range(2)])
    rising = best_ll[0] >= best_ll[1]
    return np.where(rising[:, None], best_theta[0], best_theta[1]), rising


def _cluster_jackknife(
    layout: Layout, theta: np.ndarray, rising: np.ndarray, k: np.ndarray, n: np.ndarray
) -> list[np.ndarray]:
    """Per study, [P_s, P] refits of the pooled counts without each of its P_s participants
    in turn (those with trials), all studies in one batch; as
    `analysis.small_sample_interval.population_threshold_small_n` refits them."""
    ks, ns, starts, sizes = [], [], [], []
    for i in range(k.shape[0]):
        kept = np.flatnonzero(n[i].sum(axis=1) > 0)
        keep = 1.0 - np.eye(kept.size)
        kb, nb = keep @ k[i, kept], keep @ n[i, kept]
        ks.append(kb if rising[i] else nb - kb)
        ns.append(nb)
        starts.append(np.repeat(theta[i : i + 1], kept.size, axis=0))
        sizes.append(kept.size)
    fit, ll, _ = maximise(
        layout, np.concatenate(starts), np.concatenate(ks), np.concatenate(ns), **BOOT_TOLERANCES
    )
    fit[~np.isfinite(ll)] = np.nan
    return np.split(fit, np.cumsum(sizes)[:-1])
