"""`uxlab shape` run as a user would: files and folders in, schedules and a summary out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.recordings import word_stream

from uxlab.cli import main
from uxlab.shaping import Profile, derive_seed, shape
from uxlab.streams import Recording, dumps_recording, read_replay, write_replay
from uxlab.wrapping import wrap_labelled, wrap_parts

ROOT = Path(__file__).resolve().parents[1]


def recording(rid: str, n: int = 30) -> Recording:
    words = [f" w{i}" for i in range(n)]
    return word_stream(words, rid=rid, ttft_ms=300.0, gap_ms=20.0, end_after_ms=20.0)


def test_shape_one_file(tmp_path, capsys) -> None:
    src = write_replay(recording("one"), tmp_path / "one.jsonl")
    out = tmp_path / "out.jsonl"
    argv = ["shape", str(src), "-o", str(out), "--ttft", "800", "--itl",
            "lognormal:median=30,sigma=0.5", "--seed", "7"]  # fmt: skip
    assert main(argv) == 0
    schedule = read_replay(out)
    profile = Profile.from_table({"ttft": 800, "itl": "lognormal:median=30,sigma=0.5"})
    # A single file is shaped with --seed itself.
    assert out.read_text(encoding="utf-8") == dumps_recording(
        shape(read_replay(src), profile, seed=7)
    )
    assert schedule.header.retime["seed"] == 7
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "profile: ttft=constant:800 itl=lognormal:median=30,sigma=0.5"
    assert "TTFT 800.0 ms (asked 800.0), ITL p50" in lines[-1]
    assert "(asked 30.0)" in lines[-1] and lines[-2] == "out.jsonl (seed 7): 30 chunks"
    # The same command again writes the same bytes.
    before = out.read_bytes()
    assert main(argv) == 0
    assert out.read_bytes() == before


def test_shape_a_folder_derives_a_seed_per_recording(tmp_path, capsys) -> None:
    corpus = tmp_path / "corpus"
    for rid in ("a", "b", "c"):
        write_replay(recording(rid), corpus / "sub" / f"{rid}.jsonl")
    out = tmp_path / "shaped"
    assert main(["shape", str(corpus), "-o", str(out), "--itl", "gamma:mean=30,cv=1",
                 "--seed", "3"]) == 0  # fmt: skip
    written = sorted((out / "sub").glob("*.jsonl"))
    assert len(written) == 3
    for path in written:
        schedule = read_replay(path)
        source_id = schedule.header.retime["from"]
        assert schedule.header.retime["seed"] == derive_seed(3, source_id)
        assert path.name == schedule.id.replace("~", "_") + ".jsonl"
    printed = capsys.readouterr().out
    assert printed.count("(seed ") == 3
    # Removing a file leaves the others' schedules unchanged.
    (corpus / "sub" / "a.jsonl").unlink()
    again = tmp_path / "again"
    assert main(["shape", str(corpus), "-o", str(again), "--itl", "gamma:mean=30,cv=1",
                 "--seed", "3"]) == 0  # fmt: skip
    for path in sorted((again / "sub").glob("*.jsonl")):
        assert path.read_bytes() == (out / "sub" / path.name).read_bytes()


def test_profile_errors_exit_2_naming_the_option(tmp_path, capsys) -> None:
    src = write_replay(recording("one"), tmp_path / "one.jsonl")
    code = main(["shape", str(src), "-o", str(tmp_path / "o.jsonl"), "--itl", "lognorm:30"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        "uxlab shape: --itl: unknown distribution 'lognorm' (did you mean 'lognormal'?)"
    )
    assert not (tmp_path / "o.jsonl").exists()


def test_bad_files_are_reported_and_the_rest_still_shaped(tmp_path, capsys) -> None:
    corpus = tmp_path / "corpus"
    write_replay(recording("good"), corpus / "good.jsonl")
    (corpus / "bad.jsonl").write_text('{"type": "header"}\n', encoding="utf-8")
    code = main(["shape", str(corpus), "-o", str(tmp_path / "out"), "--ttft", "500"])
    assert code == 1
    out = capsys.readouterr().out
    assert "bad.jsonl:1: format" in out and "1 file(s) skipped" in out
    assert len(list((tmp_path / "out").glob("*.jsonl"))) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.jsonl", "-o", "x.jsonl"], "missing.jsonl: no such file or folder"),
        (["in.jsonl", "-o", "in.jsonl"], "would overwrite the input"),
        (["in.jsonl", "-o", "x.jsonl", "--seed", "-1"], "--seed: -1 is negative"),
    ],
)
def test_usage_errors(tmp_path, monkeypatch, capsys, args, message) -> None:
    monkeypatch.chdir(tmp_path)
    write_replay(recording("in"), tmp_path / "in.jsonl")
    assert main(["shape", *args]) == 2
    assert message in capsys.readouterr().err


def test_schedule_header_holds_the_profile_and_no_local_paths(tmp_path) -> None:
    src = write_replay(recording("one"), tmp_path / "one.jsonl")
    out = tmp_path / "o.jsonl"
    assert main(["shape", str(src), "-o", str(out), "--chunk", "3"]) == 0
    header = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert str(tmp_path) not in json.dumps(header)
    assert header["retime"]["profile"]["chunk"] == 3


def test_one_file_into_a_folder(tmp_path) -> None:
    src = write_replay(recording("one"), tmp_path / "one.jsonl")
    assert main(["shape", str(src), "-o", f"{tmp_path / 'new'}/", "--ttft", "900"]) == 0
    (written,) = (tmp_path / "new").glob("*.jsonl")
    assert written.name.startswith("one_") and read_replay(written).chunks[0].t_ms == 900.0


def test_shape_output_fits_80_columns_and_keeps_every_part(tmp_path, capsys) -> None:
    rid = "a-recording-with-a-rather-long-descriptive-identifier-from-a-benchmark"
    corpus = tmp_path / "corpus"
    write_replay(recording(rid), corpus / "long.jsonl")
    write_replay(recording("short"), corpus / "short.jsonl")
    argv = ["shape", str(corpus), "-o", str(tmp_path / "out"), "--ttft",
            "lognormal:median=12000,sigma=0.3", "--itl", "gamma:mean=30,cv=0.5", "--rho",
            "0.3", "--chunk", "uniform:1,4", "--stalls", "at=4:1200", "--stalls",
            "poisson:rate_per_s=0.2,ms=lognormal:median=800,sigma=0.5", "--seed", "7"]  # fmt: skip
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    # Only a single word wider than a line (here a file name) may exceed it, alone.
    too_wide = [line for line in lines if len(line) > 80 and " " in line.strip()]
    assert too_wide == [], "\n".join(lines)
    text = " ".join(line.strip() for line in lines)
    # Nothing is cut: the whole profile, every file name and every timing part are there.
    for part in ("ttft=lognormal:median=12000,sigma=0.3", "rho=0.3", "chunk=uniform:1,4",
                 "poisson:rate_per_s=0.2,ms=lognormal:median=800,sigma=0.5"):  # fmt: skip
        assert part in text
    for path in (tmp_path / "out").glob("*.jsonl"):
        assert path.name in text
    assert text.count("TTFT ") == 2 and text.count("ITL p50 ") == 2 and text.count("end ") == 2
    assert "…" not in text


def test_wrap_parts_breaks_between_parts_and_inside_only_a_part_too_wide() -> None:
    parts = ["TTFT 1085.4 ms (asked 800.0)", "ITL p50 30.9 ms (asked 30.0)", "end 1835.2 ms"]
    assert wrap_parts(parts, 80, indent="  ", first_indent="  ") == [
        "  TTFT 1085.4 ms (asked 800.0), ITL p50 30.9 ms (asked 30.0), end 1835.2 ms"
    ]
    assert wrap_parts(parts, 40, indent="  ") == [
        "TTFT 1085.4 ms (asked 800.0),",
        "  ITL p50 30.9 ms (asked 30.0),",
        "  end 1835.2 ms",
    ]
    wide = wrap_parts(["profile: ttft=constant:800 itl=lognormal:median=30,sigma=0.5"], 40, "  ")
    assert wide == ["profile: ttft=constant:800", "  itl=lognormal:median=30,sigma=0.5"]
    # A word wider than the line stays whole: it is never cut.
    assert wrap_parts(["x" * 50], 40) == ["x" * 50]


def test_wrap_labelled_aligns_continuations_under_the_first_part() -> None:
    parts = ["too_slow (yesno)", "progress_ok (yesno, after steps 2, 4)", "comments (text)"]
    assert wrap_labelled("  questions: ", parts, 52) == [
        "  questions: too_slow (yesno),",
        "             progress_ok (yesno, after steps 2, 4),",
        "             comments (text)",
    ]


def test_a_tool_call_first_is_what_the_ttft_places_and_the_line_says_so(tmp_path, capsys):
    """The chat corpus's tool-call recording: its first output is a tool call, which
    --ttft 800 places at 800 ms; the line read "TTFT 1378.1 ms (asked 800.0)", as if the
    shaper had missed by half a second (the text only starts after the call)."""
    src = ROOT / "replays" / "chat" / "chat-tool-call.jsonl"
    out = tmp_path / "out.jsonl"
    assert main(["shape", str(src), "-o", str(out), "--ttft", "800", "--seed", "7"]) == 0
    timing = " ".join(capsys.readouterr().out.splitlines()[2:])
    assert "first output 800.0 ms, a tool call (asked 800.0), TTFT " in timing
    assert "TTFT 800" not in timing  # the text starts later than the call
    schedule = read_replay(out)
    assert next(c for c in schedule.chunks if c.text).channel == "tool"
