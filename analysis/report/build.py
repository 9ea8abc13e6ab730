"""Running every analysis of the threshold report on one trial table: `analyse(table, options)`.

The result (`ReportData`) holds the fitted objects and tidy tables; `render` turns it into
`report.html`, `report.md` + PNGs and `thresholds.csv`. Column choices: the stimulus (the
latency factor), the binary judgement and the rating come from the options, else from
`study.json`, else from the table's columns (see `choose_columns`).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.exclusions import (
    ExclusionResult,
    ExclusionRules,
    apply_exclusions,
    cell_counts,
    nothing_left_message,
    planned_trials_from_sessions,
)
from analysis.ratings import (
    OrdinalLatencyFitter,
    acceptable_binary,
    fit_mixed_acceptability,
    rating_summary,
    scale_midpoint,
)
from analysis.report.adaptive_part import adaptive_part, adaptive_threshold_rows
from analysis.report.chains_part import chain_part
from analysis.report.fidelity_part import fidelity_part
from analysis.report.sessions_part import session_facts
from analysis.report.support import MINIMUMS, enough, estimate_flags, skipped_line
from analysis.small_sample_interval import mixed_threshold_small_n
from analysis.survival import (
    AbandonmentAFTFitter,
    condition_label,
    kaplan_meier,
    km_table,
    survival_data,
)
from analysis.trial_table import (
    TrialTable,
    TrialTableError,
    binary_column,
    numeric_column,
    question_columns,
)

THRESHOLD_COLUMNS = [
    "measure",
    "stimulus",
    "group",
    "level",
    "estimate",
    "ci_low",
    "ci_high",
    "n_trials",
    "condition",
    "n_participants",
    "extrapolated",
    "degenerate",
    "estimand",
]
# What a pooled psychometric figure estimates (`--estimand`), in words for the report.
ESTIMANDS = {
    "population": "the population curve's point (all participants' trials pooled)",
    "median-person": "the median participant's own point (median of per-person fits)",
}
ABANDON_SHARES = (0.1, 0.5)
# Wall-clock session stamps in sessions.csv (ISO 8601) that give the study's dates.
SESSION_TIME_COLUMNS = ("created_at", "updated_at", "started_at", "finished_at", "ended_at")


@dataclass
class ReportOptions:
    """What to analyse and how."""

    stimulus: str | None = None
    judgement: str | None = None
    rating: str | None = None
    acceptable_at: float | None = None
    n_boot: int = 1000
    seed: int = 0
    rules: ExclusionRules = field(default_factory=ExclusionRules)
    per_participant: bool = True
    progress: bool = False
    score_corpus: Path | None = None
    title: str | None = None
    estimand: str = "population"  # or "median-person" (see ESTIMANDS)
    judgement_kind: str | None = None  # immediacy | acceptability | smoothness (else inferred)


@dataclass
class ConditionFit:
    """One condition's curve from a joint fit across the levels of another factor (shared
    lapse): its thresholds table and predictions."""

    fitter: Any  # MultiConditionFitter
    condition: str
    thresholds_: pd.DataFrame  # level, estimate, ci_low, ci_high, n_trials
    x_range_ms: tuple[float, float]

    def predict(self, x_ms) -> np.ndarray:
        return self.fitter.predict(x_ms, self.condition)

    def threshold(self, level: float = 0.5) -> tuple[float, float, float]:
        row = self.thresholds_.set_index("level").loc[level]
        return float(row.estimate), float(row.ci_low), float(row.ci_high)


@dataclass
class PsychometricPart:
    """Binary-judgement thresholds: pooled, per participant, per level of the other factors."""

    column: str
    yes_means: str
    pooled: Any  # PsychometricFitter
    population: pd.DataFrame  # level, estimate, ci_low, ci_high (participants resampled)
    per_participant: dict[str, Any] = field(default_factory=dict)
    per_condition: dict[str, ConditionFit] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    estimand: str = "population"  # what `population` estimates (ESTIMANDS)
    estimator: str = (  # how, in words
        "pooled fit of all trials; 95% interval: participant jackknife, t on N - 1 df"
    )
    other: pd.DataFrame | None = None  # the other estimand's table, when it could be made


@dataclass
class SurvivalPart:
    """Abandonment: KM per condition, AFT model, times by which 10%/50% gave up."""

    sdata: pd.DataFrame
    km: dict[str, Any]
    km_table: pd.DataFrame
    aft: AbandonmentAFTFitter | None
    aft_error: str | None
    times: pd.DataFrame  # condition, share, estimate, ci_low, ci_high, n_trials, extrapolated


@dataclass
class RatingPart:
    """Ratings: MOS table, ordinal model and the acceptable-rating threshold."""

    column: str
    scale_size: int
    acceptable_at: float
    acceptable_source: str
    table: pd.DataFrame
    ordinal: OrdinalLatencyFitter | None
    ordinal_error: str | None
    population: pd.DataFrame | None
    n_unrated_abandoned: int = 0


@dataclass
class ReportData:
    """Everything the report shows."""

    table: TrialTable
    options: ReportOptions
    exclusions: ExclusionResult
    kept: pd.DataFrame
    stimulus: str
    factors: list[str]
    cells: pd.DataFrame
    study_info: dict[str, str]
    psychometric: PsychometricPart | None = None
    survival: SurvivalPart | None = None
    ratings: RatingPart | None = None
    references: pd.DataFrame | None = None
    chains: dict[str, Any] | None = None  # agent chains: analysis.chains.chain_section
    adaptive: dict[str, Any] | None = None  # sessions' adaptive estimates (adaptive_part)
    fidelity: dict[str, Any] | None = None  # playback fidelity per session (fidelity_part)
    thresholds: pd.DataFrame | None = None
    score: pd.DataFrame | None = None
    score_errors: list[str] = field(default_factory=list)
    score_fixed_levels: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # parts below their minimum N, one line each
    failed_parts: list[tuple[str, str]] = field(default_factory=list)  # (part, one-line error)
    sessions: pd.DataFrame | None = None  # session facts (sessions_part.session_facts)
    nothing_left: str | None = None  # why no trial is left (exclusions.nothing_left_message)

    @property
    def n_participants(self) -> int:
        """Participants analysed (after exclusions)."""
        return int(self.kept["participant"].nunique())

    @property
    def tested_range(self) -> tuple[float, float]:
        """The lowest and highest stimulus level among the analysed trials (ms)."""
        levels = self.kept[self.stimulus].astype(float)
        if levels.empty:
            return float("nan"), float("nan")
        return float(levels.min()), float(levels.max())


def one_line_error(exc: BaseException) -> str:
    """`ZeroDivisionError: float division by zero` (first line only, at most 300 characters)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    line = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return line if len(line) <= 300 else line[:297] + "..."


