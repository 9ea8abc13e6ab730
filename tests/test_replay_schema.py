"""The replay file's JSON Schema (docs/reference/replay-file.schema.json, contract 1): up to
date with the models it is generated from, every bundled replay passes it line by line, and
it refuses the one-line mistakes the replay reader refuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from uxlab.streams import read_replay
from uxlab.streams.replay_file import ReplayFormatError
from uxlab.streams.replay_schema import replay_schema, replay_schema_text

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "docs" / "reference" / "replay-file.schema.json"
REPLAYS = sorted((REPO / "replays").rglob("*.jsonl"))
REGENERATE = "uv run python -m uxlab.streams.replay_schema > docs/reference/replay-file.schema.json"


def problems(line: dict[str, Any]) -> list[str]:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    return [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(line)]


def test_the_committed_schema_is_the_models() -> None:
    assert SCHEMA.read_text(encoding="utf-8") == replay_schema_text(), (
        f"docs/reference/replay-file.schema.json is out of date: {REGENERATE}"
    )


def test_the_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(replay_schema())


def test_the_bundled_replays_are_found() -> None:
    assert len(REPLAYS) >= 100


@pytest.mark.parametrize("path", REPLAYS, ids=lambda p: str(p.relative_to(REPO / "replays")))
def test_every_line_of_every_bundled_replay_passes(path: Path) -> None:
    read_replay(path)  # the reader takes it: the schema must too
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x.strip()]
    assert lines[0]["type"] == "header"
    for number, line in enumerate(lines, start=1):
        assert problems(line) == [], (number, line)


HEADER = {"type": "header", "format": "uxlab.replay/1", "id": "a", "source": {"kind": "live"}}
CHUNK = {"type": "chunk", "t_ms": 412.5, "channel": "content", "text": "Hi", "n_tokens": 1}
END = {"type": "end", "t_ms": 500.0, "finish_reason": "stop", "usage": None}


@pytest.mark.parametrize(
    "bad",
    [
        {**CHUNK, "t_ms": -1},
        {**CHUNK, "t_ms": 1e12},
        {**CHUNK, "channel": "answer"},
        {k: v for k, v in CHUNK.items() if k != "text"},
        {k: v for k, v in CHUNK.items() if k != "t_ms"},
        {**CHUNK, "n_tokens": -2},
        {**CHUNK, "n_tokens": 1.5},
        {**CHUNK, "type": "chunks"},
        {"type": "error", "t_ms": 3.0, "error": "overloaded"},
        {**END, "usage": []},
        {**HEADER, "format": "uxlab.replay/2"},
        {**HEADER, "id": ""},
        {**HEADER, "source": {"kind": "recorded"}},
    ],
)
def test_the_schema_refuses_what_the_reader_refuses(tmp_path: Path, bad: dict[str, Any]) -> None:
    assert problems(bad)
    lines = [bad] if bad.get("type") == "header" else [HEADER, bad, END]
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    with pytest.raises(ReplayFormatError):
        read_replay(path)


def test_extra_keys_are_the_lines_own() -> None:
    assert problems({**CHUNK, "tool_index": 0, "same_event": True}) == []
    assert problems({"type": "meta", "t_ms": None, "kind": "role", "role": "assistant"}) == []
    assert problems({**HEADER, "source": {"kind": "import", "origin": "x.json#request=0"}}) == []
