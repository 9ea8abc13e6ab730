"""Answers checked against their questions and normalised to the stored text."""

from __future__ import annotations

from typing import Any

from uxlab.store.schema import StoreError
from uxlab.study.spec import Question


def _normalise_responses(
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
    if value is None:
        return None
    bad = StoreError(f"{where}: {q.id} ({q.type}) cannot take {value!r}")
    if q.type == "yesno":
        if isinstance(value, bool):
            return "yes" if value else "no"
        if str(value).lower() in ("yes", "no"):
            return str(value).lower()
        raise bad
    if q.type == "likert":
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise bad
        try:
            n = int(value)
        except ValueError:
            raise bad from None
        if not 1 <= n <= (q.scale or 0):
            raise bad
        return str(n)
    if q.type == "choice":
        if value not in q.options:
            raise bad
        return str(value)
    if q.type == "slider":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad
        if not (q.min or 0.0) <= value <= (q.max or 0.0):
            raise bad
        return repr(float(value))
    return str(value)


def _matches(q: Question, given: str | None, answer: str) -> bool:
    if given is None:
        return False
    if q.type == "slider":
        span = (q.max or 0.0) - (q.min or 0.0)
        return abs(float(given) - float(answer)) <= 0.05 * span
    if q.type == "likert":
        return int(given) == int(answer)
    return given == answer
