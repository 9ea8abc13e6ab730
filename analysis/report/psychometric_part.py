"""The psychometric section: thresholds of the binary judgement (pooled with participants
resampled, per participant, per level of the other factors, the adaptive designs'
estimator) and its blocks."""

from __future__ import annotations

import sys
from typing import Any

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
from analysis.report.data import ESTIMANDS, ConditionFit, PsychometricPart, ReportData
from analysis.report.interval_bounds import fitted_range_ms
from analysis.report.support import MINIMUMS, enough, estimate_flags, flag_text, skipped_line
from analysis.separation import find_separation, yes_no_words
from analysis.small_sample_interval import adaptive_mixed_thresholds
from analysis.survival import condition_label
from analysis.trial_table import binary_column


def _other_factor_levels(data: ReportData) -> list[tuple[str, float]]:
    """(factor, level) pairs for the non-stimulus factors with 2-6 levels."""
    out = []
    for f in data.factors[1:]:
        levels = np.sort(data.kept[f].dropna().unique())
        if 2 <= len(levels) <= 6:
            out.extend((f, float(v)) for v in levels)
    return out


def fit_psychometric(data: ReportData, column: str) -> PsychometricPart:
    """The psychometric part of `column` (yes/no) against `data.stimulus`; raises
    PsychometricInputError when the answers cannot be fitted."""
    from analysis.psychometric import PsychometricFitter
    from analysis.small_sample_interval import population_threshold_small_n

    opts, kept, stim = data.options, data.kept, data.stimulus
    df = kept.assign(_y=binary_column(kept, column, data.table.source)).dropna(subset=["_y"])
    df = df.assign(_x=df[stim].astype(float))
    q = data.table.question_for(column)
    yes_means = (q.yes_means if q and q.yes_means else None) or _yes_label(column)
    yes_means = yes_means.replace("_", " ")
    pooled = PsychometricFitter().fit_trials(
        df["_x"].to_numpy(), df["_y"].to_numpy(), n_boot=opts.n_boot, seed=opts.seed
    )
    n_people = df["participant"].nunique()
    if enough("population", n_people):
        population = population_threshold_small_n(
            df, "_x", "_y", "participant", opts.n_boot, opts.seed
        )
    else:  # the pooled fit of these people's trials, without a population interval
        data.skipped.append(skipped_line("population", n_people))
        population = pooled.thresholds_.copy()
        population["ci_low"], population["ci_high"] = np.nan, np.nan
        population["n_participants"] = n_people
    part = PsychometricPart(column, yes_means, pooled, population)
    mid_ms = pooled.threshold(0.5)
    if np.isfinite(mid_ms) and mid_ms < IMPLAUSIBLE_THRESHOLD_MS:
        raise ImplausibleThreshold(
            f"the pooled 50% threshold came out at {mid_ms:.2g} ms, and people do not tell "
            f"latencies under {IMPLAUSIBLE_THRESHOLD_MS:g} ms apart: {stim} is probably not in "
            f"ms (the unit taken, and why, is in the notes); if it is in seconds, pass "
            f"--stimulus COLUMN --stimulus-unit s"
        )
    procedure = adaptive_design(data, df, pooled.direction_ == "rising")
    part.procedure = procedure
    if procedure is not None:
        _adaptive_population(data, part, df, procedure, n_people)
    else:
        _separated_population(data, part, df)
    if procedure is None and part.withheld is None and enough("population", n_people):
        _withhold_few_people_tails(data, part.population, n_people, "pooled")
    _per_condition(data, part, df, n_people)
    if opts.per_participant:
        keys = sorted(df["participant"].unique())
        seeds = np.random.SeedSequence(opts.seed).spawn(len(keys))
        for i, pid in enumerate(keys):
            sub = df[df["participant"] == pid]
            if sub["_x"].nunique() < 3:
                part.failed[pid] = "fewer than 3 stimulus levels"
                continue
            try:
                part.per_participant[pid] = fit_participant(
                    sub["_x"].to_numpy(),
                    sub["_y"].to_numpy(),
                    n_boot=opts.n_boot,
                    seed=int(seeds[i].generate_state(1)[0]),
                )
            except ValueError as exc:
                part.failed[pid] = str(exc)
            own = find_separation(sub["_x"].to_numpy(), _acceptable(part, sub))
            if own is not None and pid in part.per_participant:
                part.person_separation[pid] = own
            if opts.progress:
                _progress_bar(i + 1, len(keys), "participant fits")
        if opts.progress and keys:
            print(file=sys.stderr)
    _set_estimand(data, part, n_people)
    return part


