"""The one did-you-mean, and a value's kind in words, for errors about names and types."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any


def did_you_mean(word: str, choices: Iterable[str], fmt: str = "{!r}") -> str:
    """` (did you mean 'x'?)` for an unknown name close to a choice (or a prefix of one, or
    extended from one), else ` (one of 'a', 'b')`. `fmt` shows a choice (`"[{}]"` for a
    section)."""
    choices = list(choices)
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    close = close or [c for c in choices if word and (c.startswith(word) or word.startswith(c))]
    if close:
        return f" (did you mean {fmt.format(close[0])}?)"
    return " (one of " + ", ".join(fmt.format(c) for c in choices) + ")"


TYPE_WORDS: dict[type, str] = {
    str: "a string",
    int: "a whole number",
    float: "a number",
    bool: "true or false",
    list: "a list",
    dict: "a table",
}
"""A TOML/JSON value's kind in words."""


def type_name(value: Any) -> str:
    """A TOML value's kind in words (`a string`, `a table`, ...)."""
    return TYPE_WORDS.get(type(value), type(value).__name__)
