"""A free-text answer; optional (Enter on an empty box skips it)."""

from __future__ import annotations

from typing import Any

import numpy as np

from uxlab.errors import UxlabError
from uxlab.study.questions.base import AskedQuestion, Judge, QuestionType

FREE_TEXT_ANSWER = "none"
"""What a simulated participant types into a free-text box (the runner needs some text)."""


class FreeText(QuestionType):
    name = "text"
    answer_s = 20.0
    answer_required = False
    known_answer = False

    def simulated_answer(self, q: AskedQuestion, judge: Judge, rng: np.random.Generator) -> Any:
        return None  # nothing typed

    def answer_keys(self, q: AskedQuestion, value: Any) -> tuple[list[str], Any]:
        text = FREE_TEXT_ANSWER if value is None or not str(value).strip() else str(value)
        if not all(ch.isascii() and ch.isalnum() for ch in text):
            raise UxlabError(f"question {q.id!r}: can only type letters and digits, not {text!r}")
        return [*text, "enter"], text
