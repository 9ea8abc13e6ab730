"""The real AIPerf run (gpt-oss-20b, 100 requests) imported exactly."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from uxlab.streams import load_corpus, read_replay, write_replay
from uxlab.streams.importers import import_source

RUN = Path(__file__).parent / "data" / "aiperf-run1" / "profile_export.jsonl"


@pytest.fixture(scope="module")
def result():
    return import_source("aiperf", RUN)


@pytest.fixture(scope="module")
def records():
    return [json.loads(line) for line in RUN.read_text().splitlines() if line.strip()]


def test_counts_completed_and_cancelled(result):
    assert len(result.recordings) == 89
    assert len(result.skipped) == 11
    assert result.skipped_by_reason() == {"cancelled (RequestCancellationError, code 499)": 11}


def test_ttft_and_gaps_equal_the_records(result, records):
    for rec in result.recordings:
        index = int(rec.header.source["origin"].rsplit("=", 1)[1])
        metrics = records[index]["metrics"]
        times = rec.chunk_times_ms()
        assert times[0] == metrics["ttft"]["value"]  # exact
        gaps = np.diff(times)
        expected = np.array(metrics["inter_chunk_latency"]["value"])
        np.testing.assert_allclose(gaps, expected, rtol=0, atol=1e-9)
        assert rec.end.t_ms == pytest.approx(metrics["request_latency"]["value"], abs=1e-6)
        assert rec.header.source["request_id"] == records[index]["metadata"]["x_request_id"]


def test_header_text_and_channels(result, records):
    rec = next(r for r in result.recordings if r.id.endswith("r013"))
    assert rec.header.source["model"] == "openai/gpt-oss-20b"
    assert rec.header.source["origin"] == "profile_export.jsonl#record=13"
    assert rec.header.text_source == "split"
    metrics = records[13]["metrics"]
    n_reasoning = metrics["reasoning_token_count"]["value"]  # 168 of 211 chunks
    channels = [c.channel for c in rec.chunks]
    assert channels == ["reasoning"] * n_reasoning + ["content"] * (len(channels) - n_reasoning)
    assert rec.text.startswith("## How a lighthouse works")
    assert all(c.text for c in rec.chunks)
    # chunks == output_sequence_length here, so each chunk is one token
    assert {c.n_tokens for c in rec.chunks} == {1}
    odd = next(r for r in result.recordings if r.id.endswith("r027"))  # 240 tokens, 239 chunks
    assert {c.n_tokens for c in odd.chunks} == {None}


def test_written_files_keep_timing_to_a_microsecond(result, tmp_path):
    for rec in result.recordings[:10]:
        again = read_replay(write_replay(rec, tmp_path))
        np.testing.assert_allclose(again.chunk_times_ms(), rec.chunk_times_ms(), atol=5e-4)
    corpus = load_corpus(tmp_path)
    assert len(corpus) == 10 and not corpus.errors