IMPLAUSIBLE_THRESHOLD_MS = 5.0
"""A latency threshold under this is a unit read wrongly, not a finding."""


class ImplausibleThreshold(ValueError):
    """A threshold no latency study can find (a unit read wrongly): the part refuses."""


MIN_TAILS = MINIMUMS["tails"].min_participants
"""The fewest participants the pooled and per-condition 25% / 75% points are printed for."""


def _withhold_few_people_tails(
    data: ReportData, table: pd.DataFrame, n_people: int, what: str
) -> None:
    """Blank the 25% / 75% rows of `table` below `MIN_TAILS` participants, with a note."""
    if n_people >= MIN_TAILS:
        return
    table.loc[table["level"] != 0.5, ["estimate", "ci_low", "ci_high"]] = np.nan
    note = (
        f"Psychometric thresholds ({what}): with {n_people} participants the 25% / 75% "
        f"points are withheld: {MINIMUMS['tails'].why}."
    )
    if note not in data.notes:
        data.notes.append(note)


def _acceptable(part: PsychometricPart, df: pd.DataFrame) -> np.ndarray:
    """1 where an answer is on the short-latency side (not too slow, acceptable), else 0."""
    y = df["_y"].to_numpy(dtype=float)
    return 1.0 - y if part.pooled.direction_ == "rising" else y


def _separated_population(data: ReportData, part: PsychometricPart, df: pd.DataFrame) -> None:
    """When every answer on one side of a latency is one answer and every answer on the
    other side the other (pooled over everyone), the data place the switch in a gap
    between two tested levels and nothing more: the pooled fit's point and interval are
    the width penalty's, not the data's (four identical people gave 806 [760, 855] ms,
    narrower than any one of them, for people switching at 700). The population's
    thresholds are then withheld and the report gives the bracket instead."""
    sep = find_separation(df["_x"].to_numpy(), _acceptable(part, df))
    if sep is None:
        return
    rising = part.pooled.direction_ == "rising"
    words = yes_no_words(part.yes_means, rising)
    part.population.loc[:, ["estimate", "ci_low", "ci_high"]] = np.nan
    part.withheld = sep
    part.withheld_text = sep.explain(words, data.stimulus, model=FIXED_MODEL)
    part.withheld_short = sep.short(words)
    part.estimator = (
        "pooled fit of all trials; no thresholds: the answers separate by latency, so the "
        "data give a bracket, not an estimate (see below)"
    )
    data.notes.append(f"Psychometric thresholds: {part.estimator}.")


FIXED_MODEL = "A psychometric curve"
"""How a separation's explanation names the model on a fixed design."""


def _per_condition(data: ReportData, part: PsychometricPart, df: pd.DataFrame, n_people: int):
    """Each other factor's conditions from one joint fit, their intervals and the ratio of
    each condition's 50% point to the first condition's from refitting without each
    participant (`analysis.condition_contrast`); below the population minimum, estimates
    only (these people's, not a population's)."""
    from analysis.condition_contrast import condition_thresholds

    opts = data.options
    resample = enough("population", n_people)
    factors = sorted({f for f, _ in _other_factor_levels(data)})
    if factors and part.procedure is not None:  # a joint fit pools people at their own levels
        data.notes.append(
            f"Thresholds per level of {', '.join(factors)}: withheld on an adaptive design "
            f"({part.procedure}): the joint fit pools every person's trials, which an "
            "adaptive procedure placed at that person's own levels, so its per-condition "
            "points carry the bias the pooled fit has there; the per-participant fits are "
            "each person's own."
        )
        return
    if factors and not resample:
        data.skipped.append(skipped_line("per_condition", n_people))
    for factor in factors:
        try:
            fit = condition_thresholds(
                df, "_x", "_y", factor, "participant", opts.n_boot, opts.seed, resample=resample
            )
        except ValueError as exc:
            part.failed[f"by {factor}"] = str(exc)
            continue
        if resample:
            _withhold_few_people_tails(data, fit.table, n_people, "per-condition")
        for key in fit.fitter.conditions_:
            rows = fit.table[fit.table["condition"] == key]
            part.per_condition[condition_label({factor: float(key)})] = ConditionFit(
                fit.fitter,
                key,
                rows.drop(columns="condition").reset_index(drop=True),
                (float(df["_x"].min()), float(df["_x"].max())),
            )
        contrast = fit.contrast.assign(
            factor=factor,
            condition=[condition_label({factor: float(k)}) for k in fit.contrast["condition"]],
            reference=[condition_label({factor: float(k)}) for k in fit.contrast["reference"]],
        )
        part.contrasts.append(contrast)


