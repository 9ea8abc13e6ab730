"""A number between `min` and `max`, placed with the arrow keys in about 100 steps."""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar

import msgspec
import numpy as np

from uxlab.reading import MAX_SLIDER_ABS
from uxlab.study.questions.base import (
    AskedQuestion,
    FieldReader,
    Judge,
    Labels,
    QuestionType,
    read_labels,
)


def slider_step(lo: float, hi: float) -> float:
    """The slider widget's step: about 100 presses over the span (1 for 0..100)."""
    step = (hi - lo) / 100.0
    return 1.0 if step >= 1.0 else 10 ** round(math.log10(step))


class Slider(QuestionType):
    name = "slider"
    keys = ("min", "max", "labels")
    answer_s = 5.0
    answer_kind = "number"
    key_types: ClassVar[dict[str, Any]] = {
        "min": Annotated[
            float,
            msgspec.Meta(
                ge=-MAX_SLIDER_ABS, le=MAX_SLIDER_ABS, description="the left end (default 0)"
            ),
        ],
        "max": Annotated[
            float,
            msgspec.Meta(
                ge=-MAX_SLIDER_ABS,
                le=MAX_SLIDER_ABS,
                description="the right end, above min (default 100)",
            ),
        ],
        "labels": Labels,
    }
    example: ClassVar[dict[str, Any]] = {"min": 0, "max": 100}

    def parse(self, r: FieldReader, table: dict[str, Any], where: str) -> dict[str, Any]:
        lo = r.number(table, "min", where, 0)
        hi = r.number(table, "max", where, 100)
        if hi <= lo:
            raise r.err(f"{where}.max", f"{hi} must be above min ({lo})")
        for end, value in (("min", lo), ("max", hi)):
            if abs(value) > MAX_SLIDER_ABS:
                raise r.err(
                    f"{where}.{end}",
                    f"{value:g} is not plausible (within ±{MAX_SLIDER_ABS:g})",
                )
        return {"min": float(lo), "max": float(hi), "labels": read_labels(r, table, where, 2)}

    def fields(self, q: AskedQuestion) -> dict[str, Any]:
        return {"min": q.min, "max": q.max, "labels": list(q.labels)}

    def normalise(self, q: AskedQuestion, value: Any) -> str:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(value)
        if not (q.min or 0.0) <= value <= (q.max or 0.0):
            raise ValueError(value)
        return repr(float(value))

    def matches(self, q: AskedQuestion, given: str, answer: str) -> bool:
        span = (q.max or 0.0) - (q.min or 0.0)
        return abs(float(given) - float(answer)) <= 0.05 * span

    def export_value(self, value: str) -> Any:
        return float(value)

    def simulated_answer(self, q: AskedQuestion, judge: Judge, rng: np.random.Generator) -> Any:
        lo, hi = q.min or 0.0, q.max or 100.0
        return round(lo + (hi - lo) * (1.0 - judge.core_too_slow()), 1)

    def answer_keys(self, q: AskedQuestion, value: Any) -> tuple[list[str], Any]:
        lo = float(q.min if q.min is not None else 0.0)
        hi = float(q.max if q.max is not None else 100.0)
        step = slider_step(lo, hi)
        start = lo + round((hi - lo) / 2 / step) * step  # the first arrow places it mid-way
        target = min(hi, max(lo, lo + round((float(value) - lo) / step) * step))
        n = round((target - start) / step)
        right, left = ("shift+right", "right"), ("shift+left", "left")
        big, small = right if n >= 0 else left
        keys = ["right"] + [big] * (abs(n) // 10) + [small] * (abs(n) % 10) + ["enter"]
        reached = min(hi, max(lo, round((start + n * step) / step) * step))
        return keys, round(reached, 10)
