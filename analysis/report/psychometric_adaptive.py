"""Adaptive designs in the psychometric part: which procedure chose the levels (declared, or
detected when they differ between people), the random-intercept model that replaces the
pooled fit there, and the points it withholds with what was measured."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.report.data import PsychometricPart, ReportData
from analysis.report.support import MINIMUMS, enough
from analysis.separation import yes_no_words
from analysis.small_sample_interval import adaptive_mixed_thresholds


def adaptive_design(
    data: ReportData, df: pd.DataFrame | None = None, rising: bool = True
) -> str | None:
    """The adaptive procedure that chose the stimulus levels (`--procedure`, study.json's
    factor `procedure`, else the sessions' adaptive columns, else detected from levels that
    differ between people: `analysis.design_detection`), or None for a fixed design."""
    said = data.options.procedure
    if said == "fixed":
        return None
    if said:
        return str(said)
    declared = data.table.study.get("factors")
    specs = declared.values() if isinstance(declared, dict) else declared or []
    for spec in specs:
        if isinstance(spec, dict) and spec.get("procedure"):
            return str(spec["procedure"])
    from analysis.report.adaptive_part import adaptive_estimates

    sessions = adaptive_estimates(data.table.sessions)
    if sessions is not None:
        return ", ".join(sorted({str(p) for p in sessions["procedure"].dropna()})) or "adaptive"
    return detected_design(data, df, rising)


DETECTED = "undeclared, found in the data"
"""The procedure's name when it was detected, not declared."""


def detected_design(data: ReportData, df: pd.DataFrame | None, rising: bool) -> str | None:
    """`DETECTED` when the levels people were tested at differ between them, or each next
    level followed the answer before it (`analysis.design_detection`), with the evidence in
    a note (and how to declare the design), else None. `df`: the answered
    trials (`_x`, `_y` = yes), `rising`: yes means too slow."""
    from analysis.design_detection import (
        answer_driven_levels,
        person_dependent_levels,
        with_answer_moves,
    )

    found = person_dependent_levels(data.kept.dropna(subset=[data.stimulus]), data.stimulus)
    if df is not None:
        too_slow = df["_y"].to_numpy(dtype=float)
        too_slow = too_slow if rising else 1.0 - too_slow
        order = "trial_index" if "trial_index" in df.columns else None
        if found is None:  # people alike reach the same levels: do the answers lead?
            found = answer_driven_levels(df, "_x", too_slow, order=order)
        else:
            found = with_answer_moves(found, df, "_x", too_slow, order=order)
    if found is None:
        return None
    why = (
        "chose each person's levels from their answers, so their trials sit near one point "
        "of their curve and a pooled fit of every trial reaches the other points through its "
        "shape"
        if found.by_moves
        else "tests people at different latencies, so the pooled fit of every trial would mix "
        "people at different levels"
    )
    data.notes.append(
        f"Design: {found.words()}: an adaptive procedure (a staircase, QUEST+) or another "
        f"design that {why}. The population thresholds come from the "
        "model for adaptive designs (below). Say what was run with --procedure "
        "fixed|staircase|quest|interleaved (or a study.json beside the table with the "
        'factor\'s "procedure"); --procedure fixed restores the pooled fit.'
    )
    return DETECTED


def few_people_withheld(n_people: int) -> str:
    """Why an adaptive design's pooled points are withheld with 2 or 3 participants."""
    return (
        f"no pooled thresholds with {n_people} participants: a pooled fit of all trials mixes "
        "people the procedure tested at their own levels (biased), and the model with "
        f"participant effects needs {MINIMUMS['population'].min_participants}; each "
        "participant's own 50% point is in the per-participant table"
    )


