"""The plain-language summary at the top of the report: a few sentences a reader can quote."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from analysis.reference import NOT_DECIDED
from analysis.report.interval_bounds import UNBOUNDED_FACTOR, limits_text, unbounded_ends
from analysis.report.psychometric_adaptive import few_people_withheld
from analysis.report.psychometric_withheld import pooled_gap
from analysis.report.references import VERDICTS
from analysis.report.summary_people import individual_sentences
from analysis.report.support import MINIMUMS, estimate_flags
from analysis.separation import yes_no_words
from number_text import duration

if TYPE_CHECKING:
    from analysis.report.data import PsychometricPart, ReportData, SurvivalPart


def ci(low: float, high: float, tested: tuple[float, float] | None = None) -> str:
    """`95% CI 620 ms to 1.9 s`; an infinite upper bound, or (given the `tested` levels) an
    end past `interval_bounds.UNBOUNDED_FACTOR` times them, is said to be unbounded."""
    which = unbounded_ends(low, high, *tested) if tested is not None else ""
    tested = tested or (math.nan, math.nan)  # (an end is unbounded only against them)
    no_upper = np.isposinf(high) or which in ("upper", "both")
    no_lower = which in ("lower", "both")
    if no_upper and no_lower:
        return (
            "95% CI not bounded by these data on either side (its computed ends lie "
            f"{limits_text(*tested)})"
        )
    if no_lower:
        return (
            f"95% CI up to {duration(high)}, no lower bound from these data (its computed lower "
            f"end lies below {tested[0] / UNBOUNDED_FACTOR:,.0f} ms)"
        )
    if no_upper and np.isfinite(high):
        return (
            f"95% CI from {duration(low)}, no upper bound from these data (its computed upper end "
            f"lies above {UNBOUNDED_FACTOR * tested[1]:,.0f} ms, {UNBOUNDED_FACTOR:g}x the "
            "highest tested level)"
        )
    if no_upper:
        return f"95% CI from {duration(low)}, no upper bound from these data"
    return f"95% CI {duration(low)} to {duration(high)}"


def plain_summary(data: ReportData) -> list[str]:
    """Sentences, most important first."""
    out = _sample_sentences(data)
    n_people = data.kept["participant"].nunique()
    out += _psychometric_sentences(data, n_people)
    out += _reference_sentences(data, n_people)
    out += _abandonment_sentences(data)
    out += _rating_sentences(data)
    out += _score_sentences(data)
    return out


def _sample_sentences(data: ReportData) -> list[str]:
    """Who gave how many analysable trials; simulated data and a small sample said so."""
    out: list[str] = []
    excl, kept = data.exclusions, data.kept
    n_people = kept["participant"].nunique()
    dropped = len(excl.excluded_participants)
    simulated = excl.simulated == "all"
    who = "participant" + ("s" if n_people != 1 else "")
    who = f"simulated {who} (not {'a person' if n_people == 1 else 'people'})" if simulated else who
    out.append(
        f"{n_people} {who} gave {len(kept)} analysable trials"
        + (f"; {dropped} participant(s) were excluded" if dropped else "")
        + f" ({excl.n_trials_in - len(kept)} of {excl.n_trials_in} trials left out in all)."
    )
    if simulated:
        out.append("SIMULATED data: the figures below test the analysis, not people's patience.")
        out += _truth_sentences(data)
    part = data.truth
    if part is not None and part.kinds.kind == "mixed":  # first: never read as a real study
        out.insert(0, f"MIXED DATA (real and simulated sessions): {part.kinds.counts()}.")
    n_min = MINIMUMS["population"].min_participants
    if n_people < n_min:
        out.append(
            f"With {n_people} participant(s) this report describes these people only: "
            f"population intervals and verdicts against published figures need {n_min} "
            "(see 'What this sample can support')."
        )
    return out


def _truth_sentences(data: ReportData) -> list[str]:
    """How many pooled intervals cover the simulated truth (or why none is compared)."""
    from analysis.report.truth_part import truth_comparison

    part = data.truth
    if part is None:
        return []
    if part.truth is None:
        why = part.no_truth
        return [f"No comparison with the simulated truth: {why}."] if why else []
    table, _ = truth_comparison(data)
    judged = table["covers"].dropna()
    if judged.empty:
        return []
    missed = table.loc[table["covers"].map(lambda c: c is False), "estimate of"]
    text = (
        f"Against the simulated truth: {int(judged.sum())} of {len(judged)} pooled 95% "
        "intervals cover the true value"
    )
    levels = table.loc[missed.index, "level"]
    if len(missed):
        text += (
            " (missed: "
            + "; ".join(
                f"{name} at {level:.3g}" for name, level in zip(missed, levels, strict=True)
            )
            + ")"
        )
    return [text + " (see 'Simulated truth')."]


def _psychometric_sentences(data: ReportData, n_people: int) -> list[str]:
    """The judgement's 50% threshold (or why the study does not locate it) and how the
    individual thresholds spread around it."""
    out: list[str] = []
    few = n_people < MINIMUMS["population"].min_participants
    stim = data.stimulus
    low, high = data.tested_range
    p = data.psychometric
    if p is None:
        return out
    pop = p.population.set_index("level")
    mid, lo25, hi75 = pop.loc[0.5], pop.loc[0.25], pop.loc[0.75]
    outside = [
        f"{level:.0%}"
        for level, row in ((0.25, lo25), (0.5, mid), (0.75, hi75))
        if estimate_flags(row.estimate, row.ci_low, row.ci_high, low, high).extrapolated
    ]
    head = f"{p.column} (yes = {p.yes_means}, {p.pooled.direction_} with {stim}): "
    if p.withheld is not None:
        out.append(
            head
            + "the population's 50% threshold cannot be estimated: "
            + (
                f"the answers separate by {stim} ("
                + p.withheld.short(
                    yes_no_words(p.yes_means, p.pooled.direction_ == "rising")
                ).removeprefix("separated: ")
                + ")"
                + ("" if p.withheld.people else f": {p.withheld.switch_words()}, a bracket")
                if not isinstance(p.withheld, str)
                else "the participant-effects model has no finite fit"
            )
            + " (see the psychometric section)."
        )
    elif "50%" in outside:
        out.append(
            head + f"the pooled 50% point lies outside the tested levels ({duration(low)} to "
            f"{duration(high)}), so this study does not locate it (an extrapolation, not a "
            "finding)."
        )
    elif not np.isfinite(mid.estimate):
        whose = "median participant's" if p.estimand == "median-person" else "population's"
        out.append(
            head
            + f"the {whose} 50% threshold is withheld: "
            + (
                _median_withheld_words(p, (low, high), n_people)
                if p.estimand == "median-person" and p.median_withheld
                else few_people_withheld(n_people)
                if p.procedure is not None and few
                else f"on this adaptive design ({p.procedure}) the model for such designs "
                "missed the coverage or bias goal when measured (the figures and what to "
                "declare are in the psychometric section)"
                if p.procedure is not None
                else p.estimator
            )
            + "."
        )
    else:
        median = p.estimand == "median-person"
        method = (
            "participants resampled, percentile bootstrap of the median"
            if median
            else "participant jackknife-t"
        )
        interval = (
            f"{ci(mid.ci_low, mid.ci_high, (low, high))}, {method}"
            if np.isfinite(mid.ci_low)
            else "no interval: the median of per-person fits missed the coverage goal when "
            "measured (see the psychometric section)"
            if median
            else _own_interval(p, low, high)
            if p.one_person
            else f"no interval with {n_people} participant(s)"
        )
        if outside:
            spread = (
                f"; its {' and '.join(outside)} point{'s' if len(outside) > 1 else ''} "
                f"{'lie' if len(outside) > 1 else 'lies'} outside the tested levels (extrapolated)"
            )
        elif np.isfinite(lo25.estimate) and np.isfinite(hi75.estimate):
            spread = (
                f"; the median participant's own 25% and 75% points are {duration(lo25.estimate)} "
                f"and {duration(hi75.estimate)}"
                if median
                else f"; the curve moves from 25% to 75% of its range between "
                f"{duration(lo25.estimate)} and {duration(hi75.estimate)}"
            )
        else:
            spread = "; its 25% and 75% points are withheld (see the psychometric section)"
        if median:
            subject = "the median participant's own 50% threshold (median of per-person fits)"
        elif p.one_person:
            subject = "the 50% threshold of this participant's trials"
        elif p.procedure is not None:
            subject = (
                "the population curve's 50% threshold (adaptive design: a model with a "
                "random intercept per participant)"
            )
        elif few:
            subject = (
                "the 50% threshold of this participant's trials"
                if n_people == 1
                else "the 50% threshold of these participants' pooled trials"
            )
        else:
            subject = "the population curve's 50% threshold (all trials pooled)"
        gap = pooled_gap(p)
        steep = (
            f"; the pooled curve is steeper than the tested levels can show, so this point is "
            f"the fit's place in the gap between {duration(gap[0])} and {duration(gap[1])}, "
            "not a finding" + (" (the interval spans the gap)" if np.isfinite(mid.ci_low) else "")
            if gap is not None
            else ""
        )
        out.append(head + f"{subject} is {duration(mid.estimate)} ({interval}){spread}{steep}.")
    out += _contrast_sentences(p, n_people)
    if p.per_participant:
        out += individual_sentences(p, mid)
    return out


def _median_withheld_words(p: PsychometricPart, tested: tuple[float, float], n_people: int) -> str:
    """Why the median person's 50% point is withheld, in a line (the whole reason is in the
    psychometric section), and the pooled point where the design gives one: the population
    curve's, or below the population minimum these participants' pooled trials'."""
    words = (
        "the median of per-person fits missed the coverage and bias goals when measured "
        "(the figures are in the psychometric section)"
    )
    beside = p.population_beside_median()
    if beside is None or 0.5 not in beside.index or not np.isfinite(beside.loc[0.5, "estimate"]):
        return words
    row = beside.loc[0.5]
    pop = float(row.estimate)
    if n_people < MINIMUMS["population"].min_participants or not np.isfinite(row.ci_low):
        who = "this participant's" if n_people == 1 else f"these {n_people} participants'"
        return words + (
            f"; the 50% threshold of {who} pooled trials is {duration(pop)} (no population "
            f"interval with {n_people})"
        )
    interval = f"{ci(row.ci_low, row.ci_high, tested)}, participant jackknife-t"
    return words + (
        f"; the population curve's 50% threshold, another estimand, is {duration(pop)} ({interval})"
    )


