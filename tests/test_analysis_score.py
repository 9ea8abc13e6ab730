"""Scoring recordings: timing read straight from replay files, shares with carried uncertainty."""

from __future__ import annotations

import json

import numpy as np
import pytest

from analysis.score import (
    ScoreError,
    read_corpus_timings,
    read_stream_timing,
    score_corpus,
    threshold_draws_from_ci,
)


def _replay(path, vendor: str, ttft_ms: float, gap_ms: float, n: int = 5):
    header = {
        "type": "header",
        "format": "uxlab.replay/1",
        "id": path.stem,
        "source": {"kind": "import", "vendor": vendor, "model": "m1"},
        "clock": {"t0": "request_sent", "unit": "ms"},
    }
    lines = [header, {"type": "chunk", "t_ms": 5.0, "channel": "content", "text": ""}]
    for i in range(n):
        lines.append(
            {
                "type": "chunk",
                "t_ms": ttft_ms + i * 2 * gap_ms,
                "channel": "content",
                "text": f"w{i} ",
                "n_tokens": 2,
            }
        )
    lines.append({"type": "end", "t_ms": ttft_ms + n * 2 * gap_ms, "finish_reason": "stop"})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")


def test_ttft_skips_empty_prelude_and_itl_is_per_token(tmp_path):
    _replay(tmp_path / "a.jsonl", "acme", ttft_ms=640.0, gap_ms=25.0)
    timing = read_stream_timing(tmp_path / "a.jsonl")
    assert timing.ttft_ms == 640.0  # not the empty chunk at 5 ms
    assert timing.itl_median_ms == pytest.approx(25.0)  # 50 ms gaps over 2 tokens
    assert timing.end_ms == 640.0 + 250.0
    assert timing.source == "acme/m1"


def test_bad_files_are_reported_not_fatal(tmp_path):
    _replay(tmp_path / "a.jsonl", "acme", 300.0, 20.0)
    (tmp_path / "b.jsonl").write_text('{"type": "chunk"}\n')
    (tmp_path / "c.jsonl").write_text('{"type": "header"}\nnot json\n')
    timings, errors = read_corpus_timings(tmp_path)
    assert len(timings) == 1
    assert any("b.jsonl:1: type: expected 'header'" in e for e in errors)
    assert any("c.jsonl:2: not JSON" in e for e in errors)
    with pytest.raises(ScoreError, match="no such file"):
        read_corpus_timings(tmp_path / "missing")


def test_share_past_threshold_carries_uncertainty(tmp_path):
    for i, ttft in enumerate([200, 400, 900, 1100, 3000]):
        _replay(tmp_path / f"fast{i}.jsonl", "fast", ttft / 4, 20.0)
        _replay(tmp_path / f"slow{i}.jsonl", "slow", ttft, 20.0)
    timings, _ = read_corpus_timings(tmp_path)
    draws = threshold_draws_from_ci(1000.0, (950.0, 1050.0), n_draws=2000, seed=1)
    assert np.percentile(draws, 2.5) == pytest.approx(950, rel=0.01)
    table = score_corpus(timings, "ttft_ms", threshold_draws_ms=draws).set_index("source")
    assert table.loc["slow/m1", "share_past_threshold"] == pytest.approx(0.4)
    assert table.loc["fast/m1", "share_past_threshold"] == 0.0
    wide = threshold_draws_from_ci(1000.0, (500.0, 2000.0), n_draws=2000, seed=1)
    wide_table = score_corpus(timings, "ttft_ms", threshold_draws_ms=wide).set_index("source")
    lo, hi = wide_table.loc["slow/m1", ["share_ci_low", "share_ci_high"]]
    assert lo < 0.4 < hi  # an uncertain threshold gives an interval, not a point


def test_the_scored_threshold_carries_the_population_interval(tmp_path):
    from analysis_fixtures import simulate_trial_table, write_export_folder

    from analysis.report import ReportOptions, analyse
    from analysis.report.score_part import threshold_draws
    from analysis.trial_table import load_trial_table

    trials = simulate_trial_table(n_participants=8, reps=2, seed=9, failing_participant=False)
    data = analyse(
        load_trial_table(write_export_folder(tmp_path / "e", trials)),
        ReportOptions(n_boot=100, per_participant=False),
    )
    draws, source = threshold_draws(data, 4000)
    mid = data.psychometric.population.set_index("level").loc[0.5]
    low, high = np.percentile(draws, [2.5, 97.5])
    assert low == pytest.approx(mid.ci_low, rel=0.05) and high == pytest.approx(
        mid.ci_high, rel=0.05
    )
    assert "population interval" in source
    # not the pooled fit's trial-level interval (its sensitivity bootstrap can make it the
    # wider one with 2 trials per level, as here with the cumulative-normal pooled curve)
    trial_level = data.psychometric.pooled.threshold_ci(0.5)
    assert low != pytest.approx(trial_level[0], rel=0.05)


def _tool_only(path, vendor: str, call_ms: float):
    header = {"type": "header", "format": "uxlab.replay/1", "id": path.stem}
    header["source"] = {"kind": "import", "vendor": vendor, "model": "m1"}
    call = {"type": "meta", "t_ms": call_ms, "kind": "tool_call", "index": 0, "name": "search"}
    args = {"type": "chunk", "t_ms": call_ms + 30, "channel": "tool", "text": "{}"}
    end = {"type": "end", "t_ms": call_ms + 40, "finish_reason": "tool_calls"}
    path.write_text("".join(json.dumps(x) + "\n" for x in [header, call, args, end]))


def test_a_tool_only_turn_has_a_time_to_first_output_and_no_ttft(tmp_path):
    _tool_only(tmp_path / "agent.jsonl", "slow", 1500.0)
    timing = read_stream_timing(tmp_path / "agent.jsonl")
    assert np.isnan(timing.ttft_ms) and timing.ttfo_ms == 1500.0
    for i, ttft in enumerate([200, 3000]):
        _replay(tmp_path / f"slow{i}.jsonl", "slow", ttft, 20.0)
    timings, errors = read_corpus_timings(tmp_path)
    assert not errors and len(timings) == 3  # the tool-only turn is scored, not refused
    draws = np.full(100, 1000.0)
    row = score_corpus(timings, "ttft_ms", threshold_draws_ms=draws).set_index("source")
    # the share past the TTFT threshold counts only the turns that have a TTFT
    assert row.loc["slow/m1", "share_past_threshold"] == pytest.approx(0.5)
    assert row.loc["slow/m1", "median_ttfo_ms"] == 1500.0
