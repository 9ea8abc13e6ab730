"""One of a list of options (at least two)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import msgspec
import numpy as np

from uxlab.study.questions.base import AskedQuestion, FieldReader, Judge, QuestionType


class Choice(QuestionType):
    name = "choice"
    keys = ("options",)
    key_types: ClassVar[dict[str, Any]] = {
        "options": Annotated[
            list[Annotated[str, msgspec.Meta(min_length=1)]],
            msgspec.Meta(min_length=2, description="the options, in the order shown"),
        ]
    }
    required_keys = ("options",)
    answer_s = 4.0
    example: ClassVar[dict[str, Any]] = {"options": ["Helpful", "Neutral", "Rude"]}

    def parse(self, r: FieldReader, table: dict[str, Any], where: str) -> dict[str, Any]:
        opts = r.get(table, "options", where, (list,), what="a list of options")
        if len(opts) < 2 or not all(isinstance(o, str) and o for o in opts):
            raise r.err(f"{where}.options", "needs at least two non-empty strings")
        return {"options": tuple(opts)}

    def fields(self, q: AskedQuestion) -> dict[str, Any]:
        return {"options": list(q.options)}

    def valid_answers(self, q: AskedQuestion) -> list[str] | None:
        return list(q.options)

    def normalise(self, q: AskedQuestion, value: Any) -> str:
        if value not in q.options:
            raise ValueError(value)
        return str(value)

    def simulated_answer(self, q: AskedQuestion, judge: Judge, rng: np.random.Generator) -> Any:
        return q.options[int(rng.integers(len(q.options)))]

    def answer_keys(self, q: AskedQuestion, value: Any) -> tuple[list[str], Any]:
        i = list(q.options).index(value)
        if i < 9:
            return [str(i + 1), "enter"], value
        return ["down"] * (i + 1) + ["enter"], value
