"""A rating on a scale of 2 to 11 points, with optional end labels."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import msgspec
import numpy as np

from uxlab.study.questions.base import (
    AskedQuestion,
    FieldReader,
    Judge,
    Labels,
    QuestionType,
    read_labels,
)


class Likert(QuestionType):
    name = "likert"
    keys = ("scale", "labels", "acceptable_at")
    answer_s = 4.0
    key_types: ClassVar[dict[str, Any]] = {
        "scale": Annotated[int, msgspec.Meta(ge=2, le=11, description="points, 2 to 11")],
        "labels": Labels,
        "acceptable_at": Annotated[
            int, msgspec.Meta(ge=1, description="the lowest point that counts as acceptable")
        ],
    }
    required_keys = ("scale",)
    example: ClassVar[dict[str, Any]] = {"scale": 5, "labels": ["Slow", "Fast"], "acceptable_at": 4}
    export_encoding = "1..scale"
    answer_kind = "rating"

    def parse(self, r: FieldReader, table: dict[str, Any], where: str) -> dict[str, Any]:
        scale = r.positive_int(table, "scale", where, minimum=2)
        if scale > 11:
            raise r.err(f"{where}.scale", f"{scale} points is too many (2 to 11)")
        labels = read_labels(r, table, where, 2)
        acc = r.positive_int(table, "acceptable_at", where, None)
        if acc is not None and acc > scale:
            raise r.err(f"{where}.acceptable_at", f"{acc} is outside the scale 1..{scale}")
        return {"scale": scale, "labels": labels, "acceptable_at": acc}

    def fields(self, q: AskedQuestion) -> dict[str, Any]:
        return {"scale": q.scale, "labels": list(q.labels), "acceptable_at": q.acceptable_at}

    def valid_answers(self, q: AskedQuestion) -> list[str] | None:
        return [str(i) for i in range(1, (q.scale or 0) + 1)]

    def normalise(self, q: AskedQuestion, value: Any) -> str:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ValueError(value)
        n = int(value)
        if not 1 <= n <= (q.scale or 0):
            raise ValueError(value)
        return str(n)

    def matches(self, q: AskedQuestion, given: str, answer: str) -> bool:
        return int(given) == int(answer)

    def export_value(self, value: str) -> Any:
        return int(value)

    def attention_value(self, answer: str) -> Any:
        return int(answer)

    def simulated_answer(self, q: AskedQuestion, judge: Judge, rng: np.random.Generator) -> Any:
        return judge.rating(q.scale or 5, rng)

    def answer_keys(self, q: AskedQuestion, value: Any) -> tuple[list[str], Any]:
        point = int(value)
        if point <= 9:
            return [str(point), "enter"], point
        return ["right"] * point + ["enter"], point  # the first arrow selects point 1
