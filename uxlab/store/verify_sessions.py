"""`uxlab verify` per session: the trial list re-derived and compared with the stored plan
and every trial row begun, each trial's schedule rebuilt, its stored events and timings
checked (see `uxlab.store.verify`)."""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from uxlab.outcomes import EventKind
from uxlab.player import Schedule
from uxlab.store.backend import Connection
from uxlab.store.records import TIMING_COLUMNS
from uxlab.store.store import sha256_json
from uxlab.store.verify_audit import (
    SessionRow,
    check_session,
)
from uxlab.store.verify_events import EVENT_KINDS, StoredTrial, event_problems
from uxlab.store.verify_report import Mismatch, VerifyReport
from uxlab.study.adaptive import AdaptivePlan, CommittedTrial
from uxlab.study.design import Trial, design_trials
from uxlab.study.reproduce import (
    rebuild_schedule,
    schedule_sha256,
)
from uxlab.study.spec import Study, condition_id
from uxlab.study.stimulus import trial_kind

ROW_FIELDS = ("block", "practice", "kind", "condition_id", "levels", "replay_id", "seed")
"""Trial-row fields compared with the re-derived trial (plus whether it is an attention check)."""


def check_session_trials(
    conn: Connection,
    report: VerifyReport,
    study: Study,
    row: tuple[Any, ...],
    changed: set[str],
) -> None:
    """The session rebuilt from the study (`_check_plan_and_events`), then its rows against
    the audit log (`uxlab.store.verify_audit`); one line per trial."""
    session_id, participant, _n, _g, seed, _plan, plan_sha, state, pilot, simulated = row
    start = len(report.mismatches)
    report.n_sessions += 1
    _check_plan_and_events(conn, report, study, row[:7], changed)

    def mismatch(what: str, trial_index: int | None = None) -> None:
        report.mismatches.append(Mismatch(what, participant, trial_index, session_id))

    facts = SessionRow(session_id, state, seed, plan_sha, bool(pilot), bool(simulated))
    report.n_digests += check_session(conn, report.ledger, study, facts, mismatch)
    report.mismatches[start:] = _one_line_per_trial(report.mismatches[start:])


def _one_line_per_trial(found: list[Mismatch]) -> list[Mismatch]:
    """A trial's findings (its events against the schedule, against the audit log, its
    answers) joined into one line, in the order found."""
    out: list[Mismatch] = []
    by_trial: dict[int, Mismatch] = {}
    for m in found:
        first = None if m.trial_index is None else by_trial.get(m.trial_index)
        if first is None:
            out.append(dataclasses.replace(m))
            if m.trial_index is not None:
                by_trial[m.trial_index] = out[-1]
        else:
            first.what += "; " + m.what
    return out


