"""The study file as a typed model: every section's keys and their types, declared once.

`study_model()` is the whole file (`msgspec` structs, checked in one pass by
`uxlab.reading.convert` and written out as the file's JSON Schema); `WORDING` says each
field's problem in the words users of study files know (`[design].repeats: 0 must be at
least 1`), and `study_key` spells the library's field path as a study-file key path
(`design.repeats` -> `[design].repeats`, `questions[1].id` -> `[[questions]][1].id`).

What a part of the file reads itself stays `Any` here: `[stimuli]`'s keys of each trial
kind (`TrialKind.keys`, typed by the kind's `key_types` when it gives them), a kind's own
sections, `[profile]` (`ProfileTable`), the keys of each question type, and what only the
whole study can say (a factor is a profile parameter, a level is plausible for it, the
attention check's question is a per-trial one) is checked by the section readers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import cache
from typing import Annotated, Any, TypeVar, cast

import msgspec

from uxlab import kinds
from uxlab.reading import MAX_TIMEOUT_S, MISSING, Text, Wording, did_you_mean, type_name
from uxlab.reading.models import value_at
from uxlab.shaping.profile import ProfileTable
from uxlab.study.loading.sections import (
    MAX_LATE_MS,
    MAX_STALE_MIN,
    QUESTION_ID_PATTERN,
    UNSET,
    Abandon,
    Attention,
    Counterbalance,
    Design,
    FactorTable,
    Levels,
    Session,
    StudySection,
    Texts,
    Timing,
    Unset,
    one_of,
)
from uxlab.study.questions import REGISTRY
from uxlab.study.spec import ASSIGNMENTS, ORDERS, PROCEDURES, QUESTION_TYPES, QUESTION_WHEN

T = TypeVar("T")
TYPE_KEYS = tuple(dict.fromkeys(k for t in REGISTRY.values() for k in t.keys))
"""Every question type's own keys (each type reads its own, `uxlab.study.questions`)."""


