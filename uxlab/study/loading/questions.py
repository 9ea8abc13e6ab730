"""`[[questions]]` and `[chain]`: what is asked, when, and after which chain steps."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from uxlab.kinds.chain import Chain
from uxlab.study.loading.reader import StudyReader, section_keys
from uxlab.study.questions import REGISTRY, question_type
from uxlab.study.spec import QUESTION_TYPES, QUESTION_WHEN, Question, step_response_id

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


def read_chain_asks(
    r: StudyReader, doc: dict[str, Any], chains: dict[str, Chain] | None, questions: list[Question]
) -> tuple[tuple[int, ...], list[Question]]:
    """`[chain] ask_after_steps` and the `when = "step"` questions asked there."""
    c = r.table(doc, "chain", required=False)
    step_qs = [i for i, q in enumerate(questions) if q.when == "step"]
    if chains is None:
        if "chain" in doc:
            raise r.err("[chain]", 'only in a chain study ([stimuli] kind = "chain")')
        if step_qs:
            raise r.err(
                f"[[questions]][{step_qs[0]}].when",
                '"step" questions are asked mid-chain: only in a chain study '
                '([stimuli] kind = "chain"); use "trial" or "end"',
            )
        return (), questions
    r.unknown(c, section_keys("chain"), "[chain]")
    where = "[chain].ask_after_steps"
    raw = r.get(c, "ask_after_steps", "[chain]", (list,), [], "a list of step numbers")
    last = max(len(ch.steps) for ch in chains.values()) - 2  # the last working step
    steps: list[int] = []
    for i, x in enumerate(raw):
        if isinstance(x, bool) or not isinstance(x, int) or x < 0:
            raise r.err(
                f"{where}[{i}]",
                f"{x!r} is not a step number (0, 1, ...: positions from 0, tool pauses "
                "counted, as in abandon_step)",
            )
        if x in steps:
            raise r.err(f"{where}[{i}]", f"{x} repeats step {x}")
        if x > last:
            raise r.err(
                f"{where}[{i}]",
                f"{x}: no chain has a step {x} before its final answer (steps count from "
                f"0, tool pauses included; use 0..{last})",
            )
        steps.append(x)
    if steps and not step_qs:
        raise r.err(where, 'no question to ask there: add [[questions]] with when = "step"')
    if step_qs and not steps:
        raise r.err(
            f"[[questions]][{step_qs[0]}].when",
            '"step" needs the steps to ask after: [chain] ask_after_steps = [2, 4]',
        )
    steps.sort()
    ids = {q.id for q in questions}
    for i in step_qs:
        for s in steps:
            rid = step_response_id(questions[i].id, s)
            if rid in ids:
                raise r.err(
                    f"[[questions]][{i}].id",
                    f"{questions[i].id!r} asked after step {s} is stored as {rid!r}, the id "
                    "of another question (rename one)",
                )
    out = [
        dataclasses.replace(q, after_steps=tuple(steps)) if q.when == "step" else q
        for q in questions
    ]
    return tuple(steps), out