def run_part(data: ReportData, name: str, fn, default=None):
    """Run one part of the report; a failure is recorded (part, one-line error), not raised."""
    try:
        return fn()
    except Exception as exc:
        data.failed_parts.append((name, one_line_error(exc)))
        return default


def _log(options: ReportOptions, message: str) -> None:
    if options.progress:
        print(message, file=sys.stderr, flush=True)


def choose_columns(table: TrialTable, options: ReportOptions) -> tuple[str, str | None, str | None]:
    """(stimulus, judgement or None, rating or None) from options, study.json, or the data."""
    trials, path = table.trials, table.source
    stimulus = table.stimulus or options.stimulus  # renamed on load (unit, --measure)
    if stimulus is None:
        candidates = [f for f in table.factors if trials[f].nunique() >= 3]
        preferred = [f for f in candidates if f == "ttft_ms"] + [
            f for f in candidates if f.endswith("_ms")
        ]
        stimulus = (preferred or candidates or [None])[0]
        if stimulus is None:
            raise TrialTableError(
                path, None, None, "no latency factor with 3 or more levels; name it with --stimulus"
            )
    levels = numeric_column(trials, stimulus, path)
    empty = levels.isna().to_numpy()
    if "attention_check" in trials.columns:  # a check has no stream, so no latency level
        empty &= ~(pd.to_numeric(trials["attention_check"], errors="coerce") == 1).to_numpy()
    if empty.any():
        row = int(np.flatnonzero(empty)[0]) + 1
        raise TrialTableError(path, row, stimulus, "empty: every trial needs its latency level")
    nonpositive = (levels <= 0).to_numpy()
    if nonpositive.any():
        row = int(np.flatnonzero(nonpositive)[0]) + 1
        raise TrialTableError(path, row, stimulus, "latency levels must be positive ms")
    questions = table.questions
    judgement = options.judgement
    if judgement is None:
        yesno = [q.column for q in questions.values() if q.type == "yesno"]
        judgement = next((c for c in yesno if c in trials.columns), None)
    if judgement is None and not questions:
        for col in question_columns(trials):
            values = set(trials[col].dropna().astype(str).str.lower())
            if values and values <= {"0", "1", "0.0", "1.0", "yes", "no", "true", "false"}:
                judgement = col
                break
    rating = options.rating
    if rating is None:
        likert = [q.column for q in questions.values() if q.type == "likert"]
        rating = next((c for c in likert if c in trials.columns), None)
    if rating is None and not questions:
        for col in question_columns(trials):
            values = pd.to_numeric(trials[col], errors="coerce").dropna()
            if col != judgement and 3 <= values.nunique() <= 11 and (values % 1 == 0).all():
                rating = col
                break
    return stimulus, judgement, rating


