"""Checks and aggregation of psychometric input: per-level counts and per-trial rows."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt
import pandas as pd


class PsychometricInputError(ValueError):
    """Data a psychometric fit cannot use: says which field, which row, and what is needed."""


# -- input checks and aggregation -----------------------------------------------------------


def as_float_array(values: npt.ArrayLike, field: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float).ravel()
    except (TypeError, ValueError) as exc:
        raise PsychometricInputError(f"{field}: expected numbers ({exc})") from None
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise PsychometricInputError(
            f"{field}: row {bad[0]} is {arr[bad[0]]:g}; every value must be a finite number "
            f"({bad.size} row(s) are not)"
        )
    return arr


def check_counts(
    x: npt.ArrayLike, n_yes: npt.ArrayLike, n_total: npt.ArrayLike, *, field: str = "stimulus"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate per-level counts; return (x_ms, k, n) as float arrays."""
    x_ms = as_float_array(x, field)
    k = as_float_array(n_yes, "n_yes")
    n = as_float_array(n_total, "n_total")
    if not (x_ms.size == k.size == n.size):
        raise PsychometricInputError(
            f"{field}, n_yes and n_total must have one value per level; got "
            f"{x_ms.size}, {k.size} and {n.size}"
        )
    for name, arr in (("n_yes", k), ("n_total", n)):
        bad = np.flatnonzero((arr < 0) | (arr != np.round(arr)))
        if bad.size:
            raise PsychometricInputError(
                f"{name}: row {bad[0]} is {arr[bad[0]]:g}; counts must be whole numbers >= 0"
            )
    bad = np.flatnonzero(k > n)
    if bad.size:
        raise PsychometricInputError(
            f"n_yes: row {bad[0]} has {k[bad[0]]:g} yes of {n[bad[0]]:g} trials; n_yes must "
            "not exceed n_total"
        )
    bad = np.flatnonzero(x_ms <= 0)
    if bad.size:
        raise PsychometricInputError(
            f"{field}: row {bad[0]} is {x_ms[bad[0]]:g}; the stimulus is fitted on a log scale "
            "and must be a latency > 0 (ms)"
        )
    keep = n > 0
    if np.unique(x_ms[keep]).size < 2:
        raise PsychometricInputError(
            f"{field}: a psychometric fit needs trials at 2 or more different levels; "
            f"got {np.unique(x_ms[keep]).size}"
        )
    return x_ms[keep], k[keep], n[keep]


def aggregate_trials(
    stimulus: npt.ArrayLike,
    response: npt.ArrayLike,
    *,
    field: str = "stimulus",
    response_field: str = "response",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One row per trial -> (levels_ms, n_yes, n_total) per distinct stimulus value."""
    x = as_float_array(stimulus, field)
    r = as_float_array(response, response_field)
    if x.size != r.size:
        raise PsychometricInputError(
            f"{field} and {response_field} must have one value per trial; got {x.size} and {r.size}"
        )
    bad = np.flatnonzero((r != 0) & (r != 1))
    if bad.size:
        raise PsychometricInputError(
            f"{response_field}: row {bad[0]} is {r[bad[0]]:g}; a binary judgement must be 0 "
            "(no) or 1 (yes)"
        )
    levels, inverse = np.unique(x, return_inverse=True)
    n_total = np.bincount(inverse, minlength=levels.size).astype(float)
    n_yes = np.bincount(inverse, weights=r, minlength=levels.size)
    return levels, n_yes, n_total


def sorted_keys(values: Iterable[object]) -> list[str]:
    """Group or condition labels as strings, in numeric order when they are all numbers."""
    keys = [str(v) for v in values]
    try:
        return sorted(keys, key=float)
    except ValueError:
        return sorted(keys)


def frame_column(df: pd.DataFrame, name: str) -> pd.Series:
    if name not in df.columns:
        raise PsychometricInputError(
            f"column {name!r} not found; the table has {', '.join(map(str, df.columns))}"
        )
    return df[name]