def _own_interval(p: PsychometricPart, low: float, high: float) -> str:
    """One participant: the pooled fit is theirs, and so is the interval it has (the one the
    per-participant table prints), not a population's."""
    own = p.pooled.thresholds_.set_index("level").loc[0.5]
    if not (np.isfinite(own.ci_low) and np.isfinite(own.ci_high)):
        return "no interval with 1 participant"
    return (
        f"{ci(own.ci_low, own.ci_high, (low, high))} from this participant's own trials; "
        "no population interval with 1 participant"
    )


def _contrast_sentences(p: PsychometricPart, n_people: int) -> list[str]:
    """Each ratio between conditions (`analysis.condition_contrast`) with its interval, or
    as these participants' only below the population minimum."""
    out = []
    for contrast in p.contrasts:
        for r in contrast.itertuples():
            head = f"The 50% threshold in {r.condition} is ×{r.ratio:.2f} the one in {r.reference}"
            if not (np.isfinite(r.ci_low) and np.isfinite(r.ci_high)):
                out.append(
                    f"{head} for these {n_people} participant(s) (no interval: it needs "
                    f"{MINIMUMS['per_condition'].min_participants} participants)."
                )
                continue
            if r.ci_high < 1.0 or r.ci_low > 1.0:
                which = "lower" if r.ci_high < 1.0 else "higher"
                tail = f": {which} in {r.condition}"
            else:
                tail = ": these data do not tell whether it changes"
            out.append(
                f"{head} (95% CI ×{r.ci_low:.2f} to ×{r.ci_high:.2f}, paired participant "
                f"jackknife-t){tail}."
            )
    return out