def analyse(table: TrialTable, options: ReportOptions | None = None) -> ReportData:
    """Run exclusions, psychometric fits, survival, ratings, references and scoring."""
    options = options or ReportOptions()
    stimulus, judgement, rating = choose_columns(table, options)
    answers = {judgement, rating}
    factors = [f for f in table.factors if f != stimulus and f not in answers]
    factors = [stimulus, *[f for f in factors if table.trials[f].nunique() > 1]]
    planned = planned_trials_from_sessions(table.sessions)
    excl = apply_exclusions(table.trials, options.rules, planned)
    kept = excl.kept
    data = ReportData(
        table=table,
        options=options,
        exclusions=excl,
        kept=kept,
        stimulus=stimulus,
        factors=factors,
        cells=cell_counts(kept, factors),
        study_info=study_info(table, options),
    )
    data.notes.extend(table.notes)
    data.notes.append(f"Design factors: {', '.join(factors)} (from {table.factor_source}).")
    if kept.empty:  # a report that says so, with each rule and the option that changes it
        data.nothing_left = nothing_left_message(excl)
        data.thresholds = pd.DataFrame(columns=THRESHOLD_COLUMNS)
        data.sessions = run_part(data, "session facts", lambda: session_facts(table, kept))
        return data
    if judgement is not None:
        _log(options, f"psychometric fits on {judgement} vs {stimulus}")
        data.psychometric = run_part(
            data, "psychometric thresholds", lambda: _psychometric_or_note(data, judgement)
        )
    else:
        data.notes.append(
            "No binary judgement column (a yes/no question in study.json, or a q_<id> column "
            "of 0/1): no psychometric thresholds. Name one with --judgement COLUMN."
        )
    if {"outcome", "t_abandon_ms"} <= set(kept.columns):
        _log(options, "abandonment survival models")
        data.survival = run_part(data, "abandonment", lambda: _survival(data))
    else:
        data.notes.append("No outcome / t_abandon_ms columns: no abandonment analysis.")
    if rating is not None:
        _log(options, f"ratings on {rating}")
        data.ratings = run_part(data, "ratings", lambda: _ratings(data, rating))
    data.chains = run_part(data, "agent chains", lambda: chain_part(data))
    data.adaptive = run_part(data, "adaptive estimates", lambda: adaptive_part(data))
    data.fidelity = run_part(data, "playback fidelity", lambda: fidelity_part(data))
    data.references = run_part(data, "published figures", lambda: reference_comparison(data))
    data.thresholds = run_part(
        data,
        "thresholds.csv",
        lambda: thresholds_table(data),
        default=pd.DataFrame(columns=THRESHOLD_COLUMNS),
    )
    data.sessions = run_part(data, "session facts", lambda: session_facts(table, kept))
    if options.score_corpus is not None:
        _log(options, f"scoring {options.score_corpus}")
        run_part(data, "scored recordings", lambda: _score(data))
    return data


