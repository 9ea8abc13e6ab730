"""Another lab's trial table read as contract 2: named columns, mapped keys, units, dropped rows.

A PsychoPy or jsPsych export has one row per routine (instructions, trials, breaks), its
own names (`key_resp.keys`, `response`, `subject`), response keys rather than 0/1, times in
seconds and loop counters that are numbers but not design factors. `ColumnMap` says which
column is what; `adapt_frame` rewrites the raw table before validation and returns a note
for every change it made (rows dropped, keys mapped, units converted), so the report says
what was done to the data. Nothing is guessed silently: a guess (seconds from the typical
value of the numbers) is a note that says why and names the option that overrides it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.table_errors import TrialTableError

MEASURES = ("ttft", "itl", "e2e")
UNITS = ("s", "ms")
SECONDS_IF_TYPICAL_BELOW = 30.0  # a latency column whose median is under this is seconds
SECONDS_IF_TYPICAL_BELOW_ITL = 1.0  # ... an inter-token latency's (20 ms is a typical ITL)
SMALLEST_GAP_MS = 1.0  # levels closer than this are not latencies a person can tell apart
_LIST_CELL = re.compile(r"""^\[\s*['"]?([^'"\]]*)['"]?\s*\]$""")  # "['j']" (PsychoPy lists)


@dataclass
class ColumnMap:
    """Which column of another lab's table is what (None: not said; then the defaults)."""

    participant: str | None = None
    stimulus: str | None = None
    stimulus_unit: str | None = None  # "s" | "ms" | None (from the name, else the values)
    measure: str | None = None  # "ttft" | "itl" | "e2e": the stimulus becomes <measure>_ms
    judgement: str | None = None
    yes: tuple[str, ...] = ()  # values of `judgement` that mean yes (1); others mean no (0)
    rating: str | None = None
    factors: tuple[str, ...] = ()  # design factors besides the stimulus (--factor)

    @property
    def is_empty(self) -> bool:
        return not any(
            (
                self.participant,
                self.stimulus,
                self.stimulus_unit,
                self.measure,
                self.yes,
                self.factors,
            )
        )


def _mean(n_values: int) -> str:
    """The verb after a list of n values: one value "means", several "mean"."""
    return "means" if n_values == 1 else "mean"


def _error(path: Path, row: int | None, column: str | None, message: str) -> TrialTableError:
    return TrialTableError(path, row, column, message)


def _need(frame: pd.DataFrame, column: str, option: str, path: Path) -> None:
    if column not in frame.columns:
        raise _error(
            path,
            None,
            column,
            f"no such column ({option} {column}; columns present: "
            f"{', '.join(map(str, frame.columns))})",
        )


def cell_text(values: pd.Series) -> pd.Series:
    """Cells as stripped text; a one-item list cell (`['j']`, `["j"]`) becomes its item."""
    text = values.astype(str).str.strip()
    text = text.where(values.notna(), "")
    return text.str.replace(_LIST_CELL, r"\1", regex=True).str.strip()


def adapt_frame(
    frame: pd.DataFrame, columns: ColumnMap, path: Path
) -> tuple[pd.DataFrame, list[str], str | None]:
    """Apply `columns` to a raw table: (table, notes, the stimulus column's final name).

    Errors are `TrialTableError`s naming the file, row, column and the option to use.
    """
    frame = frame.copy()
    notes: list[str] = []
    if columns.participant:
        _need(frame, columns.participant, "--participant", path)
        if columns.participant != "participant":
            if "participant" in frame.columns:
                frame = frame.rename(columns={"participant": "participant_original"})
                notes.append(
                    "The table's own 'participant' column is kept as 'participant_original'."
                )
            frame = frame.rename(columns={columns.participant: "participant"})
            notes.append(f"Participants are the values of column {columns.participant!r}.")
    stimulus = columns.stimulus
    if stimulus is None and (columns.measure or columns.stimulus_unit):
        raise _error(
            path, None, None, "--measure and --stimulus-unit need the column: add --stimulus COL"
        )
    if stimulus is not None:
        _need(frame, stimulus, "--stimulus", path)
        frame, stimulus = _stimulus(frame, columns, path, notes)
    if columns.yes:
        if not columns.judgement:
            raise _error(path, None, None, "--yes maps a judgement column: add --judgement COL")
        _need(frame, columns.judgement, "--judgement", path)
        frame[columns.judgement] = _map_yes(frame[columns.judgement], columns, notes)
    if columns.rating:
        _need(frame, columns.rating, "--rating", path)
    for name in columns.factors:
        _need(frame, name, "--factor", path)
    return frame, notes, stimulus


