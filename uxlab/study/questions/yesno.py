"""A yes/no judgement; `yes_means` says whether "yes" is acceptable or too slow."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import msgspec
import numpy as np

from uxlab.study.questions.base import AskedQuestion, FieldReader, Judge, QuestionType

YES_MEANS = ("acceptable", "too_slow")


class YesNo(QuestionType):
    name = "yesno"
    keys = ("yes_means",)
    key_types: ClassVar[dict[str, Any]] = {
        "yes_means": Annotated[
            Literal[YES_MEANS],
            msgspec.Meta(description='what "yes" says of the wait (default acceptable)'),
        ]
    }
    answer_s = 2.5
    example: ClassVar[dict[str, Any]] = {"yes_means": "acceptable"}
    export_encoding = "1 = yes, 0 = no"
    answer_kind = "binary"

    def parse(self, r: FieldReader, table: dict[str, Any], where: str) -> dict[str, Any]:
        return {"yes_means": r.choice(table, "yes_means", where, YES_MEANS, "acceptable")}

    def fields(self, q: AskedQuestion) -> dict[str, Any]:
        return {"yes_means": q.yes_means}

    def valid_answers(self, q: AskedQuestion) -> list[str] | None:
        return ["yes", "no"]

    def normalise(self, q: AskedQuestion, value: Any) -> str:
        if isinstance(value, bool):
            return "yes" if value else "no"
        if str(value).lower() in ("yes", "no"):
            return str(value).lower()
        raise ValueError(value)

    def export_value(self, value: str) -> Any:
        return 1 if value == "yes" else 0

    def simulated_answer(self, q: AskedQuestion, judge: Judge, rng: np.random.Generator) -> Any:
        slow = rng.random() < judge.p_too_slow()
        yes = (not slow) if (q.yes_means or "acceptable") == "acceptable" else slow
        return "yes" if yes else "no"

    def answer_keys(self, q: AskedQuestion, value: Any) -> tuple[list[str], Any]:
        return ["y" if value == "yes" else "n", "enter"], value
