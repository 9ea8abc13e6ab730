"""Running every analysis of the threshold report on one trial table: `analyse(table, options)`.

Each part of the report is computed by its section module (`psychometric_part`,
`abandonment_part`, `ratings_part`, `references_part`, `score_part`, `adaptive_part`,
`chains_part`, `fidelity_part`) into `ReportData` (`data`), which holds the fitted objects
and tidy tables; `contents` lists the sections' blocks and `render` turns them into
`report.html`, `report.md` + PNGs and `thresholds.csv`. Column choices: the stimulus (the
latency factor), the binary judgement and the rating come from the options, else from
`study.json`, else from the table's columns (see `choose_columns`).
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from analysis.answer_scale import (
    check_near_judgement,
    check_rating_values,
    is_judgement,
    looks_like_rating,
)
from analysis.exclusions import (
    apply_exclusions,
    cell_counts,
    nothing_left_message,
    planned_trials_from_sessions,
)
from analysis.report.abandonment_part import abandonment_part
from analysis.report.adaptive_part import adaptive_part
from analysis.report.chains_part import chain_part
from analysis.report.cost_part import cost_part
from analysis.report.data import (
    ESTIMANDS,
    THRESHOLD_COLUMNS,
    ReportData,
    ReportOptions,
    one_line_error,
    run_part,
)
from analysis.report.fidelity_part import fidelity_part
from analysis.report.psychometric_blocks import participant_table
from analysis.report.psychometric_part import median_person_thresholds, psychometric_part
from analysis.report.ratings_part import ratings_part
from analysis.report.references_part import reference_comparison
from analysis.report.score_part import score_part
from analysis.report.sessions_part import session_facts
from analysis.report.thresholds_csv import thresholds_table
from analysis.report.truth_part import truth_part
from analysis.table_errors import TrialTableError
from analysis.trial_table import (
    TrialTable,
    is_uxlab_shaped,
    numeric_column,
    question_columns,
)

__all__ = [  # the names other modules have imported from here
    "ESTIMANDS",
    "THRESHOLD_COLUMNS",
    "ReportData",
    "ReportOptions",
    "analyse",
    "choose_columns",
    "median_person_thresholds",
    "one_line_error",
    "participant_table",
    "run_part",
    "study_info",
    "thresholds_table",
]

# Wall-clock session stamps in sessions.csv (ISO 8601) that give the study's dates.
SESSION_TIME_COLUMNS = ("created_at", "updated_at", "started_at", "finished_at", "ended_at")


def _log(options: ReportOptions, message: str) -> None:
    if options.progress:
        print(message, file=sys.stderr, flush=True)


def _no_stimulus(table: TrialTable) -> str:
    """Why no threshold can be fitted: only practice trials so far, or the factors the table
    has and their levels' counts."""
    trials = table.trials
    practice = _flag(trials, "practice")
    if practice.any() and (practice | _flag(trials, "attention_check")).all():
        people = trials["participant"].nunique() if "participant" in trials.columns else None
        whose = f" from {people} participant(s)" if people else ""
        return (
            f"only practice trials so far ({int(practice.sum())}{whose}): the thresholds are "
            "fitted on the main trials; run or resume the study to record them"
        )
    if not table.factors:
        return "no latency factor with 3 or more levels; name it with --stimulus"
    have = ", ".join(
        f"{f} has {n} level{'s' * (n != 1)}" for f in table.factors if (n := trials[f].nunique())
    )
    return (
        f"no latency factor with 3 or more levels ({have}): a threshold needs at least 3 "
        "levels of one factor; name another column with --stimulus"
    )


def _flag(trials: pd.DataFrame, column: str) -> pd.Series:
    """The rows where a 0/1 column is 1 (none when the table has no such column)."""
    if column not in trials.columns:
        return pd.Series(False, index=trials.index)
    return pd.to_numeric(trials[column], errors="coerce") == 1


