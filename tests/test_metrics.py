"""Stream metrics checked against hand-worked numbers and an independent pure-Python version."""

from __future__ import annotations

import itertools
import math
import statistics

import numpy as np
import pytest

from uxlab.streams.metrics import (
    COLUMNS,
    describe,
    describe_many,
    is_output,
    linear_percentiles,
    summarize,
    ttft_of,
)
from uxlab.streams.recording import Chunk, End, ErrorEvent, Header, Meta, Recording
from uxlab.streams.stream_arrays import StreamArrays
from uxlab.streams.synthetic import GapModel, ToolCall, synthesize

# --- an independent implementation: plain loops, statistics module -------------------------


def pct(values: list[float], q: int) -> float:
    if len(values) == 1:
        return values[0]
    if q == 100:
        return max(values)
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def by_hand(rec: Recording) -> dict:
    """Every metric of the module docstring, computed with loops from the definitions."""
    chunks = [e for e in rec.events if isinstance(e, Chunk)]
    out = [c for c in chunks if c.text != "" and c.channel in ("content", "reasoning")]
    timed = all(c.t_ms is not None for c in out)
    known_tokens = all(c.n_tokens is not None for c in out)
    n_tokens = sum(c.n_tokens for c in out) if known_tokens else None
    res: dict = {
        "n_chunks": len(chunks),
        "n_output_chunks": len(out),
        "n_tool_chunks": sum(1 for c in chunks if c.channel == "tool"),
        "n_tokens": n_tokens,
        "n_chars": sum(len(c.text) for c in out),
        "error": rec.errors[0].error.get("type") if rec.errors else None,
        "finish_reason": rec.end.finish_reason if rec.end else None,
    }
    nan = math.nan
    if not timed:
        return {**res, "ttft_ms": nan, "gaps": None}
    first_event = None
    for e in [*rec.events, rec.end]:
        if e is not None and e.t_ms is not None:
            first_event = e.t_ms
            break
    gaps = [b.t_ms - a.t_ms for a, b in itertools.pairwise(out)]
    res["gaps"] = gaps
    res["ttft_ms"] = out[0].t_ms if out else nan
    res["ttft_first_event_ms"] = first_event
    res["e2e_ms"] = rec.end.t_ms if rec.end else nan
    if out and (out[0].n_tokens or 0) >= 2:
        res["ttst_ms"] = out[0].t_ms
    else:
        res["ttst_ms"] = out[1].t_ms if len(out) > 1 else nan
    tokens = n_tokens if n_tokens is not None else len(out)
    decode = out[-1].t_ms - out[0].t_ms if out else nan
    res["tpot_ms"] = decode / (tokens - 1) if tokens > 1 else nan
    res["chars_per_s"] = (
        sum(len(c.text) for c in out[1:]) / (decode / 1000) if out and decode > 0 else nan
    )
    res["stalls_over_250"] = sum(1 for g in gaps if g > 250)
    res["stalls_over_1000"] = sum(1 for g in gaps if g > 1000)
    if gaps:
        mean = sum(gaps) / len(gaps)
        sd = math.sqrt(sum((g - mean) ** 2 for g in gaps) / len(gaps))
        res["itl"] = {
            "mean": mean,
            "p50": pct(gaps, 50),
            "p90": pct(gaps, 90),
            "p99": pct(gaps, 99),
            "max": max(gaps),
            "cv": sd / mean if mean > 0 else nan,
        }
        den = sum((g - mean) ** 2 for g in gaps)
        num = 0.0
        for i in range(len(gaps) - 1):
            num += (gaps[i] - mean) * (gaps[i + 1] - mean)
        res["itl"]["lag1"] = num / den if len(gaps) >= 3 and den > 0 else nan
    return res