def _stimulus(
    frame: pd.DataFrame, columns: ColumnMap, path: Path, notes: list[str]
) -> tuple[pd.DataFrame, str]:
    name = str(columns.stimulus)
    raw = frame[name]
    empty = raw.isna() | (raw.astype(str).str.strip() == "")
    if empty.any():
        frame = frame.loc[~empty.to_numpy()]  # the index keeps the file's row numbers
        notes.append(
            f"{int(empty.sum())} row(s) without a value in the stimulus column {name!r} "
            "(instructions, breaks or other non-trial rows) were dropped; "
            f"{len(frame)} trial row(s) remain."
        )
        raw = frame[name]
    values = pd.to_numeric(raw, errors="coerce")
    bad = values.isna().to_numpy()
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise _error(
            path,
            int(frame.index[pos]) + 1,
            name,
            f"{raw.iloc[pos]!r} is not a number (the stimulus is a latency)",
        )
    unit = columns.stimulus_unit
    if unit is not None and unit not in UNITS:
        raise _error(path, None, name, f"--stimulus-unit {unit}: use s or ms")
    unit, why = stimulus_unit(name, values, columns)
    other = "ms" if unit == "s" else "s"
    notes.append(
        f"Stimulus {name!r} read as {'seconds, converted to ms' if unit == 's' else 'ms'} "
        f"({why})"
        + ("." if columns.stimulus_unit else f"; pass --stimulus-unit {other} if it is not.")
    )
    if unit == "s":
        values = values * 1000.0
    notes.extend(_implausible_levels(name, values, unit))
    target = name
    if columns.measure is not None:
        if columns.measure not in MEASURES:
            raise _error(path, None, name, f"--measure {columns.measure}: use ttft, itl or e2e")
        target = f"{columns.measure}_ms"
        if target != name and target in frame.columns:
            raise _error(
                path,
                None,
                target,
                f"--measure {columns.measure} names the stimulus {target!r}, but the table "
                "already has such a column",
            )
        if target != name:
            notes.append(
                f"Stimulus {name!r} is compared with published {columns.measure.upper()} "
                f"figures as {target!r}."
            )
    elif unit == "s" and not name.endswith("_ms"):
        target = f"{name.removesuffix('_s')}_ms"
        if target in frame.columns:
            target = f"{name}_ms"
    # a fresh frame either way: the caller's frame may be a slice of another
    frame = frame.drop(columns=[name]) if target != name else frame.copy()
    frame[target] = values.astype(float).to_numpy()
    return frame, target


def stimulus_unit(name: str, values: pd.Series, columns: ColumnMap) -> tuple[str, str]:
    """(unit, why): declared, else from the column's name (`_ms`, `_s`), else from its
    typical value (the median): a latency's levels in ms are tens to thousands, in seconds
    under 30 (an inter-token latency's under 1: 0.02 s is 20 ms). The median, not the
    largest value: one 32 s level among 0.5-4 s levels must not make them all ms."""
    if columns.stimulus_unit:
        return columns.stimulus_unit, "--stimulus-unit"
    if name.endswith("_ms"):
        return "ms", "its name ends _ms"
    if name.endswith("_s"):
        return "s", "its name ends _s"
    limit = SECONDS_IF_TYPICAL_BELOW_ITL if columns.measure == "itl" else SECONDS_IF_TYPICAL_BELOW
    typical = float(values.median()) if len(values) else float("nan")
    if typical < limit:
        return "s", f"its typical value, the median {typical:g}, is under {limit:g}"
    return "ms", f"its typical value, the median {typical:g}, is {limit:g} or more"


def _implausible_levels(name: str, values_ms: pd.Series, unit: str) -> list[str]:
    """Warnings when the levels (ms) do not look like latencies a person could tell apart:
    the smallest gap between two levels under `SMALLEST_GAP_MS`."""
    levels = np.unique(values_ms.to_numpy(dtype=float))
    gaps = np.diff(levels)
    if gaps.size and gaps.min() < SMALLEST_GAP_MS:
        other = "s" if unit == "ms" else "ms"
        return [
            f"WARNING: stimulus {name!r}: two levels are only {gaps.min():.3g} ms apart (as "
            f"read, in {unit}); latencies people can tell apart differ by more than "
            f"{SMALLEST_GAP_MS:g} ms. If the column is in {other}, pass --stimulus-unit {other}."
        ]
    return []


def _map_yes(values: pd.Series, columns: ColumnMap, notes: list[str]) -> pd.Series:
    text = cell_text(values)
    yes_set = {v.strip().lower() for v in columns.yes}
    lowered = text.str.lower()
    answered = lowered != ""
    is_yes = lowered.isin(yes_set)
    seen_no = sorted(set(text[answered & ~is_yes]))
    no_values = ", ".join(repr(v) for v in seen_no[:6]) or "nothing else"
    notes.append(
        f"Judgement {columns.judgement!r}: {', '.join(repr(v) for v in sorted(yes_set))} "
        f"{_mean(len(yes_set))} yes (1); {no_values} {_mean(len(seen_no) or 1)} no (0); "
        f"{int((~answered).sum())} row(s) unanswered."
    )
    return pd.Series(np.where(~answered, np.nan, np.where(is_yes, 1.0, 0.0)), index=values.index)