def _check_plan_and_events(
    conn: Connection,
    report: VerifyReport,
    study: Study,
    row: tuple[Any, ...],
    changed: set[str],
) -> None:
    session_id, participant, number, group_id, seed, plan_json, plan_sha = row

    def mismatch(what: str, trial_index: int | None = None) -> None:
        report.mismatches.append(Mismatch(what, participant, trial_index, session_id))

    derived = _derive_plan(
        study, participant, number, group_id, seed, plan_json, plan_sha, mismatch
    )
    if derived is None:
        return
    answers = _answers_by_trial(conn, session_id)
    adaptive = AdaptivePlan.for_study(study, seed)
    committed: list[CommittedTrial] = []
    bad_schedules: dict[str, list[int]] = defaultdict(list)
    rows = conn.execute(
        "SELECT trial_index, block, practice, kind, condition_id, levels, replay_id, seed, "
        "attention, outcome, schedule_sha256, "
        + ", ".join(TIMING_COLUMNS)
        + ", timings FROM trials "
        "WHERE session_id = ? ORDER BY trial_index",
        (session_id,),
    ).fetchall()
    reruns = _rerun_roots(conn, session_id)  # re-runs queued at the end play a planned trial
    timeout_s = study.abandon.timeout_s
    timeout_ms = None if timeout_s is None else timeout_s * 1000.0
    events = _events_by_trial(conn, session_id)
    for idx, block, practice, kind, cond, levels_json, replay_id, t_seed, attention, *rest in rows:
        outcome, sha, *timing_values, extra_json = rest
        report.n_trials += 1
        levels = json.loads(levels_json)
        root = reruns.get(idx, idx)
        if not 0 <= root < len(derived):
            mismatch("is not in the re-derived trial list", idx)
            continue
        expected = dataclasses.replace(derived[root], index=idx, break_before=False)
        if adaptive is not None and not expected.practice and expected.attention is None:
            level = adaptive.level_for(expected.levels, committed)
            resolved = {**expected.levels, adaptive.factor: level}
            within = {f.name: resolved[f.name] for f in study.within_factors}
            expected = dataclasses.replace(
                expected, levels=resolved, condition_id=condition_id(within)
            )
        stored = {
            "block": block, "practice": bool(practice), "kind": kind, "condition_id": cond,
            "levels": levels, "replay_id": replay_id, "seed": t_seed,
        }  # fmt: skip
        for name in ROW_FIELDS:
            want = getattr(expected, name)
            if stored[name] != want:
                mismatch(f"{name}: stored {_show(stored[name])}, rebuilt {_show(want)}", idx)
        if bool(attention) != (expected.attention is not None):
            rebuilt = expected.attention is not None
            mismatch(f"attention check: stored {bool(attention)}, rebuilt {rebuilt}", idx)
        if outcome not in ("running", "interrupted"):
            committed.append(
                CommittedTrial(idx, bool(practice), bool(attention), levels, outcome, answers[idx])
            )
        if sha is None:
            report.n_unchecked += 1
            continue
        schedule, reason = _schedule_problem(study, expected, sha, changed, report)
        if reason is not None:
            bad_schedules[reason].append(idx)
            report.n_event_skipped += 1  # played from another schedule: nothing to compare
            continue
        if outcome == "running":
            report.n_in_flight += 1  # nothing stored of it yet
            continue
        timings = dict(zip(TIMING_COLUMNS, timing_values, strict=True))
        extra = json.loads(extra_json) if extra_json else {}
        timings.update(extra if isinstance(extra, dict) else {})
        stored_trial = StoredTrial(outcome, bool(attention), timings, events.get(idx, []))
        kind = trial_kind(study, expected)
        problems = event_problems(kind, schedule, stored_trial, timeout_ms)
        report.n_event_trials += 1
        report.n_event_live += kind.learnt and not stored_trial.attention
        report.n_chunk_events += len(stored_trial.of_kind(EventKind.CHUNK))
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            mismatch(f"events: {problems[0]}{more}", idx)
    for reason, indexes in bad_schedules.items():
        which = ", ".join(str(i) for i in indexes[:8]) + (" ..." if len(indexes) > 8 else "")
        n = len(indexes)
        mismatch(f"{n} schedule(s) differ ({'trial' if n == 1 else 'trials'} {which}): {reason}")


def _derive_plan(
    study: Study,
    participant: str,
    number: int,
    group_id: str | None,
    seed: int,
    plan_json: str,
    plan_sha: str,
    mismatch: Callable[[str], None],
) -> list[Trial] | None:
    """The session's trial list re-derived from the study file and seed, with a mismatch
    for a stored list edited afterwards or not the re-derived one; None (and a mismatch)
    when the session's group is not in the study."""
    group = None
    if group_id is not None:
        group = next((g for g in study.groups if g.id == group_id), None)
        if group is None:
            mismatch(f"group {group_id!r} is not a group of the study")
            return None
    derived = design_trials(study, participant, number, seed, group)
    derived_plan = [t.to_dict() for t in derived]
    stored_plan = json.loads(plan_json)
    if sha256_json(stored_plan) != plan_sha:
        mismatch("the stored trial list does not match its own SHA-256 (edited afterwards)")
    if sha256_json(derived_plan) != sha256_json(stored_plan):
        diffs = _plan_diffs(stored_plan, derived_plan)
        more = " ..." if len(diffs) > 3 else ""
        mismatch(
            f"trial list differs from the one re-derived from the study file and seed {seed}: "
            + "; ".join(diffs[:3])
            + more
        )
    return derived