def fit_participant(x: np.ndarray, y: np.ndarray, *, n_boot: int, seed: int) -> Any:
    """One participant's own psychometric fit (a `PsychometricFitter`) of their trials:
    stimulus `x` (ms) and judgement `y` (1 = yes)."""
    from analysis.psychometric import PsychometricFitter

    return PsychometricFitter().fit_trials(x, y, n_boot=n_boot, seed=seed)


def median_person_thresholds(
    per_participant: dict[str, Any], n_boot: int, seed: int, alpha: float = 0.05
) -> pd.DataFrame:
    """The median of per-person thresholds at each level, 95% percentile interval from
    resampling participants (their point estimates). Columns as `population_threshold`."""
    tables = [f.thresholds_.set_index("level") for f in per_participant.values()]
    levels = list(tables[0].index)
    est = np.array([[t.loc[level, "estimate"] for level in levels] for t in tables])  # [P, L]
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(tables), size=(max(n_boot, 1), len(tables)))
    boot = np.median(est[draws], axis=1)  # [B, L]
    return pd.DataFrame(
        {
            "level": levels,
            "estimate": np.median(est, axis=0),
            "ci_low": np.quantile(boot, alpha / 2, axis=0) if n_boot else np.nan,
            "ci_high": np.quantile(boot, 1 - alpha / 2, axis=0) if n_boot else np.nan,
            "n_trials": int(sum(t["n_trials"].iloc[0] for t in tables)),
            "n_participants": len(tables),
        }
    )


def _set_estimand(data: ReportData, part: PsychometricPart, n_people: int) -> None:
    """Put the `--estimand` table in `part.population` and the other in `part.other`."""
    wanted = data.options.estimand
    if wanted not in ESTIMANDS:
        raise ValueError(f"estimand {wanted!r}: use one of {', '.join(ESTIMANDS)}")
    median = None
    if len(part.per_participant) >= 2:
        median = median_person_thresholds(
            part.per_participant, data.options.n_boot, data.options.seed
        )
        # held to the headline's goal and missing it (MEDIAN_PERSON_MEASURED): the 25% / 75%
        # points withheld, the 50% point given without an interval
        median.loc[median["level"] != 0.5, "estimate"] = np.nan
        median["ci_low"], median["ci_high"] = np.nan, np.nan
        part.median_withheld = MEDIAN_PERSON_MEASURED
        bracket = _median_bracket(part)
        if bracket is not None:  # separated people's switches leave the median open
            median[["estimate", "ci_low", "ci_high"]] = np.nan
            part.median_withheld = (
                f"the median participant's switch lies between {bracket[0]:,.0f} and "
                f"{bracket[1]:,.0f} ms: some participants' answers separate, so their "
                "switches are brackets, not estimates"
            )
    if wanted == "median-person":
        if median is None:
            data.notes.append(
                "--estimand median-person needs per-participant fits of 2 or more people; "
                "the pooled figures are the population curve's points."
            )
            return
        part.population, part.other, part.estimand = median, part.population, wanted
        part.estimator = (
            "the median of the per-participant fits' 50% thresholds, without an interval: "
            + MEDIAN_PERSON_MEASURED
        )
    else:
        part.other = median


MEDIAN_PERSON_MEASURED = (
    "held to the headline's goal (95% coverage 0.93-0.97, bias under 2% at 50% and 5% at 25 / "
    "75%), the median of per-person fits missed it on the independent simulator's studies: "
    "its participant-bootstrap interval covered 0.58-0.97 at 50% and 0.24-0.94 at 25 / 75%, "
    "and its 25 / 75% points were biased up to +9% / -11% (each person's fit of a few dozen "
    "answers is itself biased there; benchmarks/report_validation.py, 2026-12-06), so its "
    "25% / 75% points and every interval of it are withheld"
)
"""Why the median person's figures are withheld, as measured (thresholds.csv and report)."""
PERSON_TAILS_MEASURED = (
    "a person's own 25% / 75% points are withheld: with 8 trials per level their 25% point "
    "was biased +5% to +7% (benchmarks/report_validation.py, 2026-12-06), on a staircase "
    "their 75% point -6% to -8%, and for shallow curves with 5-20 trials per level up to "
    "+22% (benchmarks/validation_grid.py); the 50% point and its interval are kept"
)
"""Why each participant's 25 / 75% rows have no estimate (thresholds.csv)."""


