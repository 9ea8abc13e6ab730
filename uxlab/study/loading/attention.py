"""`[attention]`: known-answer checks among the trials."""

from __future__ import annotations

import math
from typing import Any

from uxlab.reading import did_you_mean, study_level_max
from uxlab.shaping import Profile, ProfileError
from uxlab.study.loading.reader import StudyReader, section_keys
from uxlab.study.questions import REGISTRY, question_type
from uxlab.study.spec import Attention, Factor, Question, StudyError

_known = [name for name, t in REGISTRY.items() if t.known_answer]
_KNOWN_ANSWER_TYPES = ", ".join(_known[:-1]) + " or " + _known[-1]
"""The question types an attention check can ask, in words: `likert, yesno, choice or slider`."""


def read_attention(
    r: StudyReader,
    doc: dict[str, Any],
    questions: list[Question],
    factors: list[Factor],
    profile: Profile,
) -> Attention | None:
    """`[attention]` (optional): how often, the text streamed, the question and its answer."""
    a = r.table(doc, "attention", required=False)
    if not a:
        return None
    r.unknown(a, section_keys("attention"), "[attention]")
    every = r.positive_int(a, "every", "[attention]", minimum=2)
    text = r.text(a, "text", "[attention]")
    trial_qs = [q for q in questions if q.when == "trial"]
    qid = r.text(a, "question", "[attention]")
    q = next((x for x in trial_qs if x.id == qid), None)
    if q is None:
        raise r.err(
            "[attention].question",
            f"{qid!r} is not a per-trial question" + did_you_mean(qid, [x.id for x in trial_qs]),
        )
    if not question_type(q.type).known_answer:
        raise r.err(
            "[attention].question",
            f"{qid!r} is a free-text question; a known answer needs {_KNOWN_ANSWER_TYPES}",
        )
    answer = a.get("answer")
    if isinstance(answer, bool) or not isinstance(answer, (str, int, float)):
        raise r.err("[attention].answer", f"{answer!r} is not a valid answer")
    answer = str(answer)
    valid = question_type(q.type).valid_answers(q)
    if valid is not None and answer not in valid:
        raise r.err(
            "[attention].answer",
            f"{answer!r} is not an answer to {qid!r}; expected one of: {', '.join(valid)}",
        )
    levels = None
    if "levels" in a:
        lv = r.get(a, "levels", "[attention]", (dict,), what="a table of factor levels")
        names = [f.name for f in factors if not f.between]
        for k, v in lv.items():
            if k not in names:
                raise r.err(
                    f"[attention].levels.{k}",
                    "not a within factor of this study" + did_you_mean(k, names),
                )
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise r.err(f"[attention].levels.{k}", f"{v!r} is not a valid level")
            if not math.isfinite(v) or v > study_level_max(k):
                raise r.err(
                    f"[attention].levels.{k}",
                    f"{v:g} is not plausible (at most {study_level_max(k):g})",
                )
        try:
            profile.with_factors(dict(lv), where="[attention].levels")
        except ProfileError as exc:
            raise StudyError(r.path, None, str(exc)) from None
        levels = dict(lv)
    return Attention(every=every, text=text, question=qid, answer=answer, levels=levels)
