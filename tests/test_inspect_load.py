"""Columnar loading for `uxlab inspect`: the same numbers and errors as full Recordings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from uxlab.cli import main
from uxlab.streams.corpus import load_corpus
from uxlab.streams.inspect_load import (
    arrays_from_columns,
    columns_of_recording,
    columns_of_valid,
    default_jobs,
    inspect_paths,
    load_arrays,
)
from uxlab.streams.metrics import COLUMNS, describe_many, summarize
from uxlab.streams.recording import Chunk, End, ErrorEvent, Header, Meta, Recording
from uxlab.streams.replay_file import ValidEvents, dumps_recording, parse_events, write_replay
from uxlab.streams.stream_arrays import StreamArrays
from uxlab.streams.synthetic import GapModel, ToolCall, synthesize

HEADER = '{"type": "header", "format": "uxlab.replay/1", "id": "%s", "source": {"kind": "live"}}'


def recordings() -> list[Recording]:
    """Streams with every kind of event: role prelude, reasoning, tool, errors, no timing."""
    recs = [
        synthesize(
            "A short answer with some words in it. " * (i + 1),
            id=f"syn-{i}",
            ttft_ms=200.0 * (i + 1),
            seed=i,
            itl=GapModel(median_ms=30, sigma=0.5),
            reasoning="Thinking it over first." if i % 2 else None,
            tool_call=ToolCall(name="lookup", arguments={"q": i}) if i % 3 == 0 else None,
            stall_at=5 if i == 2 else None,
            error_at=7 if i == 4 else None,
        )
        for i in range(6)
    ]
    recs.append(
        Recording(
            Header(id="mixed"),
            [
                Meta(t_ms=None, data={"kind": "ping"}),
                Chunk(t_ms=40.0, text="", n_tokens=None),
                Chunk(t_ms=50.0, text="ab", channel="reasoning", n_tokens=2),
                Chunk(t_ms=60.0, text="cd", n_tokens=None),
                ErrorEvent(t_ms=70.0, error={"message": "no type"}),
                Chunk(t_ms=80.0, text="e", n_tokens=1),
            ],
            End(t_ms=90.0, finish_reason="error"),
        )
    )
    recs.append(Recording(Header(id="untimed"), [Chunk(None, "x"), Chunk(None, "y")], End(None)))
    recs.append(Recording(Header(id="nothing"), [], End(t_ms=5.0, finish_reason="stop")))
    recs.append(Recording(Header(id="cut"), [Chunk(1.0, "a", n_tokens=1)], None))
    return recs


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for rec in recordings():
        write_replay(rec, tmp_path)
    # A foreign file (integer times, keys left out) and two bad ones.
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "foreign.jsonl").write_text(
        HEADER % "foreign" + '\n{"t_ms": 5, "type": "chunk", "text": "x"}\n'
        '{"type": "chunk", "t_ms": 7, "channel": "content", "text": "yz", "n_tokens": 2}\n'
        '{"type": "end", "t_ms": 9}\n',
        encoding="utf-8",
    )
    (tmp_path / "sub" / "bad.jsonl").write_text(
        HEADER % "bad" + '\n{"type": "chunk", "t_ms": 5, "channel": "x", "text": "a"}\n',
        encoding="utf-8",
    )
    (tmp_path / "sub" / "zz-decreasing.jsonl").write_text(
        HEADER % "dec" + '\n{"type": "chunk", "t_ms": 5, "channel": "content", "text": "a", '
        '"n_tokens": 1}\n{"type": "end", "t_ms": 4, "finish_reason": null, "usage": null}\n',
        encoding="utf-8",
    )
    return tmp_path


def reference(folder: Path, allow_truncated: bool) -> tuple[pd.DataFrame, list, list[str]]:
    """What the Recording path gives: the metrics table, the paths and the error messages."""
    corpus = load_corpus(folder, allow_truncated=allow_truncated)
    table = describe_many(StreamArrays.from_recordings(corpus.recordings))
    return table, corpus.paths, [str(e) for e in corpus.errors]


@pytest.mark.parametrize("allow_truncated", [False, True])
def test_columns_give_the_same_metrics_paths_and_errors(folder: Path, allow_truncated) -> None:
    table, paths, errors = reference(folder, allow_truncated)
    loaded = load_arrays([folder], allow_truncated=allow_truncated, jobs=1)
    pd.testing.assert_frame_equal(describe_many(loaded.arrays), table)
    assert loaded.paths == paths
    assert [str(e) for e in loaded.errors] == errors
    assert len(errors) == 3 - allow_truncated
    assert any("bad.jsonl:2: channel: 'x' is not one of" in e for e in errors)
    assert ("cut" in table["id"].tolist()) == allow_truncated


def test_a_pool_of_processes_gives_the_same_as_one(folder: Path) -> None:
    one = load_arrays([folder], allow_truncated=True, jobs=1)
    two = load_arrays([folder], allow_truncated=True, jobs=2)
    pd.testing.assert_frame_equal(describe_many(two.arrays), describe_many(one.arrays))
    assert summarize(two.arrays) == summarize(one.arrays)
    assert two.paths == one.paths
    assert [(e.path, e.line, e.field, str(e)) for e in two.errors] == [
        (e.path, e.line, e.field, str(e)) for e in one.errors
    ]


@pytest.mark.parametrize("jobs", [1, 2, 5])
def test_inspect_paths_gives_the_table_and_summary_of_one_process(folder: Path, jobs) -> None:
    loaded = load_arrays([folder], allow_truncated=True, jobs=1)
    found = inspect_paths([folder], allow_truncated=True, jobs=jobs)
    pd.testing.assert_frame_equal(
        pd.DataFrame(found.table, columns=list(COLUMNS)), describe_many(loaded.arrays)
    )
    assert found.summary() == summarize(loaded.arrays)
    assert found.paths == loaded.paths
    assert [str(e) for e in found.errors] == [str(e) for e in loaded.errors]


def test_fast_columns_match_the_columns_of_the_recording() -> None:
    for rec in recordings():
        header, parsed = parse_events(dumps_recording(rec), allow_truncated=True)
        assert isinstance(parsed, ValidEvents), rec.id  # canonical files take the fast path
        fast, slow = columns_of_valid(header.id, parsed), columns_of_recording(rec)
        for name in ("t_ms", "channel_code", "n_chars", "n_tokens"):
            np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name))
        for name in ("id", "finish_reason", "error", "truncated"):
            assert getattr(fast, name) == getattr(slow, name)
        for name in ("first_event_ms", "end_ms"):
            np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name))


def test_arrays_concatenate_to_the_arrays_of_all() -> None:
    cols = [columns_of_recording(r) for r in recordings()]
    whole = describe_many(arrays_from_columns(cols))
    parts = StreamArrays.concat([arrays_from_columns(cols[:3]), arrays_from_columns(cols[3:])])
    pd.testing.assert_frame_equal(describe_many(parts), whole)
    expected = describe_many(StreamArrays.from_recordings(recordings()))
    pd.testing.assert_frame_equal(whole, expected)


def test_a_pool_only_for_many_files() -> None:
    assert default_jobs(10) == 1
    assert default_jobs(10_000) >= 1
    assert load_arrays([], jobs=2).arrays.ids == []


def test_cli_output_is_the_same_with_one_or_two_processes(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    outputs = []
    for jobs in ("1", "2"):
        for extra in ([], ["--json"]):
            code = main(["inspect", str(folder), "--truncated", "--jobs", jobs, *extra])
            out, err = capsys.readouterr()
            assert code == 1 and "2 bad replay file(s)" in err
            outputs.append(out)
    assert outputs[0] == outputs[2] and outputs[1] == outputs[3]
    rows = {row["id"]: row for row in map(json.loads, outputs[1].splitlines())}
    assert rows["foreign"]["n_tokens"] is None and rows["foreign"]["ttft_ms"] == 5.0
    assert rows["foreign"]["path"].endswith("foreign.jsonl")
