"""AIPerf 0.13.0's own files (run against `uxlab serve`): current metric names, raw export."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from uxlab.streams.importers import ImportFormatError, import_source
from uxlab.streams.metrics import describe
from uxlab.streams.recording import Chunk, Meta

RUN = Path(__file__).parent / "data" / "aiperf-0.13.0"
LEGACY = Path(__file__).parent / "data" / "aiperf-run1" / "profile_export.jsonl"


def _records() -> list[dict]:
    return [json.loads(line) for line in (RUN / "profile_export.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def result():
    return import_source("aiperf", RUN / "profile_export.jsonl")


@pytest.fixture(scope="module")
def raw():
    return import_source("aiperf", RUN / "profile_export_raw.jsonl")


def test_current_names_import_with_exact_times(result):
    records = _records()
    assert len(result.recordings) == len(records) == 4
    for rec, record in zip(result.recordings, records, strict=True):
        metrics = record["metrics"]
        times = rec.chunk_times_ms()
        assert times[0] == metrics["time_to_first_token"]["value"]
        np.testing.assert_allclose(
            np.diff(times), metrics["inter_chunk_latency"]["value"], rtol=0, atol=1e-9
        )
        assert rec.end.t_ms == pytest.approx(metrics["request_latency"]["value"], abs=1e-9)
        assert rec.header.source["aiperf_metric_names"] == "current"
        assert rec.header.source["model"] == "uxlab"  # from profile_export_aiperf.json
        assert rec.header.text_source == "split"


def test_reasoning_only_record_goes_on_reasoning(result):
    rec = result.recordings[2]  # chat-reasoning cut at 30 tokens: all reasoning
    assert {c.channel for c in rec.chunks} == {"reasoning"}


def test_time_to_first_output_token_places_the_switch_to_content(tmp_path):
    record = _records()[0]
    metrics = record["metrics"]
    gaps = metrics["inter_chunk_latency"]["value"]
    ttft = metrics["time_to_first_token"]["value"]
    metrics["time_to_first_output_token"]["value"] = ttft + sum(gaps[:5])  # chunk 5
    metrics["reasoning_token_count"] = {"value": 7, "unit": "tokens"}
    path = tmp_path / "profile_export.jsonl"
    path.write_text(json.dumps(record) + "\n")
    rec = import_source("aiperf", path).recordings[0]
    assert [c.channel for c in rec.chunks[:6]] == ["reasoning"] * 5 + ["content"]
    assert rec.header.source["channels"] == "time_to_first_output_token"


def test_both_name_sets_in_one_file_are_told_apart_per_record(tmp_path):
    legacy = LEGACY.read_text().splitlines()[11]
    current = (RUN / "profile_export.jsonl").read_text().splitlines()[0]
    path = tmp_path / "mixed.jsonl"
    path.write_text(f"{legacy}\n{current}\n")
    recs = import_source("aiperf", path).recordings
    assert [r.header.source["aiperf_metric_names"] for r in recs] == ["legacy", "current"]
    assert recs[0].chunk_times_ms()[0] == json.loads(legacy)["metrics"]["ttft"]["value"]


def test_record_without_either_ttft_name_names_both(tmp_path):
    record = _records()[0]
    del record["metrics"]["time_to_first_token"]
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(ImportFormatError) as exc:
        import_source("aiperf", path)
    message = str(exc.value)
    assert message.startswith(f"{path}:1: metrics.time_to_first_token: missing")
    assert "`ttft`" in message


def test_raw_export_agrees_with_aiperfs_own_numbers(raw):
    """Where the definitions coincide, uxlab's metrics of the raw responses equal AIPerf's."""
    records = _records()
    for rec, record in zip(raw.recordings[:3], records[:3], strict=True):
        metrics = record["metrics"]
        d = describe(rec)
        assert d["ttft_ms"] == pytest.approx(metrics["time_to_first_token"]["value"], abs=1e-6)
        out = [c.t_ms for c in rec.chunks if c.text and c.channel != "tool"]
        np.testing.assert_allclose(
            np.diff(out), metrics["inter_chunk_latency"]["value"], rtol=0, atol=1e-6
        )
        # AIPerf's "time to second token" is a gap: uxlab's second_token_gap_ms
        assert d["second_token_gap_ms"] == pytest.approx(
            metrics["time_to_second_token"]["value"], abs=1e-6
        )
        assert d["ttst_ms"] == pytest.approx(
            d["ttft_ms"] + metrics["time_to_second_token"]["value"], abs=1e-6
        )
        # AIPerf ends the request at the last response with output, uxlab at the stream's end
        assert d["e2e_ms"] >= metrics["request_latency"]["value"] - 1e-6
        assert out[-1] == pytest.approx(metrics["request_latency"]["value"], abs=1e-6)


def test_raw_export_tool_call_differs_as_documented(raw):
    """AIPerf counts every tool-call delta (the one naming the tool too) as an output chunk,
    so its TTFT is the tool call's start; uxlab's TTFT and ITL count content and reasoning."""
    rec, record = raw.recordings[3], _records()[3]
    metrics = record["metrics"]
    aiperf_times = metrics["time_to_first_token"]["value"] + np.concatenate(
        [[0.0], np.cumsum(metrics["inter_chunk_latency"]["value"])]
    )
    all_output = [
        e.t_ms
        for e in rec.events
        if (isinstance(e, Chunk) and e.text)
        or (isinstance(e, Meta) and e.data.get("kind") == "tool_call")
    ]
    np.testing.assert_allclose(all_output, aiperf_times, rtol=0, atol=1e-6)
    assert rec.chunks[0].channel == "tool"
    assert describe(rec)["ttft_ms"] > aiperf_times[0] + 100


def test_mutated_records_give_a_clean_error_or_recordings(tmp_path):
    """Fuzz-style: every single mutation of a current-names record (metrics and metadata)
    is an ImportFormatError naming the file and line, or an import; never a traceback."""
    from test_importers_guidellm import _mutations

    rng = np.random.default_rng(3)
    record = _records()[1]
    metrics = record["metrics"]
    keep = ("time_to_first_token", "time_to_first_output_token", "inter_chunk_latency")
    keep += ("request_latency", "output_sequence_length", "reasoning_token_count")
    record["metrics"] = {k: v for k, v in metrics.items() if k in keep}
    path = tmp_path / "profile_export.jsonl"
    n = 0
    for mutated in _mutations(record, rng):
        path.write_text(json.dumps(mutated) + "\n")
        try:
            result = import_source("aiperf", path)
        except ImportFormatError as exc:
            assert str(exc).startswith(f"{path}:")  # where: the line, or the record's event
        else:
            for rec in result.recordings:
                times = rec.chunk_times_ms()
                assert (np.diff(times) >= 0).all()
        n += 1
    assert n > 50