def adaptive_population(
    data: ReportData, part: PsychometricPart, df: pd.DataFrame, procedure: str, n_people: int
) -> None:
    """Adaptive designs test each person where that person is unsure, so a pooled fit
    without participant effects mixes people at different latencies: its 25% / 75% points
    were biased (-21% / +32% on simulated staircases with people who differ). The
    population thresholds then come from a logit with a random intercept per participant
    (`analysis.ratings.fit_mixed_acceptability`), or are withheld with the reason."""
    rising = part.pooled.direction_ == "rising"
    falls = df.assign(_falls=(1.0 - df["_y"]) if rising else df["_y"])
    if not enough("population", n_people):
        if part.one_person:  # the pooled curve is this person's own fit (as a person's)
            part.population.loc[
                part.population["level"] != 0.5, ["estimate", "ci_low", "ci_high"]
            ] = np.nan
            part.estimator = (
                f"adaptive design ({procedure}): one participant, so the pooled curve is their "
                "own fit (no guess or lapse, Firth's bias reduction); 25% / 75% points "
                "withheld, as a person's are"
            )
        else:  # a pooled fit mixes people the procedure tested at their own levels
            part.population.loc[:, ["estimate", "ci_low", "ci_high"]] = np.nan
            part.estimator = f"adaptive design ({procedure}): {few_people_withheld(n_people)}"
        data.notes.append(f"Psychometric thresholds: {part.estimator}.")
        return
    table, why = adaptive_mixed_thresholds(falls, "_falls", "_x")  # jackknife-t only
    if why is not None:  # separated answers or no finite fit: no threshold, no interval
        part.population.loc[:, ["estimate", "ci_low", "ci_high"]] = np.nan
        part.withheld = why
        words = yes_no_words(part.yes_means, rising)
        part.estimator = (
            f"adaptive design ({procedure}): logit on ln latency with a random intercept per "
            "participant; no thresholds: "
            + ("the answers separate by latency (see below)" if not isinstance(why, str) else why)
        )
        part.withheld_text = why if isinstance(why, str) else why.explain(words, data.stimulus)
        part.withheld_short = why if isinstance(why, str) else why.short(words)
    elif table["estimate"].isna().any():
        part.population.loc[part.population["level"] != 0.5, ["estimate", "ci_low", "ci_high"]] = (
            np.nan
        )
        part.estimator = (
            f"adaptive design ({procedure}): the participant-effects model found no "
            "falling curve; 25% / 75% points withheld"
        )
    else:
        part.population = table
        part.model_population = table.copy()  # what the model gave, before withholding
        part.estimator = (
            f"adaptive design ({procedure}): logit on ln latency with a random intercept per "
            "participant (population curve, marginal over participants); 95% interval: "
            "participant jackknife, t on N - 1 df"
        )
        withhold_measured_bias(part, procedure)
    data.notes.append(f"Psychometric thresholds: {part.estimator}.")


# What the random-intercept model's thresholds did on simulated adaptive studies, held to the
# headline's goal (95% coverage 0.93-0.97, bias under 2% at 50%, 5% at 25 / 75%): procedure
# -> (levels withheld, what was measured). Sources: benchmarks/validation_grid.py --part
# pooled (uxlab's own staircase and QUEST+, 100 / 60 studies per cell, 4-40 people, 48
# trials, 2026-12-03), benchmarks/adaptive_pooled_bias.py (interleaved staircases, 100 x 16
# people) and benchmarks/report_validation.py (the independent simulator's 1-up/2-down
# staircase and QUEST+ tables, 40 studies per cell, 4-20 people alike, differing, steep or
# with a skewed spread, 2026-12-06). An adaptive procedure tests each person near one point
# of their curve (a 1-up/2-down staircase near their 29% "too slow" point), so the model
# reaches the 25% / 75% points through its shape: withheld on every procedure.
ADAPTIVE_MEASURED: dict[str, tuple[tuple[float, ...], str]] = {
    "staircase": (
        (0.25, 0.5, 0.75),
        "on simulated 1-up/2-down staircases its 50% point was biased +2% to +13% (uxlab's "
        "staircase) and its interval covered 0.70-0.97 (0.70-0.85 for people steeper than "
        "the ladder's steps: the independent simulator's), its 75% point was biased +8% to "
        "+56% and its 25% interval covered 0.55-0.87",
    ),
    "interleaved": (
        (0.25, 0.5, 0.75),
        "on simulated interleaved staircases its 25% point was biased -6.1% and its "
        "intervals' coverage was not measured",
    ),
    "quest": (
        (0.25, 0.5, 0.75),
        "on simulated QUEST+ studies its 50% interval covered 0.90-0.98 with people of "
        "ordinary slope (uxlab's simulator) but 0.55-0.85 with people steeper than the "
        "procedure's steps (the independent simulator's), its bias reaching +5.7%, and its "
        "25% / 75% intervals covered 0.87-0.98",
    ),
    DETECTED: (
        (0.25, 0.5, 0.75),
        "the procedure is not declared, and on the independent simulator's staircase and "
        "QUEST+ tables this model's 50% interval covered only 0.55-0.97 (0.55-0.85 with "
        "people steeper than the procedure's steps)",
    ),
}


def withhold_measured_bias(part: PsychometricPart, procedure: str) -> None:
    """Blank the levels this estimator missed the goal at on this procedure, and say what
    was measured (`ADAPTIVE_MEASURED`); an unknown procedure name is treated as detected."""
    names = [name for name in ADAPTIVE_MEASURED if name in procedure] or [DETECTED]
    for name in names:
        withheld, measured = ADAPTIVE_MEASURED[name]
        rows = part.population["level"].isin(withheld)
        part.population.loc[rows, ["estimate", "ci_low", "ci_high"]] = np.nan
        part.estimator += (
            f"; {measured}, so the {' / '.join(f'{v:.0%}' for v in withheld)} "
            f"point{'s are' if len(withheld) > 1 else ' is'} withheld"
        )
