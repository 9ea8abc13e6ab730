"""`[[questions]]` and `[chain]`: what is asked, when, and after which chain steps."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from uxlab.chain import Chain
from uxlab.reading import MAX_SLIDER_ABS
from uxlab.study.loading.reader import SECTIONS, StudyReader
from uxlab.study.spec import QUESTION_TYPES, QUESTION_WHEN, YES_MEANS, Question, step_response_id

QUESTION_KEYS = (
    "id",
    "type",
    "text",
    "when",
    "scale",
    "labels",
    "acceptable_at",
    "yes_means",
    "options",
    "min",
    "max",
)


def read_questions(r: StudyReader, doc: dict) -> list[Question]:
    """`[[questions]]`: each question's id, type, text, when and its type's own keys."""
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
        allowed = {
            "likert": ("scale", "labels", "acceptable_at"),
            "yesno": ("yes_means",),
            "choice": ("options",),
            "slider": ("min", "max", "labels"),
            "text": (),
        }[qtype]
        for key in ("scale", "labels", "acceptable_at", "yes_means", "options", "min", "max"):
            if key in q and key not in allowed:
                raise r.err(f"{where}.{key}", f"not used by a {qtype} question")
        if qtype == "likert":
            scale = r.positive_int(q, "scale", where, minimum=2)
            if scale > 11:
                raise r.err(f"{where}.scale", f"{scale} points is too many (2 to 11)")
            kw["scale"] = scale
            kw["labels"] = _labels(r, q, where, 2)
            acc = r.positive_int(q, "acceptable_at", where, None)
            if acc is not None and acc > scale:
                raise r.err(f"{where}.acceptable_at", f"{acc} is outside the scale 1..{scale}")
            kw["acceptable_at"] = acc
        elif qtype == "yesno":
            kw["yes_means"] = r.choice(q, "yes_means", where, YES_MEANS, "acceptable")
        elif qtype == "choice":
            opts = r.get(q, "options", where, (list,), what="a list of options")
            if len(opts) < 2 or not all(isinstance(o, str) and o for o in opts):
                raise r.err(f"{where}.options", "needs at least two non-empty strings")
            kw["options"] = tuple(opts)
        elif qtype == "slider":
            lo = r.number(q, "min", where, 0)
            hi = r.number(q, "max", where, 100)
            if hi <= lo:
                raise r.err(f"{where}.max", f"{hi} must be above min ({lo})")
            for end, value in (("min", lo), ("max", hi)):
                if abs(value) > MAX_SLIDER_ABS:
                    raise r.err(
                        f"{where}.{end}",
                        f"{value:g} is not plausible (within ±{MAX_SLIDER_ABS:g})",
                    )
            kw.update(min=float(lo), max=float(hi), labels=_labels(r, q, where, 2))
        out.append(Question(**kw))
    return out


def _labels(r: StudyReader, q: dict, where: str, n: int) -> tuple[str, ...]:
    labels = r.get(q, "labels", where, (list,), [], "a list of strings")
    if labels and (len(labels) != n or not all(isinstance(x, str) for x in labels)):
        raise r.err(f"{where}.labels", f"needs {n} strings (the two end labels), got {labels!r}")
    return tuple(labels)


def read_chain_asks(
    r: StudyReader, doc: dict, chains: dict[str, Chain] | None, questions: list[Question]
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
    r.unknown(c, SECTIONS["chain"], "[chain]")
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
