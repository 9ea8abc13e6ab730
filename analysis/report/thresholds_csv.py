"""thresholds.csv: one row per estimate of every part of the report."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysis.ratings import rating_words
from analysis.report.abandonment_part import WAITED
from analysis.report.adaptive_part import adaptive_threshold_rows
from analysis.report.data import THRESHOLD_COLUMNS, ReportData
from analysis.report.interval_bounds import fitted_range_ms, unbounded_ends
from analysis.report.psychometric_withheld import PERSON_TAILS_MEASURED
from analysis.report.ratings_part import rated_range
from analysis.report.support import estimate_flags
from analysis.report.truth_part import covers, row_truth, simulated_count

if TYPE_CHECKING:
    from analysis.report.data import PsychometricPart
    from analysis.separation import Wording


def thresholds_table(data: ReportData) -> pd.DataFrame:
    """thresholds.csv: one row per estimate (see README, section report)."""
    rows: list[dict[str, Any]] = []
    stim = data.stimulus
    n_all = data.n_participants
    tested = data.tested_range

    def add(
        measure: str,
        group: str,
        table: pd.DataFrame,
        condition: str = "",
        n_trials: int | None = None,
        n_people: int = n_all,
        rng: tuple[float, float] = tested,
        what: str = "",
        withheld: str = "",
        bracket: tuple[float, float] | None = None,
    ) -> None:
        """Rows of `table`, judged against `rng`: the levels (or waits) behind them;
        `withheld`: why a row without an estimate has none."""
        for r in table.itertuples():
            extrapolated, degenerate = estimate_flags(r.estimate, r.ci_low, r.ci_high, *rng)
            if measure == "abandonment":
                extrapolated = bool(r.extrapolated)
            rows.append(
                {
                    "measure": measure,
                    "stimulus": stim,
                    "group": group,
                    "level": r.level,
                    "estimate": r.estimate,
                    "ci_low": r.ci_low,
                    "ci_high": r.ci_high,
                    "n_trials": int(n_trials if n_trials is not None else r.n_trials),
                    "condition": condition,
                    "n_participants": n_people,
                    "extrapolated": extrapolated,
                    "degenerate": degenerate,
                    "estimand": what,
                    "ci_unbounded": unbounded_ends(r.ci_low, r.ci_high, *rng),
                    "withheld": withheld if pd.isna(r.estimate) else "",
                    "bracket_low_ms": bracket[0] if bracket else np.nan,
                    "bracket_high_ms": bracket[1] if bracket else np.nan,
                }
            )

    if data.psychometric is not None:
        p = data.psychometric
        why = p.withheld_short or (p.estimator if p.estimator.startswith("adaptive design") else "")
        if p.estimand == "median-person" and p.median_withheld:
            why = p.median_withheld
        sep = p.withheld if p.withheld is not None and not isinstance(p.withheld, str) else None
        bracket = sep.bracket_ms() if sep is not None and not sep.people else None
        # the bracket places the switch (the 50% point), not the 25% / 75% points: people
        # who differ put the population's tails outside the gap their answers share
        for i in range(len(p.population)):
            row = p.population.iloc[[i]]
            mid = float(row["level"].iloc[0]) == 0.5
            b = bracket if mid else None
            row_why = why or ("" if mid else p.tails_withheld)
            add("psychometric", "pooled", row, "all", what=p.estimand, withheld=row_why, bracket=b)
        if p.other is not None:  # the other estimand, under its own name
            other = "population" if p.estimand == "median-person" else "median-person"
            add(
                "psychometric",
                other,
                p.other,
                "all",
                what=other,
                withheld=p.median_withheld if other == "median-person" else "",
            )
        for label, fitter in p.per_condition.items():
            why = p.conditions_withheld.get(label, "")
            add(
                "psychometric", "pooled", fitter.thresholds_, label, what="population", withheld=why
            )
        for contrast in p.contrasts:  # a ratio (no unit): condition / reference at `level`
            for r in contrast.itertuples():
                rows.append(
                    {
                        "measure": "psychometric_ratio",
                        "stimulus": stim,
                        "group": "pooled",
                        "level": r.level,
                        "estimate": r.ratio,
                        "ci_low": r.ci_low,
                        "ci_high": r.ci_high,
                        "n_trials": int(
                            p.per_condition[r.condition].thresholds_["n_trials"].iloc[0]
                            + p.per_condition[r.reference].thresholds_["n_trials"].iloc[0]
                        ),
                        "condition": f"{r.condition} vs {r.reference}",
                        "n_participants": int(r.n_participants),
                        "extrapolated": False,
                        "degenerate": "",
                        "estimand": "population",
                        "ci_unbounded": "",
                        "withheld": "",
                    }
                )
        for pid, person_fit in p.per_participant.items():
            sep = p.person_separation.get(pid)
            own = person_fit.thresholds_
            if sep is not None:  # a bracket, not an estimate: no point and no interval
                own = own.assign(estimate=np.nan, ci_low=np.nan, ci_high=np.nan)
            why = "" if sep is None else sep.short(separation_words(p))
            for i in range(len(own)):
                row = own.iloc[[i]]
                tail = float(row["level"].iloc[0]) != 0.5
                if tail:  # withheld as measured; one person's separation places the switch,
                    # not the 25% / 75% points (an ordinary curve separates by chance): no bracket
                    row = row.assign(estimate=np.nan, ci_low=np.nan, ci_high=np.nan)
                add(
                    "psychometric",
                    pid,
                    row,
                    "all",
                    n_people=1,
                    rng=fitted_range_ms(person_fit),
                    what="this participant",
                    withheld=PERSON_TAILS_MEASURED if tail else why,
                    bracket=None if sep is None or tail else sep.bracket_ms(),
                )
    if data.survival is not None and not data.survival.times.empty:
        t = data.survival.times.rename(columns={"share": "level"})
        # below the clustered minimum the AFT interval treats trials as independent: it
        # describes these participants, not a population they were drawn from
        aft = data.survival.aft
        clustered = aft is None or aft.clustered_
        for r in t.itertuples():
            add(
                "abandonment",
                "pooled",
                pd.DataFrame([r._asdict()]),
                r.condition,
                r.n_trials,
                rng=tuple(getattr(r, w) for w in WAITED),
                what="population" if clustered else "these participants",
            )
    if data.ratings is not None and data.ratings.population is not None:
        rated = rated_range(data, data.ratings.column)
        sep = data.ratings.separation
        why = sep.short(rating_words(data.ratings.acceptable_at)) if sep is not None else ""
        add(
            "rating",
            "pooled",
            data.ratings.population,
            "all",
            rng=rated,
            what="population",
            withheld=why,
        )
    for row in adaptive_threshold_rows(data.adaptive):
        row.setdefault("n_participants", 1)
        row.setdefault("extrapolated", False)
        row.setdefault("degenerate", "")
        row.setdefault("estimand", "this session")
        row.setdefault("withheld", "")
        rows.append(row)
    _add_truth(data, rows)
    return pd.DataFrame(rows, columns=THRESHOLD_COLUMNS)


def separation_words(p: PsychometricPart) -> Wording:
    """How a separation names the judgement's answers (`analysis.separation.Wording`)."""
    from analysis.separation import yes_no_words

    return yes_no_words(p.yes_means, p.pooled.direction_ == "rising")


def _add_truth(data: ReportData, rows: list[dict[str, Any]]) -> None:
    """`simulated_participants` behind each row, and for simulated data its `true_value`
    and whether the 95% interval covers it (`covers_truth`; empty without a truth)."""
    part = data.truth
    rating = data.ratings.column if data.ratings is not None else None
    question = data.table.question_for(rating) if rating else None
    rating_id = question.id if question else (rating or "").removeprefix("q_")
    for row in rows:
        row["simulated_participants"] = simulated_count(part, row)
        true_value = row_truth(part, row, rating_id)
        row["true_value"] = true_value
        low, high = float(row["ci_low"]), float(row["ci_high"])
        if np.isnan(low) and np.isnan(high):  # a bracket instead of an interval
            low = float(row.get("bracket_low_ms", np.nan))
            high = float(row.get("bracket_high_ms", np.nan))
        row["covers_truth"] = covers(true_value, low, high)
