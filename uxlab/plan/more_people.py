"""What K more participants would likely give, from the data a study already has.

`width_with_more_people(trials, stimulus, judgement, add)` simulates the data's own design
(`table_design`: a truth fitted to the data, its levels and answers per level) with the
current number of participants and with K more, each study analysed like the report. The
simulated width at the current size is shown beside the measured one, so a reader can see
how far to trust the projection.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from uxlab.plan.table_design import simulate_studies, table_design

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
    design = table_design(trials, stimulus, judgement, seed=seed)
    n_now = design.n_people
    widths = {}
    for n_people in (n_now, n_now + add):
        studies = simulate_studies(design, n_people, sims=sims, n_boot=n_boot, seed=seed)
        widths[n_people] = float(np.nanmean(studies.ci_high_ms - studies.ci_low_ms))
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