def _answers_by_trial(conn: Connection, session_id: str) -> dict[int, dict[str, str | None]]:
    """trial_index -> {question id: stored answer} of one session."""
    answers: dict[int, dict[str, str | None]] = defaultdict(dict)
    for idx, qid, value in conn.execute(
        "SELECT trial_index, question_id, value FROM responses WHERE session_id = ?",
        (session_id,),
    ):
        answers[idx][qid] = value
    return answers


def _schedule_problem(
    study: Study, expected: Trial, sha: str, changed: set[str], report: VerifyReport
) -> tuple[Schedule, str | None]:
    """The schedule rebuilt for `expected`, and why it is not the one played (SHA-256
    `sha`), or None when it is; counts the rebuilt schedule in `report`."""
    schedule = rebuild_schedule(study, expected)
    report.n_schedules += 1
    report.n_live += trial_kind(study, expected).learnt
    if schedule_sha256(study, expected, schedule) == sha:
        return schedule, None
    files = set(_ids_of(expected)) & changed
    if files:
        reason = f"recording {', '.join(sorted(files))} changed since the study ran"
    else:
        reason = "rebuilt from the study, recording, levels and seed, it is not the one played"
    return schedule, reason


def _events_by_trial(
    conn: Connection, session_id: str
) -> dict[int, list[tuple[str, float | None, dict[str, Any]]]]:
    """trial_index -> (kind, t_ms, data) of the session's events `event_problems` reads,
    in stored order."""
    marks = ", ".join("?" for _ in EVENT_KINDS)
    rows = conn.execute(
        f"SELECT trial_index, kind, t_ms, data FROM events WHERE session_id = ? "
        f"AND trial_index >= 0 AND kind IN ({marks}) ORDER BY trial_index, seq",
        (session_id, *EVENT_KINDS),
    ).fetchall()
    values = _json_values([r[3] for r in rows])
    out: dict[int, list[tuple[str, float | None, dict[str, Any]]]] = defaultdict(list)
    for (idx, kind, t_ms, _data), value in zip(rows, values, strict=True):
        out[idx].append((kind, t_ms, value if isinstance(value, dict) else {}))
    return out


def _json_values(texts: list[str]) -> list[Any]:
    """Each JSON text decoded: in one call (a third of verify's time went to one call per
    event), or one by one when the joined texts do not split back (an edited value)."""
    try:
        values = json.loads("[" + ",".join(texts) + "]")
    except json.JSONDecodeError:
        values = None
    if not isinstance(values, list) or len(values) != len(texts):
        values = [json.loads(t) for t in texts]  # a damaged value raises here, by itself
    return values


def _rerun_roots(conn: Connection, session_id: str) -> dict[int, int]:
    """A re-run's trial_index -> the planned trial it plays (`requeued`)."""
    return dict(
        conn.execute(
            "SELECT trial_index, root_index FROM requeued WHERE session_id = ?", (session_id,)
        ).fetchall()
    )


def _ids_of(trial: Trial) -> list[str]:
    return [] if trial.replay_id is None or trial.attention is not None else [trial.replay_id]


def _plan_diffs(stored: list[dict[str, Any]], derived: list[dict[str, Any]]) -> list[str]:
    """`trial 3 seed: stored 12, rebuilt 45`-style differences between two trial lists."""
    out = []
    if len(stored) != len(derived):
        out.append(f"{len(stored)} trials stored, {len(derived)} rebuilt")
    for a, b in zip(stored, derived, strict=False):
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                out.append(
                    f"trial {a.get('index')} {key}: stored {_show(a.get(key))}, "
                    f"rebuilt {_show(b.get(key))}"
                )
    return out


def _show(value: Any, limit: int = 40) -> str:
    text = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
