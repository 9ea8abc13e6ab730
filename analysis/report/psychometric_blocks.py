"""The psychometric section's blocks: the pooled thresholds with their intervals and notes,
the thresholds per condition and the ratios between conditions, the per-participant table
and figures."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysis.report import figures
from analysis.report.blocks import (
    Heading,
    Para,
    Table,
    ci_range,
    degenerate_note,
    figure_or_note,
    unbounded_note,
)
from analysis.report.data import ESTIMANDS, ReportData
from analysis.report.interval_bounds import fitted_range_ms
from analysis.report.psychometric_withheld import fit_gap, pooled_gap, steep_flag, steep_note
from analysis.report.simulated_rows import mark_simulated
from analysis.report.support import MINIMUMS, estimate_flags, flag_text

if TYPE_CHECKING:
    from analysis.psychometric import PsychometricFitter
    from analysis.report.blocks import Block
    from analysis.report.data import PsychometricPart


def participant_table(data: ReportData) -> pd.DataFrame | None:
    """Per participant: trials, direction, 50% threshold [CI] and flags.

    Flags (`PERSON_FLAG_KINDS` counts them in the caption): the answers separate (a
    bracket, no point); the curve's direction is opposite to the pooled one; the pooled 50%
    threshold lies outside this participant's 95% interval (the pooled curve does not
    resemble this person); the estimate lies outside the levels this participant was tested
    at; the interval is degenerate; the switch lies inside one gap between levels (steep).
    """
    p = data.psychometric
    if p is None or not p.per_participant:
        return None
    pooled_mid = float(p.population.set_index("level").loc[0.5, "estimate"])
    rows = []
    for pid, f in p.per_participant.items():
        sep = p.person_separation.get(pid)
        if sep is not None:  # the switch is bracketed by two tested levels, not estimated
            rows.append(
                {
                    "participant": pid,
                    "trials": int(np.sum(f.n_total_)),
                    "direction": f.direction_,
                    "50% threshold (ms)": sep.switch_words().removeprefix("the switch lies "),
                    "95% CI": "– (a bracket, not an estimate)",
                    "flags": (
                        "no switch: every answer the same at every level tested"
                        if sep.one_kind
                        else "separated: every answer on either side of the gap the same"
                    ),
                }
            )
            continue
        row = f.thresholds_.set_index("level").loc[0.5]
        est, lo, hi = float(row.estimate), float(row.ci_low), float(row.ci_high)
        extrapolated, degenerate = estimate_flags(est, lo, hi, *fitted_range_ms(f))
        flags = []
        if f.direction_ != p.pooled.direction_:
            flags.append(f"direction opposite to the pooled curve ({f.direction_})")
        if (
            np.isfinite(lo)
            and np.isfinite(hi)
            and np.isfinite(pooled_mid)
            and not lo * (1 - 1e-3) <= pooled_mid <= hi * (1 + 1e-3)
        ):
            flags.append("the pooled threshold lies outside this participant's interval")
        if extrapolated:
            flags.append("extrapolated: outside the levels this participant saw")
        if degenerate:
            flags.append("degenerate interval: " + degenerate)
        steep = steep_flag(fit_gap(f))
        if steep:
            flags.append(steep + " (the point is the fit's place in the gap)")
        rows.append(
            {
                "participant": pid,
                "trials": int(np.sum(f.n_total_)),
                "direction": f.direction_,
                "50% threshold (ms)": est,
                "95% CI": ci_range(lo, hi, fitted_range_ms(f)) if np.isfinite(lo) else "–",
                "flags": "; ".join(flags),
            }
        )
    return pd.DataFrame(rows)


def psychometric_blocks(data: ReportData) -> list[Block]:
    """The psychometric section: pooled thresholds, per condition, per participant."""
    p = data.psychometric
    if p is None:
        return []
    return [
        *_pooled_blocks(data, p),
        *_per_condition_blocks(data, p),
        *_per_participant_blocks(data, p),
    ]


def _pooled_blocks(data: ReportData, p: PsychometricPart) -> list[Block]:
    """Estimand, model, the pooled thresholds with both intervals, fit facts, figure."""
    blocks: list[Block] = []
    stim = data.stimulus
    blocks.append(Heading(f"Psychometric thresholds: {p.column} against {stim}"))
    blocks.append(Para(_estimand_sentence(p)))
    blocks.append(Para(_model_sentence(data, p)))
    pooled = p.pooled.thresholds_.set_index("level")
    pop = p.population.set_index("level")
    low, high = data.tested_range
    rows, why_degenerate = [], []
    bracket = (
        p.withheld.switch_words().removeprefix("the switch lies ")
        if p.withheld is not None and not isinstance(p.withheld, str) and not p.withheld.people
        else None
    )
    # one participant: the pooled fit is theirs, a person's fit on any design
    same_estimate = p.estimand == "population" and (p.procedure is None or p.one_person)
    interval_column = (
        "95% CI, participants resampled (median)"
        if p.estimand == "median-person"
        else "95% CI, participant jackknife-t"
    )
    # beside the median person's (withheld) figures: the population curve's points with
    # the interval the default report prints for them
    population_beside = p.population_beside_median()
    other_column = (
        "95% CI, parametric bootstrap"
        if same_estimate
        else (
            "population curve's point [95% CI, participant jackknife-t], another estimand"
            if data.n_participants >= MINIMUMS["population"].min_participants
            else "these participants' pooled trials (no population interval below "
            f"{MINIMUMS['population'].min_participants}), another estimand"
        )
        if population_beside is not None
        else "pooled fit of all trials [95% CI, parametric bootstrap], another estimate"
        if p.procedure is None
        else "pooled fit of all trials"
    )
    gap = pooled_gap(p)
    if bracket is not None:
        bracket += " (bracket)"
    for level in pop.index:
        r = pop.loc[level]
        extrapolated, degenerate = estimate_flags(r.estimate, r.ci_low, r.ci_high, low, high)
        if not np.isfinite(r.ci_low):  # resampled interval withheld: flag the other one
            q = pooled.loc[level]
            degenerate = estimate_flags(r.estimate, q.ci_low, q.ci_high).degenerate
        if degenerate:
            why_degenerate.append(f"Degenerate interval at {level:.0%}: {degenerate}.")
        q = pooled.loc[level] if population_beside is None else population_beside.loc[level]
        rows.append(
            {
                "level of F": level,
                f"{stim} (ms)": (bracket if level == 0.5 else "– (the bracket places the switch)")
                if bracket is not None
                else f"{r.estimate:,.0f} (steep: in the gap {gap[0]:,.0f}-{gap[1]:,.0f})"
                if gap is not None and np.isfinite(r.estimate)
                else r.estimate,
                interval_column: ci_range(r.ci_low, r.ci_high, (low, high))
                if np.isfinite(r.ci_low)
                else f"withheld (N = {data.n_participants})"
                if np.isfinite(r.estimate)
                else "withheld (see the estimator and the notes)",
                # the pooled fit's own interval beside its own estimate; beside another
                # estimator's (median person, adaptive model) the pooled fit's number too
                other_column: "withheld (see the note below)"
                if p.withheld is not None
                else _estimate_with_interval(q, (low, high))
                if population_beside is not None
                else "– (biased here: it mixes people tested at their own levels)"
                if p.procedure is not None and not same_estimate
                else "withheld (as the estimate)"
                if same_estimate and not np.isfinite(r.estimate)
                else ci_range(q.ci_low, q.ci_high, (low, high))
                if same_estimate
                else f"{q.estimate:,.0f} [{ci_range(q.ci_low, q.ci_high, (low, high))}]",
                "flags": flag_text(extrapolated, degenerate),
            }
        )
    blocks.append(
        Table(
            pd.DataFrame(rows),
            (
                "The median participant's thresholds"
                if p.estimand == "median-person"
                else "Pooled thresholds"
            )
            + f" (tested levels {low:,.0f} to {high:,.0f} ms; extrapolated: outside them)",
        )
    )
    blocks.extend(Para(text, "note") for text in why_degenerate)
    if p.withheld_text:
        blocks.append(Para(p.withheld_text, "note"))
    if gap is not None and p.withheld is None:
        blocks.append(Para(steep_note(gap, "pooled curve"), "note"))
    cells = [r[k] for r in rows for k in r if str(k).startswith("95% CI")]
    blocks.extend(unbounded_note(cells, (low, high), "tested level"))
    params = p.pooled.params_
    blocks.append(
        Para(
            f"Direction: {p.pooled.direction_}; guess {params['guess']:.3f}, lapse "
            f"{params['lapse']:.3f}; deviance {p.pooled.deviance_:.1f} (bootstrap p = "
            f"{p.pooled.deviance_p_:.2f}; a small p means the curve's shape does not "
            "fit the pooled counts; a large p does not mean participants are alike: "
            "pooling people who differ gives a flatter curve that can fit as well, so "
            "this test does not detect people differing - the per-participant table and "
            "the two estimands do)."
        )
    )
    drawn, drawn_ci = figures.pooled_drawn_threshold(p)
    blocks.append(
        figure_or_note(
            data,
            "psychometric_pooled",
            lambda: figures.psychometric_pooled(p, stim, (low, high)),
            (
                "Pooled proportion of yes per level with 95% Clopper-Pearson intervals and "
                "the pooled fit's curve; on this adaptive design no threshold is drawn (the "
                "pooled fit mixes people tested at their own levels)."
                if p.procedure is not None
                else "Pooled proportion of yes per level with 95% Clopper-Pearson intervals, the "
                f"fitted curve and the 50% threshold with its 95% CI ({drawn_ci}"
                + ("; the population curve's point" if p.estimand == "median-person" else "")
                + ")."
                if figures.pooled_bracket(p) is None
                else "Pooled proportion of yes per level with 95% Clopper-Pearson intervals; "
                "band: the gap between the tested levels where every answer switches (the "
                "answers separate there); the curve is the steepest the width penalty "
                "allows, not an estimate of the curve's slope or place in the gap."
            )
            + figures.open_end_caption((drawn.ci_low, drawn.ci_high, (low, high))),
        )
    )
    return blocks


def _per_condition_blocks(data: ReportData, p: PsychometricPart) -> list[Block]:
    """Thresholds per level of the other factors (joint fit) and the ratios between them."""
    blocks: list[Block] = []
    stim = data.stimulus
    if not p.per_condition:
        return blocks
    n = data.n_participants
    rows = []
    for label, f in p.per_condition.items():
        mid = f.threshold(0.5)
        rows.append(
            {
                "condition": label,
                f"50% threshold {stim} (ms)": mid.estimate,
                "95% CI, participant jackknife-t": ci_range(
                    mid.ci_low, mid.ci_high, data.tested_range
                )
                if np.isfinite(mid.ci_low)
                else f"withheld (N = {n})",
                "trials": int(f.thresholds_["n_trials"].iloc[0]),
                "flags": ", ".join(
                    t
                    for t in (
                        flag_text(*estimate_flags(*mid, *data.tested_range)),
                        steep_flag(fit_gap(f.fitter, f.fitter.conditions_.index(f.condition))),
                    )
                    if t
                ),
            }
        )
    blocks.append(
        Table(
            pd.DataFrame(rows),
            "Thresholds per level of the other factors (one joint fit, one lapse shared by "
            "the conditions; 95% interval: the joint fit refitted without each participant "
            "in turn, t on N - 1 df, each end at least as far out as the joint fit's "
            "parametric bootstrap)",
        )
    )
    blocks.extend(degenerate_note(pd.DataFrame(rows)))
    cells = [str(r["95% CI, participant jackknife-t"]) for r in rows]
    blocks.extend(unbounded_note(cells, data.tested_range, "tested level"))
    if p.contrasts:
        table = contrast_table(pd.concat(p.contrasts, ignore_index=True), n)
        blocks.append(Table(table, CONTRAST_CAPTION))
    return blocks


CONTRAST_CAPTION = (
    "Threshold ratio between conditions: each condition's 50% point over the first "
    "condition's, from the same joint fit; paired (each participant left out of every "
    "condition at once, so what moves a person's thresholds together cancels); 95% interval: "
    "participant jackknife-t on the ln ratio"
)


def contrast_table(contrasts: pd.DataFrame, n_participants: int) -> pd.DataFrame:
    """The ratios as the report prints them: `x0.70`, `x0.62 to x0.79`, and whether the
    interval excludes 1 (no change)."""
    rows = []
    for r in contrasts.itertuples():
        has_ci = bool(np.isfinite(r.ci_low) and np.isfinite(r.ci_high))
        rows.append(
            {
                "comparison": f"{r.condition} vs {r.reference}",
                "ratio of 50% thresholds": f"×{r.ratio:.2f}",
                "95% CI": f"×{r.ci_low:.2f} to ×{r.ci_high:.2f}"
                if has_ci
                else f"withheld (N = {n_participants})",
                "reading": contrast_reading(r.ratio, r.ci_low, r.ci_high)
                if has_ci
                else "no interval: these participants only",
            }
        )
    return pd.DataFrame(rows)


def contrast_reading(ratio: float, low: float, high: float) -> str:
    """What a ratio's interval says: `28% lower (95% CI 14% to 39%)` when it excludes 1,
    else that these data do not tell."""
    if high < 1.0:
        return f"{1 - ratio:.0%} lower (95% CI {1 - high:.0%} to {1 - low:.0%})"
    if low > 1.0:
        return f"{ratio - 1:.0%} higher (95% CI {low - 1:.0%} to {high - 1:.0%})"
    return "not distinguished: the interval includes ×1 (no change)"


PERSON_COVERAGE_NOTE = (
    "Measured in simulation (benchmarks/person_interval_coverage.py, 2026-12-03), these "
    "per-person intervals covered the person's own truth 0.88-0.90 of the time at about 14 "
    "trials per person, 0.89-0.94 at 29 and 0.92-0.96 at 43 (25/50/75% points): below about "
    "45 trials read them as roughly 90% intervals, not 95%"
)
"""What the per-person 95% intervals cover, as measured: the report says it beside them."""

ADAPTIVE_PERSON_NOTE = (
    "On an adaptive design each person was tested where the procedure led (a 1-up/2-down "
    "staircase stays near their 29% 'too slow' point, QUEST+ near the middle of their "
    "curve), which cannot tell a guess or lapse rate from the slope: their fit has neither, "
    "and Firth's bias reduction. A person whose answers separate (each acceptable answer "
    "below each 'too slow' one) keeps this fit, which stays finite, not a bracket of the gap "
    "where they switch: the procedure kept them near its target, not their 50% point, and "
    "for the few people of ordinary slope whose answers separated such brackets held that "
    "point in 4 of 7 in one cell of the validation grid. On the independent simulator's "
    "1-up/2-down tables (48 trials a person) their 50% point, reached through the fitted "
    "curve's shape, was biased -1.8% to +0.6% on the log scale, its interval covering "
    "0.97-0.99, wider than needed, and 0.99-1.00 for people steeper than the ladder's "
    "steps; on QUEST+ tables -0.7% to +0.3%, 0.97-0.98 (steeper people 0.99; "
    "benchmarks/report_validation.py --designs staircase,quest, 2026-12-07: 60 studies a "
    "cell of 8 and 20 people, 300 a cell of 4); fitted with guess and lapse free, as on a "
    "fixed design, it was -3.0% to -4.9% on staircases"
)
"""How a person is fitted on an adaptive design and what their 50% point and interval were
measured to be, said beside the table in place of `PERSON_COVERAGE_NOTE` (fixed designs)."""


PERSON_FLAG_KINDS: dict[str, str] = {
    "separated": "separated (a bracket, no point)",
    "steep": "steeper than the levels (the switch inside one gap)",
    "direction opposite": "with a curve running the other way",
    "the pooled threshold lies outside": "with the pooled threshold outside their interval",
    "extrapolated": "extrapolated (outside the levels they saw)",
    "degenerate interval": "with a degenerate interval",
}
"""The start of each flag `participant_table` writes, and how the table's caption counts it."""