class QuestionTable(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`[[questions]]`: one question (`Question` adds the keys of every question type)."""

    id: Annotated[
        str,
        msgspec.Meta(
            pattern=QUESTION_ID_PATTERN,
            description="lower-case letters, digits, '_': the trial table's column q_<id>",
        ),
    ]
    type: Annotated[
        one_of(QUESTION_TYPES),  # type: ignore[valid-type]
        msgspec.Meta(description="the kind of question; each type has its own keys"),
    ]
    text: Annotated[Text, msgspec.Meta(description="the question as the participant reads it")]
    when: Annotated[
        one_of(QUESTION_WHEN),  # type: ignore[valid-type]
        msgspec.Meta(description="after every trial, once at the end, or mid-chain"),
    ] = "trial"


Question = msgspec.defstruct(
    "Question",
    [(key, Any, UNSET) for key in TYPE_KEYS],
    bases=(QuestionTable,),
    forbid_unknown_fields=True,
    kw_only=True,
)
"""A question with its type's own keys (`Any` here: each type reads its own)."""


class StudyFile(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A study file: its sections (`study_model` adds `[stimuli]`'s keys and the sections
    of every trial kind registered)."""

    study: StudySection
    texts: Texts
    stimuli: msgspec.Struct
    profile: (
        Annotated[
            ProfileTable,  # type: ignore[valid-type]
            msgspec.Meta(
                description="the shaping profile every trial starts from (a factor's level "
                "replaces its key)"
            ),
        ]
        | Unset
    ) = UNSET
    factors: Annotated[
        dict[str, Levels | FactorTable],
        msgspec.Meta(
            min_length=1,
            description="each key a profile parameter: a list of levels, or a factor table",
        ),
    ]
    design: Design = msgspec.field(default_factory=Design)
    counterbalance: Counterbalance = msgspec.field(default_factory=Counterbalance)
    questions: Annotated[
        list[QuestionTable], msgspec.Meta(description="the questions, in the order asked")
    ] = msgspec.field(default_factory=list)
    abandon: Abandon = msgspec.field(default_factory=Abandon)
    attention: Attention | Unset = UNSET
    timing: Timing = msgspec.field(default_factory=Timing)
    session: Session = msgspec.field(default_factory=Session)


def _described(typ: Any, words: str | None) -> Any:
    """`typ` with a description for the JSON Schema (unchanged without one)."""
    return typ if words is None else Annotated[typ, msgspec.Meta(description=words)]


@cache
def _study_model(registered: tuple[type[kinds.TrialKind], ...]) -> type[StudyFile]:
    words = kinds.descriptions()
    own = tuple(
        (key, _described(kind.key_types.get(key, Any), words.get(key)))
        for kind in registered
        for key in kind.keys
    )
    stimuli = msgspec.defstruct(
        "Stimuli",
        [
            *((key, typ, UNSET) for key, typ in dict(own).items()),
            (
                "assignment",
                Annotated[
                    one_of(ASSIGNMENTS),
                    msgspec.Meta(
                        description="which recording each trial plays: in turn, "
                        "at random, or rotated across conditions"
                    ),
                ],
                "cycle",
            ),
            (
                "prompt",
                Annotated[Text, msgspec.Meta(description="replaces the recorded prompt shown")]
                | Unset,
                UNSET,
            ),
            (
                "kind",
                Annotated[
                    one_of(kinds.labels()),
                    msgspec.Meta(description="what a trial plays (a trial kind)"),
                ],
                "single",
            ),
        ],
        forbid_unknown_fields=True,
    )
    sections = [
        (
            name,
            _described(
                msgspec.defstruct(
                    name.title(),
                    [(key, _described(Any, words.get(f"[{name}].{key}")), UNSET) for key in keys],
                    forbid_unknown_fields=True,
                ),
                words.get(f"[{name}]"),
            )
            | Unset,
            UNSET,
        )
        for name, keys in kinds.sections().items()
    ]
    questions: Any = Annotated[
        list[Question],  # type: ignore[valid-type]
        msgspec.Meta(description="the questions ([[questions]]), in the order asked"),
    ]
    model = msgspec.defstruct(
        "StudyFile",
        [
            ("stimuli", _described(stimuli, "what each trial plays, and in which order")),
            ("questions", questions, msgspec.field(default_factory=list)),
            *sections,
        ],
        bases=(StudyFile,),
        forbid_unknown_fields=True,
        kw_only=True,
    )
    return cast(type[StudyFile], model)


def given(value: T | Unset) -> T | None:
    """A key's value, None when the file leaves it out."""
    return None if isinstance(value, Unset) else value


def study_model() -> type[StudyFile]:
    """The study file's model, with the `[stimuli]` keys and sections of every trial kind
    registered now (a plug-in kind adds its own)."""
    return _study_model(tuple(kinds.REGISTRY.values()))


def study_key(field: str | None, raw: dict[str, Any]) -> str | None:
    """The library's field path as a study-file key path: `[design].repeats`,
    `[[questions]][1].id`, `[factors].ttft_ms[2]` or `[factors.ttft_ms].levels[2]`."""
    if field is None:
        return None
    head, rest = _split(field)
    if head == "questions":
        return f"[[questions]]{rest}"
    if (found := factor_at(field, raw)) is not None:
        name, inner = found
        if isinstance(raw["factors"][name], dict):
            return f"[factors.{name}]{inner}"
    return f"[{head}]{rest}"


def factor_at(field: str, raw: dict[str, Any]) -> tuple[str, str] | None:
    """(the factor, the rest of the path) of a field under `[factors]`, the factor's name
    found in the file (a name may hold `.` or `[`): `factors.ttft_ms[2]` -> (`ttft_ms`, `[2]`)."""
    factors = raw.get("factors")
    if not field.startswith("factors.") or not isinstance(factors, dict):
        return None
    after = field[len("factors.") :]
    names = [k for k in factors if after == k or after.startswith((f"{k}.", f"{k}["))]
    if not names:
        return None
    name = max(names, key=len)
    return name, after[len(name) :]


def _split(field: str) -> tuple[str, str]:
    """`design.repeats` -> (`design`, `.repeats`); `questions[1].id` -> (`questions`, `[1].id`)."""
    cut = min((i for i in (field.find("."), field.find("[")) if i >= 0), default=len(field))
    return field[:cut], field[cut:]


# -- the words for each field ---------------------------------------------------------------

Words = Callable[[Any], str]


def shown(value: Any) -> str:
    """A value as a message shows it: its repr, cut short past 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def section(v: Any) -> str:
    """A section that must be a table."""
    return "missing section" if v is MISSING else f"must be a table, not {_kind(v)}"


def _kind(v: Any) -> str:
    return type_name(v)


def text(v: Any) -> str:
    if v is MISSING:
        return "missing (required)"
    return f"{shown(v)} is not a string" if not isinstance(v, str) else "is empty"


def flag(v: Any) -> str:
    return f"{shown(v)} is not true or false"


def whole(minimum: int, maximum: float | None = None, problem: str = "") -> Words:
    """A whole number from `minimum` (up to `maximum`, said by `problem`)."""

    def words(v: Any) -> str:
        if v is MISSING:
            return "missing (required)"
        if not _is_int(v):
            return f"{shown(v)} is not a whole number"
        if v < minimum:
            return f"{v} must be at least {minimum}"
        return problem.format(v=v, max=maximum)

    return words


def number(below: str, maximum: float = math.inf, above: str = "") -> Words:
    """A finite number; `below` says one under the range, `above` one over it."""

    def words(v: Any) -> str:
        if v is MISSING:
            return "missing (required)"
        if not _is_number(v):
            return f"{shown(v)} is not a number"
        if not math.isfinite(v):
            return f"{v} is not a finite number"
        return above.format(v=v, max=maximum) if v > maximum else below.format(v=v)

    return words


def choice(choices: tuple[str, ...]) -> Words:
    def words(v: Any) -> str:
        if v is MISSING:
            return "missing (required)"
        if not isinstance(v, str):
            return f"{shown(v)} is not a string"
        return f"{shown(v)} is not allowed" + did_you_mean(v, choices)

    return words


def _study_id(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        return text(v)
    return f"{shown(v)} may hold only letters, digits, '-', '_', '.'"


def _question_id(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        return text(v)
    return (
        f"{shown(v)} must be lower-case letters, digits and '_', starting with a letter "
        "(it becomes column q_<id>)"
    )


def _seed(v: Any) -> str:
    if v is MISSING:
        return "missing (required)"
    return f"{shown(v)} is not a whole number" if not _is_int(v) else f"{v} is negative"


def _levels(v: Any) -> str:
    if isinstance(v, list) and not v:
        return "has no levels"
    if isinstance(v, list):
        return next(_level(x) for x in v if not _is_number(x) or not math.isfinite(x))
    return f"{shown(v)} is not a list of levels (or a table)"


def _level(x: Any) -> str:
    return f"{shown(x)} is not a number" if not _is_number(x) else f"{x} is not a finite number"


def _factor_table_levels(v: Any) -> str:
    if v is MISSING:
        return "missing (required)"
    return _levels(v) if isinstance(v, list) else f"{shown(v)} is not a list of levels"


_QUESTIONS = "must be an array of tables ([[questions]])"
WORDING: Wording = {
    "study": section,
    "texts": section,
    "stimuli": section,
    "factors": lambda v: (
        "needs at least one factor, e.g. ttft_ms = [200, 800]" if v == {} else section(v)
    ),
    "design": section,
    "counterbalance": section,
    "abandon": section,
    "attention": section,
    "timing": section,
    "session": section,
    "study.id": _study_id,
    "study.title": text,
    "study.seed": _seed,
    "study.version": lambda v: f"{shown(v)} is not a string",
    "texts.consent": text,
    "texts.instructions": text,
    "texts.debrief": text,
    "stimuli.assignment": choice(ASSIGNMENTS),
    "stimuli.prompt": text,
    "stimuli.corpus": text,
    "stimuli.chains": text,
    "stimuli.kind": lambda v: choice(kinds.labels())(v),
    "profile": lambda v: f"must be a table, not {_kind(v)}",
    "profile.seed": lambda v: "unknown key (the seed belongs to the study or --seed)",
    "design.repeats": whole(1),
    "design.blocks": whole(1),
    "design.order": choice(ORDERS),
    "design.blocked_by": lambda v: f"{shown(v)} is not a factor name",
    "design.max_run": whole(1),
    "design.practice": whole(0),
    "design.break_every": whole(1),
    "counterbalance.group_cap": whole(1),
    "counterbalance.stale_after_min": number(
        "{v} must be positive",
        MAX_STALE_MIN,
        "{v:g} min is not plausible (at most {max:g} min, a week)",
    ),
    "abandon.key": text,
    "abandon.timeout_s": number(
        "{v} must be positive (or leave it out)",
        MAX_TIMEOUT_S,
        "{v:g} s is not plausible (at most {max:g} s, one hour)",
    ),
    "abandon.ask_questions": flag,
    "attention.every": whole(2),
    "attention.text": text,
    "attention.question": text,
    "attention.answer": lambda v: f"{shown(v)} is not a valid answer",
    "attention.levels": lambda v: f"{shown(v)} is not a table of factor levels",
    "timing.max_late_p99_ms": number(
        "{v} must be positive ms (or leave it out: half the shortest gap)",
        MAX_LATE_MS,
        "{v:g} ms is not plausible (at most {max:.0f} ms, one hour)",
    ),
    "timing.max_frame_shared_share": number(
        "{v} must be a share in [0, 1], e.g. 0.1", 1.0, "{v} must be a share in [0, 1], e.g. 0.1"
    ),
    "timing.requeue_flagged": flag,
    "timing.max_requeued": whole(0),
    "session.rerun_interrupted": flag,
    "questions": lambda v: _QUESTIONS,
    "questions[*]": lambda v: _QUESTIONS,
    "questions[*].id": _question_id,
    "questions[*].type": choice(QUESTION_TYPES),
    "questions[*].text": text,
    "questions[*].when": choice(QUESTION_WHEN),
}
"""The study file's words for each field's problem (those its users know)."""

FACTOR_WORDING: Wording = {
    "factors.*": _levels,
    "factors.*[*]": _level,
    "factors.*.levels": _factor_table_levels,
    "factors.*.levels[*]": _level,
    "factors.*.between": flag,
    "factors.*.procedure": choice(PROCEDURES),
    "factors.*.down": whole(1, 4, "{v} is too many (1 to 4)"),
    "factors.*.grid": whole(5, 200, "{v} levels is too many (5 to 200)"),
}
"""The words for a factor's problems, whatever the factor's name (`*`)."""


def factor_words(field: str, raw: dict[str, Any], problem: str) -> str:
    """The words for a problem at `field` under `[factors]` (else `problem` as it is)."""
    found = factor_at(field, raw)
    if found is None:
        return problem
    name, inner = found
    words = FACTOR_WORDING.get("factors.*" + re.sub(r"\[\d+\]", "[*]", inner))
    if words is None or problem.startswith("unknown key"):
        return problem
    return words(value_at(raw, ["factors", name, *_path(inner)]))


def _path(field: str) -> list[str | int]:
    return [
        int(index) if index else key for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", field)
    ]
