"""Reading chain files: a ``*.chain.json`` file and the replay files it names.

The file's structure is declared once (`ChainFile`, a typed model checked in one pass by
`uxlab.reading.convert`, with this file's own words for each field); only what the model
cannot say is checked by hand: the replay files exist and read, each call's profile is a
profile, and the last step, and only it, is the answer.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from uxlab.errors import UxlabError
from uxlab.kinds.chain.steps import (
    CHAIN_FORMAT,
    CHAIN_SUFFIX,
    STEP_KINDS,
    Chain,
    ChainFormatError,
    ChainStep,
    StepKind,
)
from uxlab.reading import (
    MAX_JSON_FILE_BYTES,
    InputProblem,
    Wording,
    convert,
    loads_json,
    ms_problem,
    read_bounded_text,
)
from uxlab.shaping import Profile
from uxlab.streams.replay_file import ReplayFormatError, read_replay

Text = Annotated[str, msgspec.Meta(min_length=1)]
"""A non-empty string."""


class ToolCall(msgspec.Struct):
    """The tool call a pause shows (other keys are kept as written, and ignored)."""

    name: str
    arguments: dict[str, Any] = {}


class CallStep(msgspec.Struct, tag_field="kind", tag="call"):
    """A model call: its stream, and its own profile laid over the study's."""

    label: Text
    replay: Text
    profile: dict[str, Any] = {}


class AnswerStep(msgspec.Struct, tag_field="kind", tag="answer"):
    """The final answer: a model call, always the last step."""

    replay: Text
    label: Text = "Answer"
    profile: dict[str, Any] = {}


class PauseStep(msgspec.Struct, tag_field="kind", tag="pause"):
    """A tool or retrieval pause, optionally showing a tool call."""

    label: Text
    ms: Annotated[float, msgspec.Meta(ge=0)]
    tool: ToolCall | None = None


class ChainFile(msgspec.Struct):
    """A ``*.chain.json`` file as written (other keys, such as ``source``, are ignored)."""

    format: Literal["uxlab.chain/1"]
    id: Text
    prompt: Text
    steps: Annotated[list[CallStep | PauseStep | AnswerStep], msgspec.Meta(min_length=1)]
    title: Any = ""


_NON_EMPTY = "must be a non-empty text"
WORDING: Wording = {
    "": lambda v: "must be a JSON object",
    "format": lambda v: f"{v!r}: use {CHAIN_FORMAT!r}",
    "id": lambda v: _NON_EMPTY,
    "prompt": lambda v: _NON_EMPTY,
    "steps": lambda v: "must be a non-empty list of steps",
    "steps[*]": lambda v: "must be an object with a 'kind'",
    "steps[*].kind": lambda v: f"{v!r}: use one of {', '.join(STEP_KINDS)}",
    "steps[*].label": lambda v: _NON_EMPTY,
    "steps[*].ms": lambda v: ms_problem(v) or "must be a number of ms",
    "steps[*].tool*": lambda v: 'use {"name": "...", "arguments": {...}} (a JSON object)',
    "steps[*].replay": lambda v: "must name a replay file next to the chain",
    "steps[*].profile": lambda v: "must be a table of profile keys",
}
"""The chain file's words for each field's problem (those users of uxlab.chain/1 know)."""


def _call(step: CallStep | AnswerStep, key: str, path: Path) -> ChainStep:
    replay_path = path.parent / step.replay
    try:
        found = replay_path.is_file()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        found = False
    if not found:
        raise ChainFormatError(
            path, f"{key}.replay", f"{step.replay!r} does not exist next to the chain"
        )
    try:
        replay = read_replay(replay_path)
    except ReplayFormatError as exc:
        raise ChainFormatError(path, f"{key}.replay", str(exc)) from None
    try:
        Profile.from_table(step.profile, where=f"{path}: {key}.profile")
    except UxlabError as exc:
        raise ChainFormatError(path, f"{key}.profile", str(exc)) from None
    kind: StepKind = "answer" if isinstance(step, AnswerStep) else "call"
    return ChainStep(kind, step.label, replay=replay, profile=dict(step.profile))


def load_chain(path: str | Path) -> Chain:
    """Read one ``*.chain.json`` file and the replay files it names."""
    path = Path(path)
    try:
        raw = loads_json(read_bounded_text(path, MAX_JSON_FILE_BYTES, "chain file"))
    except OSError as exc:
        raise ChainFormatError(path, None, f"cannot read: {exc.strerror}") from None
    except InputProblem as exc:
        raise ChainFormatError(path, exc.field, exc.problem) from None
    written = convert(raw, ChainFile, WORDING, error=partial(ChainFormatError, path))
    steps = tuple(
        ChainStep("pause", s.label, pause_ms=s.ms, tool=raw["steps"][i].get("tool"))
        if isinstance(s, PauseStep)
        else _call(s, f"steps[{i}]", path)
        for i, s in enumerate(written.steps)
    )
    answers = [i for i, s in enumerate(steps) if s.kind == "answer"]
    if answers != [len(steps) - 1]:
        raise ChainFormatError(
            path, "steps", "the last step, and only it, must be the final answer (kind 'answer')"
        )
    return Chain(written.id, written.prompt, steps, title=str(written.title), path=path)


def load_chains(folder: str | Path) -> dict[str, Chain]:
    """Every ``*.chain.json`` below `folder`, by chain id (sorted by path)."""
    folder = Path(folder)
    paths = sorted(folder.rglob(f"*{CHAIN_SUFFIX}")) if folder.is_dir() else [folder]
    if not paths:
        raise ChainFormatError(folder, None, f"no *{CHAIN_SUFFIX} files found")
    chains: dict[str, Chain] = {}
    for path in paths:
        chain = load_chain(path)
        if chain.id in chains:
            raise ChainFormatError(path, "id", f"{chain.id!r} is used twice in {folder}")
        chains[chain.id] = chain
    return chains
