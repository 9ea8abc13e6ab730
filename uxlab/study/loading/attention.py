"""`[attention]`: known-answer checks among the trials."""

from __future__ import annotations

import math

from uxlab.reading import did_you_mean, study_level_max
from uxlab.shaping import Profile, ProfileError
from uxlab.study.loading import model as m
from uxlab.study.loading import sections
from uxlab.study.loading.reader import StudyReader
from uxlab.study.questions import REGISTRY, question_type
from uxlab.study.spec import Attention, Factor, Question, StudyError

_known = [name for name, t in REGISTRY.items() if t.known_answer]
_KNOWN_ANSWER_TYPES = ", ".join(_known[:-1]) + " or " + _known[-1]
"""The question types an attention check can ask, in words: `likert, yesno, choice or slider`."""


def read_attention(
    r: StudyReader,
    a: sections.Attention | None,
    questions: list[Question],
    factors: list[Factor],
    profile: Profile,
) -> Attention | None:
    """`[attention]` (optional): the question asked must be a per-trial one with a known
    answer, the answer one of its answers, the levels those of within factors."""
    if a is None:
        return None
    trial_qs = [q for q in questions if q.when == "trial"]
    qid = a.question
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
    answer = str(a.answer)
    valid = question_type(q.type).valid_answers(q)
    if valid is not None and answer not in valid:
        raise r.err(
            "[attention].answer",
            f"{answer!r} is not an answer to {qid!r}; expected one of: {', '.join(valid)}",
        )
    levels = None
    if (lv := m.given(a.levels)) is not None:
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
    return Attention(every=a.every, text=a.text, question=qid, answer=answer, levels=levels)
