"""The ratings section: MOS table, ordinal model and the acceptable-rating threshold with
participant effects, and its blocks."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from analysis.ratings import (
    OrdinalLatencyFitter,
    acceptable_binary,
    fit_mixed_acceptability,
    rating_summary,
    scale_midpoint,
)
from analysis.report import figures
from analysis.report.blocks import (
    NO_LOWER_BOUND,
    NO_UPPER_BOUND,
    Heading,
    Para,
    Table,
    degenerate_note,
    figure_or_note,
)
from analysis.report.data import RatingPart, ReportData
from analysis.report.interval_bounds import unbounded_ends, unbounded_note_text
from analysis.report.support import MINIMUMS, enough, estimate_flags, flag_text, skipped_line
from analysis.table_errors import TrialTableError
from analysis.trial_table import numeric_column

if TYPE_CHECKING:
    from analysis.report.blocks import Block

MAX_LIKERT_POINTS = 11


def ratings_part(data: ReportData, column: str) -> RatingPart | None:
    opts, kept, stim = data.options, data.kept, data.stimulus
    values = numeric_column(kept, column, data.table.source)
    df = kept.assign(**{column: values}).dropna(subset=[column])
    if df.empty:
        data.notes.append(f"No ratings in {column} among the analysed trials: no rating analysis.")
        return None
    q = data.table.question_for(column)
    scale = (q.scale_size if q else None) or int(values.max())
    if (q is None or not q.scale_size) and scale > MAX_LIKERT_POINTS:
        raise TrialTableError(
            data.table.source,
            None,
            column,
            f"ratings up to {values.max():g} are not on a rating scale of at most "
            f"{MAX_LIKERT_POINTS} points (give the question's scale in study.json)",
        )
    if q is None or not q.scale_size:
        data.notes.append(
            f"{column}: no study.json gives its scale, so it is taken as 1-{scale} from the "
            "largest answer; give the question's scale in study.json if that is not it."
        )
    if opts.acceptable_at is not None:
        acceptable, source = opts.acceptable_at, "--acceptable-at"
    elif q is not None and q.acceptable_at is not None:
        acceptable, source = float(q.acceptable_at), "study.json"
    else:
        acceptable, source = float(math.ceil(scale_midpoint(scale))), "scale midpoint (default)"
    by = data.factors if len(data.factors) <= 2 else data.factors[:1]
    n_people = int(df["participant"].nunique())
    mos_min = MINIMUMS["mos_interval"].min_participants
    table = rating_summary(
        df,
        column,
        by,
        scale,
        interval="jackknife",
        n_boot=opts.n_boot,
        seed=opts.seed,
        min_participants=mos_min,
    )
    if n_people < mos_min:
        data.skipped.append(skipped_line("mos_interval", n_people))
    ordinal, error = None, None
    ordinal_min = MINIMUMS["ordinal_clustered"].min_participants
    try:
        ordinal = OrdinalLatencyFitter(min_clusters=ordinal_min).fit(df, column, stim)
    except (ValueError, np.linalg.LinAlgError) as exc:
        error = str(exc)
    if ordinal is not None and not ordinal.clustered_:
        data.skipped.append(
            skipped_line("ordinal_clustered", n_people)
            + " The model is fitted with its own covariance (trials treated as independent)."
        )
    binary = df.assign(_x=df[stim].astype(float), _y=acceptable_binary(df[column], acceptable))
    population, separation = None, None
    varied = 0 < binary["_y"].mean() < 1 and binary["_x"].nunique() >= 3
    if varied and enough("mixed_rating", n_people):  # participant effects: analysis.ratings
        fit = fit_mixed_acceptability(
            df, column, stim, acceptable, n_boot=opts.n_boot, seed=opts.seed
        )
        population, separation = fit.thresholds(), fit.separation
    elif varied:
        data.skipped.append(skipped_line("mixed_rating", n_people))
    unrated = 0
    if "outcome" in kept.columns:
        unrated = int(((kept["outcome"] == "abandoned") & values.isna()).sum())
    return RatingPart(
        column,
        scale,
        acceptable,
        source,
        table,
        ordinal,
        error,
        population,
        unrated,
        separation,
    )


def rating_blocks(data: ReportData) -> list[Block]:
    """The ratings section."""
    r = data.ratings
    if r is None:
        return []
    return [
        *mos_blocks(data, r),
        *_ordinal_blocks(data, r),
        *population_blocks(data, r),
    ]


def mos_blocks(data: ReportData, r: RatingPart) -> list[Block]:
    """Scale, unrated abandoned trials, the MOS table and figure."""
    blocks: list[Block] = []
    stim = data.stimulus
    blocks.append(Heading(f"Ratings: {r.column}"))
    blocks.append(
        Para(
            f"Scale 1-{r.scale_size}; 'acceptable' means {r.acceptable_at:g} or better "
            f"({r.acceptable_source}). %GoB / %PoW: ratings above / below the scale "
            "midpoint. MOS intervals: the mean rating -/+ t on N - 1 df x its jackknife SE "
            "over participants (each left out with all their ratings), cut to the scale; "
            "withheld (–) below the minimum number of participants (see 'What this sample "
            "can support')."
        )
    )
    if r.n_unrated_abandoned:
        blocks.append(
            Para(
                f"{r.n_unrated_abandoned} abandoned "
                f"{'trial has' if r.n_unrated_abandoned == 1 else 'trials have'} no rating: "
                "at long latencies the MOS and %GoB describe the participants who waited, so they "
                "are likely kinder than the whole sample would be. The threshold below "
                "allows for who waited (an effect per participant), not for a trial "
                "given up because that very trial felt slower than usual.",
                "note",
            )
        )
    blocks.append(Table(r.table, "MOS, SOS, %GoB and %PoW per condition"))
    blocks.append(
        figure_or_note(
            data,
            "ratings",
            lambda: figures.ratings_plot(r, stim),
            "Mean rating with 95% CI per level and the ordinal model's "
            "expected rating (left); shares of good and poor ratings (right).",
        )
    )
    return blocks


def _ordinal_blocks(data: ReportData, r: RatingPart) -> list[Block]:
    """The proportional-odds model's slope and 50% point."""
    blocks: list[Block] = []
    stim = data.stimulus
    if r.ordinal is not None:
        o = r.ordinal
        finite = bool(np.isfinite(o.slope_ci_).all())
        interval = (
            f"95% CI {o.slope_ci_[0]:+.3f} to {o.slope_ci_[1]:+.3f}, "
            if finite
            else "no finite interval: the ratings are (nearly) perfectly ordered by the "
            "latency, so the slope is not identified; "
        )
        who = (
            f"clustered by {o.n_clusters_} participants"
            if o.clustered_
            else f"trials treated as independent: {o.n_clusters_} participant(s) are too "
            "few to cluster, so it describes them only"
        )
        rated = data.kept.dropna(subset=[r.column])[stim].astype(float)
        half = o.latency_at_half(r.acceptable_at)
        where = f"{half:,.0f} ms" if np.isfinite(half) else "no latency"
        if (
            np.isfinite(half)
            and estimate_flags(half, np.nan, np.nan, rated.min(), rated.max()).extrapolated
        ):
            where += " (extrapolated: outside the tested levels)"
        blocks.append(
            Para(
                f"Proportional-odds model on log2 {stim}: {o.slope_:+.3f} log-odds of a "
                f"better rating per doubling ({interval}{who}); "
                f"P(rating ≥ {r.acceptable_at:g}) = 0.5 at {where} under this model."
            )
        )
    return blocks


