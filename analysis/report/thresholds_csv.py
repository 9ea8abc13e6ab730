"""thresholds.csv: one row per estimate of every part of the report."""

from __future__ import annotations

import pandas as pd

from analysis.ratings import rating_words
from analysis.report.abandonment_part import WAITED
from analysis.report.adaptive_part import adaptive_threshold_rows
from analysis.report.data import THRESHOLD_COLUMNS, ReportData
from analysis.report.interval_bounds import fitted_range_ms, unbounded_ends
from analysis.report.ratings_part import rated_range
from analysis.report.support import estimate_flags
from analysis.report.truth_part import covers, row_truth, simulated_count


def thresholds_table(data: ReportData) -> pd.DataFrame:
    """thresholds.csv: one row per estimate (see README, section report)."""
    rows: list[dict] = []
    stim = data.stimulus
    n_all = data.n_participants
    tested = data.tested_range

    def add(
        measure,
        group,
        table,
        condition="",
        n_trials=None,
        n_people=n_all,
        rng=tested,
        what="",
        withheld="",
    ):
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
                }
            )

    if data.psychometric is not None:
        p = data.psychometric
        why = p.withheld_short or (p.estimator if p.estimator.startswith("adaptive design") else "")
        add("psychometric", "pooled", p.population, "all", what=p.estimand, withheld=why)
        if p.other is not None:  # the other estimand, under its own name
            other = "population" if p.estimand == "median-person" else "median-person"
            add("psychometric", other, p.other, "all", what=other)
        for label, fitter in p.per_condition.items():
            add("psychometric", "pooled", fitter.thresholds_, label, what="population")
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
        for pid, fitter in p.per_participant.items():
            add(
                "psychometric",
                pid,
                fitter.thresholds_,
                "all",
                n_people=1,
                rng=fitted_range_ms(fitter),
                what="this participant",
            )
    if data.survival is not None and not data.survival.times.empty:
        t = data.survival.times.rename(columns={"share": "level"})
        # below the clustered minimum the AFT interval treats trials as independent: it
        # describes these participants, not a population they were drawn from
        clustered = bool(getattr(data.survival.aft, "clustered_", True))
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


def _add_truth(data: ReportData, rows: list[dict]) -> None:
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
        row["covers_truth"] = covers(true_value, float(row["ci_low"]), float(row["ci_high"]))
