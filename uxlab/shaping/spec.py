"""The spec syntax shared by the CLI and TOML: `kind:name=value,...`, with errors that point.

A spec string is a kind, optionally followed by `:` and comma-separated values, each either
positional (filled in parameter order) or `name=value`: `constant:30`, `scale:1.5`,
`lognormal:median=30,sigma=0.5`, `uniform:1,4`. A bare number is a constant.
Every error is a `ProfileError` naming the key path (`[profile].itl`, `--itl`) and saying
what would be right.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from typing import Any

from uxlab.errors import UxlabError


class ProfileError(UxlabError, ValueError):
    """A shaping profile that cannot be used; the message names the key path and the fix."""

    def __init__(self, path: str, problem: str):
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}" if path else problem)


def key_path(where: str, key: str) -> str:
    """Join a location and a key: `studies/x.toml [profile]` + `itl` -> `... [profile].itl`."""
    if not where:
        return key
    if key.startswith("["):
        return f"{where}{key}"
    return f"{where}.{key}"


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """` (did you mean 'x'?)` or ` (one of a, b, c)` for an unknown name."""
    choices = list(choices)
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    close = close or [c for c in choices if word and (c.startswith(word) or word.startswith(c))]
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (one of {', '.join(choices)})"


def split_spec(text: str) -> tuple[str, list[str]]:
    """Split `kind:a,b=c` into the kind and its items; items are stripped, empties dropped."""
    text = text.strip()
    kind, _, body = text.partition(":")
    items = [item.strip() for item in body.split(",")] if body.strip() else []
    return kind.strip().lower(), [item for item in items if item]


def parse_number(value: Any, path: str, what: str = "a number") -> float:
    """A finite float from a TOML number or a CLI string."""
    if isinstance(value, bool):
        raise ProfileError(path, f"expected {what}, got {value!r}")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise ProfileError(path, f"expected {what}, got {value!r}") from None
    else:
        raise ProfileError(path, f"expected {what}, got {type(value).__name__} {value!r}")
    if not math.isfinite(number):
        raise ProfileError(path, f"expected {what}, got {value!r}")
    return number


def parse_int(value: Any, path: str, what: str = "a whole number") -> int:
    """A whole number from a TOML integer or a CLI string (`3`, not `3.5`)."""
    number = parse_number(value, path, what)
    if number != int(number):
        raise ProfileError(path, f"expected {what}, got {value!r}")
    return int(number)


def check_range(
    number: float,
    path: str,
    low: float | None = None,
    *,
    strict: bool = False,
    high: float | None = None,
) -> float:
    """Raise unless `low < number` (strict) or `low <= number`, and `number <= high`."""
    if low is not None and (number <= low if strict else number < low):
        relation = ">" if strict else ">="
        raise ProfileError(path, f"{_fmt(number)} is out of range (must be {relation} {_fmt(low)})")
    if high is not None and number > high:
        raise ProfileError(path, f"{_fmt(number)} is out of range (must be <= {_fmt(high)})")
    return number


def _fmt(x: float) -> str:
    return f"{x:g}"


def fmt_ms(x: float) -> str:
    """A number for a spec string: `30`, `0.5`, `1e+06` (shortest exact-enough form)."""
    return f"{x:.6g}"
