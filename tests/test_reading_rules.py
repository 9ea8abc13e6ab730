"""The reading rules (`uxlab.reading`) and every reproducer of the hostile-input audit.

Each case was a traceback, a half-written output or a silent acceptance; each is now one
clean error naming the file, the line or request, and the field, before anything is written.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import httpx
import pytest
from live_servers import serve_in_thread

from uxlab.cli import main
from uxlab.live.serve import ServeConfig, build_app
from uxlab.reading import (
    MAX_DEPTH,
    MAX_STUDY_FILE_BYTES,
    InputProblem,
    LocatedError,
    as_int,
    as_ms,
    as_number,
    check_range,
    did_you_mean,
    in_range,
    json_depth_exceeds,
    loads_json,
    tree_problem,
)
from uxlab.shaping import Profile, shape
from uxlab.streams.importers import ImportFormatError, import_source
from uxlab.streams.inspect_load import inspect_paths
from uxlab.streams.recording import Chunk, End, Header, Recording
from uxlab.streams.replay_file import ReplayFormatError, dumps_recording, parse_replay
from uxlab.study import load_study
from uxlab.study.spec import StudyError

DATA = Path(__file__).parent / "data"
HEADER = {
    "type": "header",
    "format": "uxlab.replay/1",
    "id": "r",
    "source": {"kind": "synthetic"},
    "request": {},
    "clock": {"t0": "request_sent", "unit": "ms"},
    "text_source": "recorded",
    "retime": None,
}
CHUNK = {"type": "chunk", "t_ms": 100.0, "channel": "content", "text": "Hi", "n_tokens": 1}
END = {"type": "end", "t_ms": 120.0, "finish_reason": "stop", "usage": None}
DEEP = "[" * 1200 + "1" + "]" * 1200
HUGE_INT = "9" * 5000


def replay_text(*lines: dict | str) -> str:
    return "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n"


def meta_with(value: str) -> str:
    return '{"type": "meta", "t_ms": 50.0, "kind": "x", "v": ' + value + "}"


# --- the helpers ----------------------------------------------------------------------------


def test_depth_scan_ignores_brackets_in_strings_and_counts_jsonl_lines_apart():
    assert json_depth_exceeds("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert not json_depth_exceeds("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    assert not json_depth_exceeds(json.dumps({"text": "[{" * 500}))
    assert not json_depth_exceeds('{"a": [1]}\n' * 1000)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (DEEP, "nested deeper than 64"),
        ("[" * 100_000, "nested deeper than 64"),
        (HUGE_INT, "not a usable number"),
        ("NaN", "NaN is not a JSON number"),
        ('{"a": -Infinity}', "-Infinity is not a JSON number"),
        ('{"a": [1e400]}', "1e400 is out of the range"),
        ('{"a": 100000000000000000000}', "a: an integer too large"),
        ('{"a": ', "not JSON (Expecting value at line 1 column 7)"),
    ],
)
def test_loads_json_refuses_with_one_clean_problem(text, problem):
    with pytest.raises(InputProblem, match=problem.replace("(", r"\(").replace(")", r"\)")):
        loads_json(text)


def test_tree_check_is_iterative_and_names_the_first_path():
    deep: list = []
    node = deep
    for _ in range(5000):  # far past Python's recursion limit
        node.append([])
        node = node[0]
    assert tree_problem(deep) is not None
    assert tree_problem({"a": [1, {"b": math.inf}], "c": math.nan}) == (
        "a[1].b",
        "inf is not a finite number",
    )


def test_ranges_name_the_field_and_the_unit():
    assert check_range(12.5, "t_ms", "t_ms") == 12.5
    with pytest.raises(InputProblem, match=r"gap: 1e\+308 is not plausible: at most"):
        check_range(1e308, "gap_ms", "gap")
    with pytest.raises(InputProblem, match="n_tokens: 1e\\+30 is not plausible"):
        check_range(10**30, "n_tokens", "n_tokens")


def test_the_number_rules_raise_the_callers_error_with_the_field():
    assert as_number(" 2.5 ", "x") == 2.5
    assert as_int("3", "n") == 3
    assert as_ms(0, "pause") == 0.0
    with pytest.raises(InputProblem, match=r"^n: expected a whole number, got 3.5$"):
        as_int(3.5, "n")
    with pytest.raises(InputProblem, match=r"^x: expected a number, got True$"):
        as_number(True, "x")
    with pytest.raises(InputProblem, match=r"^k: 0 is out of range \(must be >= 1\)$"):
        in_range(0, "k", 1)

    def located(field: str | None, problem: str) -> LocatedError:
        return LocatedError("a.chain.json", None, field, problem)

    with pytest.raises(LocatedError, match=r"^a.chain.json: steps\[1\].ms: must not be negative"):
        as_ms(-1, "steps[1].ms", error=located)
    with pytest.raises(LocatedError, match=r"must be a number of ms, got inf"):
        as_ms(math.inf, "ms", error=located)


def test_one_did_you_mean_for_keys_sections_and_choices():
    assert did_you_mean("itll", ["ttft", "itl"]) == " (did you mean 'itl'?)"
    assert did_you_mean("lognorm", ["constant", "lognormal"]) == " (did you mean 'lognormal'?)"
    assert did_you_mean("zzqx", ["a", "b"]) == " (one of 'a', 'b')"
    assert did_you_mean("desing", ["design"], "[{}]") == " (did you mean [design]?)"


# --- replay files ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (meta_with(DEEP), "nested"),
        (meta_with(HUGE_INT), "not a usable number"),
        (meta_with("1e400"), "v: inf is not a finite number"),
        (meta_with("NaN"), "NaN is not a JSON number"),
        (meta_with("100000000000000000000"), "v: an integer too large"),
        ('{"type": "chunk", "t_ms": 1e308, "channel": "content", "text": "x"}', "not plausible"),
        ('{"type": "chunk", "t_ms": 1, "text": "x", "n_tokens": 1e30}', "n_tokens: expected"),
        (
            '{"type": "chunk", "t_ms": 1, "text": "x", "n_tokens": 1000000000000000000000000000}',
            "n_tokens: 1e\\+27 is not plausible",
        ),
    ],
)
def test_replay_lines_that_broke_the_reader_are_clean_errors(line, problem):
    text = replay_text(HEADER, CHUNK, line, END)
    with pytest.raises(ReplayFormatError, match=r"<string>:3: .*" + problem):
        parse_replay(text)


def test_a_deep_header_is_a_clean_error_too():
    header = json.dumps(HEADER)[:-1] + ', "x": ' + DEEP + "}"
    with pytest.raises(ReplayFormatError, match=r"<string>:1: "):
        parse_replay(replay_text(header, CHUNK, END))


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("100000000000000000000", "request.seed: an integer too large"),  # orjson: a float
        ("1e400", "request.seed: inf is not a finite number"),  # orjson refuses it
        ("NaN", "NaN is not a JSON number"),
        (HUGE_INT, "not a usable number"),
        ('"\\ud800"', None),  # orjson refuses a lone surrogate, the stdlib keeps it
    ],
)
def test_the_header_read_by_orjson_first_keeps_the_stdlib_readers_words(value, problem):
    # The header is decoded by orjson, and again by the stdlib decoder wherever orjson
    # refuses the line or may have rounded an integer: the words are the precise reader's.
    header = json.dumps(HEADER)[:-1] + ', "request": {"seed": ' + value + "}}"
    text = replay_text(header, CHUNK, END)
    if problem is None:
        assert parse_replay(text).header.request == {"seed": "\ud800"}
        return
    with pytest.raises(ReplayFormatError, match=r"<string>:1: .*" + problem):
        parse_replay(text)


def test_a_float_limit_names_values_a_decoder_may_have_rounded():
    assert tree_problem({"a": [1.0, 2.0**63]}) is None
    assert tree_problem({"a": [1.0, 2.0**63]}, float_limit=2.0**63) == (
        "a[1]",
        "9.22337e+18 is 9.22337e+18 or more",
    )
    assert tree_problem({"a": math.nan}, float_limit=2.0**63) == ("a", "nan is not a finite number")


def test_inspect_lists_every_kind_of_bad_file_and_goes_on(tmp_path, capsys):
    good = replay_text(HEADER, CHUNK, END)
    bad = {
        "deep.jsonl": replay_text(HEADER, CHUNK, meta_with(DEEP), END),
        "bigint.jsonl": replay_text(HEADER, CHUNK, meta_with(HUGE_INT), END),
        "nan.jsonl": replay_text(HEADER, CHUNK, meta_with("NaN"), END),
        "inf.jsonl": replay_text(HEADER, CHUNK, meta_with("1e400"), END),
        "gap.jsonl": replay_text(HEADER, CHUNK, {**END, "t_ms": 1e308}),
        "empty.jsonl": "",
        "notjson.jsonl": "{nope\n",
    }
    for name, text in bad.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "latin1.jsonl").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "good.jsonl").write_text(good, encoding="utf-8")
    found = inspect_paths([tmp_path])
    assert [p.name for p in found.paths] == ["good.jsonl"]
    assert sorted(Path(e.path).name for e in found.errors) == sorted([*bad, "latin1.jsonl"])
    assert main(["inspect", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "8 bad replay file(s)" in err and "Traceback" not in err


# --- importers: checked whole before anything is written ------------------------------------


def vllm_result(itls: list) -> dict:
    n = len(itls)
    return {
        "model_id": "m",
        "ttfts": [0.2] * n,
        "itls": itls,
        "generated_texts": ["one two three"] * n,
        "output_lens": [3] * n,
        "errors": [""] * n,
    }


@pytest.mark.parametrize("bad_gap", ["1e400", "NaN", "Infinity", "1e308", HUGE_INT])
def test_a_bad_number_in_one_request_writes_nothing(tmp_path, capsys, bad_gap):
    src = tmp_path / "result.json"
    text = json.dumps(vllm_result([[0.01, 0.02], [0.01, 0.02]]))
    src.write_text(text.replace("0.02]]", bad_gap + "]]"), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["import", "--from", "vllm-bench", str(src), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "result.json" in err and "Traceback" not in err and len(err.splitlines()) == 1
    assert not out.exists() or not any(out.iterdir())  # the first request was not written


def test_a_plausible_time_that_sums_past_a_day_names_the_request(tmp_path):
    src = tmp_path / "result.json"
    src.write_text(json.dumps(vllm_result([[0.01], [5e4, 5e4]])), encoding="utf-8")
    with pytest.raises(ImportFormatError, match=r"request=1 \(event \d\): t_ms: .* not plausible"):
        import_source("vllm-bench", src)


def aiperf_raw(**changes) -> dict:
    record = {
        "metadata": {"x_request_id": "a"},
        "start_perf_ns": 1_000_000,
        "payload": {"model": "m"},
        "status": 200,
        "responses": [
            {"perf_ns": 2_000_000, "packets": [{"name": "data", "value": '{"choices": []}'}]}
        ],
        "error": None,
    }
    record.update(changes)
    return record


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"metadata": ["not", "an", "object"]}, "metadata"),
        ({"metadata": {"x_request_id": {"a": 1}}}, "metadata.x_request_id"),
        ({"responses": [{"perf_ns": 2_000_000, "packets": "x"}]}, r"responses\[0\].packets"),
        ({"responses": [{"perf_ns": 2_000_000, "packets": [1]}]}, r"responses\[0\].packets\[0\]"),
        (
            {"responses": [{"perf_ns": 2_000_000, "packets": [{"name": 1, "value": 2}]}]},
            r"responses\[0\].packets\[0\]",
        ),
    ],
)
def test_aiperf_raw_fields_of_the_wrong_type_are_named(tmp_path, changes, field):
    src = tmp_path / "profile_export_raw.jsonl"
    src.write_text(json.dumps(aiperf_raw(**changes)) + "\n", encoding="utf-8")
    with pytest.raises(ImportFormatError, match=r"profile_export_raw.jsonl:1: " + field):
        import_source("aiperf", src)


def test_aiperf_gap_of_1e308_ms_and_llmperf_10_to_30_tokens_are_refused(tmp_path):
    lines = (DATA / "aiperf-run1" / "profile_export.jsonl").read_text().splitlines()
    line = next(x for x in map(json.loads, lines) if "inter_chunk_latency" in x["metrics"])
    line["metrics"]["inter_chunk_latency"]["value"][0] = 1e308
    src = tmp_path / "profile_export.jsonl"
    src.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(ImportFormatError, match=r"inter_chunk_latency.value\[0\]"):
        import_source("aiperf", src)
    src = tmp_path / "m_1_1_individual_responses.json"
    for n_tokens, problem in [(10**30, "an integer too large"), (10**15, "1e\\+15 is not plaus")]:
        entry = {"ttft_s": 0.1, "end_to_end_latency_s": 1.0, "number_output_tokens": n_tokens}
        src.write_text(json.dumps([entry]), encoding="utf-8")
        with pytest.raises(ImportFormatError, match="number_output_tokens: " + problem):
            import_source("llmperf", src)  # refused at once: no 10**15 chunks are built


def test_importers_refuse_deep_nesting_and_huge_integers(tmp_path):
    src = tmp_path / "profile_export.json"
    src.write_text('{"experiments": ' + DEEP + "}", encoding="utf-8")
    with pytest.raises(ImportFormatError, match="nested deeper than 64"):
        import_source("genai-perf", src)
    src.write_text('{"experiments": [' + HUGE_INT + "]}", encoding="utf-8")
    with pytest.raises(ImportFormatError, match="not a usable number"):
        import_source("genai-perf", src)
    capture = tmp_path / "c.sse"
    capture.write_text(": t_ms=1.0\ndata: " + DEEP + "\n\n", encoding="utf-8")
    with pytest.raises(ImportFormatError, match=r"c.sse:1: data: nested"):
        import_source("openai-sse", capture)
    capture.write_text(": t_ms=1e400\ndata: {}\n\n", encoding="utf-8")
    with pytest.raises(ImportFormatError, match=r"c.sse:1: t_ms: inf is not a finite"):
        import_source("openai-sse", capture)


def test_a_har_stream_whose_first_event_is_too_deep_is_a_clean_error(tmp_path):
    # Found by benchmarks/fuzz_parsers.py: telling the stream's API from its first event
    # decoded the event without the reading rules, and a deep one was a RecursionError.
    har = json.loads((DATA / "har" / "chat_app.har").read_text(encoding="utf-8"))
    content = har["log"]["entries"][1]["response"]["content"]
    content["text"] = "data: " + DEEP + "\n\n" + content["text"]
    src = tmp_path / "deep.har"
    src.write_text(json.dumps(har), encoding="utf-8")
    with pytest.raises(ImportFormatError, match=r"deep.har:log.entries\[1\] .*nested deeper"):
        import_source("har", src)


def test_a_valid_import_still_round_trips(tmp_path):
    result = import_source("aiperf", DATA / "aiperf-raw" / "profile_export_raw.jsonl")
    assert result.recordings
    for rec in result.recordings:
        assert parse_replay(dumps_recording(rec), allow_truncated=True) == rec


# --- study files --------------------------------------------------------------------------


def good_study(tmp_path: Path, **replace: str) -> Path:
    text = (DATA / "bad_studies" / "good.toml").read_text(encoding="utf-8")
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "study.toml"
    path.write_text(text, encoding="utf-8")
    (tmp_path / "corpus").mkdir(exist_ok=True)
    for f in (DATA / "bad_studies" / "corpus").iterdir():
        (tmp_path / "corpus" / f.name).write_bytes(f.read_bytes())
    return path


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ("ttft_ms = [100, 400, 1600, 3200]", "ttft_ms = [100, 1e308]", r"ttft_ms\[1\]: 1e\+308"),
        ("timeout_s = 30", "timeout_s = 1e308", r"timeout_s: 1e\+308 s is not plausible"),
        ("seed = 11", "seed = " + HUGE_INT, "not a usable study file"),
        (
            'answer = "no"',
            'answer = "no"\nlevels = { ttft_ms = 1e308 }',
            r"\[attention\].levels.ttft_ms: 1e\+308 is not plausible",
        ),
        ("seed = 11", "seed = " + "[" * 5000 + "]" * 5000, "not"),
    ],
)
def test_absurd_study_values_are_refused_with_the_key(tmp_path, old, new, problem):
    with pytest.raises(StudyError, match=problem):
        load_study(good_study(tmp_path, **{old: new}))


def test_a_huge_study_file_is_refused_before_the_toml_parser(tmp_path):
    path = good_study(tmp_path)
    with path.open("a", encoding="utf-8") as f:
        f.write("# " + "x" * (MAX_STUDY_FILE_BYTES + 10) + "\n")
    with pytest.raises(StudyError, match="over the limit of 4,194,304 bytes"):
        load_study(path)


# --- trial tables and the report ---------------------------------------------------------

TRIALS = "participant,trial_index,ttft_ms,outcome,q_ok,q_speed\n" + "".join(
    f"P{p},{i},{level},completed,{int(level < 2000)},{5 - i % 3}\n"
    for p in range(3)
    for i, level in enumerate([200, 800, 3200, 200, 800, 3200])
)
STUDY_JSON = {
    "factors": {"ttft_ms": [200, 800, 3200]},
    "questions": [{"id": "ok", "type": "yesno"}, {"id": "speed", "type": "likert", "scale": 5}],
}


@pytest.mark.parametrize(
    ("row", "column", "value", "problem"),
    [
        (1, "ttft_ms", "inf", "ttft_ms'.* not a plausible value"),
        (2, "ttft_ms", "1e308", "ttft_ms'.* not a plausible value"),
        (3, "q_speed", "1e308", "q_speed'.* not a plausible value"),
        (3, "q_speed", "9", "q_speed'.* not a rating on the scale 1..5"),
        (4, "q_ok", "-1", "q_ok'.* is not 0/1"),
        (5, "ttft_ms", "", "ttft_ms'.* empty: every trial needs its latency level"),
    ],
)
def test_report_refuses_garbage_with_row_and_column(tmp_path, capsys, row, column, value, problem):
    lines = TRIALS.splitlines()
    names = lines[0].split(",")
    cells = lines[row].split(",")
    cells[names.index(column)] = value
    lines[row] = ",".join(cells)
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "trials.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "study.json").write_text(json.dumps(STUDY_JSON), encoding="utf-8")
    code = main(["report", str(folder), "-o", str(tmp_path / "r"), "--n-boot", "0", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"row {row}" in err
    assert re.search(problem, err), err


def test_ratings_beyond_any_scale_without_a_study_are_refused(tmp_path, capsys):
    csv = tmp_path / "trials.csv"
    csv.write_text(TRIALS.replace(",4\n", ",1000000\n"), encoding="utf-8")
    code = main(["report", str(csv), "-o", str(tmp_path / "r"), "--n-boot", "0", "--quiet"])
    err = capsys.readouterr().err
    # The rating part is refused (the report's other parts may still be written).
    assert code != 0 and "not on a rating scale" in err and "Traceback" not in err


def test_recordings_built_in_code_are_untouched_by_the_rules():
    rec = Recording(
        Header(id="x"),
        [Chunk(t_ms=1.0, text="a", n_tokens=1)],
        End(t_ms=2.0, finish_reason="stop", usage={"n": 2**40}),
    )
    assert parse_replay(dumps_recording(rec)) == rec


def test_inspect_with_a_pool_of_processes_lists_bad_files_too(tmp_path):
    for i in range(4):
        (tmp_path / f"good{i}.jsonl").write_text(replay_text(HEADER, CHUNK, END), "utf-8")
    (tmp_path / "deep.jsonl").write_text(replay_text(HEADER, meta_with(DEEP), END), "utf-8")
    (tmp_path / "nan.jsonl").write_text(replay_text(HEADER, meta_with("NaN"), END), "utf-8")
    found = inspect_paths([tmp_path], jobs=2)
    assert len(found.paths) == 4
    assert sorted(Path(e.path).name for e in found.errors) == ["deep.jsonl", "nan.jsonl"]


@pytest.mark.parametrize(
    "body",
    [
        '{"model": "m", "messages": ' + DEEP + "}",
        '{"model": "m", "messages": [], "max_tokens": ' + HUGE_INT + "}",
        '{"model": "m", "messages": [], "temperature": NaN}',
        '{"model": "m", "messages": [], "temperature": 1e400}',
        b'{"model": "\xff"}',
    ],
)
def test_serve_answers_400_to_a_body_outside_the_rules(body):
    rec = Recording(Header(id="x"), [Chunk(t_ms=1.0, text="a")], End(t_ms=2.0))
    profile = Profile.from_table({"ttft": "constant:1", "itl": "constant:1"})
    config = ServeConfig([rec], lambda r, s: shape(r, profile, seed=s))
    with serve_in_thread(build_app(config)) as base:
        raw = body if isinstance(body, bytes) else body.encode()
        reply = httpx.post(
            base + "/v1/chat/completions",
            content=raw,
            headers={"content-type": "application/json"},
        )
    assert reply.status_code == 400, reply.text
    assert "the body is not JSON" in reply.json()["error"]["message"]
