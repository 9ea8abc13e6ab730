"""One person's own threshold interval from few trials: the sensitivity bootstrap's shallow
model comes from the profile likelihood, not from a bootstrap of a too-steep fit
(`analysis.psychometric.profile_width`; coverage in benchmarks/person_interval_coverage.py)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from analysis.batch_mle import BOOT_TOLERANCES, maximise
from analysis.psychometric import PsychometricFitter
from analysis.psychometric.profile_width import PROFILE_DROP, PROFILE_STEP, shallowest_supported
from benchmarks.support.simulate_observers import simulate_counts

LEVELS = np.array([100, 175, 300, 530, 920, 1600, 2800, 5000.0])  # the demo study's


def _loglik(layout, theta, k, n) -> float:
    return float(layout.loglik(theta[None, :], k[None, :], n)[0])


def test_a_sharp_switch_from_two_trials_per_level_gets_more_than_the_gap() -> None:
    # 0 of 2 "too slow" up to 530 ms, 2 of 2 from 920 ms: the fit is a near-step, and a
    # bootstrap from it reproduces the step, so the old interval was the gap [530, 920]
    # itself; two answers per level cannot rule out a curve as shallow as people's are
    k = np.array([0, 0, 0, 0, 2, 2, 2, 2], dtype=float)
    fit = PsychometricFitter().fit(LEVELS, k, np.full(8, 2.0), n_boot=300, seed=3)
    r = fit.result_
    v = int(r.layout.idx[0, 1])
    shallow = shallowest_supported(r.layout, r.theta, r.k, r.n)
    boot_84 = float(np.nanquantile(r.boot_theta[:, v], 0.84))
    assert shallow[v] > boot_84 + 0.2  # the bootstrap's "one SD up" stays at the step
    best = _loglik(r.layout, r.theta, r.k, r.n)
    assert _loglik(r.layout, shallow, r.k, r.n) >= best - PROFILE_DROP
    # one step wider, m, guess and lapse refitted, the data no longer support it
    lo, hi = r.layout.lo.copy(), r.layout.hi.copy()
    lo[v] = hi[v] = shallow[v] + PROFILE_STEP
    wider = dataclasses.replace(r.layout, lo=lo, hi=hi)
    start = shallow.copy()
    start[v] = lo[v]
    _, ll, _ = maximise(wider, start[None, :], r.k[None, :], r.n, **BOOT_TOLERANCES)
    assert ll[0] < best - PROFILE_DROP
    low, high = fit.threshold_ci(0.5)
    assert low < 500 and high > 1000  # beyond the gap on both sides (old: [530, 920])


def test_people_with_two_trials_per_level_are_covered_near_nominal() -> None:
    # 30 simulated people like the demo's (800 ms, between-person SD 0.25 ln ms, width 1.6,
    # guess = lapse = 0.02) with 2 trials per level; fixed seeds, so the count is exact:
    # 28 of 30 inside (the bootstrap-only sensitivity model gave 22 of 30 on these people)
    rng = np.random.default_rng(0)
    inside = 0
    for i in range(30):
        truth = 800 * math.exp(0.25 * rng.normal())
        _, k, n = simulate_counts(
            LEVELS, 2, threshold_ms=truth, width_log=1.6, guess=0.02, lapse=0.02, seed=rng
        )
        low, high = PsychometricFitter().fit(LEVELS, k, n, n_boot=200, seed=i).threshold_ci(0.5)
        inside += low <= truth <= high
    assert inside >= 26
