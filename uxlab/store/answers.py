"""Answers checked against their questions and normalised to the stored text."""

from __future__ import annotations

from typing import Any

from uxlab.store.schema import StoreError
from uxlab.study.questions import question_type
from uxlab.study.spec import Question


def normalise_responses(
    questions: list[Question], responses: dict[str, Any], where: str
) -> dict[str, tuple[str | None, float | None]]:
    """Check answers against their questions; returns {id: (value as text, rt_ms)}."""
    by_id = {q.id: q for q in questions}
    out: dict[str, tuple[str | None, float | None]] = {}
    for qid, answer in responses.items():
        if qid not in by_id:
            raise StoreError(
                f"{where}: {qid!r} is not one of the questions asked here "
                f"({', '.join(by_id) or 'none'})"
            )
        if isinstance(answer, dict):
            value, rt_ms = answer.get("value"), answer.get("rt_ms")
        elif isinstance(answer, (tuple, list)) and len(answer) == 2:
            value, rt_ms = answer
        else:
            value, rt_ms = answer, None
        if rt_ms is not None and not isinstance(rt_ms, (int, float)):
            raise StoreError(f"{where}: {qid} response time {rt_ms!r} is not a number")
        out[qid] = (_check_value(by_id[qid], value, where), rt_ms)
    return out


def _check_value(q: Question, value: Any, where: str) -> str | None:
    """The answer as stored: its type's `normalise` (`uxlab.study.questions`)."""
    if value is None:
        return None
    try:
        return question_type(q.type).normalise(q, value)
    except ValueError:
        raise StoreError(f"{where}: {q.id} ({q.type}) cannot take {value!r}") from None


def answer_matches(q: Question, given: str | None, answer: str) -> bool:
    """Whether a stored answer is an attention check's known answer (its type's `matches`)."""
    return given is not None and question_type(q.type).matches(q, given, answer)
