"""Trial kinds: one package per kind of trial, each a `TrialKind` (`base`), registered here.

- `recorded`: a recorded stream per trial, re-timed with the trial's profile and seed;
- `live`: a live model's answer per trial, shown as it arrives within the profile's timing;
- `chain`: an agent chain per trial (model calls and tool pauses on one timeline).

A study's `[stimuli]` table chooses its kind (`choose`): `kind = "chain"`, or `live = {...}`
with the default `kind = "single"`, else a recorded corpus. The participant flow, the store
and verification ask the study's kind for each part of a trial and never name one (an import
contract says so). An attention check plays as a recorded trial in a study of any kind
(`for_trial`).

A new kind is one package here (a `TrialKind` subclass added to `_KINDS`) plus one view in
`uxlab.tui.views` registered under its `view` name; `register` adds one from outside (a
plug-in). The registry's test checks that every kind provides every part, and adds a toy
kind that way.
"""

from __future__ import annotations

from uxlab.kinds.base import (
    AskAfter,
    Hold,
    KindRun,
    PlannedTrial,
    PlayedTrial,
    Shaper,
    StimuliReader,
    TrialKind,
    recording_sha256,
    schedule_end_ms,
    step_response_id,
)
from uxlab.kinds.chain import ChainKind
from uxlab.kinds.checks import ChunkEvents, StoredTrial, check_timing, number, show
from uxlab.kinds.live import LiveKind
from uxlab.kinds.recorded import RecordedKind

_KINDS: tuple[type[TrialKind], ...] = (RecordedKind, ChainKind, LiveKind)
REGISTRY: dict[str, type[TrialKind]] = {k.name: k for k in _KINDS}
"""Every trial kind by its name, in the order a study file's `kind` lists their labels."""
COMMON_KEYS = ("assignment", "prompt", "kind")
"""The keys of `[stimuli]` every kind takes (its own are `TrialKind.keys`)."""


def register(kind: type[TrialKind]) -> None:
    """Add a kind defined outside uxlab (its view goes in `uxlab.tui.views.register`)."""
    if kind.name in REGISTRY and REGISTRY[kind.name] is not kind:
        raise ValueError(f"a trial kind named {kind.name!r} is registered already")
    REGISTRY[kind.name] = kind


def unregister(name: str) -> None:
    """Take a kind added by `register` out again (the built-in kinds stay)."""
    if any(k.name == name for k in _KINDS):
        raise ValueError(f"{name!r} is a built-in trial kind")
    REGISTRY.pop(name, None)


def labels() -> tuple[str, ...]:
    """Every value `[stimuli] kind` takes, in registry order."""
    return tuple(dict.fromkeys(k.label for k in REGISTRY.values()))


def stimuli_keys() -> tuple[str, ...]:
    """Every key `[stimuli]` takes: each kind's own, then the common ones."""
    own = (key for kind in REGISTRY.values() for key in kind.keys)
    return tuple(dict.fromkeys([*own, *COMMON_KEYS]))


def choose(label: str, table: dict[str, object]) -> type[TrialKind]:
    """The kind a `[stimuli]` table of `kind = label` means."""
    for kind in REGISTRY.values():
        if kind.label == label and kind.chooses(table):
            return kind
    raise KeyError(label)


def owner_of_key(key: str) -> type[TrialKind] | None:
    """The kind whose own `[stimuli]` key `key` is."""
    return next((k for k in REGISTRY.values() if key in k.keys), None)


def owner_of_factor(name: str) -> type[TrialKind] | None:
    """The kind whose own factor `name` is (None: a shaping parameter, or nothing)."""
    return next((k for k in REGISTRY.values() if name in k.factors), None)


def sections() -> dict[str, tuple[str, ...]]:
    """Every kind's own study-file sections with their keys."""
    return {name: keys for k in REGISTRY.values() for name, keys in k.sections.items()}


def descriptions() -> dict[str, str]:
    """What every kind's own study-file keys and sections mean (`TrialKind.descriptions`)."""
    return {key: words for k in REGISTRY.values() for key, words in k.descriptions.items()}


def for_trial(kind: TrialKind, attention: bool) -> TrialKind:
    """The kind a trial plays as: the study's, or for an attention check a recorded trial
    (its text streamed as a synthetic recording)."""
    return RecordedKind() if attention else kind


__all__ = [
    "COMMON_KEYS",
    "REGISTRY",
    "AskAfter",
    "ChainKind",
    "ChunkEvents",
    "Hold",
    "KindRun",
    "LiveKind",
    "PlannedTrial",
    "PlayedTrial",
    "RecordedKind",
    "Shaper",
    "StimuliReader",
    "StoredTrial",
    "TrialKind",
    "check_timing",
    "choose",
    "for_trial",
    "labels",
    "number",
    "owner_of_factor",
    "owner_of_key",
    "recording_sha256",
    "register",
    "schedule_end_ms",
    "sections",
    "show",
    "step_response_id",
    "stimuli_keys",
    "unregister",
]
