"""Session facts for the report: how each session ran, from the export's session tables.

One row per session: participant, state, whether it is analysed, runs (the first start and
every resume), interrupted trials and trials re-run at the end (`rerun_of` in trials.csv),
the terminal size at the start and every resize, the frame cap, and the timing warnings
stored with the session (e.g. run inside tmux, a frame rate too coarse for the study). Read
from `sessions.csv` and `runs.csv` (the `env_*` columns of the environment record) and the
`terminal` (size at the start and at each resume) and `resize` events of `events.csv` (data
`{"cols": .., "rows": ..}`); every source is optional, and a fact the export lacks is shown
as "not recorded".
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from analysis.trial_table import TrialTable

NOT_RECORDED = "not recorded"


def _first(row: pd.Series | None, *columns: str) -> Any:
    if row is None:
        return None
    for c in columns:
        if c in row.index and pd.notna(row[c]) and str(row[c]) != "":
            return row[c]
    return None


def _size(cols: Any, rows: Any) -> str | None:
    try:
        return f"{int(float(cols))}x{int(float(rows))}"
    except (TypeError, ValueError):
        return None


def _resizes(events: pd.DataFrame | None, session_id: str, kind: str = "resize") -> list[str]:
    """Sizes (`120x40`) of a session's events of `kind` (`resize`, or `terminal`: the size
    at the start and at each resume), in order."""
    if events is None or "session_id" not in events.columns:
        return []
    sub = events[(events["session_id"].astype(str) == session_id) & (events["kind"] == kind)]
    if "t_ms" in sub.columns:
        sub = sub.sort_values("t_ms", kind="stable")
    out = []
    for data in sub.get("data", pd.Series(dtype=str)).tolist():
        try:
            d = json.loads(data) if isinstance(data, str) else {}
        except json.JSONDecodeError:
            d = {}
        size = _size(d.get("cols", d.get("columns")), d.get("rows"))
        out.append(size or "?")
    return out


def _warnings(*values: Any) -> list[str]:
    out: list[str] = []
    for v in values:
        if v is None or (isinstance(v, float) and pd.isna(v)):
            continue
        text = str(v).strip()
        if not text or text in ("[]", "nan"):
            continue
        parts = json.loads(text) if text.startswith("[") else text.split(" | ")
        out.extend(str(p) for p in parts if str(p).strip())
    return list(dict.fromkeys(out))


def _playbacks(own: pd.DataFrame, sid: str, kept: set[tuple[str, int]]) -> dict[str, int]:
    """Of the session's trials shown again (`rerun_of`), which playback is analysed: the
    `second` (the re-run only, as by default), `both` (e.g. `--keep-flagged` keeps a flagged
    first playback), the `first` only, or `neither`."""
    out = {"second": 0, "both": 0, "first": 0, "neither": 0}
    if "rerun_of" not in own.columns or "trial_index" not in own.columns:
        return out
    for of, index in own.loc[own["rerun_of"].notna(), ["rerun_of", "trial_index"]].itertuples(
        index=False
    ):
        first, second = (sid, int(of)) in kept, (sid, int(index)) in kept
        out[
            "both" if first and second else "second" if second else "first" if first else "neither"
        ] += 1
    return out


def _kept_keys(kept: pd.DataFrame) -> set[tuple[str, int]]:
    if not {"session_id", "trial_index"} <= set(kept.columns):
        return set()
    return {(str(s), int(i)) for s, i in zip(kept["session_id"], kept["trial_index"], strict=True)}


def session_facts(table: TrialTable, kept: pd.DataFrame) -> pd.DataFrame | None:
    """One row per session with the facts above (None when the export has no sessions)."""
    sessions = table.sessions
    if sessions is None or "session_id" not in sessions.columns or sessions.empty:
        return None
    runs = table.runs
    events = table.session_events
    trials = table.trials
    analysed = set(kept["session_id"].astype(str)) if "session_id" in kept.columns else set()
    kept_keys = _kept_keys(kept)
    rows = []
    for _, s in sessions.iterrows():
        sid = str(s["session_id"])
        mine = None
        if runs is not None and "session_id" in runs.columns:
            mine = runs[runs["session_id"].astype(str) == sid]
        first_run = mine.iloc[0] if mine is not None and len(mine) else None
        n_runs = len(mine) if mine is not None and len(mine) else None
        resumed = _first(s, "resumed_count")
        if n_runs is None and resumed is not None:
            n_runs = int(float(resumed)) + 1
        interrupted = rerun = 0
        playbacks: dict[str, int] = {}
        if "session_id" in trials.columns and "outcome" in trials.columns:
            own = trials[trials["session_id"].astype(str) == sid]
            interrupted = int((own["outcome"] == "interrupted").sum())
            if "rerun_of" in own.columns:  # queued again at the end (export RERUN_COLUMNS)
                rerun = int(own["rerun_of"].notna().sum())
                playbacks = _playbacks(own, sid, kept_keys)
        start = _size(
            _first(first_run, "env_columns", "env_cols"), _first(first_run, "env_rows")
        ) or _size(_first(s, "env_columns", "env_cols"), _first(s, "env_rows"))
        at_runs = _resizes(events, sid, "terminal")  # logged at the start and each resume
        if at_runs:
            start = at_runs[0] + (f" (resumed at {', '.join(at_runs[1:])})" if at_runs[1:] else "")
        resizes = _resizes(events, sid)
        run_warnings = []
        if mine is not None and "env_timing_warnings" in mine.columns:
            run_warnings = mine["env_timing_warnings"].tolist()
        warnings = _warnings(_first(s, "env_timing_warnings"), *run_warnings)
        multiplexer = _first(first_run, "env_multiplexer") or _first(s, "env_multiplexer")
        if multiplexer and not any(str(multiplexer) in w for w in warnings):
            warnings.append(f"ran inside {multiplexer}")
        fps = _first(first_run, "env_frame_cap_fps") or _first(s, "env_frame_cap_fps")
        rows.append(
            {
                "participant": str(s.get("participant", "")),
                "session": sid,
                "state": str(_first(s, "state") or NOT_RECORDED),
                "analysed": "yes" if sid in analysed else "no",
                "runs": str(n_runs) if n_runs is not None else NOT_RECORDED,
                "interrupted trials": interrupted,
                "re-run at the end": rerun,
                "playback analysed": ", ".join(f"{k} {n}" for k, n in playbacks.items() if n)
                or "-",
                "terminal at start": start or NOT_RECORDED,
                "resizes": ", ".join(resizes) if resizes else "none",
                "frame cap (fps)": f"{float(fps):g}" if fps is not None else NOT_RECORDED,
                "timing warnings": "; ".join(warnings) if warnings else "none",
            }
        )
    return pd.DataFrame(rows)


PLAYBACKS = {
    "second": "the second playback (the re-run)",
    "both": "both playbacks (a flagged first one kept, e.g. --keep-flagged)",
    "first": "the first playback only",
    "neither": "neither playback (both excluded)",
}
"""What each value of the `playback analysed` column means (`_playbacks`)."""


def _reruns_sentence(facts: pd.DataFrame, interrupted: int, rerun: int) -> str:
    """How many trials were cut off, how many shown again, and which playback is analysed."""
    parts = []
    if interrupted:
        parts.append(
            f"{interrupted} {_were(interrupted)} cut off (stored as interrupted, never analysed)"
        )
    if not rerun:
        return parts[0] + "; none was shown again."
    whose = "its" if rerun == 1 else "their"
    sums = dict.fromkeys(PLAYBACKS, 0)
    for cell in facts.get("playback analysed", pd.Series(dtype=str)):
        for part in str(cell).split(", "):
            name, _, n = part.partition(" ")
            if name in sums and n.isdigit():
                sums[name] += int(n)
    used = [(PLAYBACKS[k], n) for k, n in sums.items() if n]
    which = used[0][0] if len(used) == 1 else ", ".join(f"{what} for {n}" for what, n in used)
    shown = f"{rerun} {_were(rerun)} shown again at the end of {whose} session"
    parts.append(f"{shown}: the analysis uses {which}" if used else shown)
    return "; ".join(parts) + "."


def _were(n: int) -> str:
    return "trial was" if n == 1 else "trials were"


def facts_summary(facts: pd.DataFrame | None) -> list[str]:
    """Sentences on the analysed sessions' resumes, interrupted trials, resizes and timing
    warnings (may be empty): a session left out by the rules is in the Sessions table, not
    among the limits of the figures."""
    if facts is None or facts.empty:
        return []
    if "analysed" in facts.columns:
        facts = facts[facts["analysed"] == "yes"]
        if facts.empty:
            return []
    out = []
    runs = pd.to_numeric(facts["runs"], errors="coerce")
    resumed = int((runs > 1).sum())
    if resumed:
        out.append(
            f"{resumed} analysed session(s) were resumed "
            f"({int((runs - 1).clip(lower=0).sum())} resume(s) in all)."
        )
    interrupted = int(facts["interrupted trials"].sum())
    rerun = int(facts["re-run at the end"].sum())
    if interrupted or rerun:
        out.append(_reruns_sentence(facts, interrupted, rerun))
    resized = int((facts["resizes"] != "none").sum())
    if resized:
        out.append(f"The terminal was resized during {resized} analysed session(s).")
    warned = facts[facts["timing warnings"] != "none"]
    if len(warned):
        out.append(
            f"{len(warned)} analysed session(s) ran with timing warnings (e.g. "
            f"{warned['timing warnings'].iloc[0]}): what they showed may differ from the "
            "schedule."
        )
    return out
