"""The number rules: a value read as a finite number, a whole number, a duration in ms, or
within a range, each refused with the field's name and the value it got.

Every rule raises `error(field, problem)`: `InputProblem` unless the caller names its own
error type with the same two arguments (`ProfileError`, a `functools.partial` of a
`LocatedError` that fixes the file), so one rule serves every reader.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from uxlab.reading.limits import PLAUSIBLE
from uxlab.reading.located import InputProblem

MakeError = Callable[[str | None, str], Exception]
"""Builds the error to raise from a field and a problem."""


SHOWN_CHARS = 60
"""How much of a bad value a message quotes (a fuzzed 120,000-character value is not read)."""


def shown(value: Any) -> str:
    """`repr(value)` for a message, cut to `SHOWN_CHARS` with an ellipsis."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def as_number(
    value: Any, field: str, what: str = "a number", *, error: MakeError = InputProblem
) -> float:
    """A finite float from a TOML/JSON number or a CLI string."""
    if isinstance(value, bool):
        raise error(field, f"expected {what}, got {shown(value)}")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise error(field, f"expected {what}, got {shown(value)}") from None
    else:
        raise error(field, f"expected {what}, got {type(value).__name__} {shown(value)}")
    if not math.isfinite(number):
        raise error(field, f"expected {what}, got {shown(value)}")
    return number


def as_int(
    value: Any, field: str, what: str = "a whole number", *, error: MakeError = InputProblem
) -> int:
    """A whole number from a TOML integer or a CLI string (`3`, not `3.5`)."""
    number = as_number(value, field, what, error=error)
    if number != int(number):
        raise error(field, f"expected {what}, got {value!r}")
    return int(number)


def in_range(
    number: float,
    field: str,
    low: float | None = None,
    *,
    strict: bool = False,
    high: float | None = None,
    error: MakeError = InputProblem,
) -> float:
    """`number`, unless below `low` (at `low` too when `strict`) or above `high`."""
    if low is not None and (number <= low if strict else number < low):
        relation = ">" if strict else ">="
        raise error(field, f"{number:g} is out of range (must be {relation} {low:g})")
    if high is not None and number > high:
        raise error(field, f"{number:g} is out of range (must be <= {high:g})")
    return number


def ms_problem(value: Any) -> str | None:
    """What is wrong with `value` as a duration in ms (a finite, non-negative number)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return f"must be a number of ms, got {value!r}"
    if value < 0:
        return f"must not be negative, got {value!r}"
    return None


def as_ms(value: Any, field: str, *, error: MakeError = InputProblem) -> float:
    """`value` as a duration in ms: a finite, non-negative number."""
    problem = ms_problem(value)
    if problem is not None:
        raise error(field, problem)
    return float(value)


def check_range(value: Any, kind: str, field: str) -> float:
    """`value` as a number within the plausible range of `kind` (a `PLAUSIBLE` key)."""
    low, high, unit = PLAUSIBLE[kind]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputProblem(field, f"expected a number of {unit}, got {value!r:.60}")
    if not math.isfinite(value):
        raise InputProblem(field, f"{value} is not a finite number")
    if value < low:
        raise InputProblem(field, f"{value:g} is below {low:g} ({unit})")
    if value > high:
        raise InputProblem(field, f"{value:g} is not plausible: at most {high:g} {unit}")
    return value