def close(a: float | None, b: float | None) -> bool:
    a = math.nan if a is None else a
    b = math.nan if b is None else b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def assert_matches(row: dict, hand: dict) -> None:
    for key in ("n_chunks", "n_output_chunks", "n_tool_chunks", "n_chars"):
        assert row[key] == hand[key], key
    assert close(row["n_tokens"], hand["n_tokens"])
    assert row["error"] == hand["error"]
    assert row["finish_reason"] == hand["finish_reason"]
    if hand["gaps"] is None:
        assert not row["has_timing"]
        for key in ("ttft_ms", "ttft_first_event_ms", "e2e_ms", "itl_p50_ms", "tpot_ms"):
            assert math.isnan(row[key]), key
        return
    for key in ("ttft_ms", "ttft_first_event_ms", "e2e_ms", "ttst_ms", "tpot_ms", "chars_per_s"):
        assert close(row[key], hand[key]), key
    assert row["stalls_over_250"] == hand["stalls_over_250"]
    assert row["stalls_over_1000"] == hand["stalls_over_1000"]
    if hand["gaps"]:
        for name, value in hand["itl"].items():
            col = f"itl_{name}_ms" if name not in ("cv", "lag1") else f"itl_{name}"
            assert close(row[col], value), col
        assert close(row["stall_longest_ms"], max(hand["gaps"]))
    else:
        assert math.isnan(row["itl_p50_ms"]) and math.isnan(row["stall_longest_ms"])


# --- fixtures ------------------------------------------------------------------------------


FINISHED = End(t_ms=2000.0, finish_reason="stop")


def rec_of(events: list, end: End | None = FINISHED, rid: str = "r") -> Recording:
    return Recording(Header(id=rid), events, end)


def hand_worked() -> Recording:
    """Gaps 10, 20, 300, 1200 ms between five output chunks, plus things that are not output."""
    return rec_of(
        [
            Meta(t_ms=50.0, data={"kind": "role"}),
            Chunk(t_ms=60.0, text="", n_tokens=0),  # role-only prelude chunk: not output
            Chunk(t_ms=100.0, text="Hel", n_tokens=1),
            Chunk(t_ms=110.0, text="lo", n_tokens=1),
            Chunk(t_ms=115.0, text='{"a"', channel="tool", n_tokens=1),  # not output
            Chunk(t_ms=130.0, text=" wor", channel="reasoning", n_tokens=1),
            Chunk(t_ms=430.0, text="ld", n_tokens=1),
            Chunk(t_ms=1630.0, text="!!", n_tokens=1),
        ],
        End(t_ms=1700.0, finish_reason="stop", usage={"output_tokens": 5}),
    )


def test_hand_worked_numbers() -> None:
    m = describe(hand_worked())
    assert m["ttft_ms"] == 100.0  # not the role meta (50) nor the empty chunk (60)
    assert m["ttft_first_event_ms"] == 50.0
    assert m["ttst_ms"] == 110.0
    assert m["e2e_ms"] == 1700.0
    assert m["n_chunks"] == 7 and m["n_output_chunks"] == 5 and m["n_tool_chunks"] == 1
    assert m["n_tokens"] == 5 and m["n_chars"] == 3 + 2 + 4 + 2 + 2
    # gaps 10, 20, 300, 1200: sorted, p50 = (20 + 300) / 2, p90 at position 2.7
    assert m["itl_ms"]["mean"] == pytest.approx(382.5)
    assert m["itl_ms"]["p50"] == pytest.approx(160.0)
    assert m["itl_ms"]["p90"] == pytest.approx(300 + 0.7 * 900)
    assert m["itl_ms"]["p99"] == pytest.approx(300 + 0.97 * 900)
    assert m["itl_ms"]["max"] == 1200.0
    assert m["stalls"] == {"over_250": 2, "over_1000": 1, "longest_ms": 1200.0}
    assert m["tpot_ms"] == pytest.approx((1630 - 100) / 4)
    assert m["decode_tokens_per_s"] == pytest.approx(1000 / ((1630 - 100) / 4))
    assert m["chars_per_s"] == pytest.approx((2 + 4 + 2 + 2) / 1.530)
    assert m["tokens_per_chunk"] == 1.0
    assert m["finish_reason"] == "stop" and m["error"] is None
    assert m["truncated"] is False and m["has_timing"] is True


def test_ttft_is_not_a_stall() -> None:
    rec = rec_of([Chunk(t_ms=5000.0, text="a"), Chunk(t_ms=5010.0, text="b")])
    m = describe(rec)
    assert m["ttft_ms"] == 5000.0
    assert m["stalls"] == {"over_250": 0, "over_1000": 0, "longest_ms": 10.0}