def _median_bracket(part: PsychometricPart) -> tuple[float, float] | None:
    """Where the median person's 50% point lies when some people's answers separate (each
    counted at either end of their bracket), or None when those brackets do not move the
    median (or no one's answers separate)."""
    if not part.person_separation:
        return None
    lows, highs = [], []
    for pid, f in part.per_participant.items():
        sep = part.person_separation.get(pid)
        bracket = None if sep is None else sep.bracket_ms()
        if bracket is None:
            value = float(f.thresholds_.set_index("level").loc[0.5, "estimate"])
            lows.append(value)
            highs.append(value)
        else:
            low, high = bracket
            lows.append(low if np.isfinite(low) else 0.0)
            highs.append(high if np.isfinite(high) else np.inf)
    low, high = float(np.median(lows)), float(np.median(highs))
    return None if high <= low * (1 + 1e-3) else (low, high)


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

    sessions = adaptive_estimates(getattr(data.table, "sessions", None))
    if sessions is not None:
        return ", ".join(sorted({str(p) for p in sessions["procedure"].dropna()})) or "adaptive"
    return detected_design(data, df, rising)


DETECTED = "levels that differ between people"
"""The procedure's name when it was detected, not declared."""


def detected_design(data: ReportData, df: pd.DataFrame | None, rising: bool) -> str | None:
    """`DETECTED` when the levels people were tested at differ between them, with the
    evidence in a note (and how to declare the design), else None. `df`: the answered
    trials (`_x`, `_y` = yes), `rising`: yes means too slow."""
    from analysis.design_detection import person_dependent_levels, with_answer_moves

    found = person_dependent_levels(data.kept.dropna(subset=[data.stimulus]), data.stimulus)
    if found is None:
        return None
    if df is not None:
        too_slow = df["_y"].to_numpy(dtype=float)
        too_slow = too_slow if rising else 1.0 - too_slow
        order = "trial_index" if "trial_index" in df.columns else None
        found = with_answer_moves(found, df, "_x", too_slow, order=order)
    data.notes.append(
        f"Design: {found.words()}: an adaptive procedure (a staircase, QUEST+) or another "
        "design that tests people at different latencies, so the pooled fit of every trial "
        "would mix people at different levels. The population thresholds come from the "
        "model for adaptive designs (below). Say what was run with --procedure "
        "fixed|staircase|quest|interleaved (or a study.json beside the table with the "
        'factor\'s "procedure"); --procedure fixed restores the pooled fit.'
    )
    return DETECTED


def _adaptive_population(
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
        part.population.loc[part.population["level"] != 0.5, ["estimate", "ci_low", "ci_high"]] = (
            np.nan
        )
        part.estimator = (
            f"adaptive design ({procedure}): 25% / 75% points withheld; they need a model with "
            f"participant effects, which needs {MINIMUMS['population'].min_participants} "
            "participants"
        )
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
        part.estimator = (
            f"adaptive design ({procedure}): logit on ln latency with a random intercept per "
            "participant (population curve, marginal over participants); 95% interval: "
            "participant jackknife, t on N - 1 df"
        )
        _withhold_measured_bias(part, procedure)
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
        (0.25, 0.75),
        "on simulated interleaved staircases its 25% point was biased -6.1%; its 75% point "
        "was not measured",
    ),
    "quest": (
        (0.25, 0.75),
        "on simulated QUEST+ studies its 25% / 75% intervals covered 0.87-0.98 and its 75% "
        "point was biased up to +6.1%; its 50% point covered 0.90-0.98 with a bias of -0.7% "
        "to +5.7% (the most at 4 people who differ), short of the goal in a few cells: read "
        "its interval as roughly 90-95%",
    ),
    DETECTED: (
        (0.25, 0.5, 0.75),
        "the procedure is not declared, and on the independent simulator's staircase tables "
        "this model's 50% interval covered only 0.70-0.97 (QUEST+ tables: 0.90-0.95): "
        "declare it with --procedure (quest keeps the 50% point)",
    ),
}


def _withhold_measured_bias(part: PsychometricPart, procedure: str) -> None:
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


