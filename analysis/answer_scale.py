"""Answer columns told from the data alone (no study.json names them): a judgement holds
only 0/1 (yes/no), a rating only whole numbers from 1. A column that is nearly one of these
(a yes/no column with a stray 2, a rating of 3.5 or 0) is an error naming its rows, never
silently taken for another kind of answer or left out of the analysis.

With a study.json, `analysis.trial_table.check_answers` checks each answer column against
its question's kind and scale instead.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysis.table_errors import TrialTableError

BINARY_TEXT = frozenset({"0", "1", "0.0", "1.0", "yes", "no", "true", "false"})
"""Cells a yes/no judgement column may hold (as text, lower case)."""
_YES_TEXT = frozenset({"1", "1.0", "yes", "true"})
MOSTLY = 0.8
"""Share of a column's answers that makes it look like a judgement (or a rating)."""
MAX_ROWS_NAMED = 5


def _answers(trials: pd.DataFrame, column: str) -> pd.Series:
    text = trials[column].astype(str).str.strip()
    return text[trials[column].notna() & (text != "") & (text.str.lower() != "nan")]


def _shown(value: str) -> str:
    """A cell as the message quotes it: a number as written in the table (2, not 2.0)."""
    try:
        return repr(f"{float(value):g}")
    except ValueError:
        return repr(value)


def _rows(index: pd.Index) -> list[int]:
    """1-based data rows of `index` entries (a frame read whole: its position is its row)."""
    return [int(i) + 1 for i in index[:MAX_ROWS_NAMED]]


def _listed(rows: list[int], n: int) -> str:
    shown = ", ".join(str(r) for r in rows)
    return shown + (f" and {n - len(rows)} more" if n > len(rows) else "")


def is_judgement(trials: pd.DataFrame, column: str) -> bool:
    """Whether every answer in `column` is 0/1 (yes/no, true/false)."""
    values = _answers(trials, column).str.lower()
    return bool(len(values)) and bool(values.isin(BINARY_TEXT).all())


def check_near_judgement(trials: pd.DataFrame, column: str, path: Path) -> None:
    """Refuse a column that reads as a yes/no judgement (both answers, most of its cells)
    but holds a few other values: they would turn it into a "rating" (a 1-1 scale) or drop
    the thresholds without a word."""
    values = _answers(trials, column)
    low = values.str.lower()
    binary = low.isin(BINARY_TEXT)
    if not len(values) or binary.all() or binary.mean() < MOSTLY:
        return
    if not (low[binary].isin(_YES_TEXT).any() and (~low[binary].isin(_YES_TEXT)).any()):
        return  # one answer only, plus others: not a judgement's two answers
    bad = values[~binary]
    rows = _rows(bad.index)
    raise TrialTableError(
        path,
        rows[0],
        column,
        f"{len(bad)} of {len(values)} answers are not 0/1 (e.g. {_shown(bad.iloc[0])}, rows "
        f"{_listed(rows, len(bad))}): a yes/no judgement with values off its scale. Correct "
        "or remove those rows, or say what the column is (--judgement / --rating, or a "
        "study.json beside the table)",
    )


def looks_like_rating(trials: pd.DataFrame, column: str) -> bool:
    """Numbers with 3 to 11 different values, most of them whole: a rating scale's answers
    (checked by `check_rating_values` once chosen)."""
    values = _answers(trials, column)
    numbers = pd.to_numeric(values, errors="coerce")
    if not len(values) or numbers.isna().mean() > 1 - MOSTLY:
        return False
    numbers = numbers.dropna()
    return 3 <= numbers.nunique() <= 11 and float((numbers % 1 == 0).mean()) >= MOSTLY


def check_rating_values(
    trials: pd.DataFrame, column: str, path: Path, scale_size: int | None = None
) -> None:
    """Every answer in `column` a whole number from 1 (to `scale_size` when known); raises
    TrialTableError naming the rows that are not."""
    values = _answers(trials, column)
    numbers = pd.to_numeric(values, errors="coerce")
    top = np.inf if scale_size is None else scale_size
    bad = values[numbers.isna() | (numbers % 1 != 0) | (numbers < 1) | (numbers > top)]
    if bad.empty:
        return
    rows = _rows(bad.index)
    scale = f"1..{scale_size}" if scale_size else "1 up (the scale's size is not known here)"
    raise TrialTableError(
        path,
        rows[0],
        column,
        f"{_shown(bad.iloc[0])} is not a rating on the scale {scale}: a rating is a whole number "
        f"on its scale ({len(bad)} such answer(s), rows {_listed(rows, len(bad))}). Correct "
        "or remove those rows, or give the question's scale in study.json",
    )
