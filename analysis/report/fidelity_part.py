"""The report's "Playback fidelity" section: how faithfully each session's streams were shown.

Present when the trial table has contract 2's fidelity columns (`late_*_ms`,
`frame_shared_share`, `load_1m`, `fidelity_flag`). One row per session, over every trial
that showed at least one chunk (before exclusions: this is about what was shown): the
median of the trials' lateness p50 and p99 (shown lateness where the paint was measured,
else handed), the worst trial's p99, the mean share of chunks that shared a frame, the
trials flagged as outside the study's timing tolerance, and the machine's load while the
trials were stored. Browser sessions add a table of painted times (`browser_part`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from analysis.report.browser_part import browser_blocks, browser_paint_table
from analysis.report.data import FidelityPart, ReportData

if TYPE_CHECKING:
    from analysis.report.blocks import Block

COLUMNS = [
    "participant",
    "session_id",
    "trials shown",
    "lateness measured at",
    "p50 lateness, median trial (ms)",
    "p99 lateness, median trial (ms)",
    "p99 lateness, worst trial (ms)",
    "chunks sharing a frame (%)",
    "flagged",
    "load (1 min), median",
    "load (1 min), max",
]


def _numbers(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame.columns:
        return pd.Series(float("nan"), index=frame.index)
    return pd.to_numeric(frame[column], errors="coerce")


def _stat(values: pd.Series, how: str) -> float:
    """median / max / mean of the measured values; NaN, quietly, when none was measured."""
    values = values.dropna()
    return float(getattr(values, how)()) if len(values) else float("nan")


def _simulated(trials: pd.DataFrame) -> bool:
    """Every one of these trials is from a simulated session."""
    return bool(len(trials)) and bool((_numbers(trials, "simulated") == 1).all())


def fidelity_table(trials: pd.DataFrame) -> pd.DataFrame | None:
    """One row per session with the summary above; None without fidelity columns."""
    if "n_chunks" not in trials.columns or "participant" not in trials.columns:
        return None
    n_chunks = _numbers(trials, "n_chunks")
    with_chunks = trials[n_chunks > 0]
    if with_chunks.empty:
        return None
    by = "session_id" if "session_id" in with_chunks.columns else "participant"
    rows = []
    for _, part in with_chunks.groupby(by, sort=False, dropna=False):
        shown_p50 = _numbers(part, "late_shown_p50_ms")
        shown = shown_p50.notna().all()
        which = "late_shown" if shown else "late_handed"
        p50, p99 = _numbers(part, f"{which}_p50_ms"), _numbers(part, f"{which}_p99_ms")
        where = "screen (frame flushed)" if shown else "hand-off"
        if p50.isna().all():  # blank: nothing was measured (e.g. a simulated session)
            where = "not measured (simulated)" if _simulated(part) else "not measured"
        flag = _numbers(part, "fidelity_flag")
        load = _numbers(part, "load_1m")
        share = _numbers(part, "frame_shared_share")
        judged = int(flag.notna().sum())
        rows.append(
            {
                "participant": str(part["participant"].iloc[0]),
                "session_id": part["session_id"].iloc[0] if by == "session_id" else "",
                "trials shown": len(part),
                "lateness measured at": where,
                "p50 lateness, median trial (ms)": _stat(p50, "median"),
                "p99 lateness, median trial (ms)": _stat(p99, "median"),
                "p99 lateness, worst trial (ms)": _stat(p99, "max"),
                "chunks sharing a frame (%)": 100.0 * _stat(share, "mean"),
                "flagged": f"{int((flag == 1).sum())} of {judged}" if judged else "not judged",
                "load (1 min), median": _stat(load, "median"),
                "load (1 min), max": _stat(load, "max"),
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def fidelity_part(data: ReportData) -> FidelityPart | None:
    """The section's content from the report's data: the table and the totals."""
    trials = data.table.trials
    table = fidelity_table(trials)
    if table is None:
        return None
    flag = _numbers(trials, "fidelity_flag")
    cpus = None
    sessions = data.table.sessions
    if sessions is not None and "env_machine_cpus" in sessions.columns:
        values = pd.to_numeric(sessions["env_machine_cpus"], errors="coerce").dropna()
        cpus = sorted({int(v) for v in values}) or None
    log = data.exclusions.log
    return FidelityPart(
        table=table,
        n_flagged=int((flag == 1).sum()),
        n_judged=int(flag.notna().sum()),
        excluded=data.options.rules.drop_fidelity_flagged,
        n_left_out=int(log.loc[log["rule"] == "drop_fidelity_flagged", "n_trials"].sum()),
        n_kept=int((_numbers(data.kept, "fidelity_flag") == 1).sum()),
        cpus=cpus,
        unmeasured=[str(w) for w in table["lateness measured at"] if w.startswith("not")],
        n_sessions=len(table),
        browser=browser_paint_table(trials),
    )


def fidelity_blocks(part: FidelityPart | None) -> list[Block]:
    """Heading, what the columns mean, what happened to flagged trials, the table."""
    if part is None:
        return []
    from analysis.report.blocks import Heading, Para, Table

    text = (
        "Lateness is when a chunk reached the screen minus when the schedule said it should "
        "(where the screen was not measured, when it was handed to the view). "
    )
    text += _unmeasured_text(part.unmeasured, part.n_sessions)
    if part.n_judged:
        text += (
            f"{part.n_flagged} of {part.n_judged} judged trials were shown outside the "
            f"study's timing tolerance (fidelity_flag = 1)"
        )
        text += _fate(part) if part.n_flagged else "."
    else:
        text += "No trial was judged against the study's timing tolerance."
    if part.cpus:
        text += f" CPUs on the machines: {', '.join(str(c) for c in part.cpus)}."
    text += " Load is the 1-minute load average when each trial was stored."
    return [
        Heading("Playback fidelity"),
        Para(text),
        Table(part.table, "Per session: lateness, frame sharing, flagged trials, load"),
        *browser_blocks(part.browser),
    ]


def _fate(part: FidelityPart) -> str:
    """What happened to the flagged trials, as the exclusions table counts them."""
    flagged = part.n_flagged
    by_rule = part.n_left_out
    kept = part.n_kept
    before = flagged - by_rule - kept
    said = []
    if by_rule:
        said.append(f"{by_rule} left out for it (see the exclusions above)")
    if kept:
        said.append(f"{kept} kept in this analysis (--keep-flagged)")
    if before > 0:
        said.append(
            f"{before} already left out by another rule (a practice trial, an excluded "
            "participant or session)"
        )
    return ": " + "; ".join(said) + "."


def _unmeasured_text(unmeasured: list[str], n_sessions: int) -> str:
    """Which sessions have no measured lateness, and why (empty when every one has)."""
    if not unmeasured:
        return ""
    simulated = all("simulated" in w for w in unmeasured)
    who = (
        "All sessions were"
        if len(unmeasured) == n_sessions
        else f"{len(unmeasured)} of {n_sessions} sessions were"
    )
    if simulated:
        return (
            f"{who} simulated on a virtual clock, which hands each chunk out exactly on "
            "schedule: their lateness was not measured (shown as –, not 0). "
        )
    return f"{who} stored without measured lateness (shown as –). "
