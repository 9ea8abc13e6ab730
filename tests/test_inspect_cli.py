"""`uxlab inspect`: the table, `--json`, bad files, `--truncated`, run as a user would."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from uxlab.cli import main

ROOT = Path(__file__).resolve().parents[1]

HEADER = {"type": "header", "format": "uxlab.replay/1", "source": {"kind": "live"}}


def write(folder: Path, rid: str, events: list[dict], end: dict | None, name: str = "") -> Path:
    path = folder / (name or f"{rid}.jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [{**HEADER, "id": rid}, *events] + ([end] if end else [])
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def chunk(t_ms: float | None, text: str = "ab", channel: str = "content", n: int | None = 1):
    return {"type": "chunk", "t_ms": t_ms, "channel": channel, "text": text, "n_tokens": n}


def end(t_ms: float, reason: str | None = "stop") -> dict:
    return {"type": "end", "t_ms": t_ms, "finish_reason": reason, "usage": None}


# Output chunk times of the "known" recording, and its gaps computed by hand.
KNOWN_T = [400.0, 430.0, 470.0, 800.0, 2000.0, 2010.0]
KNOWN_GAPS = [30.0, 40.0, 330.0, 1200.0, 10.0]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    events = [{"type": "meta", "t_ms": 100.0, "kind": "role"}, chunk(150.0, "")]
    events += [chunk(t, "abcd") for t in KNOWN_T]
    write(tmp_path, "known", events, end(2100.0))
    write(
        tmp_path / "more",
        "failing",
        [chunk(50.0), chunk(60.0), {"type": "error", "t_ms": 70, "error": {"type": "api_error"}}],
        end(71.0, None),
    )
    write(tmp_path, "untimed", [chunk(None, "hello"), chunk(None, " there")], end(5.0))
    return tmp_path


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["inspect", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_lines_match_values_computed_by_hand(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, str(folder), "--json")
    assert code == 0 and err == ""
    rows = {r["id"]: r for r in map(json.loads, out.splitlines())}
    assert sorted(rows) == ["failing", "known", "untimed"]
    known = rows["known"]
    required = "id n_chunks n_tokens ttft_ms ttft_first_event_ms e2e_ms itl_ms tpot_ms stalls"
    for key in [*required.split(), "chars_per_s", "finish_reason", "error"]:
        assert key in known
    assert known["n_chunks"] == 7 and known["n_tokens"] == 6
    assert known["ttft_ms"] == 400.0 and known["ttft_first_event_ms"] == 100.0
    assert known["e2e_ms"] == 2100.0
    q = statistics.quantiles(KNOWN_GAPS, n=100, method="inclusive")
    assert known["itl_ms"]["mean"] == pytest.approx(sum(KNOWN_GAPS) / 5, abs=1e-3)
    assert known["itl_ms"]["p50"] == pytest.approx(statistics.median(KNOWN_GAPS), abs=1e-3)
    assert known["itl_ms"]["p90"] == pytest.approx(q[89], abs=1e-3)
    assert known["itl_ms"]["p99"] == pytest.approx(q[98], abs=1e-3)
    assert known["itl_ms"]["max"] == 1200.0
    assert known["tpot_ms"] == pytest.approx((2010 - 400) / 5, abs=1e-3)
    assert known["stalls"] == {"over_250": 2, "over_1000": 1, "longest_ms": 1200.0}
    assert known["chars_per_s"] == pytest.approx(20 / 1.610, abs=1e-3)
    assert known["finish_reason"] == "stop" and known["error"] is None
    assert known["path"] == str(folder / "known.jsonl")
    assert rows["failing"]["error"] == "api_error" and rows["failing"]["finish_reason"] is None
    untimed = rows["untimed"]
    assert untimed["ttft_ms"] is None and untimed["itl_ms"]["p50"] is None
    assert untimed["n_chars"] == 11 and untimed["has_timing"] is False


def test_table_fits_80_columns_and_names_its_definitions(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run_cli(capsys, str(folder))
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert all(len(line) <= 80 for line in lines)
    header = ["id", "chunks", "TTFT", "ITL", "p50", "ITL", "p99", "stalls", "e2e", "finish"]
    assert lines[0].split() == header
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:4]}
    # gaps sorted 10, 30, 40, 330, 1200: p50 40, p99 at position 3.96 = 330 + 0.96 * 870
    assert rows["known"] == ["7", "400", "40.0", "1,165", "2/1", "2,100", "stop"]
    assert rows["failing"] == ["2", "50", "10.0", "10.0", "0/0", "71", "!api"]
    assert rows["untimed"] == ["2", "-", "-", "-", "-", "5", "stop"]  # the end has a time
    text = "\n".join(lines)
    assert "Pooled over 3 recordings (ITL and stalls pool all 6 gaps" in " ".join(lines)
    assert "TTFT: first non-empty content/reasoning chunk" in " ".join(lines)
    assert "over 250 ms / over 1000 ms" in " ".join(lines)
    assert "mid-stream errors 1  truncated 0  without timing 1" in text


def test_long_ids_are_shortened_in_the_middle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    rid = "a-very-long-recording-identifier-from-an-importer-0001"
    write(tmp_path, rid, [chunk(10.0), chunk(20.0)], end(30.0))
    code, out, _ = run_cli(capsys, str(tmp_path))
    first = out.splitlines()[1]
    assert code == 0 and len(first) <= 80
    assert first.startswith("a-very-long") and "…" in first.split()[0]
    assert first.split()[0].endswith("0001")


def test_bad_files_go_to_stderr_while_good_ones_are_inspected(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "broken.jsonl").write_text("{not json\n", encoding="utf-8")
    write(folder, "cut", [chunk(1.0)], None)
    code, out, err = run_cli(capsys, str(folder), "--json")
    assert code == 1
    assert sorted(json.loads(line)["id"] for line in out.splitlines()) == [
        "failing",
        "known",
        "untimed",
    ]
    assert err.splitlines() == [
        "uxlab inspect: 2 bad replay file(s):",
        f"  {folder / 'broken.jsonl'}:1: not JSON "
        "(Expecting property name enclosed in double quotes at column 2)",
        f"  {folder / 'cut.jsonl'}:3: end: missing end event; the stream is truncated "
        "(load with allow_truncated=True / --truncated to accept it)",
    ]


def test_truncated_flag_accepts_files_without_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "cut", [chunk(10.0), chunk(35.0)], None)
    code, _, err = run_cli(capsys, str(path))
    assert code == 2 and "missing end event" in err  # no file inspected: an input error
    code, out, err = run_cli(capsys, str(path), "--truncated")
    assert code == 0 and err == ""
    row_cells = out.splitlines()[1].split()
    assert row_cells == ["cut", "2", "10", "25.0", "25.0", "0/0", "-", "(truncated)"]
    code, out, _ = run_cli(capsys, str(path), "--truncated", "--json")
    row = json.loads(out)
    assert row["truncated"] is True and row["e2e_ms"] is None


def test_empty_folder_and_missing_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, str(tmp_path))
    assert code == 2 and out == ""
    assert err.strip() == f"uxlab inspect: no replay files (*.jsonl) in {tmp_path}"
    code, out, err = run_cli(capsys, str(tmp_path / "nope"))
    assert code == 2
    assert err.strip() == f"uxlab inspect: {tmp_path / 'nope'}: no such file or folder"


@pytest.mark.slow
def test_the_readme_command_works_on_the_bundled_corpus() -> None:
    # As a newcomer runs it: the installed entry point, from the project folder.
    proc = subprocess.run(
        [sys.executable, "-m", "uxlab", "inspect", "replays/"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"COLUMNS": "80", "PATH": ""},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert any(line.startswith("chat-midstream-error") and "!overloaded" in line for line in lines)
    assert any(line.startswith("Pooled over") for line in lines)


def test_a_turn_that_only_calls_a_tool_has_a_time_to_first_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    call = {"type": "meta", "t_ms": 300.0, "kind": "tool_call", "index": 0, "name": "search"}
    args = {**chunk(340.0, '{"q": "x"}', "tool", None), "tool_index": 0}
    write(tmp_path, "agent-tool-only", [call, args], end(400.0, "tool_calls"))
    write(tmp_path, "chat", [chunk(250.0), chunk(280.0)], end(300.0))
    code, out, _ = run_cli(capsys, str(tmp_path))
    assert code == 0
    head, *rows = out.splitlines()
    assert head.split()[:4] == ["id", "chunks", "TTFT", "TTFO"]  # shown: a turn only calls
    tool_row = next(r for r in rows if r.startswith("agent-tool-only"))
    assert tool_row.split()[2:4] == ["-", "300"]  # no TTFT, TTFO at the call's start
    assert "  TTFO  p50 275" in out  # pooled over both turns (250 and 300)
    assert "tool calls 1, 0 never completed; 1 turn(s) with tool calls only" in out
    code, out, _ = run_cli(capsys, str(tmp_path), "--json")
    records = {r["id"]: r for r in map(json.loads, out.splitlines())}
    assert records["agent-tool-only"]["ttft_ms"] is None
    assert records["agent-tool-only"]["ttfo_ms"] == 300.0
    assert records["agent-tool-only"]["n_tool_calls"] == 1
    assert records["chat"]["ttfo_ms"] == records["chat"]["ttft_ms"] == 250.0
