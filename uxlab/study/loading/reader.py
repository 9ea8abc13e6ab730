"""The study file reader's typed getters: each raises `StudyError` naming file, key and problem."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from uxlab.reading import TYPE_WORDS, did_you_mean, toml_line_of, type_name
from uxlab.study.keys import check_key
from uxlab.study.spec import StudyError


class StudyReader:
    """Reads values from one study file's tables, raising StudyError at the first problem."""

    def __init__(self, path: Path, source: str = ""):
        self.path = path
        self.source = source
        """The file's text (to find the line of a key)."""

    def err(self, key: str | None, problem: str) -> StudyError:
        return StudyError(self.path, key, problem)

    def table(self, doc: dict[str, Any], name: str, required: bool = True) -> dict[str, Any]:
        if name not in doc:
            if required:
                raise self.err(f"[{name}]", "missing section")
            return {}
        value = doc[name]
        if not isinstance(value, dict):
            raise self.err(f"[{name}]", f"must be a table, not {type_name(value)}")
        return value

    def unknown(self, table: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
        for key in table:
            if key not in allowed:
                raise self.err(f"{where}.{key}", "unknown key" + did_you_mean(key, allowed))

    def get(
        self,
        table: dict[str, Any],
        key: str,
        where: str,
        types: tuple[type, ...],
        default: Any = ...,
        what: str | None = None,
    ) -> Any:
        if key not in table:
            if default is ...:
                raise self.err(f"{where}.{key}", "missing (required)")
            return default
        value = table[key]
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
        if not ok:
            want = what or " or ".join(TYPE_WORDS.get(t, t.__name__) for t in types)
            raise self.err(f"{where}.{key}", f"{value!r} is not {want}")
        return value

    def text(self, table: dict[str, Any], key: str, where: str, default: Any = ...) -> Any:
        value = self.get(table, key, where, (str,), default, "a string")
        if isinstance(value, str) and not value.strip():
            raise self.err(f"{where}.{key}", "is empty")
        return value

    def positive_int(
        self, table: dict[str, Any], key: str, where: str, default: Any = ..., minimum: int = 1
    ) -> Any:
        value = self.get(table, key, where, (int,), default, "a whole number")
        if isinstance(value, int) and value < minimum:
            raise self.err(f"{where}.{key}", f"{value} must be at least {minimum}")
        return value

    def number(self, table: dict[str, Any], key: str, where: str, default: Any = ...) -> Any:
        value = self.get(table, key, where, (int, float), default, "a number")
        if isinstance(value, (int, float)) and not math.isfinite(value):
            raise self.err(f"{where}.{key}", f"{value} is not a finite number")
        return value

    def choice(
        self,
        table: dict[str, Any],
        key: str,
        where: str,
        choices: tuple[str, ...],
        default: Any = ...,
    ) -> Any:
        value = self.get(table, key, where, (str,), default, "a string")
        if value is not None and value not in choices:
            raise self.err(
                f"{where}.{key}",
                f"{value!r} is not allowed" + did_you_mean(value, choices),
            )
        return value

    def key_name(self, raw: str, key: str, section: str, live_question_types: set[str]) -> str:
        """A key the participant presses, in Textual's spelling (`esc` -> `escape`), or a
        StudyError with the line when no terminal can deliver it to the trial screen
        (`raw`: as written; `live_question_types`: the kinds of question on screen while the
        key is live)."""
        name, problem = check_key(
            raw,
            questions_live=bool(live_question_types),
            typing_live="text" in live_question_types,
        )
        if problem is not None:
            line = toml_line_of(self.source, section, key)
            raise StudyError(self.path, f"[{section}].{key}", problem, line=line)
        return name