def study_info(table: TrialTable, options: ReportOptions) -> dict[str, str]:
    """Study id, hashes, seed, dates and software versions, as display strings."""
    from importlib import metadata

    trials = table.trials
    study = {**table.study, **(table.study.get("study") or {})}  # export nests it in "study"
    info: dict[str, str] = {}
    ids = sorted(trials["study_id"].dropna().astype(str).unique()) if "study_id" in trials else []
    info["study"] = ", ".join(ids) or str(study.get("id", "not in the data"))
    if study.get("title"):
        info["title"] = str(study["title"])
    if "study_sha256" in trials:
        hashes = sorted(trials["study_sha256"].dropna().astype(str).unique())
        info["study file SHA-256"] = ", ".join(hashes) or "not in the data"
    info["data file"] = table.source.name
    info["data file SHA-256"] = table.source_sha256
    info["study seed"] = str(study.get("seed", "not in the data"))
    info["analysis seed / bootstrap"] = f"{options.seed} / B = {options.n_boot}"
    info["dates"] = _dates(table.sessions)
    versions = []
    for pkg in ("uxlab", "numpy", "scipy", "pandas", "statsmodels", "lifelines", "matplotlib"):
        try:
            versions.append(f"{pkg} {metadata.version(pkg)}")
        except metadata.PackageNotFoundError:
            continue
    py = sys.version_info
    info["software"] = f"Python {py.major}.{py.minor}.{py.micro}; " + ", ".join(versions)
    return info


def _dates(sessions: pd.DataFrame | None) -> str:
    if sessions is None:
        return "not in the data"
    stamps = []
    for col in sessions.columns:
        if col in SESSION_TIME_COLUMNS:
            stamps.append(
                pd.to_datetime(sessions[col], errors="coerce", utc=True, format="ISO8601")
            )
    if not stamps:
        return "not in the data"
    values = pd.concat(stamps).dropna()
    if values.empty:
        return "not in the data"
    return f"{values.min():%Y-%m-%d %H:%M} to {values.max():%Y-%m-%d %H:%M} UTC"


def _other_factor_levels(data: ReportData) -> list[tuple[str, float]]:
    """(factor, level) pairs for the non-stimulus factors with 2-6 levels."""
    out = []
    for f in data.factors[1:]:
        levels = np.sort(data.kept[f].dropna().unique())
        if 2 <= len(levels) <= 6:
            out.extend((f, float(v)) for v in levels)
    return out


