"""The psychometric section's analysis: thresholds of the binary judgement (pooled with
participants resampled, per participant, per level of the other factors and the ratios
between them, the estimator of adaptive designs); its blocks are in `psychometric_blocks`,
what it withholds in `psychometric_withheld`, adaptive designs in `psychometric_adaptive`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysis.report.answer_direction import direction_note
from analysis.report.data import ESTIMANDS, ConditionFit, PsychometricPart, ReportData
from analysis.report.psychometric_adaptive import adaptive_design, adaptive_population
from analysis.report.psychometric_withheld import (
    IMPLAUSIBLE_THRESHOLD_MS,
    MEDIAN_PERSON_MEASURED,
    MIN_CONDITION_POINTS,
    ImplausibleThreshold,
    acceptable_answers,
    median_bracket,
    people_separation,
    separated_population,
    separating_within,
    withhold_few_people_condition_points,
    withhold_few_people_tails,
    withhold_steep_people_tails,
    withhold_thin_design_tails,
)
from analysis.report.support import enough, skipped_line
from analysis.separation import no_switch
from analysis.survival import condition_label
from analysis.trial_table import binary_column

if TYPE_CHECKING:
    from analysis.psychometric import PsychometricFitter


def _other_factor_levels(data: ReportData) -> list[tuple[str, float]]:
    """(factor, level) pairs for the non-stimulus factors with 2-6 levels."""
    out: list[tuple[str, float]] = []
    for f in data.factors[1:]:
        levels = np.sort(data.kept[f].dropna().unique())
        if 2 <= len(levels) <= 6:
            out.extend((f, float(v)) for v in levels)
    return out


def fit_psychometric(data: ReportData, column: str) -> PsychometricPart:
    """The psychometric part of `column` (yes/no) against `data.stimulus`; raises
    PsychometricInputError when the answers cannot be fitted."""
    from analysis.psychometric import PsychometricFitter
    from analysis.small_sample_interval import POPULATION_SIGMOID, population_threshold_small_n

    opts, kept, stim = data.options, data.kept, data.stimulus
    df = kept.assign(_y=binary_column(kept, column, data.table.source)).dropna(subset=["_y"])
    df = df.assign(_x=df[stim].astype(float))
    q = data.table.question_for(column)
    yes_means = (q.yes_means if q and q.yes_means else None) or _yes_label(column)
    yes_means = yes_means.replace("_", " ")
    pooled = PsychometricFitter(POPULATION_SIGMOID).fit_trials(
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
    against = direction_note(column, yes_means, pooled.direction_, stim)
    if against is not None:
        data.notes.append(f"Psychometric thresholds: {against}.")
    procedure = adaptive_design(data, df, pooled.direction_ == "rising")
    part.procedure = procedure
    if n_people == 1:
        _one_person_pooled(part, df, opts.n_boot, opts.seed)
    if procedure is not None:
        adaptive_population(data, part, df, procedure, n_people)
    else:
        separated_population(data, part, df)
    tails_rule = procedure is None and part.withheld is None and enough("population", n_people)
    # each person's own separation, for the steep-people rule and the per-participant table
    separations = people_separation(part, df) if tails_rule or opts.per_participant else {}
    if procedure is None and part.withheld is None:  # below MIN_TAILS people, whatever N
        part.tails_withheld = withhold_few_people_tails(data, part.population, n_people, "pooled")
    if tails_rule and not part.tails_withheld:
        answers = float(df.groupby(["participant", "_x"]).size().median())
        part.tails_withheld = withhold_thin_design_tails(data, part.population, answers)
        if not part.tails_withheld:
            factors = sorted({f for f, _ in _other_factor_levels(data)})
            within = separating_within(part, df, factors) - set(separations)
            if within:  # the answers those separations come from: one condition's
                cells = df.groupby(["participant", *factors, "_x"]).size()
                answers = min(answers, float(cells.median()))
            part.tails_withheld = withhold_steep_people_tails(
                data,
                part,
                len(separations) + len(within),
                n_people,
                answers,
                within=(len(within), factors) if within else None,
            )
    _per_condition(data, part, df, n_people)
    if opts.per_participant:
        keys = sorted(df["participant"].unique())
        seeds = np.random.SeedSequence(opts.seed).spawn(len(keys))
        for i, pid in enumerate(keys):
            sub = df[df["participant"] == pid]
            if sub["_x"].nunique() < 3:
                part.failed[pid] = "fewer than 3 stimulus levels"
                continue
            if part.one_person:  # the same trials as the pooled fit: the same fit, one number
                part.per_participant[pid] = part.pooled
                continue
            try:
                part.per_participant[pid] = fit_participant(
                    sub["_x"].to_numpy(),
                    sub["_y"].to_numpy(),
                    n_boot=opts.n_boot,
                    seed=int(seeds[i].generate_state(1)[0]),
                    adaptive=procedure is not None,
                )
            except ValueError as exc:
                part.failed[pid] = str(exc)
            # On an adaptive design a person whose answers separate keeps their fit: the
            # procedure tests near its target, not the 50% point, and Firth's fit is finite
            # there (`psychometric_blocks.ADAPTIVE_PERSON_NOTE`)
            own = separations.get(str(pid)) if procedure is None else None
            if own is None:  # all one kind of answer: the fit's point is the levels' edge
                own = no_switch(sub["_x"].to_numpy(), acceptable_answers(part, sub))
            if own is not None and pid in part.per_participant:
                part.person_separation[pid] = own
            if opts.progress:
                _progress_bar(i + 1, len(keys), "participant fits")
        if opts.progress and keys:
            print(file=sys.stderr)
        part.people_differ_p = _people_differ_p(part, df, opts.seed)
    _set_estimand(data, part, n_people)
    return part


def _per_condition(
    data: ReportData, part: PsychometricPart, df: pd.DataFrame, n_people: int
) -> None:
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
        why = ""
        if resample:  # below 8 every point of a condition is withheld, the tails with them
            why = withhold_few_people_condition_points(data, fit.table, n_people)
            if n_people >= MIN_CONDITION_POINTS:
                answers = float(df.groupby(["participant", factor, "_x"]).size().median())
                why = withhold_thin_design_tails(data, fit.table, answers, f"per {factor}")
                if not why:  # people steeper than the levels, within a condition
                    separating = separating_within(part, df, [factor])
                    why = withhold_steep_people_tails(
                        data, part, len(separating), n_people, answers, fit.table, f"per {factor}"
                    )
        for key in fit.fitter.conditions_:
            rows = fit.table[fit.table["condition"] == key]
            label = condition_label({factor: float(key)})
            if why:
                part.conditions_withheld[label] = why
            part.per_condition[label] = ConditionFit(
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


def _one_person_pooled(part: PsychometricPart, df: pd.DataFrame, n_boot: int, seed: int) -> None:
    """One person's trials: the pooled curve is theirs, fitted as each person is
    (`fit_participant`), so that the report gives them one 50% point, not two (a cumulative
    normal and a logistic can settle on different lapses: 866 against 658 ms for the same
    41 trials). Kept as it was when that fit fails."""
    try:
        fitted = fit_participant(
            df["_x"].to_numpy(),
            df["_y"].to_numpy(),
            n_boot=n_boot,
            seed=seed,
            adaptive=part.procedure is not None,
        )
    except ValueError:
        return
    part.pooled, part.one_person = fitted, True
    part.population = fitted.thresholds_.copy()
    part.population["ci_low"], part.population["ci_high"] = np.nan, np.nan
    part.population["n_participants"] = 1


def _people_differ_p(part: PsychometricPart, df: pd.DataFrame, seed: int) -> float:
    """`people_differ.one_curve_for_all_p` over the fitted participants (NaN below 2, and
    on adaptive designs, where it rejected people alike too often: `ADAPTIVE_DIFFER`)."""
    from analysis.psychometric.people_differ import one_curve_for_all_p

    if len(part.per_participant) < 2 or part.procedure is not None:
        return float("nan")
    trials = df[df["participant"].isin(list(part.per_participant))]
    try:
        together = fit_participant(
            trials["_x"].to_numpy(),
            trials["_y"].to_numpy(),
            n_boot=0,
            seed=seed,
        )
    except ValueError:
        return float("nan")
    return one_curve_for_all_p(list(part.per_participant.values()), together)


def fit_participant(
    x: np.ndarray, y: np.ndarray, *, n_boot: int, seed: int, adaptive: bool = False
) -> PsychometricFitter:
    """One participant's own psychometric fit (a `PsychometricFitter`) of their trials:
    stimulus `x` (ms) and judgement `y` (1 = yes).

    On an `adaptive` design, guess = lapse = 0 and Firth's bias reduction: trials near one
    point of a person's curve cannot tell guess and lapse from its slope (left free in
    [0, 0.1] they pulled the 50% point about -4%), and the bias reduction takes out most of
    what maximum likelihood's small-sample pull leaves (benchmarks/report_validation.py)."""
    from analysis.psychometric import PsychometricFitter

    fitter = (
        PsychometricFitter(guess=0.0, lapse=0.0, bias_reduction=True)
        if adaptive
        else PsychometricFitter()
    )
    return fitter.fit_trials(x, y, n_boot=n_boot, seed=seed)


def median_person_thresholds(
    per_participant: dict[str, PsychometricFitter], n_boot: int, seed: int, alpha: float = 0.05
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
        # held to the headline's goal and missing it (MEDIAN_PERSON_MEASURED): withheld,
        # with the reason that fits these data best
        median[["estimate", "ci_low", "ci_high"]] = np.nan
        # what was measured on every design: the reason, with or without separations
        part.median_withheld = MEDIAN_PERSON_MEASURED
        bracket = median_bracket(part)
        if bracket is not None:  # separated people's switches leave the median open too
            part.median_withheld += (
                "; here some participants' answers separate as well, so their switches are "
                "brackets, not estimates, and the median participant's switch lies only "
                f"between {bracket[0]:,.0f} and {bracket[1]:,.0f} ms"
            )
        else:
            from analysis.report.adaptive_part import adaptive_estimates

            if adaptive_estimates(data.table.sessions) is not None:
                part.median_withheld += (
                    "; the median of the sessions' own adaptive estimates (each at its "
                    "procedure's target, a different point) is in 'Adaptive estimates'"
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
            "the median of the per-participant fits' thresholds, withheld: "
            + part.median_withheld
            + "; each participant's own 50% point is in the per-participant table"
        )
    else:
        part.other = median


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
