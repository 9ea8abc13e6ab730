"""Contract 2 as data: the trial table's columns, in the order uxlab writes them, and what
kind of value each holds.

`uxlab.store.export` writes a trial table from these groups and `analysis.trial_table` reads
one with them, so a column is named once: a column the export writes and this spec does not
list cannot be written, and the analysis never mistakes a
listed column for a design factor. The package imports nothing (not uxlab, not analysis), so
both layers may read it while analysis still never imports uxlab (import-linter contracts in
pyproject.toml).

A trial row holds, in order: `LEADING`, one column per design factor, `AFTER_FACTORS`, the
`OPTIONAL_GROUPS` a study uses (`CHAIN`, `LIVE`), `FIDELITY`, a `q_<id>` / `rt_<id>_ms` pair
per per-trial question, `TRAILING`, `RERUN` when a session queued a trial again, and
`BROWSER` when the database has painted times.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["id", "number", "flag", "time", "outcome", "text"]
"""id: an identifier, kept as text (a hash of zeros or an id like 007 is not a number);
number: a count or a measurement; flag: 0/1 (empty when not judged); time: ms from the
send, never negative; outcome: one of `OUTCOMES`; text: free text."""


@dataclass(frozen=True)
class Column:
    """One column of the trial table."""

    name: str
    kind: Kind


def _group(kind: Kind, *names: str) -> tuple[Column, ...]:
    return tuple(Column(n, kind) for n in names)


LEADING = (
    *_group("id", "study_id", "study_sha256", "session_id", "participant"),
    *_group("number", "trial_index", "block"),
    Column("practice", "flag"),
    Column("condition_id", "id"),
)
"""Before the factor columns: whose trial, which one, and its design cell."""
AFTER_FACTORS = (
    Column("replay_id", "id"),
    Column("seed", "number"),
    Column("schedule_sha256", "id"),
    Column("outcome", "outcome"),
    *_group("time", "t_abandon_ms", "shown_first_ms", "shown_last_ms", "scheduled_end_ms"),
)
"""After the factor columns: the stream shown and how the trial ended (ms from the send)."""
CHAIN = _group("number", "e2e_ms", "abandon_step", "paused_ms")
"""Agent-chain trials only: measured end of the answer, the step (0-based) running when the
participant gave up, and the time mid-chain questions held the chain."""
LIVE = _group("number", "violations_n", "violation_max_ms", "violation_sum_ms")
"""Live-study trials only: chunks shown late because the live model was slower than the
schedule, and the largest and summed lateness (ms)."""
OPTIONAL_GROUPS = (CHAIN, LIVE)
"""Groups written after `scheduled_end_ms` only when some trial of the table has them."""
FIDELITY = (
    *_group(
        "number",
        "n_chunks",
        "late_handed_p50_ms",
        "late_handed_p99_ms",
        "late_handed_max_ms",
        "late_shown_p50_ms",
        "late_shown_p99_ms",
        "late_shown_max_ms",
        "frame_shared_share",
        "drift_ms",
        "load_1m",
    ),
    Column("fidelity_flag", "flag"),
)
"""Every trial: how faithfully its stream was shown (`uxlab.fidelity`); `load_1m` is the
machine's 1-minute load average, `fidelity_flag` 1 outside the study's `[timing]` tolerance."""
TRAILING = _group("flag", "attention_check", "attention_ok", "pilot", "simulated")
"""After the question columns: attention checks and pilot/simulated sessions."""
RERUN = (Column("rerun_of", "number"), Column("rerun_reason", "text"), Column("rerun_as", "number"))
"""Only when a session queued a trial again, at the end: on a re-run, the trial_index of the
attempt it replaces and why; on the replaced attempt, the trial_index of its re-run."""

BROWSER = (
    *_group(
        "number",
        "n_painted",
        "late_painted_p50_ms",
        "late_painted_p99_ms",
        "late_painted_max_ms",
        "paint_clock_uncertainty_ms",
    ),
    Column("browser", "text"),
    Column("display_hz", "number"),
    Column("display_keeps_gaps", "flag"),
    Column("terminal_emulator", "text"),
)
"""Only when the database has painted times (sessions in a browser tab, `uxlab host`, or in
a terminal window timed at the glass, `uxlab run --glass`), at the end: chunks with a
painted time, painted lateness (painted - scheduled) p50/p99/max, the largest clock
uncertainty of those paints (ms; a browser's), the session's browser family, display
refresh rate and whether one refresh fits in the study's shortest gap, and the terminal
emulator a glass probe timed."""

COLUMNS = (*LEADING, *AFTER_FACTORS, *CHAIN, *LIVE, *FIDELITY, *TRAILING, *RERUN, *BROWSER)
"""Every column the spec knows, besides factors and questions."""

QUESTION_PREFIX = "q_"
"""`q_<id>`: the answer to question `<id>`; `rt_<id>_ms` its response time."""

OUTCOMES = ("completed", "abandoned", "timed_out", "error", "interrupted")
"""How a trial ended (the `outcome` column); `uxlab.outcomes.Outcome` names each."""


AnswerKind = Literal["binary", "rating", "number", "text"]
"""What a `q_<id>` cell holds, by its question's type (`study.json` "answer_kinds"): binary
1 (yes) / 0 (no); rating a whole number on 1..scale; number any finite number; text as typed
or chosen. The analysis checks answers by kind, so a new question type needs no analysis code."""
ANSWER_KINDS: tuple[AnswerKind, ...] = ("binary", "rating", "number", "text")


def names(*groups: tuple[Column, ...]) -> list[str]:
    """The column names of `groups`, in order."""
    return [c.name for group in groups for c in group]


def of_kind(kind: Kind) -> tuple[str, ...]:
    """The names of every known column holding values of `kind`, in table order."""
    return tuple(c.name for c in COLUMNS if c.kind == kind)


def question_columns(question_id: str) -> tuple[str, str]:
    """The answer and response-time columns of a question: `q_<id>`, `rt_<id>_ms`."""
    return f"{QUESTION_PREFIX}{question_id}", f"rt_{question_id}_ms"