def flag_counts(flags: pd.Series) -> str:
    """`: 16 separated (...), 6 steeper ...` for the flags column's non-empty cells (a
    person with two flags counts under both); empty when none is flagged."""
    counts = dict.fromkeys(PERSON_FLAG_KINDS, 0)
    for cell in flags:
        for flag in str(cell).split("; "):
            kind = next((k for k in PERSON_FLAG_KINDS if flag.startswith(k)), None)
            if kind is not None:
                counts[kind] += 1
    said = [f"{n} {PERSON_FLAG_KINDS[k]}" for k, n in counts.items() if n]
    return f": {', '.join(said)}" if said else ""


def _per_participant_blocks(data: ReportData, p: PsychometricPart) -> list[Block]:
    """The per-participant table and figures, and the fits that could not be made."""
    blocks: list[Block] = []
    stim = data.stimulus
    people = participant_table(data)
    if people is not None:
        flagged = people[people["flags"] != ""]
        shown = people if len(people) <= 40 else flagged
        blocks.append(
            Table(
                mark_simulated(shown, data),
                "Per participant: 50% threshold with 95% CI (parametric bootstrap of the "
                "person's own trials, widened by a second one from the shallowest curve "
                f"their answers support); {len(flagged)} of {len(people)} flagged"
                + flag_counts(flagged["flags"])
                + ("" if shown is people else "; only the flagged shown, all in thresholds.csv")
                + ". "
                + (ADAPTIVE_PERSON_NOTE if p.procedure is not None else PERSON_COVERAGE_NOTE),
            )
        )
        blocks.extend(unbounded_note(list(shown["95% CI"]), None, "level that participant saw"))
    if p.per_participant:
        blocks.append(
            figure_or_note(
                data,
                "thresholds_per_participant",
                lambda: figures.threshold_distribution(p, stim, data.tested_range),
                "50% threshold per participant with its 95% CI"
                + (
                    " (grey bars: a participant whose answers separate, the gap where they switch)"
                    if p.person_separation
                    else ""
                )
                + "; "
                + figures.pooled_mark_caption(p)
                + figures.open_end_caption(
                    *_participant_intervals(p.per_participant.values()),
                    (*_mid_interval(p.population), data.tested_range),
                ),
            )
        )
        shown = min(len(p.per_participant), 36)
        blocks.append(
            figure_or_note(
                data,
                "psychometric_participants",
                lambda: figures.psychometric_grid(
                    p.per_participant,
                    stim,
                    brackets={k: sep.bracket_ms() for k, sep in p.person_separation.items()},
                ),
                f"Fits per participant (first {shown} of {len(p.per_participant)}): data with "
                "95% binomial CIs, curve and 50% threshold with CI. All are in "
                "thresholds.csv."
                + figures.open_end_caption(
                    *_participant_intervals(list(p.per_participant.values())[:shown])
                ),
            )
        )
    if p.failed:
        failed = pd.DataFrame(list(p.failed.items()), columns=["group", "not fitted because"])
        blocks.append(Table(failed, "Fits that could not be made"))
    return blocks