def test_multi_token_chunks_divide_tpot_and_give_ttst_at_the_first_chunk() -> None:
    rec = rec_of(
        [Chunk(t_ms=100.0, text="abcd", n_tokens=4), Chunk(t_ms=400.0, text="ef", n_tokens=4)]
    )
    m = describe(rec)
    assert m["ttst_ms"] == 100.0
    assert m["tpot_ms"] == pytest.approx(300 / 7)
    assert m["tokens_per_chunk"] == 4.0
    assert m["itl_ms"]["p50"] == 300.0  # one sample per gap, not divided by tokens


def test_unknown_token_counts_fall_back_to_chunks() -> None:
    rec = rec_of([Chunk(t_ms=100.0, text="a", n_tokens=3), Chunk(t_ms=400.0, text="b")])
    m = describe(rec)
    assert m["n_tokens"] is None and m["tokens_per_chunk"] is None
    assert m["tpot_ms"] == pytest.approx(300.0)  # 2 chunks -> tokens = 2


def test_recording_without_timing_keeps_text_stats() -> None:
    rec = rec_of(
        [Chunk(t_ms=None, text="Hello", n_tokens=1), Chunk(t_ms=None, text=" you", n_tokens=1)],
        End(t_ms=None, finish_reason="stop"),
    )
    m = describe(rec)
    assert m["has_timing"] is False
    assert m["ttft_ms"] is None and m["e2e_ms"] is None and m["tpot_ms"] is None
    assert m["itl_ms"]["p50"] is None and m["stalls"]["over_250"] is None
    assert m["n_chars"] == 9 and m["n_tokens"] == 2 and m["n_output_chunks"] == 2


def test_truncated_and_empty_and_error_only_recordings() -> None:
    truncated = rec_of([Chunk(t_ms=10.0, text="a"), Chunk(t_ms=30.0, text="b")], end=None)
    error_only = rec_of([ErrorEvent(t_ms=800.0, error={"message": "boom"})], End(t_ms=801.0))
    empty = rec_of([], End(t_ms=5.0, finish_reason="length"))
    rows = describe_many([truncated, error_only, empty]).to_dict("records")
    assert rows[0]["truncated"] and math.isnan(rows[0]["e2e_ms"]) and rows[0]["itl_p50_ms"] == 20
    assert rows[1]["error"] == "error"  # no `type` in the error object
    assert math.isnan(rows[1]["ttft_ms"]) and rows[1]["ttft_first_event_ms"] == 800.0
    assert rows[1]["stalls_over_250"] == 0 and rows[1]["n_output_chunks"] == 0
    assert rows[2]["ttft_first_event_ms"] == 5.0 and rows[2]["finish_reason"] == "length"


def varied_recordings() -> list[Recording]:
    """Synthetic recordings with every feature, plus odd ones, in one batch."""
    recs = []
    for seed in range(12):
        rng = np.random.default_rng(seed)
        text = " ".join(f"word{i}, and more." for i in range(int(rng.integers(1, 60))))
        n_answer = len(text.split())
        recs.append(
            synthesize(
                text,
                id=f"s{seed}",
                ttft_ms=float(rng.uniform(50, 3000)),
                seed=seed,
                itl=GapModel(median_ms=float(rng.uniform(5, 60)), sigma=0.9, hiccup_prob=0.05),
                reasoning="Let me think about it." if seed % 3 == 0 else None,
                tool_call=ToolCall("f", {"x": seed}) if seed % 4 == 1 else None,
                stall_at=1 if seed % 5 == 2 and n_answer > 2 else None,
                error_at=2 if seed % 6 == 5 and n_answer > 3 else None,
                tokens_per_chunk=int(rng.integers(1, 4)),
                prelude_ms=10.0 if seed % 2 else None,
            )
        )
    recs.insert(3, rec_of([], rid="empty"))
    recs.insert(7, rec_of([Chunk(t_ms=None, text="x")], End(t_ms=None), rid="untimed"))
    recs.append(rec_of([Chunk(t_ms=1.0, text="only")], rid="single"))
    recs.append(hand_worked())
    return recs


def test_describe_many_matches_the_independent_computation_for_every_row() -> None:
    recs = varied_recordings()
    table = describe_many(recs)
    assert list(table.columns) == list(COLUMNS)
    assert list(table["id"]) == [r.id for r in recs]
    for rec, row in zip(recs, table.to_dict("records"), strict=True):
        assert_matches(row, by_hand(rec))


