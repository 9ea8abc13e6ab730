"""`uxlab import` as a user runs it."""

from __future__ import annotations

from pathlib import Path

from uxlab.cli import main
from uxlab.streams import load_corpus

DATA = Path(__file__).parent / "data"


def test_import_aiperf_prints_summary_with_skips(tmp_path, capsys):
    out = tmp_path / "replays"
    code = main(
        [
            "import",
            "--from",
            "aiperf",
            str(DATA / "aiperf-run1" / "profile_export.jsonl"),
            "-o",
            str(out),
            "--limit",
            "5",
        ]
    )
    assert code == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("imported 5 stream(s) from profile_export.jsonl")
    assert "skipped 11: 11 cancelled (RequestCancellationError, code 499)" in line
    corpus = load_corpus(out)
    assert len(corpus) == 5 and not corpus.errors


def test_import_with_own_text_and_select(tmp_path, capsys):
    text = tmp_path / "story.md"
    text.write_text("Once upon a time there was a small **boat** that liked fog.\n")
    out = tmp_path / "o"
    code = main(
        [
            "import",
            "--from",
            "aiperf",
            str(DATA / "aiperf-run1" / "profile_export.jsonl"),
            "-o",
            str(out),
            "--text",
            str(text),
            "--select",
            "43,99",
            "--prefix",
            "gpt-oss",
        ]
    )
    assert code == 0
    corpus = load_corpus(out)
    assert sorted(r.id for r in corpus.recordings) == ["gpt-oss-r043", "gpt-oss-r099"]
    rec = corpus.by_id("gpt-oss-r043")
    assert rec.text.startswith("Once upon a time")
    assert rec.header.source["text"] == "story.md"
    assert "skipped 0" in capsys.readouterr().out


def test_import_sse_folder_warns_about_untimed_file(tmp_path, capsys):
    code = main(["import", "--from", "openai-sse", str(DATA / "openai-sse"), "-o", str(tmp_path)])
    assert code == 0
    out = capsys.readouterr().out
    assert "warning: plain_body.txt: no `: t_ms=` comments, imported text only" in out
    assert "imported 4 stream(s)" in out
    assert len(load_corpus(tmp_path)) == 4


def test_bad_source_is_one_clear_line_and_nothing_written(tmp_path, capsys):
    bad = tmp_path / "profile_export.jsonl"
    bad.write_text('{"metrics": {"ttft": {"value": 10, "unit": "ms"}}}\n[1, 2]\n')
    out = tmp_path / "o"
    code = main(["import", "--from", "aiperf", str(bad), "-o", str(out)])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err == f"uxlab import: {bad}:2: each line must be a JSON object, got list"
    assert not out.exists()


def test_missing_source_and_bad_select(tmp_path, capsys):
    assert main(["import", "--from", "llmperf", str(tmp_path / "nope.json"), "-o", "x"]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    src = next((DATA / "llmperf").glob("*.json"))
    assert (
        main(["import", "--from", "llmperf", str(src), "-o", str(tmp_path), "--select", "a"]) == 2
    )
    assert "--select: expected comma-separated whole numbers" in capsys.readouterr().err


def test_every_importer_is_a_choice_of_from_and_no_other():
    """`--from` lists its choices without importing the importers (a fast `uxlab --help`)."""
    from uxlab.cli.import_cmd import FORMATS
    from uxlab.streams.importers import IMPORTERS

    assert tuple(IMPORTERS) == FORMATS