def _mid_interval(thresholds: pd.DataFrame) -> tuple[float, float]:
    """(ci_low, ci_high) of a thresholds table's 50% row."""
    row = thresholds.set_index("level").loc[0.5]
    return float(row.ci_low), float(row.ci_high)


def _participant_intervals(
    fitters: Iterable[PsychometricFitter],
) -> list[tuple[float, float, tuple[float, float]]]:
    """(ci_low, ci_high, levels that person saw) of each participant's 50% threshold."""
    return [(*_mid_interval(f.thresholds_), fitted_range_ms(f)) for f in fitters]


def _estimate_with_interval(row: Any, tested: tuple[float, float]) -> str:
    """`772 [682 to 874]`, or why there is none (withheld: below its minimum N)."""
    if not np.isfinite(row.estimate):
        return "withheld (see 'What this sample can support')"
    if not np.isfinite(row.ci_low):
        return f"{row.estimate:,.0f} (no interval with these participants)"
    return f"{row.estimate:,.0f} [{ci_range(row.ci_low, row.ci_high, tested)}]"


def _model_sentence(data: ReportData, p: PsychometricPart) -> str:
    """The model and how the table's intervals are made, for the estimator it prints."""
    text = (
        "Model: ψ(x) = γ + (1−γ−λ)·F(ln x; m, w), guess γ and lapse λ free in [0, 0.1], "
        "fitted by maximum likelihood; F is a cumulative normal for the pooled curve (the "
        "population's: people's curves averaged over how their thresholds spread) and a "
        "logistic for each participant's and each condition's; for a falling curve the "
        "threshold is still where F crosses the level. "
    )
    boot = data.options.n_boot
    if p.one_person:
        return text + (
            "With one participant the pooled curve is that participant's own fit, made as "
            "each participant's is (a logistic"
            + (", γ = λ = 0, Firth's bias reduction" if p.procedure is not None else "")
            + "): the pooled row and the participant's row are one fit, and its interval is "
            "the participant's (parametric bootstrap of their trials, widened by a second one "
            "from the shallowest curve their answers support); no interval for a population."
        )
    if p.estimand == "median-person":
        withheld = (
            "The median participant's figures (the median of the per-participant fits' "
            "thresholds) are withheld, for the reason above. "
        )
        least = MINIMUMS["population"].min_participants
        beside = (
            "On this adaptive design the pooled fit of all trials mixes people the procedure "
            "tested at their own levels, so no figure of it is set beside them."
            if p.procedure is not None
            else "Beside them: the points of the pooled fit of these participants' trials, "
            f"another estimand, without an interval (none for a population below {least} "
            "participants)."
            if data.n_participants < least
            else "Beside them: the population curve's points, another estimand, from the "
            "pooled fit of all trials, with the interval the report prints for them by default "
            "(the pooled fit refitted without each participant in turn, ± t on N − 1 degrees "
            "of freedom × the jackknife SE on ln ms, each end at least as far out as the "
            f"parametric bootstrap's of the pooled counts, B = {boot})."
        )
        return text + withheld + beside
    if p.procedure is not None:
        return text + (
            "Each participant's own fit on this adaptive design has γ = λ = 0 (trials near "
            "one point of a curve cannot tell them from its slope) and Firth's bias "
            "reduction (likelihood × Jeffreys prior, in the fit and every bootstrap refit). "
            "On this adaptive design the table's figures are the estimator's above, not the "
            "pooled fit's: a pooled fit of all trials mixes people the procedure tested at "
            "their own levels (its 25% / 75% points were biased about -21% / +32% on "
            "simulated staircases), so it is not shown; its curve in the figure only "
            "summarises the data."
        )
    return text + (
        "Pooled intervals: the pooled fit refitted without each participant in turn "
        "(participant jackknife), the estimate ± t on N − 1 degrees of freedom × the "
        "jackknife SE on ln ms, each end at least as far out as the parametric bootstrap's "
        f"of the pooled counts (B = {boot}); that parametric-bootstrap interval, which "
        "treats trials as independent, is shown beside it."
    )


def _estimand_sentence(p: PsychometricPart) -> str:
    """What the pooled psychometric figures estimate, and where the other estimand is."""
    other = "population" if p.estimand == "median-person" else "median-person"
    text = (
        f"Estimand: the pooled figures are {ESTIMANDS[p.estimand]} (`--estimand`). "
        f"Estimator: {p.estimator}."
    )
    if p.other is not None:
        text += (
            f" {ESTIMANDS[other][0].upper()}{ESTIMANDS[other][1:]} is in thresholds.csv as "
            f"group `{other}`: the two differ when people's thresholds are spread unevenly "
            "(a skewed spread) or their curves differ in slope."
        )
    return text