def _reference_sentences(data: ReportData, n_people: int) -> list[str]:
    """How many published figures this study could place, and where; how many the data
    cannot decide (an interval end these data do not bound)."""
    out: list[str] = []
    refs = data.references
    if refs is not None and not refs.empty and "verdict" in refs:
        compared = refs.dropna(subset=["estimate"])
        judged = compared[compared["verdict"].isin(VERDICTS)]
        undecided = int(compared["verdict"].str.startswith(NOT_DECIDED).sum())
        open_note = (
            f" {undecided} could not be decided: they meet a side of our interval that "
            "these data do not bound."
            if undecided
            else ""
        )
        if not compared.empty and undecided == len(compared):
            out.append(
                "Published figures: these data cannot place any of them: each meets a side "
                "of our 95% interval that these data do not bound (not decided)."
            )
        elif not compared.empty and judged.empty:  # say the reasons the table gives
            reasons = compared["verdict"].value_counts()
            unmeasured = len(refs) - len(compared)
            out.append(
                f"Of {len(refs)} published figures, none could be placed against our "
                "estimates: "
                + "; ".join(f"{n} {reason}" for reason, n in reasons.items())
                + (f"; {unmeasured} about what this study did not measure" if unmeasured else "")
                + "."
            )
        elif not compared.empty:
            compared = judged
            counts = compared["verdict"].value_counts()
            inside = compared[compared["verdict"].isin(("inside", "overlaps"))]
            parts = [f"{counts.get(v, 0)} {v}" for v in VERDICTS]
            text = (
                f"Of {len(refs)} published figures, {len(compared)} could be compared with "
                f"this study's estimates (N = {n_people} participants): {', '.join(parts)} our "
                "95% CI"
            )
            said = []
            for precision, rows in inside.groupby("precision", sort=False):
                named = "; ".join(
                    f"{verdict}: {'; '.join(group['label'])}"
                    for verdict, group in rows.groupby("verdict", sort=False)
                )
                width, _, power = str(precision).partition("; ")
                said.append(f"{named}; our {width}" + (f", with {power}" if power else ""))
            text += (
                " (" + "; ".join(said) + ": figures within such an interval are not told "
                "apart from our estimate)."
                if said
                else "."
            )
            for verdict in ("below", "above"):  # named: a count does not say which ones
                labels = compared.loc[compared["verdict"] == verdict, "label"]
                if not labels.empty:
                    text += f" Figures {verdict} our 95% CI: {'; '.join(labels)}."
            text += open_note
            unsupported = int((~refs["evidence"].str.startswith("perception")).sum())
            if unsupported:
                text += f" {unsupported} of the figures have no perception study behind them."
            out.append(text)
    return out


