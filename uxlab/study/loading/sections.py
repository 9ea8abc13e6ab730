"""The study file's sections that are the same in every study, as typed models: each key's
type, range, default and a description (shown by an editor through the file's JSON Schema).
`uxlab.study.loading.model` puts them together with what the trial kinds and question types
add."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from uxlab.reading import MAX_TIMEOUT_S, Text
from uxlab.study.spec import ORDERS, PROCEDURES

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
QUESTION_ID_PATTERN = r"^[a-z][a-z0-9_]*$"
Unset = msgspec.UnsetType
UNSET = msgspec.UNSET
MAX_STALE_MIN = 7 * 24 * 60.0
"""The longest a counterbalancing slot may wait (a week)."""
MAX_LATE_MS = 3_600_000.0
"""The loosest lateness tolerance a study may set (an hour)."""


def one_of(values: tuple[str, ...]) -> Any:
    return Literal[values]  # a Literal of the values, built from the tuple that lists them


class StudySection(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`[study]`: what the study is, and the seed every trial's draws derive from."""

    id: Annotated[
        str,
        msgspec.Meta(
            pattern=ID_PATTERN,
            description="the study's name: letters, digits, '-', '_', '.'; it names the "
            "database (results/<id>.sqlite) and every output",
        ),
    ]
    title: Annotated[Text, msgspec.Meta(description="the study's title")]
    version: Annotated[str | int, msgspec.Meta(description="the study file's version")] = "1"
    seed: Annotated[
        int,
        msgspec.Meta(
            ge=0,
            description="with each participant's id and number, makes their trial list, "
            "recording assignment and jitter (uxlab run --seed overrides it)",
        ),
    ]


class Texts(msgspec.Struct, forbid_unknown_fields=True):
    """`[texts]`: what the participant reads before and after."""

    consent: Annotated[
        Text, msgspec.Meta(description="shown first: a agrees, d declines (only counted)")
    ]
    instructions: Annotated[Text, msgspec.Meta(description="shown before the practice trials")]
    debrief: Annotated[Text, msgspec.Meta(description="shown on the end screen")] | Unset = UNSET


Level = int | float
"""A factor's level, kept as written (`400` stays a whole number)."""
Levels = Annotated[list[Level], msgspec.Meta(min_length=1)]


class FactorTable(msgspec.Struct, forbid_unknown_fields=True):
    """`[factors.<name>]`: a factor's levels and how they are given."""

    levels: Annotated[
        Levels, msgspec.Meta(description="the levels (an adaptive factor: the range searched)")
    ]
    between: Annotated[
        bool, msgspec.Meta(description="true: each participant sees one level (a group)")
    ] = False
    procedure: Annotated[
        one_of(PROCEDURES),  # type: ignore[valid-type]
        msgspec.Meta(description="fixed levels, or an adaptive search (quest, staircase, ...)"),
    ] = "fixed"
    down: (
        Annotated[
            int,
            msgspec.Meta(
                ge=1,
                le=4,
                description="staircase only: acceptable answers in a row before a step up",
            ),
        ]
        | Unset
    ) = UNSET
    grid: (
        Annotated[
            int,
            msgspec.Meta(
                ge=5, le=200, description="adaptive only: log-spaced levels searched (default 25)"
            ),
        ]
        | Unset
    ) = UNSET


class Design(msgspec.Struct, forbid_unknown_fields=True):
    """`[design]`: the order of the trials, repeats, blocks, practice and breaks."""

    repeats: Annotated[int, msgspec.Meta(ge=1, description="trials per condition and block")] = 1
    blocks: Annotated[int, msgspec.Meta(ge=1, description="blocks of trials")] = 1
    order: Annotated[
        one_of(ORDERS),  # type: ignore[valid-type]
        msgspec.Meta(description="the order of the conditions within a block"),
    ] = "random"
    blocked_by: (
        Annotated[
            str, msgspec.Meta(description='order = "blocked" only: the within factor to block by')
        ]
        | Unset
    ) = UNSET
    max_run: (
        Annotated[int, msgspec.Meta(ge=1, description="the longest run of one condition in a row")]
        | Unset
    ) = UNSET
    practice: Annotated[
        int, msgspec.Meta(ge=0, description="practice trials first (practice = 1 in the data)")
    ] = 0
    break_every: (
        Annotated[
            int, msgspec.Meta(ge=1, description="a break screen after every so many main trials")
        ]
        | Unset
    ) = UNSET


class Counterbalance(msgspec.Struct, forbid_unknown_fields=True):
    """`[counterbalance]`: between-group caps and when a slot goes stale."""

    group_cap: (
        Annotated[
            int,
            msgspec.Meta(ge=1, description="most participants per between-participant group"),
        ]
        | Unset
    ) = UNSET
    stale_after_min: Annotated[
        float,
        msgspec.Meta(
            gt=0,
            le=MAX_STALE_MIN,
            description="minutes after which an unseen session gives its group slot back",
        ),
    ] = 120.0


class Abandon(msgspec.Struct, forbid_unknown_fields=True):
    """`[abandon]`: the give-up key, the trial timeout, questions after giving up."""

    key: Annotated[
        Text, msgspec.Meta(description="the give-up key, as Textual names it (escape, ctrl+x)")
    ] = "escape"
    timeout_s: (
        Annotated[
            float,
            msgspec.Meta(
                gt=0, le=MAX_TIMEOUT_S, description="seconds before a trial still streaming ends"
            ),
        ]
        | Unset
    ) = UNSET
    ask_questions: Annotated[
        bool, msgspec.Meta(description="ask the per-trial questions after a give-up")
    ] = False


class Attention(msgspec.Struct, forbid_unknown_fields=True):
    """`[attention]`: a known-answer check every so many trials."""

    every: Annotated[int, msgspec.Meta(ge=2, description="a check after every so many main trials")]
    text: Annotated[Text, msgspec.Meta(description="what the check shows, at once")]
    question: Annotated[Text, msgspec.Meta(description="the id of a per-trial question")]
    answer: Annotated[
        str | int | float, msgspec.Meta(description="the known answer to that question")
    ]
    levels: (
        Annotated[
            dict[str, Any],
            msgspec.Meta(description="within-factor levels shown (default: the middle condition)"),
        ]
        | Unset
    ) = UNSET


class Timing(msgspec.Struct, forbid_unknown_fields=True):
    """`[timing]`: the playback-fidelity tolerance."""

    max_late_p99_ms: (
        Annotated[
            float,
            msgspec.Meta(
                gt=0,
                le=MAX_LATE_MS,
                description="a trial whose chunks' p99 lateness passes this is flagged (ms)",
            ),
        ]
        | Unset
    ) = UNSET
    max_frame_shared_share: (
        Annotated[
            float,
            msgspec.Meta(
                ge=0, le=1, description="flag a trial with more of its chunks sharing a frame"
            ),
        ]
        | Unset
    ) = UNSET
    requeue_flagged: Annotated[
        bool, msgspec.Meta(description="run a flagged main trial again after the last one")
    ] = False
    max_requeued: Annotated[
        int, msgspec.Meta(ge=0, description="most trials run again per session")
    ] = 5


class Session(msgspec.Struct, forbid_unknown_fields=True):
    """`[session]`: whether interrupted trials run again at the end."""

    rerun_interrupted: Annotated[
        bool,
        msgspec.Meta(description="run a trial interrupted mid-stream again at the end"),
    ] = True
