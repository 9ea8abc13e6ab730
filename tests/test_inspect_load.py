"""Columnar loading for `uxlab inspect`: the same numbers and errors as full Recordings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from uxlab.cli import main
from uxlab.streams import inspect_load
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


def chunk_line(t_ms: float | None, text: str = "a", channel: str = "content") -> str:
    return json.dumps(
        {"type": "chunk", "t_ms": t_ms, "channel": channel, "text": text, "n_tokens": 1}
    )


END_LINE = '{"type": "end", "t_ms": %s, "finish_reason": "stop", "usage": null}'


@pytest.mark.parametrize(("group", "group_bytes"), [(1, None), (3, None), (128, None), (128, 1)])
def test_canonical_files_checked_in_groups_give_what_each_file_alone_gives(
    folder: Path, group: int, group_bytes: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Canonical files have their times checked a group at a time (of at most `group` files,
    or fewer once their texts add up to `group_bytes`): a file whose times go back is still
    named with its line, wherever it falls in a group."""
    canonical = {
        "back": [chunk_line(5.0), chunk_line(4.0), END_LINE % 6],
        "back-past-unknown": [chunk_line(5.0), chunk_line(None), chunk_line(4.0), END_LINE % 6],
        "end-before-unknown": [chunk_line(5.0), chunk_line(None), END_LINE % 4],
        "unknown-first": [chunk_line(None), chunk_line(3.0, ""), chunk_line(4.0), END_LINE % 5],
        "tool": [chunk_line(2.0, '{"q"', "tool"), chunk_line(3.0, "b", "reasoning"), END_LINE % 4],
        "empty-then-text": [chunk_line(1.0, ""), chunk_line(2.0, "xy"), END_LINE % "null"],
    }
    for i in range(7):
        canonical[f"plain-{i}"] = [chunk_line(t) for t in (1.0, 1.0, 2.5 + i)] + [END_LINE % 9]
    # The same chunks after a ping: read by the other fast path (`columns_of_valid`).
    ping = '{"type": "meta", "t_ms": null, "kind": "ping"}'
    canonical["ping-unknown-first"] = [ping, *canonical["unknown-first"]]
    for name, lines in canonical.items():
        text = "\n".join([HEADER % name, *lines]) + "\n"
        (folder / f"c-{name}.jsonl").write_text(text, encoding="utf-8")
    monkeypatch.setattr(inspect_load, "CANONICAL_GROUP", group)
    if group_bytes is not None:
        monkeypatch.setattr(inspect_load, "CANONICAL_GROUP_BYTES", group_bytes)
    sizes: list[int] = []
    checked_as_one = inspect_load.columns_of_canonical

    def check(files):
        sizes.append(len(files))
        return checked_as_one(files)

    monkeypatch.setattr(inspect_load, "columns_of_canonical", check)
    table, paths, errors = reference(folder, allow_truncated=False)
    loaded = load_arrays([folder], jobs=1)
    assert max(sizes) == 1 if group_bytes == 1 else max(sizes) <= group and len(sizes) >= 1
    if group == 128 and group_bytes is None:
        assert len(sizes) == 1  # every canonical file of the folder in one group
    pd.testing.assert_frame_equal(describe_many(loaded.arrays), table)
    assert loaded.paths == paths
    assert [str(e) for e in loaded.errors] == errors
    assert any("c-back.jsonl:3: t_ms: 4.0 is earlier" in e for e in errors)
    assert any("c-back-past-unknown.jsonl:4: t_ms: 4.0 is earlier" in e for e in errors)
    assert any("c-end-before-unknown.jsonl:4: t_ms: 4.0 is earlier" in e for e in errors)
    rows = table.set_index("id")
    assert rows.loc["tool", "n_tool_calls"] == 1 and rows.loc["tool", "ttfo_ms"] == 2.0
    assert rows.loc["unknown-first", "ttfo_ms"] == 4.0  # the first non-empty known time
    assert rows.loc["ping-unknown-first", "ttfo_ms"] == 4.0


def test_a_part_of_canonical_files_in_order_is_made_arrays_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`inspect`'s common case (every file of a part canonical, its times in order) makes the
    part's metric arrays at once (`arrays_of_canonical`): the same table and summary as the
    Recording path, for every channel, empty and untokenised chunks, a server's rate, an
    end of unknown time and made-up gaps."""
    synthetic = (
        '{"type": "header", "format": "uxlab.replay/1", "id": "synth", "source": {"kind": '
        '"import", "timing": "synthetic-uniform"}}'
    )
    ollama_end = (
        '{"type": "end", "t_ms": 9, "finish_reason": "stop", '
        '"usage": {"eval_count": 40, "eval_duration": 800000000}}'
    )
    files = {
        "plain": [HEADER % "plain", chunk_line(1.0), chunk_line(2.5), END_LINE % 3],
        "tool": [HEADER % "tool", chunk_line(2.0, '{"q"', "tool"),
                 chunk_line(3.0, "b", "reasoning"), chunk_line(3.5, "c"), END_LINE % 4],
        "empty-first": [HEADER % "empty-first", chunk_line(1.0, ""), chunk_line(2.0, "xy"),
                        END_LINE % "null"],
        "only-tool": [HEADER % "only-tool", chunk_line(1.0, "{}", "tool"), END_LINE % 2],
        "untokenised": [HEADER % "untokenised",
                        chunk_line(1.0).replace('"n_tokens": 1', '"n_tokens": null'),
                        chunk_line(4.0), ollama_end],
        "synth": [synthetic, chunk_line(1.0), chunk_line(2.0), chunk_line(9.0), END_LINE % 9],
    }  # fmt: skip
    for name, lines in files.items():
        (tmp_path / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    table, paths, _ = reference(tmp_path, allow_truncated=False)
    expected = summarize(load_corpus(tmp_path).recordings)

    def one_at_a_time(*args: object) -> None:
        raise AssertionError("a part of canonical files in order is made arrays at once")

    monkeypatch.setattr(inspect_load, "columns_of_canonical", one_at_a_time)
    for synthetic_pooled in (False, True):
        found = inspect_paths([tmp_path], jobs=1, include_synthetic=synthetic_pooled)
        assert found.paths == paths and not found.errors
        got = pd.DataFrame(found.table, columns=list(COLUMNS))
        want = describe_many(load_corpus(tmp_path).recordings, synthetic_pooled)
        pd.testing.assert_frame_equal(got, want)
    assert inspect_paths([tmp_path], jobs=1).summary() == expected
    rows = table.set_index("id")
    assert rows.loc["tool", "n_tool_calls"] == 1 and rows.loc["only-tool", "n_output_chunks"] == 0
    assert rows.loc["untokenised", "server_decode_tokens_per_s"] == 50.0


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
