"""Exclusions: which trials and participants leave the analysis, and why, with counts.

Rules are configurable (`ExclusionRules`); every rule that removes something adds one line to
the log (`ExclusionResult.log`: level, who, reason, n_trials), so the report can list every
exclusion with its reason. Order: pilot and simulated sessions, practice trials, trials that
never ran cleanly (`error`, `interrupted`), then participants below the attention-check
accuracy bar or the completion bar, then trials whose playback was outside the study's
timing tolerance (`fidelity_flag` 1: the participant did not see the planned schedule; a
re-run of such a trial, when the session made one, stays), then attention-check trials
themselves (they are not stimuli). Simulated sessions mixed with real ones are excluded by
default (a study of simulated sessions only is analysed as such); `rule` in the log names
the `ExclusionRules` field behind each line and `RULE_FLAGS` the `uxlab report` option that
changes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import pandas as pd

LOG_COLUMNS = ["level", "who", "reason", "n_trials", "rule"]
# The `uxlab report` option that changes each rule (see `nothing_left_message`).
RULE_FLAGS = {
    "drop_pilot": "--keep-pilot",
    "drop_simulated": "--keep-simulated (without --drop-simulated)",
    "drop_practice": "--keep-practice",
    "drop_outcomes": "none (such trials never ran cleanly)",
    "min_attention_accuracy": "--min-attention SHARE",
    "min_completion": "--min-completion SHARE",
    "drop_attention_trials": "none (attention checks are not stimuli)",
    "drop_fidelity_flagged": "--keep-flagged",
}
FIDELITY_REASON = "playback outside the study's timing tolerance (fidelity_flag)"


@dataclass(frozen=True)
class ExclusionRules:
    """What to exclude. Fractions are in [0, 1]."""

    drop_practice: bool = True
    drop_pilot: bool = True
    drop_simulated: bool = False  # True: always; False: only when mixed with real sessions
    keep_simulated: bool = False  # keep simulated sessions even when mixed with real ones
    drop_outcomes: tuple[str, ...] = ("error", "interrupted")
    min_attention_accuracy: float = 0.75  # participants below this share of passed checks leave
    min_completion: float = 0.5  # participants with fewer analysable main trials than this leave
    drop_attention_trials: bool = True
    drop_fidelity_flagged: bool = True  # trials shown outside the study's timing tolerance


@dataclass
class ExclusionResult:
    """The kept trials and the log of every exclusion."""

    kept: pd.DataFrame
    log: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=LOG_COLUMNS))
    n_trials_in: int = 0
    n_participants_in: int = 0
    simulated: str = "none"  # none | all (kept) | excluded (mixed, left out) | kept (mixed)

    @property
    def excluded_participants(self) -> list[str]:
        return cast(list[str], self.log.loc[self.log["level"] == "participant", "who"].tolist())


def apply_exclusions(
    trials: pd.DataFrame,
    rules: ExclusionRules | None = None,
    planned_trials: dict[str, int] | None = None,
) -> ExclusionResult:
    """Apply `rules` to a validated trial table; return the kept trials and the exclusion log.

    `planned_trials` (participant -> trials in their full list, from `sessions.csv`) makes the
    completion bar exact; without it a participant's main trials are compared with the most
    any participant started.
    """
    rules = rules or ExclusionRules()
    run = _ExclusionRun(trials)
    simulated = _drop_session_kinds(run, rules)
    _drop_inattentive(run, rules)
    _drop_incomplete(run, rules, trials, planned_trials)
    _drop_flagged_and_checks(run, rules)
    log = pd.DataFrame(run.rows, columns=LOG_COLUMNS)
    return ExclusionResult(
        kept=run.df.copy(),
        log=log,
        n_trials_in=len(trials),
        n_participants_in=trials["participant"].nunique(),
        simulated=simulated,
    )


@dataclass
class _ExclusionRun:
    """The trials still kept and the log rows written so far, as the rules run in order."""

    df: pd.DataFrame
    rows: list[dict[str, Any]] = field(default_factory=list)

    def drop(self, mask: pd.Series, reason: str, rule: str = "") -> None:
        """Leave out the trials under `mask`, logged as one trial-level row."""
        n = int(mask.sum())
        if n:
            self.rows.append(
                {"level": "trial", "who": "all", "reason": reason, "n_trials": n, "rule": rule}
            )
            self.df = self.df.loc[~mask]

    def drop_participant(self, pid: str, reason: str, rule: str) -> None:
        """Leave out every kept trial of `pid`, logged as one participant-level row."""
        _drop_participant(self.rows, self.df, pid, reason, rule)
        self.df = self.df[self.df["participant"] != pid]


def _drop_session_kinds(run: _ExclusionRun, rules: ExclusionRules) -> str:
    """Pilot sessions, simulated ones (all, or mixed with real ones), practice trials and
    the dropped outcomes; returns what the kept data are (`ExclusionResult.simulated`)."""
    df = run.df
    if rules.drop_pilot and "pilot" in df.columns:
        run.drop(df["pilot"] == 1, "pilot session", "drop_pilot")
    df = run.df
    simulated = "none"
    if "simulated" in df.columns:
        is_sim = df["simulated"] == 1
        mixed = bool(is_sim.any()) and not bool(is_sim.all())
        simulated = "all" if is_sim.all() and len(df) else ("kept" if mixed else "none")
        if rules.drop_simulated:
            run.drop(is_sim, "simulated session", "drop_simulated")
            simulated = "excluded" if is_sim.any() else simulated
        elif mixed and not rules.keep_simulated:
            n_sim = df.loc[is_sim, "participant"].nunique()
            run.drop(
                is_sim,
                f"simulated session ({n_sim} participant(s)) mixed with real ones",
                "drop_simulated",
            )
            simulated = "excluded"
    if rules.drop_practice and "practice" in run.df.columns:
        run.drop(run.df["practice"] == 1, "practice trial", "drop_practice")
    if "outcome" in run.df.columns:
        for outcome in rules.drop_outcomes:
            run.drop(run.df["outcome"] == outcome, f"outcome {outcome}", "drop_outcomes")
    return simulated


def _drop_inattentive(run: _ExclusionRun, rules: ExclusionRules) -> None:
    """Participants who passed fewer attention checks than the bar."""
    df = run.df
    if "attention_check" in df.columns and "attention_ok" in df.columns:
        checks = df[df["attention_check"] == 1]
        accuracy = checks.groupby("participant")["attention_ok"].mean()
        for pid, acc in accuracy.items():
            if acc < rules.min_attention_accuracy:
                n_checks = int((checks["participant"] == pid).sum())
                reason = (
                    f"attention checks {acc:.0%} passed of {n_checks} "
                    f"(bar {rules.min_attention_accuracy:.0%})"
                )
                run.drop_participant(pid, reason, "min_attention_accuracy")


def _drop_incomplete(
    run: _ExclusionRun,
    rules: ExclusionRules,
    trials: pd.DataFrame,
    planned_trials: dict[str, int] | None,
) -> None:
    """Participants who ran less than the completion bar of their trial list (the stored
    list when `planned_trials` is known, else the most main trials anyone started)."""
    df = run.df
    main = df
    if "attention_check" in df.columns:
        main = df[df["attention_check"] != 1]
    if planned_trials is not None:
        # the store knows each session's full trial list: share of it run to an outcome
        ran = (
            trials[~trials["outcome"].isin(("error", "interrupted"))]
            if "outcome" in trials
            else trials
        )
        done_all = ran.groupby("participant").size()
        for pid in sorted(df["participant"].unique()):
            n_planned = int(planned_trials.get(pid, 0))
            n_done = int(done_all.get(pid, 0))
            if n_planned and n_done / n_planned < rules.min_completion:
                reason = (
                    f"completed {n_done} of {n_planned} planned trials "
                    f"(bar {rules.min_completion:.0%})"
                )
                run.drop_participant(pid, reason, "min_completion")
    elif "session_id" in trials.columns and "trial_index" in trials.columns:
        planned = _planned_main_trials(trials)
        done = main.groupby("participant").size()
        for pid, n_done in done.items():
            n_planned = planned.get(pid, n_done)
            share = n_done / n_planned if n_planned else 1.0
            if share < rules.min_completion:
                reason = (
                    f"completed {n_done} of {n_planned} main trials "
                    f"(bar {rules.min_completion:.0%})"
                )
                run.drop_participant(pid, reason, "min_completion")


def _drop_flagged_and_checks(run: _ExclusionRun, rules: ExclusionRules) -> None:
    """Trials flagged for playback fidelity, and the attention-check trials themselves."""
    if rules.drop_fidelity_flagged and "fidelity_flag" in run.df.columns:
        run.drop(run.df["fidelity_flag"] == 1, FIDELITY_REASON, "drop_fidelity_flagged")
    if rules.drop_attention_trials and "attention_check" in run.df.columns:
        run.drop(
            run.df["attention_check"] == 1,
            "attention-check trial (not a stimulus)",
            "drop_attention_trials",
        )


def _drop_participant(
    rows: list[dict[str, Any]], df: pd.DataFrame, pid: str, reason: str, rule: str = ""
) -> None:
    n = int((df["participant"] == pid).sum())
    rows.append(
        {"level": "participant", "who": str(pid), "reason": reason, "n_trials": n, "rule": rule}
    )


def rule_summary(result: ExclusionResult) -> list[str]:
    """One line per rule that excluded something: what it took and the option that changes it.

    `attention checks below the bar: 1 participant(s) (SIM-s1-001), 19 trial(s); change with
    --min-attention SHARE`.
    """
    lines = []
    log = result.log
    for rule, part in log.groupby("rule", sort=False):
        people = part.loc[part["level"] == "participant", "who"].tolist()
        n_trials = int(part["n_trials"].sum())
        what = (
            f"{len(people)} participant(s) ({', '.join(people[:5])}"
            + (", ..." if len(people) > 5 else "")
            + f"), {n_trials} trial(s)"
            if people
            else f"{n_trials} trial(s)"
        )
        reasons = "; ".join(dict.fromkeys(part["reason"].astype(str)))
        if len(reasons) > 120:
            reasons = reasons[:117] + "..."
        flag = RULE_FLAGS.get(rule, rule)
        lines.append(f"{reasons}: {what}" + _how_to_change(flag))
    return lines


def _how_to_change(flag: str) -> str:
    """`; change with --flag`, or why no option changes the rule (`RULE_FLAGS` "none (...)")."""
    if not flag:
        return ""
    if flag.startswith("none"):
        return f"; no option changes this{flag[len('none') :]}"
    return f"; change with {flag}"


def nothing_left_message(result: ExclusionResult) -> str:
    """Why every trial was excluded: each rule, what it took, the option that changes it."""
    head = (
        f"every trial was excluded ({result.n_trials_in} trials of "
        f"{result.n_participants_in} participant(s) in the data):"
    )
    lines = rule_summary(result) or ["no rule excluded anything: the table holds no trials"]
    return "\n".join([head, *(f"  - {line}" for line in lines)])


def _planned_main_trials(trials: pd.DataFrame) -> dict[str, int]:
    """Main (non-practice, non-check) trials each participant was planned to see.

    The table holds only trials that started, so the planned count is the most any participant
    of the study started: a participant who stopped early shows as incomplete.
    """
    main = trials
    for flag in ("practice", "attention_check"):
        if flag in main.columns:
            main = main[main[flag] != 1]
    per_participant = main.groupby("participant").size()
    most = int(per_participant.max()) if len(per_participant) else 0
    return {str(p): most for p in per_participant.index}


def planned_trials_from_sessions(sessions: pd.DataFrame | None) -> dict[str, int] | None:
    """participant -> planned trials summed over sessions (`n_trials_planned` of sessions.csv)."""
    if sessions is None or not {"participant", "n_trials_planned"} <= set(sessions.columns):
        return None
    planned = pd.to_numeric(sessions["n_trials_planned"], errors="coerce").fillna(0)
    per_participant = planned.groupby(sessions["participant"].astype(str)).sum().astype(int)
    return cast(dict[str, int], per_participant.to_dict())


def cell_counts(trials: pd.DataFrame, factors: list[str]) -> pd.DataFrame:
    """Trials, participants and outcome counts per design cell (one row per factor combination)."""
    if not factors:
        factors = ["condition_id"] if "condition_id" in trials.columns else []
    if not factors:
        return pd.DataFrame({"n_trials": [len(trials)]})
    grouped = trials.groupby(factors, dropna=False)
    out = grouped.size().rename("n_trials").to_frame()
    out["n_participants"] = grouped["participant"].nunique()
    if "outcome" in trials.columns:
        outcomes = trials.groupby([*factors, "outcome"], dropna=False).size().unstack(fill_value=0)
        out = out.join(outcomes).fillna(0)
    return out.reset_index()
