"""The published-figures section: each figure beside the measured estimate it should be
compared with, withheld where the kinds of judgement differ, and its blocks."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pandas as pd

from analysis.reference import NOT_DECIDED
from analysis.report import figures
from analysis.report.abandonment_part import WAITED
from analysis.report.blocks import Bullets, Figure, Heading, Para, Table
from analysis.report.data import ABANDON_SHARES, ReportData, one_line_error
from analysis.report.interval_bounds import UNBOUNDED_FACTOR
from analysis.report.ratings_part import rated_range
from analysis.report.references import (
    NOT_COMPARED,
    VERDICTS,
    Measured,
    sensitivity_words,
)
from analysis.report.support import MINIMUMS, enough, estimate_flags

if TYPE_CHECKING:
    from analysis.reference import ReferenceFigure
    from analysis.report.blocks import Block


def reference_comparison(data: ReportData) -> pd.DataFrame | None:
    """The published figures next to the measured threshold each should be compared with."""
    from analysis.report.references import compare_figures

    try:
        from analysis.reference import load_reference_figures
    except ImportError:
        data.notes.append("Reference figures are not available in this installation.")
        return None
    measured = measured_estimates(data)
    low, high = data.tested_range
    withheld = {}
    for key, m in measured.items():
        if (
            not key.startswith("abandonment")
            and estimate_flags(m.estimate, np.nan, np.nan, low, high).extrapolated
        ):
            withheld[key] = "the estimate lies outside the tested levels"
    for key, m in measured.items():  # abandonment: beyond the longest wait observed
        if key.startswith("abandonment") and m.extrapolated:
            withheld[key] = "the estimate lies beyond the longest wait observed"
    p = data.psychometric
    described = {}
    if p is not None and p.withheld is not None:  # no estimate: say why, bracket or not
        key = f"psychometric:{data.stimulus}:0.5"
        withheld[key] = (
            p.withheld
            if isinstance(p.withheld, str)
            else "the answers separate by latency within every participant"
            if p.withheld.people
            else f"{NOT_DECIDED} (the answers separate by latency: "
            f"{p.withheld.switch_words()}; a bracket, not an estimate)"
        )
        if not isinstance(p.withheld, str) and not p.withheld.people:
            described[key] = p.withheld.switch_words().removeprefix("the switch lies ")
    elif p is not None and p.procedure is not None:  # an adaptive design's withheld point
        mid = p.population.set_index("level")["estimate"].get(0.5, np.nan)
        if not np.isfinite(mid):
            withheld[f"psychometric:{data.stimulus}:0.5"] = (
                f"{NOT_COMPARED} (the pooled point is withheld on this adaptive design "
                f"({p.procedure}), a fact of the design, not of the sample's size; see the "
                "psychometric section)"
            )
    elif p is not None and p.estimand == "median-person" and p.median_withheld:
        withheld[f"psychometric:{data.stimulus}:0.5"] = (
            f"{NOT_COMPARED} (the median participant's threshold is withheld, see the "
            "psychometric section; the default estimand, the population curve's point, "
            "is compared without --estimand median-person)"
        )
    if data.ratings is not None and data.ratings.separation is not None:
        withheld[f"rating:{data.stimulus}:0.5"] = "the ratings separate by latency: no threshold"
    figures = rating_matched(load_reference_figures(), data, measured)
    if data.stimulus not in {f.stimulus for f in figures if f.stimulus}:
        data.notes.append(
            f"The stimulus {data.stimulus!r} is not a measure the published figures name "
            "(ttft_ms, itl_ms): its thresholds are not compared with them; say what it is "
            "with --measure ttft|itl|e2e."
        )
    table = compare_figures(
        figures,
        {k: m.for_comparison() for k, m in measured.items()},
        n_participants=data.n_participants,
        min_participants=MINIMUMS["verdicts"].min_participants,
        withheld=withheld,
        tested={k: m.tested for k, m in measured.items() if m.tested is not None},
        described=described,
    )
    table = match_judgement_kinds(
        table, figures, judgement_kind(data), data.stimulus, rating_kind(data)
    )
    return with_design_power(table, data)


def with_design_power(table: pd.DataFrame, data: ReportData) -> pd.DataFrame:
    """The verdicts on the pooled 50% threshold with the design's sensitivity beside their
    interval's width (`ReportOptions.design_power`): simulated only when such a verdict is
    made, on a fixed design with the participant jackknife-t (the interval it simulates)."""
    p, power = data.psychometric, data.options.design_power
    judged = table["verdict"].isin(VERDICTS) & table["compared_with"].str.startswith(
        "psychometric", na=False
    )
    n = data.n_participants
    if (
        power is None
        or p is None
        or not judged.any()
        or p.procedure is not None
        or p.estimand == "median-person"
        or not enough("population", n)
    ):
        return table
    try:
        ratio = power(data.kept, data.stimulus, p.column)
    except Exception as exc:  # a verdict stands without it: say why it is missing
        data.notes.append(
            f"Published figures: the design's power could not be simulated ({one_line_error(exc)})."
        )
        return table
    table = table.copy()
    table.loc[judged, "precision"] += f"; {sensitivity_words(ratio, n)}"
    return table


# Words in a yes/no question's column or meaning that say what kind of judgement it is.
KIND_WORDS = (
    ("immediacy", ("instant", "immediate", "notice", "delay")),
    ("smoothness", ("smooth", "stutter", "choppy", "fluid", "jerky")),
    ("acceptability", ("accept", "slow", "fast", "ok", "wait", "patien", "fine")),
)


QUESTION_KINDS = ("immediacy", "acceptability", "smoothness")


def judgement_kind(data: ReportData) -> str | None:
    """What the yes/no question judges: `--judgement-kind`, else from its words (None when
    they do not say)."""
    if data.options.judgement_kind:
        return data.options.judgement_kind
    p = data.psychometric
    if p is None:
        return None
    text = f"{p.column} {p.yes_means}".lower()
    for kind, words in KIND_WORDS:
        if any(w in text for w in words):
            return kind
    return None


STREAMING_STIMULI = (
    "itl_ms",
    "jitter",
    "itl_scale",
    "tokens_per_s",
    "rho",
    "chunk_tokens",
    "stall_ms",
    "stall_rate_per_s",
    "error_at_token",
)
"""Stimuli that shape the stream once it has started (the study file's profile factors):
giving up as they vary is giving up on a stream, not on a wait before anything appears."""


def rating_kind(data: ReportData) -> str:
    """What the rating threshold judges, from the rating question's id, labels and column
    ("How smoothly...", labels "Very choppy" / "Very smooth": smoothness); acceptability
    when they do not say."""
    r = data.ratings
    if r is None:
        return "acceptability"
    q = data.table.question_for(r.column)
    text = " ".join([r.column, *(q.labels if q else []), q.id if q else ""]).lower()
    for kind, words in KIND_WORDS:
        if any(w in text for w in words):
            return kind
    return "acceptability"


def rating_matched(
    figures: list[ReferenceFigure], data: ReportData, measured: dict[str, MeasuredEstimate]
) -> list[ReferenceFigure]:
    """`figures`, those meant for the yes/no threshold set against the rating threshold
    instead where only the rating judges what they are about: a study asking "acceptable?"
    yes/no and rating smoothness meets the ~30 ms/token smoothness figure with its
    smoothness ratings (where "smooth enough" becomes less likely than not)."""
    from dataclasses import replace

    from analysis.reference import COMPARABLE

    key = f"rating:{data.stimulus}:0.5"
    if key not in measured:
        return figures
    yes_no, rated = judgement_kind(data), rating_kind(data)
    out = []
    for fig in figures:
        allowed = COMPARABLE.get(fig.judgement, ())
        if (
            fig.measure == "psychometric"
            and fig.stimulus == data.stimulus
            and fig.level == 0.5
            and yes_no not in allowed
            and rated in allowed
        ):
            fig = replace(fig, compare_with=f"rating {data.stimulus} 0.5")
        out.append(fig)
    return out


def match_judgement_kinds(
    table: pd.DataFrame,
    figures: list[ReferenceFigure],
    psychometric_kind: str | None,
    stimulus: str | None = None,
    rating: str = "acceptability",
) -> pd.DataFrame:
    """Withhold verdicts where a figure's judgement kind does not match the estimate's:
    a psychometric estimate has the question's kind, a rating threshold its question's
    (`rating`: acceptability unless its words say otherwise),
    abandonment is abandonment, but only while waiting for a start: the abandonment figures
    are about a wait before anything appears (startup, load, a reply), so they are not set
    against give-ups in a study whose `stimulus` shapes the stream (`STREAMING_STIMULI`); a
    server SLO is not a perception figure and is never judged."""
    from analysis.reference import COMPARABLE

    by_id = {f.id: f for f in figures}
    measured_kind = {"rating": rating, "abandonment": "abandonment"}
    table = table.copy()
    for i, row in table.iterrows():
        fig = by_id.get(row["id"])
        if fig is None or not fig.judgement or row["verdict"] == "–":
            continue
        precision = row.get("precision", "")
        table.at[i, "precision"] = ""  # kept only where a verdict is made, below
        if fig.judgement == "server-slo":
            table.at[i, "verdict"] = "not compared (a server SLO, not a perception figure)"
            continue
        kind = measured_kind.get(fig.measure, psychometric_kind)
        if fig.measure == "abandonment" and stimulus in STREAMING_STIMULI:
            table.at[i, "verdict"] = (
                "not compared (a figure about waiting for anything to appear; here people "
                f"gave up while the answer streamed, as {stimulus} varied)"
            )
        elif kind is None:
            table.at[i, "verdict"] = (
                "not compared (the question's kind is unknown: say it with --judgement-kind)"
            )
        elif kind not in COMPARABLE[fig.judgement]:
            table.at[i, "verdict"] = (
                f"not compared (a figure about {fig.judgement}; this estimate is about {kind})"
            )
        else:
            table.at[i, "precision"] = precision
    return table


class MeasuredEstimate(NamedTuple):
    """A measured estimate (ms) with its 95% interval that a published figure may map to."""

    estimate: float
    ci_low: float
    ci_high: float
    where: str | None = None
    """The condition it was taken from, when that is worth saying (abandonment)."""
    extrapolated: bool = False
    """Beyond the longest wait observed (abandonment)."""
    tested: tuple[float, float] | None = None
    """The (lowest, highest) levels, or waits for abandonment, its interval is judged
    against (`interval_bounds.unbounded_ends`), as thresholds.csv judges its row."""

    def for_comparison(self) -> Measured:
        """(estimate, ci_low, ci_high[, where]) as `compare_figures` takes it."""
        head = (self.estimate, self.ci_low, self.ci_high)
        return head if self.where is None else (*head, self.where)


def measured_estimates(data: ReportData) -> dict[str, MeasuredEstimate]:
    """Named estimates (ms) with 95% CI that reference figures map to.

    Keys: `psychometric:<stimulus>:0.5`, `rating:<stimulus>:0.5` (participants resampled)
    and `abandonment:<share>`: the time by which that share gave up in the condition with
    the longest wait tested (the largest stimulus level, other factors at their lowest),
    where giving up is mostly giving up on waiting - the analogue of a startup delay.
    """
    out: dict[str, MeasuredEstimate] = {}
    stim = data.stimulus
    if data.psychometric is not None:
        pop = data.psychometric.population.set_index("level")
        if 0.5 in pop.index:
            row = pop.loc[0.5]
            out[f"psychometric:{stim}:0.5"] = MeasuredEstimate(
                row.estimate, row.ci_low, row.ci_high, tested=data.tested_range
            )
    if data.ratings is not None and data.ratings.population is not None:
        row = data.ratings.population.set_index("level").loc[0.5]
        out[f"rating:{stim}:0.5"] = MeasuredEstimate(
            row.estimate,
            row.ci_low,
            row.ci_high,
            tested=rated_range(data, data.ratings.column),
        )
    if data.survival is not None and not data.survival.times.empty:
        times = data.survival.times
        others = [f for f in data.factors if f != stim and f in times.columns]
        for share in ABANDON_SHARES:
            sub = times[times["share"] == share]
            order = [stim, *others]
            slowest = sub.sort_values(order, ascending=[False] + [True] * len(others)).iloc[0]
            out[f"abandonment:{share:g}"] = MeasuredEstimate(
                slowest.estimate,
                slowest.ci_low,
                slowest.ci_high,
                where=f"AFT, {slowest.condition}",
                extrapolated=bool(slowest.extrapolated),
                tested=(float(slowest[WAITED[0]]), float(slowest[WAITED[1]])),
            )
    return out


REF_COLUMNS = {
    "label": "figure",
    "figure": "value",
    "compared_with": "compared with",
    "our_estimate": "our estimate [95% CI]",
    "verdict": "figure lies",
    "precision": "precision",
    "n_participants": "N",
    "evidence": "evidence",
}


POWER_LEGEND = (
    " and, for the pooled threshold, how far from the true threshold a figure must lie for a "
    "study of this design and size to exclude it 80% of the time (studies simulated from a "
    "truth fitted to these data, the spread between people drawn as uncertain as N people "
    "leave it, each analysed like this report, as `uxlab plan` does: the design's "
    "sensitivity, not a power computed from where the estimate fell; right for the typical "
    "study, but one study's figure is rough: on tables from a known truth the real power at "
    "the printed distance ranged over about 0.5-1.0 between studies of 4 or 8 people and "
    "0.6-0.9 of 20, benchmarks/design_power_check.py)"
)


def reference_blocks(data: ReportData) -> list[Block]:
    """The published-figures section."""
    blocks: list[Block] = []
    blocks.append(Heading("Published figures"))
    refs = data.references
    if refs is not None and not refs.empty:
        powered = refs["precision"].fillna("").str.contains("% power", regex=False).any()
        blocks.append(
            Para(
                "Each figure is set beside the measured threshold it should be compared with: "
                "'inside' means the figure (a point, or a whole range) lies within our 95% CI, "
                "'overlaps' that a range shares only part of it, 'below' / 'above' that it "
                "lies below / above the whole interval; every verdict carries the "
                "interval's width (precision: figures closer together than that are not "
                "told apart, so 'inside' with a wide interval says little)"
                + (POWER_LEGEND if powered else "")
                + "; 'not decided' "
                "when the figure meets "
                "a side of our interval that these data do not bound (its computed end lies "
                f"past {UNBOUNDED_FACTOR:g}x the highest tested level, or under a tenth of the "
                "lowest; for abandonment, of the waits observed): there the data can neither "
                "rule the figure out nor agree with it; 'not enough data' when the sample is "
                "below the minimum for a population interval, or the estimate lies outside "
                "the tested levels; 'not compared', with the reason, when the figure and the "
                "estimate are not about the same thing, or the estimate is withheld for a "
                "reason more participants would not change. N: participants behind the "
                "verdict. Figures without a "
                "perception study behind them are marked."
            )
        )
        show = refs[[c for c in REF_COLUMNS if c in refs.columns]]
        blocks.append(Table(show.rename(columns=REF_COLUMNS), "Reference comparison"))
        sources = []
        for r in refs.itertuples():
            note = f" {r.note}" if getattr(r, "note", "") else ""
            sources.append(f"{r.label}:{note} Source: {r.citation}")
        blocks.append(Para("What each figure rests on, and its source:"))
        blocks.append(Bullets(sources))
        drawn = refs[refs["verdict"].isin(VERDICTS)]  # exactly the comparisons the table makes
        try:
            forest = figures.reference_forest(drawn)
        except Exception as exc:
            data.failed_parts.append(("figure reference_comparison", one_line_error(exc)))
            forest = None
        if forest is not None:
            blocks.append(
                Figure(
                    "reference_comparison",
                    forest,
                    "Published figures (red) and our estimates with 95% CI (blue): the "
                    f"{len(drawn)} comparison(s) the table makes "
                    "(figures not compared, or compared with no estimate, are not drawn)."
                    + (
                        f" {figures.OPEN_END_NOTE}"
                        if drawn["ci_unbounded"].fillna("").astype(str).ne("").any()
                        else ""
                    ),
                )
            )
    else:
        blocks.append(Para("No reference figures could be compared.", "note"))
    return blocks