def psychometric_part(data: ReportData, column: str) -> PsychometricPart | None:
    """The psychometric part, or None with a note when the answers cannot be fitted (no
    answered trials, a single level): a fact about the data, not a failure."""
    from analysis.psychometric import PsychometricInputError

    try:
        return fit_psychometric(data, column)
    except PsychometricInputError as exc:
        data.notes.append(f"No psychometric thresholds for {column}: {exc}.")
        return None


def _progress_bar(done: int, total: int, label: str, width: int = 30) -> None:
    """One self-overwriting line on stderr: `[#######.......]  57/200 participant fits`;
    into a file or pipe (a log), only the finished count, not every redraw."""
    if not sys.stderr.isatty() and done < total:
        return
    filled = int(width * done / max(total, 1))
    bar = "#" * filled + "." * (width - filled)
    print(f"\r  [{bar}] {done:>{len(str(total))}}/{total} {label}", end="", file=sys.stderr)


def _yes_label(column: str) -> str:
    return column.removeprefix("q_").replace("_", " ")


def participant_table(data: ReportData) -> pd.DataFrame | None:
    """Per participant: trials, direction, 50% threshold [CI] and flags.

    Flags: the curve's direction is opposite to the pooled one; the pooled 50% threshold
    lies outside this participant's 95% interval (the pooled curve does not resemble this
    person); the estimate lies outside the levels this participant was tested at; the
    interval is degenerate.
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
                    "flags": "separated: every answer on either side of the gap the same",
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
        steep = _steep_flag(fit_gap(f))
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


def psychometric_blocks(data) -> list:
    """The psychometric section: pooled thresholds, per condition, per participant."""
    p = data.psychometric
    if p is None:
        return []
    return [
        *_pooled_blocks(data, p),
        *_per_condition_blocks(data, p),
        *_per_participant_blocks(data, p),
    ]


def _pooled_blocks(data, p) -> list:
    """Estimand, model, the pooled thresholds with both intervals, fit facts, figure."""
    blocks: list = []
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
    same_estimate = p.estimand == "population" and p.procedure is None
    interval_column = (
        "95% CI, participants resampled (median)"
        if p.estimand == "median-person"
        else "95% CI, participant jackknife-t"
    )
    other_column = (
        "95% CI, parametric bootstrap"
        if same_estimate
        else "pooled fit of all trials [95% CI, parametric bootstrap], another estimate"
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
        q = pooled.loc[level]
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
    blocks.append(
        figure_or_note(
            data,
            "psychometric_pooled",
            lambda: figures.psychometric_pooled(p, stim, (low, high)),
            (
                "Pooled proportion of yes per level with 95% Clopper-Pearson intervals, the "
                "fitted curve and the 50% threshold with its parametric-bootstrap CI."
                if figures.pooled_bracket(p) is None
                else "Pooled proportion of yes per level with 95% Clopper-Pearson intervals; "
                "band: the gap between the tested levels where every answer switches (the "
                "answers separate there); the curve is the steepest the width penalty "
                "allows, not an estimate of the curve's slope or place in the gap."
            )
            + figures.open_end_caption(
                (pooled.loc[0.5].ci_low, pooled.loc[0.5].ci_high, (low, high))
            ),
        )
    )
    return blocks


def fit_gap(fitter, condition: int = 0) -> tuple[float, float] | None:
    """The tested levels (ms) around the switch of a fitted curve steeper than they show
    (`analysis.steep_tails.steep_gap_ms`), else None."""
    from analysis.steep_tails import steep_gap_ms

    result = getattr(fitter, "_result", None)
    return None if result is None else steep_gap_ms(result.layout, result.theta, condition)


def pooled_gap(p) -> tuple[float, float] | None:
    """The gap of the pooled curve when it is steeper than the tested levels show and the
    pooled figures are the population curve's (None otherwise)."""
    if p.estimand != "population" or p.withheld is not None:
        return None
    return fit_gap(p.pooled)


def steep_note(gap: tuple[float, float], whose: str) -> str:
    """Why a steep curve's figures read as a gap."""
    return (
        f"The {whose} is steeper than the tested levels can show (its fitted width is at "
        "the floor the width penalty sets): the answers place the switch between "
        f"{gap[0]:,.0f} and {gap[1]:,.0f} ms, not where in that gap. Every interval spans the "
        "gap, and the point estimates are the fit's place in it, not findings; testing "
        "levels inside the gap would place them."
    )


