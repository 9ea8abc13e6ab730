"""`[[questions]]` and the trial kind's sections: what is asked, when, and after which steps."""

from __future__ import annotations

import re
from typing import Any

from uxlab import kinds
from uxlab.kinds import TrialKind
from uxlab.study.loading.reader import StudyReader
from uxlab.study.questions import REGISTRY, question_type
from uxlab.study.spec import QUESTION_TYPES, QUESTION_WHEN, Question

_TYPE_KEYS = tuple(dict.fromkeys(k for t in REGISTRY.values() for k in t.keys))
"""Every question type's own keys (a key of another type is refused by name)."""
QUESTION_KEYS = ("id", "type", "text", "when", *_TYPE_KEYS)


def read_questions(r: StudyReader, doc: dict[str, Any]) -> list[Question]:
    """`[[questions]]`: each question's id, type, text, when and its type's own keys (read by
    the type, `uxlab.study.questions`)."""
    qs = doc.get("questions", [])
    if not isinstance(qs, list) or not all(isinstance(q, dict) for q in qs):
        raise r.err("[[questions]]", "must be an array of tables ([[questions]])")
    out: list[Question] = []
    for i, q in enumerate(qs):
        where = f"[[questions]][{i}]"
        r.unknown(q, QUESTION_KEYS, where)
        qid = r.text(q, "id", where)
        if not re.match(r"^[a-z][a-z0-9_]*$", qid):
            raise r.err(
                f"{where}.id",
                f"{qid!r} must be lower-case letters, digits "
                "and '_', starting with a letter (it becomes column q_<id>)",
            )
        if any(o.id == qid for o in out):
            raise r.err(f"{where}.id", f"{qid!r} is used by another question")
        qtype = r.choice(q, "type", where, QUESTION_TYPES)
        kw: dict[str, Any] = {
            "id": qid,
            "type": qtype,
            "text": r.text(q, "text", where),
            "when": r.choice(q, "when", where, QUESTION_WHEN, "trial"),
        }
        qt = question_type(qtype)
        for key in _TYPE_KEYS:
            if key in q and key not in qt.keys:
                raise r.err(f"{where}.{key}", f"not used by a {qtype} question")
        kw.update(qt.parse(r, q, where))
        out.append(Question(**kw))
    return out


def read_kind_sections(
    r: StudyReader, doc: dict[str, Any], kind: TrialKind, questions: list[Question]
) -> tuple[tuple[int, ...], list[Question]]:
    """The trial kind's own sections (`TrialKind.read_sections`): the steps its trials are
    held after and the `when = "step"` questions asked there. Another kind's section, or a
    "step" question where trials have no steps, is refused naming the kind that takes it."""
    for name in kinds.sections():
        if name in doc and name not in kind.sections:
            owner = next(k for k in kinds.REGISTRY.values() if name in k.sections)
            raise r.err(
                f"[{name}]", f'only in a {owner.noun} study ([stimuli] kind = "{owner.label}")'
            )
    step_qs = [i for i, q in enumerate(questions) if q.when == "step"]
    if step_qs and not kind.asks_after_steps:
        holder = next(k for k in kinds.REGISTRY.values() if k.asks_after_steps)
        raise r.err(
            f"[[questions]][{step_qs[0]}].when",
            f'"step" questions are asked mid-{holder.noun}: only in a {holder.noun} study '
            f'([stimuli] kind = "{holder.label}"); use "trial" or "end"',
        )
    return kind.read_sections(r, doc, questions)
