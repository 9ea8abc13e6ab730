"""What every question type says about itself: one `QuestionType` per kind of question.

A type is asked for each step a question goes through: reading its own keys from the study
file (`parse`), describing itself in `study.json` (`fields`), the answers an attention check
may expect (`valid_answers`), taking an answer for the store (`normalise`) and judging it
against a known one (`matches`), writing it to the trial table (`export_value`), the seconds
a participant needs (`answer_s`, for duration estimates), and what a simulated participant
answers (`simulated_answer`) with which keys (`answer_keys`). The terminal widget for a type
is registered in `uxlab.tui.questions` under the same name.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Protocol

import msgspec
import numpy as np

from trial_table_spec import AnswerKind


class AskedQuestion(Protocol):
    """The fields of a study question a type reads (`uxlab.study.spec.Question`)."""

    @property
    def id(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def scale(self) -> int | None: ...
    @property
    def labels(self) -> tuple[str, ...]: ...
    @property
    def acceptable_at(self) -> int | None: ...
    @property
    def yes_means(self) -> str | None: ...
    @property
    def options(self) -> tuple[str, ...]: ...
    @property
    def min(self) -> float | None: ...
    @property
    def max(self) -> float | None: ...


class FieldReader(Protocol):
    """What a type needs of the study file reader (`uxlab.study.loading.reader`)."""

    def err(self, key: str | None, problem: str) -> Exception: ...
    def get(
        self,
        table: dict[str, Any],
        key: str,
        where: str,
        types: tuple[type, ...],
        default: Any = ...,
        what: str | None = None,
    ) -> Any: ...
    def positive_int(
        self, table: dict[str, Any], key: str, where: str, default: Any = ..., minimum: int = 1
    ) -> Any: ...
    def number(self, table: dict[str, Any], key: str, where: str, default: Any = ...) -> Any: ...
    def choice(
        self,
        table: dict[str, Any],
        key: str,
        where: str,
        choices: tuple[str, ...],
        default: Any = ...,
    ) -> Any: ...


class Judge(Protocol):
    """A simulated participant's view of the trial just shown (`uxlab.simulate.observers`)."""

    def p_too_slow(self) -> float:
        """The chance this person calls the trial too slow."""
        ...

    def core_too_slow(self) -> float:
        """How slow the trial felt, 0..1, before any lapse or bias."""
        ...

    def rating(self, scale: int, rng: np.random.Generator) -> int:
        """A rating on a `scale`-point scale (1 = worst)."""
        ...


class QuestionType:
    """One kind of question; subclasses override what differs from free text."""

    name: ClassVar[str]
    keys: ClassVar[tuple[str, ...]] = ()
    """The type's own keys in a `[[questions]]` table (beyond id, type, text, when)."""
    key_types: ClassVar[dict[str, Any]] = {}
    """Each own key's type for the study file's JSON Schema (`msgspec` types, with ranges
    and a description in `msgspec.Meta`); `parse` is what checks them when a study loads."""
    required_keys: ClassVar[tuple[str, ...]] = ()
    """The own keys a question of this type must have."""
    example: ClassVar[dict[str, Any]] = {}
    """The type's own keys of an example question, as written in a study file (for tests)."""
    answer_s: ClassVar[float]
    """Seconds a participant needs to answer one (a rough figure for duration estimates)."""
    answer_required: ClassVar[bool] = True
    """False: the participant may skip it (Enter on an empty answer)."""
    known_answer: ClassVar[bool] = True
    """Whether an attention check can ask it (a known answer can be given)."""
    export_encoding: ClassVar[str | None] = None
    """How `export_value` codes an answer, for `study.json` (None: as stored)."""
    answer_kind: ClassVar[AnswerKind] = "text"
    """What its `q_<id>` cell holds (`trial_table_spec.AnswerKind`): the analysis checks
    answers by kind, read from `study.json`."""

    def parse(self, r: FieldReader, table: dict[str, Any], where: str) -> dict[str, Any]:
        """The `Question` fields of this type read from its table (checked)."""
        return {}

    def fields(self, q: AskedQuestion) -> dict[str, Any]:
        """The type's fields of `Question.to_dict` (the study summary and `study.json`)."""
        return {}

    def valid_answers(self, q: AskedQuestion) -> list[str] | None:
        """Every answer as text, when the answers are a short list (None: not listed)."""
        return None

    def normalise(self, q: AskedQuestion, value: Any) -> str:
        """The answer as the store keeps it (text); ValueError when `q` cannot take it."""
        return str(value)

    def matches(self, q: AskedQuestion, given: str, answer: str) -> bool:
        """Whether a stored answer is the known `answer` (of an attention check)."""
        return given == answer

    def export_value(self, value: str) -> Any:
        """A stored answer as the trial table's `q_<id>` cell."""
        return value

    def attention_value(self, answer: str) -> Any:
        """The value a simulated participant gives for an attention check's `answer`."""
        return answer

    def simulated_answer(self, q: AskedQuestion, judge: Judge, rng: np.random.Generator) -> Any:
        """What a simulated participant answers (as the store takes it)."""
        raise NotImplementedError

    def answer_keys(self, q: AskedQuestion, value: Any) -> tuple[list[str], Any]:
        """The keys that give `value` in the runner's widget, and the value they give."""
        raise NotImplementedError


Labels = Annotated[
    list[str],
    msgspec.Meta(max_length=2, description='none, or the two end labels: ["Slow", "Fast"]'),
]
"""A scale's end labels (the loader also refuses a single one)."""


def read_labels(r: FieldReader, table: dict[str, Any], where: str, n: int) -> tuple[str, ...]:
    """`labels`: empty, or `n` strings (the end labels of a scale)."""
    labels = r.get(table, "labels", where, (list,), [], "a list of strings")
    if labels and (len(labels) != n or not all(isinstance(x, str) for x in labels)):
        raise r.err(f"{where}.labels", f"needs {n} strings (the two end labels), got {labels!r}")
    return tuple(labels)