def _per_condition_blocks(data, p) -> list:
    """Thresholds per level of the other factors (joint fit) and the ratios between them."""
    blocks: list = []
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
                        _steep_flag(fit_gap(f.fitter, f.fitter.conditions_.index(f.condition))),
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
    cells = [r["95% CI, participant jackknife-t"] for r in rows]
    blocks.extend(unbounded_note(cells, data.tested_range, "tested level"))
    if p.contrasts:
        table = contrast_table(pd.concat(p.contrasts, ignore_index=True), n)
        blocks.append(Table(table, CONTRAST_CAPTION))
    return blocks


def _steep_flag(gap: tuple[float, float] | None) -> str:
    return "" if gap is None else f"steep: switch between {gap[0]:,.0f} and {gap[1]:,.0f} ms"


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
    ". On an adaptive design each person was tested near one point of their curve (a "
    "1-up/2-down staircase near their 29% 'too slow' point), so their 50% point is reached "
    "through the fitted curve's shape: on the independent simulator's staircase tables it "
    "was biased -2.6% to -3.9% (its interval still covered 0.92-0.96; QUEST+ tables: within "
    "1%; benchmarks/report_validation.py, 2026-12-06)"
)
"""The measured bias of a person's 50% point on adaptive designs, said beside the table."""


def _per_participant_blocks(data, p) -> list:
    """The per-participant table and figures, and the fits that could not be made."""
    blocks: list = []
    stim = data.stimulus
    people = participant_table(data)
    if people is not None:
        flagged = people[people["flags"] != ""]
        shown = people if len(people) <= 40 else flagged
        blocks.append(
            Table(
                shown,
                "Per participant: 50% threshold with 95% CI (parametric bootstrap of the "
                "person's own trials, widened by a second one from the shallowest curve "
                f"their answers support); {len(flagged)} of {len(people)} flagged (a curve "
                "running the other way, a pooled threshold outside the person's interval, "
                "an extrapolated estimate or a degenerate interval)"
                + ("" if shown is people else "; only the flagged shown, all in thresholds.csv")
                + ". "
                + PERSON_COVERAGE_NOTE
                + (ADAPTIVE_PERSON_NOTE if p.procedure is not None else ""),
            )
        )
        blocks.extend(unbounded_note(list(shown["95% CI"]), None, "level that participant saw"))
    if p.per_participant:
        blocks.append(
            figure_or_note(
                data,
                "thresholds_per_participant",
                lambda: figures.threshold_distribution(p, stim, data.tested_range),
                "50% threshold per participant with its 95% CI (grey bars: a participant "
                "whose answers separate, the gap where they switch); band: "
                + (
                    "the gap where every answer switches (pooled answers separate)."
                    if figures.pooled_bracket(p) is not None
                    else "pooled estimate with its CI over participants (jackknife-t)."
                )
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


def _participant_intervals(fitters) -> list[tuple[float, float, tuple[float, float]]]:
    """(ci_low, ci_high, levels that person saw) of each participant's 50% threshold."""
    return [(*_mid_interval(f.thresholds_), fitted_range_ms(f)) for f in fitters]


def _model_sentence(data, p) -> str:
    """The model and how the table's intervals are made, for the estimator it prints."""
    text = (
        "Model: ψ(x) = γ + (1−γ−λ)·F(ln x; m, w), F logistic, guess γ and lapse λ free in "
        "[0, 0.1], fitted by maximum likelihood; for a falling curve the threshold is still "
        "where F crosses the level. "
    )
    boot = data.options.n_boot
    if p.estimand == "median-person":
        return text + (
            "The table's figures are the median of the per-participant fits' thresholds, "
            "with a 95% interval from resampling participants (percentile bootstrap of the "
            f"median, B = {boot}); the pooled fit of all trials, a different estimate (the "
            "population curve's point), is shown beside it with its parametric-bootstrap "
            "interval, which treats trials as independent."
        )
    if p.procedure is not None:
        return text + (
            "On this adaptive design the table's figures are the estimator's above (not the "
            "pooled fit's); the pooled fit of all trials, a different estimate, is shown "
            "beside them with its parametric-bootstrap interval, which treats trials as "
            "independent."
        )
    return text + (
        "Pooled intervals: the pooled fit refitted without each participant in turn "
        "(participant jackknife), the estimate ± t on N − 1 degrees of freedom × the "
        "jackknife SE on ln ms, each end at least as far out as the parametric bootstrap's "
        f"of the pooled counts (B = {boot}); that parametric-bootstrap interval, which "
        "treats trials as independent, is shown beside it."
    )


def _estimand_sentence(p) -> str:
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
