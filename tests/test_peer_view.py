"""The peers' own names and definitions (`inspect --as`): AIPerf's summary table, vLLM's and
guidellm's figures reproduced from their own files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from uxlab.cli import main
from uxlab.streams.aiperf_run import check_summary, load_aiperf_run
from uxlab.streams.importers import import_source
from uxlab.streams.importers.base import import_header
from uxlab.streams.peer_view import facts, peer_view
from uxlab.streams.recording import Chunk, End, Meta, Recording

DATA = Path(__file__).parent / "data"
RUN1 = DATA / "aiperf-run1"
RUN013 = DATA / "aiperf-0.13.0"


def _checks(folder: Path) -> dict[str, tuple[str, str]]:
    _, checks = check_summary(load_aiperf_run(folder))
    return {c.metric: (c.status, c.detail) for c in checks}


def test_aiperf_2025_run_summary_is_reproduced_to_its_printed_precision():
    checks = _checks(RUN1)
    not_computed = {k for k, (status, _) in checks.items() if status == "not computed"}
    assert not_computed == {"min_request_timestamp", "max_response_timestamp"}
    assert all(status == "equal" for k, (status, _) in checks.items() if k not in not_computed)
    # the figures of AIPerf's table, by today's names (the file has `ttft`, `ttst`)
    for name in ("time_to_first_token", "time_to_second_token", "inter_chunk_latency"):
        assert checks[name][0] == "equal"
    assert checks["request_throughput"] == ("equal", "over the requests' span")


def test_aiperf_013_run_summary_is_reproduced_and_the_rest_is_named():
    checks = _checks(RUN013)
    assert not any(status == "differs" for status, _ in checks.values())
    for name in (
        "time_to_first_token",
        "time_to_first_output_token",
        "inter_token_latency",
        "decode_duration",
        "prefill_throughput_per_user",
        "benchmark_duration",
    ):
        assert checks[name][0] == "equal", name
    # AIPerf 0.13 divides throughputs by its profiling phase, not the requests' span
    assert checks["output_token_throughput"] == ("equal", "over AIPerf's phase")
    assert checks["http_req_waiting"][0] == "not computed"
    assert "HTTP phase timings" in checks["http_req_waiting"][1]


def test_both_aiperf_files_give_one_request_latency_under_aiperfs_definition():
    records = import_source("aiperf", RUN013 / "profile_export.jsonl").recordings
    raw = import_source("aiperf", RUN013 / "profile_export_raw.jsonl")
    by_records = peer_view("aiperf", records).per_recording
    by_raw = peer_view("aiperf", raw.recordings).per_recording
    for a, b in zip(by_records, by_raw, strict=True):
        for name in ("time_to_first_token", "time_to_second_token", "request_latency"):
            assert a[name] == pytest.approx(b[name], abs=1e-6), name
        np.testing.assert_allclose(a["inter_chunk_latency"], b["inter_chunk_latency"], atol=1e-6)
    # uxlab's own e2e of the raw file ends later, and the import says by how much
    ends = [r.end.t_ms for r in raw.recordings]
    assert all(e >= row["request_latency"] for e, row in zip(ends, by_raw, strict=True))
    (note,) = [w for w in raw.warnings if "request_latency" in w]
    assert "ms earlier on average" in note and "--as aiperf" in note


def test_vllm_view_reproduces_vllms_own_summary():
    doc = json.loads((DATA / "vllm-0.33.0" / "result.json").read_text())
    view = peer_view(
        "vllm", import_source("vllm-bench", DATA / "vllm-0.33.0" / "result.json").recordings
    )
    for metric in ("ttft", "tpot", "itl"):
        for stat in ("mean", "median", "std", "p99"):
            assert view.summary[metric][stat] == pytest.approx(doc[f"{stat}_{metric}_ms"], rel=1e-9)


def test_guidellm_view_reproduces_guidellms_per_request_figures():
    report = DATA / "guidellm-0.8.1" / "benchmarks.json"
    reqs = json.loads(report.read_text())["benchmarks"][0]["requests"]["successful"]
    view = peer_view("guidellm", import_source("guidellm", report).recordings)
    for row, req in zip(view.per_recording, reqs, strict=True):
        for name, value in row.items():
            assert value == pytest.approx(req[name], rel=1e-9), name


def test_a_tool_call_is_aiperfs_first_output_and_without_token_counts_nothing_is_made_up():
    header = import_header("agent", importer="test", origin="test")
    events = [
        Meta(200.0, {"kind": "tool_call", "index": 0, "id": "c", "name": "search"}),
        Chunk(200.0, '{"q":', "tool", extra={"tool_index": 0, "same_event": True}),
        Chunk(240.0, '"x"}', "tool", extra={"tool_index": 0}),
    ]
    rec = Recording(header, events, End(260.0, "tool_calls"))
    assert facts(rec).responses == [(200.0, "tool_call+tool"), (240.0, "tool")]
    view = peer_view("aiperf", [rec])
    row = view.per_recording[0]
    assert row["time_to_first_token"] == 200.0 and row["request_latency"] == 240.0
    assert row["inter_token_latency"] is None  # no token counts: not a chunk count
    assert view.notes["inter_token_latency"].startswith("no token counts")


def test_inspect_as_cli_table_and_json(capsys):
    assert main(["inspect", str(RUN1), "--as", "aiperf"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("As AIPerf names and defines them: 89 recording(s)")
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "19 equal, 2 not computed" in " ".join(out.split())
    row = next(x for x in out.splitlines() if x.startswith("time_to_first_token"))
    assert row.split()[1:4] == ["2,343.22", "2,369.32", "3,833.39"]  # AIPerf's avg, p50, p99
    words = " ".join(out.split())  # the run's figures with their units (11 was a percentage)
    assert "request_error_rate 11%," in words and "benchmark_duration 9.32 s," in words
    assert "request_throughput 9.55 requests/s" in words
    assert main(["inspect", str(RUN1), "--as", "aiperf", "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    first, final = lines[0], lines[-1]
    assert first["metrics"]["time_to_first_token"]["unit"] == "ms"
    assert final["summary"]["inter_chunk_latency"]["count"] == 21537
    assert final["definitions"]["request_latency"].startswith("the last response with output")
    assert {c["status"] for c in final["aiperf_summary_checks"]} == {"equal", "not computed"}


def test_plain_inspect_of_an_aiperf_folder_says_whether_the_summary_is_reproduced(capsys):
    assert main(["inspect", str(RUN013)]) == 0
    out = capsys.readouterr().out
    assert "TTFT  p50" in out  # uxlab's own table of the imported records
    said = " ".join(out.split())
    assert "AIPerf's own summary" in said and "26 equal, 41 not computed" in said
