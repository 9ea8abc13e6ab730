"""Corpus loading (every bad file reported, good ones kept) and the bundled `replays/` corpus."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from uxlab.streams.corpus import load_corpus
from uxlab.streams.metrics import describe
from uxlab.streams.replay_file import ReplayFormatError, write_replay
from uxlab.streams.synthetic import synthesize

ROOT = Path(__file__).resolve().parents[1]
REPLAYS = ROOT / "replays"

HEADER = '{"type": "header", "format": "uxlab.replay/1", "id": "%s", "source": {"kind": "live"}}'
CHUNK = '{"type": "chunk", "t_ms": %s, "text": "x"}'
END = '{"type": "end", "t_ms": 99}'


def put(folder: Path, rel: str, *lines: str) -> Path:
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    put(tmp_path, "a_good.jsonl", HEADER % "a", CHUNK % 1, END)
    put(tmp_path, "b_not_json.jsonl", HEADER % "b", "{oops", END)
    put(tmp_path, "c_truncated.jsonl", HEADER % "c", CHUNK % 1, CHUNK % 2)
    put(tmp_path, "sub/d_good.jsonl", HEADER % "d", CHUNK % 5, END)
    put(tmp_path, "sub/e_decreasing.jsonl", HEADER % "e", CHUNK % 5, CHUNK % 4, END)
    put(tmp_path, "sub/f_empty.jsonl")
    put(tmp_path, "notes.md", "not a replay")
    return tmp_path


def test_every_bad_file_is_reported_and_the_good_ones_load(mixed: Path) -> None:
    corpus = load_corpus(mixed)
    assert [r.id for r in corpus.recordings] == ["a", "d"]
    assert corpus.paths == [mixed / "a_good.jsonl", mixed / "sub/d_good.jsonl"]
    assert len(corpus) == 2
    messages = [str(e) for e in corpus.errors]
    assert messages == [
        f"{mixed / 'b_not_json.jsonl'}:2: not JSON "
        "(Expecting property name enclosed in double quotes at column 2)",
        f"{mixed / 'c_truncated.jsonl'}:4: end: missing end event; the stream is truncated "
        "(load with allow_truncated=True / --truncated to accept it)",
        f"{mixed / 'sub/e_decreasing.jsonl'}:3: t_ms: 4.0 is earlier than the previous event "
        "(5.0); times never decrease",
        f"{mixed / 'sub/f_empty.jsonl'}:1: missing header (the file is empty)",
    ]


def test_truncated_files_load_when_asked(mixed: Path) -> None:
    corpus = load_corpus(mixed, allow_truncated=True)
    assert [r.id for r in corpus.recordings] == ["a", "c", "d"]
    assert corpus.by_id("c").truncated
    assert len(corpus.errors) == 3


def test_raise_if_errors_lists_every_bad_file(mixed: Path) -> None:
    with pytest.raises(ReplayFormatError) as info:
        load_corpus(mixed).raise_if_errors()
    text = str(info.value)
    assert text.startswith(f"{mixed}: 4 bad replay file(s):")
    for name in ("b_not_json", "c_truncated", "e_decreasing", "f_empty"):
        assert name in text
    load_corpus(mixed / "a_good.jsonl").raise_if_errors()  # a clean corpus does not raise


def test_a_single_file_and_missing_paths_and_ids(mixed: Path) -> None:
    corpus = load_corpus(mixed / "sub" / "d_good.jsonl")
    assert [r.id for r in corpus.recordings] == ["d"]
    with pytest.raises(KeyError, match="no recording with id 'zz'"):
        corpus.by_id("zz")
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        load_corpus(mixed / "nope")


def test_written_recordings_load_back_as_a_corpus(tmp_path: Path) -> None:
    recs = [synthesize(f"Answer {i}.", id=f"s{i}", ttft_ms=100 * i, seed=i) for i in range(3)]
    for rec in recs:
        write_replay(rec, tmp_path)
    assert load_corpus(tmp_path).recordings == recs


# --- the bundled corpus ---------------------------------------------------------------------


def test_bundled_corpus_loads_cleanly_with_provenance() -> None:
    corpus = load_corpus(REPLAYS)
    assert corpus.errors == []
    chat = [
        r for r, p in zip(corpus.recordings, corpus.paths, strict=True) if p.parent.name == "chat"
    ]
    assert len(chat) >= 12
    for rec in chat:
        assert rec.header.source["kind"] == "synthetic"
        assert rec.header.source["origin"].startswith("uxlab.streams.synthetic/1 seed=")
        assert rec.header.text_source == "synthetic"
        prompt = rec.header.request["messages"][0]
        assert prompt["role"] == "user" and prompt["content"].strip()
    readme = (REPLAYS / "README.md").read_text(encoding="utf-8")
    for rec in chat:
        assert f"`{rec.id}`" in readme, f"replays/README.md does not list {rec.id}"
    for folder in sorted(p for p in REPLAYS.iterdir() if p.is_dir()):
        assert f"`{folder.name}/`" in readme, f"replays/README.md does not describe {folder.name}/"


def test_bundled_corpus_covers_what_a_study_needs() -> None:
    chat = load_corpus(REPLAYS / "chat").recordings
    metrics = {r.id: describe(r) for r in chat}
    texts = {r.id: r.text for r in chat}
    assert any(m["n_reasoning_chunks"] > 0 for m in metrics.values())
    assert any(m["n_tool_chunks"] > 0 for m in metrics.values())
    assert any(m["stalls"]["over_1000"] for m in metrics.values())
    assert any(m["error"] == "overloaded_error" for m in metrics.values())
    assert any(m["ttft_ms"] >= 3000 for m in metrics.values())
    assert any(m["ttft_ms"] <= 200 for m in metrics.values())
    assert any(m["tokens_per_chunk"] > 1 for m in metrics.values())
    assert any("```" in t for t in texts.values())
    assert any("\n- " in t for t in texts.values())
    lengths = sorted(len(t) for t in texts.values())
    assert lengths[0] < 100 and lengths[-1] > 1200
    for rec in chat:
        tool = "".join(c.text for c in rec.chunks if c.channel == "tool")
        if tool:
            json.loads(tool)


def test_rebuilding_the_chat_corpus_gives_the_same_bytes(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(REPLAYS / "build_chat_corpus.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    built = sorted(p.name for p in tmp_path.glob("*.jsonl"))
    bundled = sorted(p.name for p in (REPLAYS / "chat").glob("*.jsonl"))
    assert built == bundled
    for name in built:
        assert (tmp_path / name).read_bytes() == (REPLAYS / "chat" / name).read_bytes(), name
