"""What K more participants would likely give, from the data a study already has.

`width_with_more_people(trials, stimulus, judgement, add)` is the plan's machinery run on a
trial table instead of a study file: the truth is estimated from the data
(`plan.truth.truth_from_pilot`, its uncertainty carried by drawing one truth per simulated
study), the design is the data's own (its stimulus levels and the median number of
answered trials per level and participant, so give-ups and exclusions are already in it),
and `sims` studies with the current number of participants and with K more are analysed
like the report (`analysis.population_batch`). The simulated width at the current size is
shown beside the measured one, so a reader can see how far to trust the projection.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from uxlab.plan.truth import truth_from_pilot, yes_falls
from uxlab.simulate.observers import Cues, Observer

if TYPE_CHECKING:
    from analysis.report.data import ReportData


@dataclass(frozen=True)
class MorePeople:
    """Mean 95% CI width (ms) of the pooled 50% threshold, simulated at the data's size and
    with `added` more participants."""

    n_now: int
    added: int
    width_now_ms: float
    width_more_ms: float
    sims: int


def width_with_more_people(
    trials: pd.DataFrame,
    stimulus: str,
    judgement: str,
    add: int,
    *,
    sims: int = 200,
    n_boot: int = 200,
    seed: int = 0,
) -> MorePeople:
    """Simulate the data's design with its own participants' count and with `add` more."""
    from analysis.population_batch import population_thresholds_batch
    from analysis.trial_table import binary_column

    pilot = truth_from_pilot(trials, stimulus, judgement, seed=seed, source="this data")
    df = trials.assign(_y=binary_column(trials, judgement, "")).dropna(subset=["_y", stimulus])
    falls = yes_falls(df, stimulus)
    levels = np.sort(df[stimulus].astype(float).unique())
    per_person = df.groupby(["participant", stimulus]).size().unstack(fill_value=0)
    n_level = np.round(per_person.reindex(columns=levels, fill_value=0).median(axis=0)).to_numpy()
    n_now = int(df["participant"].nunique())
    widths = {}
    for n_people in (n_now, n_now + add):
        k = np.zeros((sims, n_people, levels.size))
        for s in range(sims):
            rng = np.random.default_rng([seed, s, n_people])
            truth = pilot.draws[s % len(pilot.draws)]
            for p in range(n_people):
                obs = Observer.draw(truth, rng)
                p_slow = np.array([obs.p_too_slow(Cues(x, None, 0.0, x)) for x in levels])
                slow = rng.binomial(n_level.astype(int), p_slow)
                k[s, p] = n_level - slow if falls else slow
        n = np.broadcast_to(n_level, k.shape)
        fit = population_thresholds_batch(levels, k, n, n_boot=n_boot, seeds=range(sims))
        width = fit.ci_high_ms[:, 1] - fit.ci_low_ms[:, 1]
        widths[n_people] = float(np.nanmean(width))
    return MorePeople(n_now, add, widths[n_now], widths[n_now + add], sims)


def describe(result: MorePeople, measured_width_ms: float | None) -> str:
    """One line for `uxlab report --more-participants K`."""
    now = f"measured {measured_width_ms:.0f} ms, " if measured_width_ms is not None else ""
    return (
        f"  with {result.added} more participants ({result.n_now + result.added}): expected 95% "
        f"CI width of the pooled 50% threshold ~{result.width_more_ms:.0f} ms ({now}simulated "
        f"at {result.n_now}: {result.width_now_ms:.0f} ms; {result.sims} studies simulated from "
        "a truth fitted to these data, see `uxlab plan`)"
    )


def more_people_line(data: ReportData, add: int, seed: int) -> str:
    """What `uxlab report --more-participants K` prints: the CI width K more people would
    likely give, from the report's data (`analysis.report.ReportData`), or a note."""
    from uxlab.plan.design import PlanError

    part = data.psychometric
    if part is None:
        return "note: --more-participants needs a yes/no judgement (no psychometric threshold)"
    row = part.population.set_index("level").loc[0.5]
    measured = float(row.ci_high - row.ci_low)
    try:
        result = width_with_more_people(data.kept, data.stimulus, part.column, add, seed=seed)
    except PlanError as exc:
        return f"note: --more-participants: {exc}"
    return describe(result, measured if measured == measured else None)
