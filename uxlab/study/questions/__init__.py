"""The question types: one module per type, each a `QuestionType` (`base`), registered here.

A new type is one module here (a `QuestionType` subclass added to `_TYPES`) plus one widget
factory in `uxlab.tui.questions` registered under the same name; the registry's test checks
that every type has both and a simulated answer.
"""

from uxlab.study.questions.base import AskedQuestion, FieldReader, Judge, QuestionType
from uxlab.study.questions.choice import Choice
from uxlab.study.questions.likert import Likert
from uxlab.study.questions.slider import Slider, slider_step
from uxlab.study.questions.text import FREE_TEXT_ANSWER, FreeText
from uxlab.study.questions.yesno import YES_MEANS, YesNo

_TYPES: tuple[QuestionType, ...] = (Likert(), YesNo(), Choice(), Slider(), FreeText())
REGISTRY: dict[str, QuestionType] = {t.name: t for t in _TYPES}
"""Every question type by its name (`type = "likert"` in a study file), in the file's order."""


def question_type(name: str) -> QuestionType:
    """The registered type called `name` (KeyError when there is none)."""
    return REGISTRY[name]


__all__ = [
    "FREE_TEXT_ANSWER",
    "REGISTRY",
    "YES_MEANS",
    "AskedQuestion",
    "FieldReader",
    "Judge",
    "QuestionType",
    "question_type",
    "slider_step",
]