def _who(data: ReportData) -> str:
    """Whom a finding is about: `people`, or `the simulated participants` in simulated data
    (a summary that said SIMULATED two lines earlier must not then say people)."""
    simulated = data.exclusions.simulated
    return "the simulated participants" if simulated == "all" else "people"


def _abandonment_sentences(data: ReportData) -> list[str]:
    """When people gave up, in the least and most patient conditions, and what changed it."""
    out: list[str] = []
    s = data.survival
    if s is not None and s.aft is not None and not s.times.empty:
        ten = s.times[s.times["share"] == 0.1].sort_values("estimate")
        fast, slow = ten.iloc[-1], ten.iloc[0]
        paused = "paused_ms" in s.sdata.columns and bool((s.sdata["paused_ms"] > 0).any())
        waited = " of waiting (mid-chain answering not counted)" if paused else " after the send"
        ratios = s.aft.time_ratios_
        ordered = bool(((ratios["ci_low"] > 1) | (ratios["ci_high"] < 1)).any())
        least, most = (  # named only when the model can tell which is less patient
            (
                f"the least patient condition ({slow.condition})",
                f"the most patient one ({fast.condition})",
            )
            if ordered
            else (str(slow.condition), str(fast.condition))
        )
        text = (
            f"Abandonment: the time by which 10% of trials were given up{waited}: "
            f"{_abandon_time(s, slow)} in {least}; {_abandon_time(s, fast)} in {most}; model: "
            f"{s.aft.family_} AFT"
        )
        out.append(
            text + "."
            if ordered
            else text + " (no time ratio's 95% CI excludes 1, so these "
            "data do not tell which condition is less patient)."
        )
        independent = "" if s.aft.clustered_ else ", trials as independent"
        for r in ratios.itertuples():
            if r.ci_low > 1 or r.ci_high < 1:
                change = "longer" if r.time_ratio > 1 else "shorter"
                out.append(
                    f"Each {r.per.replace('per ', '')} of {r.factor} made {_who(data)} wait "
                    f"{abs(r.time_ratio - 1):.0%} {change} before giving up (time ratio "
                    f"{r.time_ratio:.2f}, 95% CI {r.ci_low:.2f} to {r.ci_high:.2f}{independent})."
                )
    elif s is not None and s.aft_error:
        out.append(f"No abandonment model was fitted: {s.aft_error}.")
    return out