def _psychometric(data: ReportData, column: str) -> PsychometricPart:
    from analysis.psychometric import MultiConditionFitter, PsychometricFitter
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
    procedure = adaptive_design(data)
    if procedure is not None:
        _adaptive_population(data, part, df, procedure, n_people)
    for factor in {f for f, _ in _other_factor_levels(data)}:
        try:
            multi = MultiConditionFitter().fit(
                df, "_x", "_y", factor, share_lapse=True, n_boot=opts.n_boot, seed=opts.seed
            )
        except ValueError as exc:
            part.failed[f"by {factor}"] = str(exc)
            continue
        for key in multi.conditions_:
            label = condition_label({factor: float(key)})
            rows = multi.thresholds_[multi.thresholds_["condition"] == key]
            part.per_condition[label] = ConditionFit(
                multi,
                key,
                rows.drop(columns="condition").reset_index(drop=True),
                (float(df["_x"].min()), float(df["_x"].max())),
            )
    if opts.per_participant:
        keys = sorted(df["participant"].unique())
        seeds = np.random.SeedSequence(opts.seed).spawn(len(keys))
        for i, pid in enumerate(keys):
            sub = df[df["participant"] == pid]
            if sub["_x"].nunique() < 3:
                part.failed[pid] = "fewer than 3 stimulus levels"
                continue
            try:
                part.per_participant[pid] = PsychometricFitter().fit_trials(
                    sub["_x"].to_numpy(),
                    sub["_y"].to_numpy(),
                    n_boot=opts.n_boot,
                    seed=int(seeds[i].generate_state(1)[0]),
                )
            except ValueError as exc:
                part.failed[pid] = str(exc)
            if opts.progress:
                _progress_bar(i + 1, len(keys), "participant fits")
        if opts.progress and keys:
            print(file=sys.stderr)
    _set_estimand(data, part, n_people)
    return part


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
        if not enough("median_person", n_people):
            median["ci_low"], median["ci_high"] = np.nan, np.nan
    if wanted == "median-person":
        if median is None:
            data.notes.append(
                "--estimand median-person needs per-participant fits of 2 or more people; "
                "the pooled figures are the population curve's points."
            )
            return
        part.population, part.other, part.estimand = median, part.population, wanted
    else:
        part.other = median


def adaptive_design(data: ReportData) -> str | None:
    """The adaptive procedure that chose the stimulus levels (study.json's factor
    `procedure`, else the sessions' adaptive columns), or None for a fixed design."""
    declared = data.table.study.get("factors")
    specs = declared.values() if isinstance(declared, dict) else declared or []
    for spec in specs:
        if isinstance(spec, dict) and spec.get("procedure"):
            return str(spec["procedure"])
    from analysis.report.adaptive_part import adaptive_estimates

    sessions = adaptive_estimates(getattr(data.table, "sessions", None))
    if sessions is not None:
        return ", ".join(sorted({str(p) for p in sessions["procedure"].dropna()})) or "adaptive"
    return None


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
    _, table = mixed_threshold_small_n(falls, "_falls", "_x", n_boot=0)  # jackknife-t only
    if table["estimate"].isna().any():
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


# Relative bias of the random-intercept thresholds where it missed the targets (under 2% at
# 50%, under 5% at 25 / 75%) on simulated adaptive studies: procedure -> (source, {level:
# bias}, what else was measured). Staircase: benchmarks/validation_grid.py --part pooled
# (100 studies per cell, 4-40 people alike or differing, 48 trials, 2026-12-03; the range
# over the cells); interleaved: benchmarks/adaptive_pooled_bias.py (100 studies x 16 people
# who differ x 40 trials). Levels other than 50% are withheld where biased (a 1-up/2-down
# staircase tests mostly below each person's 50% point, so the model extrapolates to 75%
# through a logit without guess or lapse); the 50% point is kept, with its bias said.
ADAPTIVE_BIAS: dict[str, tuple[str, dict[float, str], str]] = {
    "staircase": (
        "benchmarks/validation_grid.py",
        {0.5: "+2% to +13%", 0.75: "+8% to +56%"},
        "; its 25% point was within 4% but its interval covered only 0.55-0.87 with 10-40 "
        "people who all answer alike (bias against a narrow interval)",
    ),
    "interleaved": ("benchmarks/adaptive_pooled_bias.py", {0.25: "-6.1%"}, ""),
}


def _withhold_measured_bias(part: PsychometricPart, procedure: str) -> None:
    """Blank the levels this estimator was measured biased at for this procedure."""
    for name, (source, biases, more) in ADAPTIVE_BIAS.items():
        if name not in procedure:
            continue
        withheld = [level for level in biases if level != 0.5]
        rows = part.population["level"].isin(withheld)
        part.population.loc[rows, ["estimate", "ci_low", "ci_high"]] = np.nan
        said = ", ".join(f"{level:.0%} {bias}" for level, bias in biases.items())
        part.estimator += (
            f"; on simulated {name} studies this model's bias was {said} ({source})"
            + (
                f", so the {', '.join(f'{v:.0%}' for v in withheld)} point is withheld"
                if withheld
                else ""
            )
            + more
        )