def choose_columns(table: TrialTable, options: ReportOptions) -> tuple[str, str | None, str | None]:
    """(stimulus, judgement or None, rating or None) from options, study.json, or the data."""
    trials, path = table.trials, table.source
    stimulus = table.stimulus or options.stimulus  # renamed on load (unit, --measure)
    if stimulus is None:
        candidates = [f for f in table.factors if trials[f].nunique() >= 3]
        preferred = [f for f in candidates if f == "ttft_ms"] + [
            f for f in candidates if f.endswith("_ms")
        ]
        stimulus = next(iter(preferred or candidates), None)
        if stimulus is None:
            raise TrialTableError(path, None, None, _no_stimulus(table))
    levels = numeric_column(trials, stimulus, path)
    empty = levels.isna().to_numpy()
    if "attention_check" in trials.columns:  # a check has no stream, so no latency level
        empty &= ~(pd.to_numeric(trials["attention_check"], errors="coerce") == 1).to_numpy()
    answers = [c for c in (options.judgement, options.rating) if c and c in trials.columns]
    answers += [c for c in question_columns(trials) if c not in answers]
    answered = trials[answers].notna().any(axis=1).to_numpy() if answers else np.zeros_like(empty)
    instructions = empty & ~answered  # no latency and no answer: not a trial
    if instructions.any() and not is_uxlab_shaped(trials):  # instructions, breaks, thanks
        empty = empty & ~instructions
        keep = ~instructions
        table.trials = trials = trials.loc[keep]
        levels = levels.loc[keep]
        table.notes.append(
            f"{int(instructions.sum())} row(s) without a value in the stimulus column "
            f"{stimulus!r} and without an answer (instructions, breaks or other non-trial "
            f"rows) were dropped; {len(trials)} trial row(s) remain."
        )
        empty = empty[keep]
    if empty.any():  # the file's row (the index keeps it when rows were dropped)
        row = int(trials.index[int(np.flatnonzero(empty)[0])]) + 1
        raise TrialTableError(path, row, stimulus, "empty: every trial needs its latency level")
    if table.stimulus is None:  # not converted on load: say which unit is taken, and why
        why = (
            "a uxlab export: contract 2 stores latencies in ms"
            if is_uxlab_shaped(trials)
            else "its name ends _ms"
            if stimulus.endswith("_ms")
            else "a trial table's latencies are ms unless --stimulus-unit says otherwise"
        )
        table.notes.append(
            f"Stimulus {stimulus!r} taken as ms ({why}); if it is in seconds, pass "
            f"--stimulus {stimulus} --stimulus-unit s."
        )
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
            if is_judgement(trials, col):
                judgement = col
                break
            check_near_judgement(trials, col, path)  # a stray 2 is an error, not a rating
    rating = options.rating
    if rating is None:
        likert = [q.column for q in questions.values() if q.type == "likert"]
        rating = next((c for c in likert if c in trials.columns), None)
    if rating is None and not questions:
        for col in question_columns(trials):
            if col != judgement and looks_like_rating(trials, col):
                rating = col
                break
    q = table.question_for(rating) if rating is not None else None
    if rating is not None and rating in trials.columns and (q is None or not q.scale_size):
        check_rating_values(trials, rating, path)  # with a scale: `check_answers` did
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
    data.truth = run_part(data, "simulated truth", lambda: truth_part(data))
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
            data, "psychometric thresholds", lambda: psychometric_part(data, judgement)
        )
    else:
        data.notes.append(
            "No binary judgement column (a yes/no question in study.json, or a q_<id> column "
            "of 0/1): no psychometric thresholds. Name one with --judgement COLUMN."
        )
    if {"outcome", "t_abandon_ms"} <= set(kept.columns):
        _log(options, "abandonment survival models")
        data.survival = run_part(data, "abandonment", lambda: abandonment_part(data))
    else:
        data.notes.append("No outcome / t_abandon_ms columns: no abandonment analysis.")
    if rating is not None:
        _log(options, f"ratings on {rating}")
        data.ratings = run_part(data, "ratings", lambda: ratings_part(data, rating))
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
        run_part(data, "scored recordings", lambda: score_part(data))
        if options.prices is not None:
            _log(options, f"pricing {options.score_corpus}")
            run_part(data, "costs", lambda: cost_part(data))
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
    info[f"{table.digest_of} SHA-256"] = table.source_sha256
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