def test_describe_equals_the_batch_row() -> None:
    recs = varied_recordings()
    table = describe_many(recs)
    for i in (0, 5, len(recs) - 1):
        one = describe(recs[i])
        assert close(one["itl_ms"]["p99"], table.iloc[i]["itl_p99_ms"])
        assert close(one["ttft_ms"], table.iloc[i]["ttft_ms"])


def test_one_recordings_ttft_is_the_tables_ttft() -> None:
    """`ttft_of` (what the shaping summary, chain cues, simulated observers, the replay app
    and the live workload read) is `describe_many`'s ttft_ms: a tool call's arguments, a
    role prelude and an empty chunk are not its first token, a partly timed stream has none."""
    tool_first = rec_of(
        [Chunk(t_ms=40.0, text='{"q"', channel="tool"), Chunk(t_ms=90.0, text="Hi")], rid="tool"
    )
    partly_timed = rec_of([Chunk(t_ms=5.0, text="a"), Chunk(t_ms=None, text="b")], rid="part")
    tool_only = rec_of([Chunk(t_ms=40.0, text='{"q"', channel="tool")], rid="tool-only")
    recs = [*varied_recordings(), tool_first, partly_timed, tool_only]
    table = describe_many(recs)
    for rec, want in zip(recs, table["ttft_ms"], strict=True):
        got = ttft_of(rec)
        assert (got is None and math.isnan(want)) or got == want, rec.id
    assert ttft_of(tool_first) == 90.0
    assert ttft_of(partly_timed) is None and ttft_of(tool_only) is None


def test_a_shown_chunk_is_output_by_the_same_definition() -> None:
    assert is_output("content", 1) and is_output("reasoning", 3)
    assert not is_output("tool", 5) and not is_output("content", 0)


def test_summary_pools_gaps_across_recordings() -> None:
    recs = varied_recordings()
    pooled_gaps = [g for r in recs if (h := by_hand(r))["gaps"] for g in h["gaps"]]
    summary = summarize(StreamArrays.from_recordings(recs))
    assert summary["n_recordings"] == len(recs)
    assert summary["n_gaps"] == len(pooled_gaps)
    assert summary["itl_ms"]["p99"] == pytest.approx(pct(pooled_gaps, 99))
    assert summary["itl_ms"]["mean"] == pytest.approx(sum(pooled_gaps) / len(pooled_gaps))
    assert summary["stalls"]["over_250"] == sum(1 for g in pooled_gaps if g > 250)
    assert summary["stalls"]["over_1000"] == sum(1 for g in pooled_gaps if g > 1000)
    assert summary["without_timing"] == 1
    assert summary["errors"] == sum(1 for r in recs if r.errors)
    ttfts = [h["ttft_ms"] for r in recs if not math.isnan((h := by_hand(r))["ttft_ms"])]
    assert summary["ttft_ms"]["p50"] == pytest.approx(statistics.median(ttfts))


@pytest.mark.parametrize("mean_size", [3, 200])
def test_grouped_percentiles_match_numpy_per_group(mean_size: int) -> None:
    from uxlab.streams.metrics import grouped_percentiles

    rng = np.random.default_rng(mean_size)
    n_groups = 40
    sizes = rng.poisson(mean_size, n_groups)
    sizes[[3, 17]] = [0, 1]  # an empty group and a group of one
    groups = np.repeat(np.arange(n_groups), sizes)
    values = rng.lognormal(3.0, 1.0, len(groups))
    qs = (50, 90, 99, 100)
    out, got_sizes = grouped_percentiles(values, groups, n_groups, qs)
    assert got_sizes.tolist() == sizes.tolist()
    for g in range(n_groups):
        mine = values[groups == g]
        expected = np.percentile(mine, qs) if len(mine) else np.full(len(qs), np.nan)
        np.testing.assert_allclose(out[:, g], expected, rtol=1e-12)


def test_linear_percentiles_are_numpys_bit_for_bit() -> None:
    # `uxlab inspect` prints the pooled percentiles at full precision in --json: the helper
    # that spares numpy.ma's import must give np.percentile's floats exactly.
    rng = np.random.default_rng(7)
    for trial in range(3000):
        n = int(rng.integers(1, 40 if trial % 2 else 3000))
        values = np.round(rng.lognormal(3.0, 1.0, n), int(rng.integers(0, 4)))
        qs = (0, 25, 50, 90, 99, 100, float(rng.uniform(0, 100)))
        assert linear_percentiles(values, qs) == np.percentile(values, qs).tolist()