def rated_range(data: ReportData, column: str) -> tuple[float, float]:
    """The lowest and highest stimulus level among the rated trials (ms): the range the
    rating thresholds are judged against (extrapolated, not bounded)."""
    rated = data.kept.dropna(subset=[column])[data.stimulus].astype(float)
    return float(rated.min()), float(rated.max())


def population_blocks(data: ReportData, r: RatingPart) -> list[Block]:
    """The acceptable-rating thresholds with participant effects."""
    blocks: list[Block] = []
    stim = data.stimulus
    separation = r.separation
    if separation is not None:  # no finite slope: no thresholds to tabulate
        blocks.append(Para(separation.describe(r.acceptable_at, stim), "note"))
        return blocks
    if r.population is not None:
        rated = rated_range(data, r.column)
        pop_rows = r.population.copy()
        pop_rows["flags"] = [
            flag_text(*estimate_flags(e, lo, hi, *rated))
            for e, lo, hi in zip(
                pop_rows["estimate"], pop_rows["ci_low"], pop_rows["ci_high"], strict=True
            )
        ]
        ends = [
            unbounded_ends(lo, hi, *rated)
            for lo, hi in zip(pop_rows["ci_low"], pop_rows["ci_high"], strict=True)
        ]
        pop_rows["ci_low"] = [
            NO_LOWER_BOUND if e in ("lower", "both") else v
            for e, v in zip(ends, pop_rows["ci_low"], strict=True)
        ]
        pop_rows["ci_high"] = [
            NO_UPPER_BOUND if e in ("upper", "both") else v
            for e, v in zip(ends, pop_rows["ci_high"], strict=True)
        ]
        blocks.append(
            Table(
                pop_rows.rename(columns={"estimate": f"{stim} (ms)"}),
                f"Latency where the share of ratings below {r.acceptable_at:g} over all "
                "participants reaches each level (50%: a rating of "
                f"{r.acceptable_at:g} or better becomes less likely than not, in the "
                "population and for its median participant). Logit of "
                f"rating ≥ {r.acceptable_at:g} on ln {stim} with a random intercept per "
                "participant; 95% CI from resampling participants",
            )
        )
        blocks.extend(degenerate_note(pop_rows))
        if any(ends):
            blocks.append(Para(unbounded_note_text(rated, "rated level"), "note"))
    return blocks