def _psychometric_or_note(data: ReportData, column: str) -> PsychometricPart | None:
    """The psychometric part, or None with a note when the answers cannot be fitted (no
    answered trials, a single level): a fact about the data, not a failure."""
    from analysis.psychometric import PsychometricInputError

    try:
        return _psychometric(data, column)
    except PsychometricInputError as exc:
        data.notes.append(f"No psychometric thresholds for {column}: {exc}.")
        return None


def _progress_bar(done: int, total: int, label: str, width: int = 30) -> None:
    """One self-overwriting line on stderr: `[#######.......]  57/200 participant fits`."""
    filled = int(width * done / max(total, 1))
    bar = "#" * filled + "." * (width - filled)
    print(f"\r  [{bar}] {done:>{len(str(total))}}/{total} {label}", end="", file=sys.stderr)


def _yes_label(column: str) -> str:
    return column.removeprefix("q_").replace("_", " ")


def _trial_timeout_ms(table: TrialTable) -> float | None:
    """The study's trial timeout in ms, from study.json (None when there is none)."""
    abandon = table.study.get("abandon") or {}
    timeout_s = abandon.get("timeout_s") if isinstance(abandon, dict) else None
    return None if timeout_s is None else float(timeout_s) * 1000.0


def _survival(data: ReportData) -> SurvivalPart:
    kept = data.kept
    if "scheduled_end_ms" not in kept.columns or kept["scheduled_end_ms"].isna().all():
        data.notes.append(
            "No scheduled_end_ms: trials not abandoned are censored when their last chunk "
            "was shown (shown_last_ms); trials with neither are left out of the survival "
            "analysis."
        )
    sdata = survival_data(kept, data.factors, timeout_ms=_trial_timeout_ms(data.table))
    km_by = data.factors if len(data.factors) <= 2 else data.factors[:1]
    km = kaplan_meier(sdata, km_by)
    aft, error = None, None
    try:
        clusters = MINIMUMS["aft_clustered"].min_participants
        aft = AbandonmentAFTFitter(min_clusters=clusters).fit(sdata, data.factors)
    except (ValueError, np.linalg.LinAlgError) as exc:
        error = str(exc)
    if aft is not None and not aft.clustered_:
        data.skipped.append(
            skipped_line("aft_clustered", int(sdata["participant"].nunique()))
            + " The model is fitted with its own covariance (trials treated as independent)."
        )
    rows = []
    if aft is not None:
        for key, part in sdata.groupby(data.factors):
            key = key if isinstance(key, tuple) else (key,)
            levels = dict(zip(data.factors, key, strict=True))
            for share in ABANDON_SHARES:
                est, lo, hi = aft.time_to_share(levels, share)
                rows.append(
                    {
                        "condition": condition_label(levels),
                        **levels,
                        "share": share,
                        "estimate": est,
                        "ci_low": lo,
                        "ci_high": hi,
                        "n_trials": len(part),
                        "extrapolated": est > part["duration_ms"].max(),
                    }
                )
    return SurvivalPart(sdata, km, km_table(km, ABANDON_SHARES), aft, error, pd.DataFrame(rows))


MAX_LIKERT_POINTS = 11


