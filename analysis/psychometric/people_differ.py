"""Whether participants' curves differ more than their trials' noise allows.

Per-person 50% points always spread, people alike or not: each is a fit of a few dozen
answers. The likelihood-ratio test here sets one curve for everyone (fitted to all their
trials with the model each person's curve has) against one curve each, chi-square on the
difference in free parameters. Guess and lapse at their bounds make it conservative: of
100 studies of people alike on a fixed design (7 levels x 8 trials, 4 or 8 people) it
rejected 2 at the 0.05 level; of people whose ln 50% points spread with SD 0.3, 66 with 4
people and 84 with 8. On adaptive designs, with each curve's guess and lapse fixed at 0, it
rejected people alike far too often (up to 40 of 100 QUEST+ studies):
`benchmarks/people_differ_test.py`, 2026-12-07.
"""

from __future__ import annotations

from collections.abc import Sequence

from scipy import stats

from analysis.psychometric.engine_fitter import EngineFitter


def one_curve_for_all_p(each: Sequence[EngineFitter], together: EngineFitter) -> float:
    """p of one curve for everyone (`together`, fitted to all of `each`'s trials with the
    same model) against a curve for each person (`each`); NaN with fewer than 2 people."""
    if len(each) < 2:
        return float("nan")
    free = len(together.result_.theta)
    statistic = 2.0 * (sum(f.loglik_ for f in each) - together.loglik_)
    return float(stats.chi2.sf(max(statistic, 0.0), free * (len(each) - 1)))
