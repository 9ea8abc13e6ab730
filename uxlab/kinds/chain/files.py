"""Reading chain files: a ``*.chain.json`` file and the replay files it names."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from uxlab.errors import UxlabError
from uxlab.kinds.chain.steps import (
    CHAIN_FORMAT,
    CHAIN_SUFFIX,
    STEP_KINDS,
    Chain,
    ChainFormatError,
    ChainStep,
)
from uxlab.reading import MAX_JSON_FILE_BYTES, InputProblem, as_ms, loads_json, read_bounded_text
from uxlab.shaping import Profile
from uxlab.streams.replay_file import ReplayFormatError, read_replay


def _step(raw: Any, i: int, path: Path) -> ChainStep:
    key = f"steps[{i}]"
    if not isinstance(raw, dict):
        raise ChainFormatError(path, key, "must be an object with a 'kind'")
    kind = raw.get("kind")
    if kind not in STEP_KINDS:
        raise ChainFormatError(path, f"{key}.kind", f"{kind!r}: use one of {', '.join(STEP_KINDS)}")
    label = raw.get("label", "Answer" if kind == "answer" else "")
    if not isinstance(label, str) or not label:
        raise ChainFormatError(path, f"{key}.label", "must be a non-empty text")
    if kind == "pause":
        tool = raw.get("tool")
        if tool is not None and not (
            isinstance(tool, dict)
            and isinstance(tool.get("name"), str)
            and isinstance(tool.get("arguments", {}), dict)
        ):
            raise ChainFormatError(
                path, f"{key}.tool", 'use {"name": "...", "arguments": {...}} (a JSON object)'
            )
        pause_ms = as_ms(raw.get("ms"), f"{key}.ms", error=partial(ChainFormatError, path))
        return ChainStep("pause", label, pause_ms=pause_ms, tool=tool)
    name = raw.get("replay")
    if not isinstance(name, str) or not name:
        raise ChainFormatError(path, f"{key}.replay", "must name a replay file next to the chain")
    replay_path = path.parent / name
    try:
        found = replay_path.is_file()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        found = False
    if not found:
        raise ChainFormatError(path, f"{key}.replay", f"{name!r} does not exist next to the chain")
    try:
        replay = read_replay(replay_path)
    except ReplayFormatError as exc:
        raise ChainFormatError(path, f"{key}.replay", str(exc)) from None
    profile = raw.get("profile", {})
    if not isinstance(profile, dict):
        raise ChainFormatError(path, f"{key}.profile", "must be a table of profile keys")
    try:
        Profile.from_table(profile, where=f"{path}: {key}.profile")
    except UxlabError as exc:
        raise ChainFormatError(path, f"{key}.profile", str(exc)) from None
    return ChainStep(kind, label, replay=replay, profile=dict(profile))


def load_chain(path: str | Path) -> Chain:
    """Read one ``*.chain.json`` file and the replay files it names."""
    path = Path(path)
    try:
        raw = loads_json(read_bounded_text(path, MAX_JSON_FILE_BYTES, "chain file"))
    except OSError as exc:
        raise ChainFormatError(path, None, f"cannot read: {exc.strerror}") from None
    except InputProblem as exc:
        raise ChainFormatError(path, exc.field, exc.problem) from None
    if not isinstance(raw, dict):
        raise ChainFormatError(path, None, "must be a JSON object")
    if raw.get("format") != CHAIN_FORMAT:
        raise ChainFormatError(path, "format", f"{raw.get('format')!r}: use {CHAIN_FORMAT!r}")
    for key in ("id", "prompt"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise ChainFormatError(path, key, "must be a non-empty text")
    steps_raw = raw.get("steps")
    if not isinstance(steps_raw, list) or not steps_raw:
        raise ChainFormatError(path, "steps", "must be a non-empty list of steps")
    steps = tuple(_step(s, i, path) for i, s in enumerate(steps_raw))
    answers = [i for i, s in enumerate(steps) if s.kind == "answer"]
    if answers != [len(steps) - 1]:
        raise ChainFormatError(
            path, "steps", "the last step, and only it, must be the final answer (kind 'answer')"
        )
    return Chain(raw["id"], raw["prompt"], steps, title=str(raw.get("title", "")), path=path)


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