def _ratings(data: ReportData, column: str) -> RatingPart | None:
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
        interval="participants",
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
    population = None
    varied = 0 < binary["_y"].mean() < 1 and binary["_x"].nunique() >= 3
    if varied and enough("mixed_rating", n_people):  # participant effects: analysis.ratings
        population = fit_mixed_acceptability(
            df, column, stim, acceptable, n_boot=opts.n_boot, seed=opts.seed
        ).thresholds()
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
    )


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
    for key, (est, *_rest) in measured.items():
        if not key.startswith("abandonment") and estimate_flags(est, np.nan, np.nan, low, high)[0]:
            withheld[key] = "the estimate lies outside the tested levels"
    for key, value in measured.items():  # abandonment: beyond the longest wait observed
        if key.startswith("abandonment") and len(value) > 4 and value[4]:
            withheld[key] = "the estimate lies beyond the longest wait observed"
    figures = load_reference_figures()
    if data.stimulus not in {f.stimulus for f in figures if f.stimulus}:
        data.notes.append(
            f"The stimulus {data.stimulus!r} is not a measure the published figures name "
            "(ttft_ms, itl_ms): its thresholds are not compared with them; say what it is "
            "with --measure ttft|itl|e2e."
        )
    table = compare_figures(
        figures,
        {k: v[:4] for k, v in measured.items()},
        n_participants=data.n_participants,
        min_participants=MINIMUMS["verdicts"].min_participants,
        withheld=withheld,
    )
    return match_judgement_kinds(table, figures, judgement_kind(data))


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


def match_judgement_kinds(
    table: pd.DataFrame, figures: list, psychometric_kind: str | None
) -> pd.DataFrame:
    """Withhold verdicts where a figure's judgement kind does not match the estimate's:
    a psychometric estimate has the question's kind, a rating threshold is acceptability,
    abandonment is abandonment; a server SLO is not a perception figure and is never judged."""
    from analysis.reference import COMPARABLE

    by_id = {f.id: f for f in figures}
    measured_kind = {"rating": "acceptability", "abandonment": "abandonment"}
    table = table.copy()
    for i, row in table.iterrows():
        fig = by_id.get(row["id"])
        if fig is None or not fig.judgement or row["verdict"] == "–":
            continue
        if fig.judgement == "server-slo":
            table.at[i, "verdict"] = "not compared (a server SLO, not a perception figure)"
            continue
        kind = measured_kind.get(fig.measure, psychometric_kind)
        if kind is None:
            table.at[i, "verdict"] = (
                "not compared (the question's kind is unknown: say it with --judgement-kind)"
            )
        elif kind not in COMPARABLE[fig.judgement]:
            table.at[i, "verdict"] = (
                f"not compared (a figure about {fig.judgement}; this estimate is about {kind})"
            )
    return table


def measured_estimates(data: ReportData) -> dict[str, tuple]:
    """Named estimates (ms) with 95% CI that reference figures map to.

    Keys: `psychometric:<stimulus>:0.5`, `rating:<stimulus>:0.5` (participants resampled)
    and `abandonment:<share>`: the time by which that share gave up in the condition with
    the longest wait tested (the largest stimulus level, other factors at their lowest),
    where giving up is mostly giving up on waiting - the analogue of a startup delay.
    """
    out: dict[str, tuple] = {}
    stim = data.stimulus
    if data.psychometric is not None:
        pop = data.psychometric.population.set_index("level")
        if 0.5 in pop.index:
            row = pop.loc[0.5]
            out[f"psychometric:{stim}:0.5"] = (row.estimate, row.ci_low, row.ci_high)
    if data.ratings is not None and data.ratings.population is not None:
        row = data.ratings.population.set_index("level").loc[0.5]
        out[f"rating:{stim}:0.5"] = (row.estimate, row.ci_low, row.ci_high)
    if data.survival is not None and not data.survival.times.empty:
        times = data.survival.times
        others = [f for f in data.factors if f != stim and f in times.columns]
        for share in ABANDON_SHARES:
            sub = times[times["share"] == share]
            order = [stim, *others]
            slowest = sub.sort_values(order, ascending=[False] + [True] * len(others)).iloc[0]
            out[f"abandonment:{share:g}"] = (
                slowest.estimate,
                slowest.ci_low,
                slowest.ci_high,
                f"AFT, {slowest.condition}",
                bool(slowest.extrapolated),
            )
    return out


