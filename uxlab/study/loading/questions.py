"""`[[questions]]` and the trial kind's sections: what is asked, when, and after which steps."""

from __future__ import annotations

from typing import Any

from uxlab import kinds
from uxlab.kinds import TrialKind
from uxlab.study.loading.model import TYPE_KEYS
from uxlab.study.loading.reader import StudyReader
from uxlab.study.questions import question_type
from uxlab.study.spec import Question

QUESTION_KEYS = ("id", "type", "text", "when", *TYPE_KEYS)
"""Every key of a question: its own, and every type's (a key of another type is refused by
name)."""


def read_questions(r: StudyReader, doc: dict[str, Any], written: list[Any]) -> list[Question]:
    """`[[questions]]`: each question's id, type, text and when (`written`, checked by the
    model), its id unique, and its type's own keys (read by the type,
    `uxlab.study.questions`, from the table as written in `doc`)."""
    out: list[Question] = []
    for i, (w, q) in enumerate(zip(written, doc.get("questions", []), strict=True)):
        where = f"[[questions]][{i}]"
        qid, qtype = w.id, w.type
        if any(o.id == qid for o in out):
            raise r.err(f"{where}.id", f"{qid!r} is used by another question")
        kw: dict[str, Any] = {"id": qid, "type": qtype, "text": w.text, "when": w.when}
        qt = question_type(qtype)
        for key in TYPE_KEYS:
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