def _rating_sentences(data: ReportData) -> list[str]:
    """How the ratings fell with the stimulus, and where an acceptable rating stops being
    likely."""
    out: list[str] = []
    stim = data.stimulus
    r = data.ratings
    if r is not None:
        t = r.table.groupby(stim)["mos"].mean()
        out.append(
            f"Mean ratings of {r.column} fell from {t.iloc[0]:.1f} at {t.index[0]:g} ms to "
            f"{t.iloc[-1]:.1f} at {t.index[-1]:g} ms (1-{r.scale_size} scale)."
            if t.iloc[-1] < t.iloc[0]
            else f"Mean ratings of {r.column} did not fall with {stim}."
        )
        if r.separation is not None:
            ok, bad = r.separation.all_acceptable_ms, r.separation.none_acceptable_ms
            ends = [
                *(
                    [f"all {r.acceptable_at:g} or better at {duration(ok)}"]
                    if ok is not None
                    else []
                ),
                *([f"none at {duration(bad)}"] if bad is not None else []),
            ]
            out.append(
                f"Where a rating of {r.acceptable_at:g} or better becomes less likely than not "
                f"cannot be estimated: the ratings separate by {stim} ({', '.join(ends)}; "
                "see the ratings section)."
            )
        elif r.population is not None:
            mid = r.population.set_index("level").loc[0.5]
            rated = data.kept.dropna(subset=[r.column])[stim].astype(float)
            if estimate_flags(
                mid.estimate, mid.ci_low, mid.ci_high, rated.min(), rated.max()
            ).extrapolated:
                out.append(
                    f"Where a rating of {r.acceptable_at:g} or better becomes less likely than "
                    f"not lies outside the tested levels ({duration(rated.min())} to "
                    f"{duration(rated.max())}): an extrapolation, not a finding."
                )
            else:
                out.append(
                    f"A rating of {r.acceptable_at:g} or better becomes less likely than not at "
                    f"about {duration(mid.estimate)} "
                    f"({ci(mid.ci_low, mid.ci_high, (rated.min(), rated.max()))}), over all "
                    "participants and for the median one."
                )
    return out


def _score_sentences(data: ReportData) -> list[str]:
    """The scored recording with the largest share of streams past the threshold."""
    out: list[str] = []
    if data.score is not None and "share_past_threshold" in data.score:
        worst = data.score.sort_values("share_past_threshold").iloc[-1]
        out.append(
            f"Of the scored recordings, {worst.source} has the largest share of streams past "
            f"the 50% threshold: {worst.share_past_threshold:.0%}."
        )
    return out


def _abandon_time(survival: SurvivalPart, row: Any) -> str:
    """The AFT time by which a share gave up, or, when that lies beyond the longest wait
    observed in the condition (an extrapolation), what was observed: the Kaplan-Meier time,
    or that fewer gave up within the longest wait."""
    if not row.extrapolated:
        return duration(row.estimate)
    km = survival.km_table
    hit = km[km["condition"] == row.condition] if "condition" in km else km.iloc[0:0]
    col = f"t{round(row.share * 100)}_ms"
    if len(hit) and col in hit and np.isfinite(hit[col].iloc[0]):
        return (
            f"{duration(hit[col].iloc[0])} (observed, Kaplan-Meier; the model's figure is "
            "extrapolated)"
        )
    sdata = survival.sdata
    mask = np.ones(len(sdata), dtype=bool)
    for factor in row.index:
        if factor in sdata.columns and factor not in ("duration_ms", "event"):
            mask &= (sdata[factor] == row[factor]).to_numpy()
    longest_ms = float(sdata.loc[mask, "duration_ms"].max()) if mask.any() else float("nan")
    return (
        f"beyond the longest wait observed ({duration(longest_ms)}; fewer gave up, and the "
        "model's figure is extrapolated)"
    )