def thresholds_table(data: ReportData) -> pd.DataFrame:
    """thresholds.csv: one row per estimate (see README, section report)."""
    rows: list[dict] = []
    stim = data.stimulus
    n_all = data.n_participants
    tested = data.tested_range

    def add(
        measure, group, table, condition="", n_trials=None, n_people=n_all, rng=tested, what=""
    ):
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
                }
            )

    if data.psychometric is not None:
        p = data.psychometric
        add("psychometric", "pooled", p.population, "all", what=p.estimand)
        if p.other is not None:  # the other estimand, under its own name
            other = "population" if p.estimand == "median-person" else "median-person"
            add("psychometric", other, p.other, "all", what=other)
        for label, fitter in p.per_condition.items():
            add("psychometric", "pooled", fitter.thresholds_, label, what="population")
        for pid, fitter in p.per_participant.items():
            add(
                "psychometric",
                pid,
                fitter.thresholds_,
                "all",
                n_people=1,
                rng=_x_range(fitter),
                what="this participant",
            )
    if data.survival is not None and not data.survival.times.empty:
        t = data.survival.times.rename(columns={"share": "level"})
        for r in t.itertuples():
            add(
                "abandonment",
                "pooled",
                pd.DataFrame([r._asdict()]),
                r.condition,
                r.n_trials,
                what="population",
            )
    if data.ratings is not None and data.ratings.population is not None:
        add("rating", "pooled", data.ratings.population, "all", what="population")
    for row in adaptive_threshold_rows(data.adaptive):
        row.setdefault("n_participants", 1)
        row.setdefault("extrapolated", False)
        row.setdefault("degenerate", "")
        row.setdefault("estimand", "this session")
        rows.append(row)
    return pd.DataFrame(rows, columns=THRESHOLD_COLUMNS)


def _x_range(fitter) -> tuple[float, float]:
    """The lowest and highest stimulus level a fitter saw (ms)."""
    x = np.asarray(fitter.x_ms_, dtype=float)
    return float(x.min()), float(x.max())


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
        row = f.thresholds_.set_index("level").loc[0.5]
        est, lo, hi = float(row.estimate), float(row.ci_low), float(row.ci_high)
        extrapolated, degenerate = estimate_flags(est, lo, hi, *_x_range(f))
        flags = []
        if f.direction_ != p.pooled.direction_:
            flags.append(f"direction opposite to the pooled curve ({f.direction_})")
        if np.isfinite(lo) and np.isfinite(hi) and not lo <= pooled_mid <= hi:
            flags.append("the pooled threshold lies outside this participant's interval")
        if extrapolated:
            flags.append("extrapolated: outside the levels this participant saw")
        if degenerate:
            flags.append("degenerate interval: " + degenerate)
        rows.append(
            {
                "participant": pid,
                "trials": int(np.sum(f.n_total_)),
                "direction": f.direction_,
                "50% threshold (ms)": est,
                "95% CI": f"{lo:,.0f} to {hi:,.0f}" if np.isfinite(lo) else "–",
                "flags": "; ".join(flags),
            }
        )
    return pd.DataFrame(rows)


def _score(data: ReportData) -> None:
    from analysis.score import ScoreError, read_corpus_timings, score_corpus

    try:
        timings, errors = read_corpus_timings(data.options.score_corpus)
    except ScoreError as exc:
        data.notes.append(f"Scoring skipped: {exc}")
        return
    draws = None
    if data.psychometric is not None:
        draws = data.psychometric.pooled.threshold_samples_(0.5)
        draws = draws[np.isfinite(draws)]
    aft = data.survival.aft if data.survival is not None else None
    from analysis.score import STREAM_METRIC_FOR_FACTOR

    fixed = {
        f: float(data.kept[f].min()) for f in data.factors if f not in STREAM_METRIC_FOR_FACTOR
    }
    data.score_fixed_levels = fixed
    data.score = score_corpus(
        timings,
        data.stimulus,
        threshold_draws_ms=draws if draws is not None and draws.size else None,
        aft=aft,
        fixed_levels=fixed,
        n_draws=max(200, min(data.options.n_boot, 2000)),
        seed=data.options.seed,
    )
    data.score_errors = errors
