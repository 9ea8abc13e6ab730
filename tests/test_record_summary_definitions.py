"""`uxlab record`'s summary counts what `uxlab inspect` counts (one code path)."""

from __future__ import annotations

import numpy as np

from uxlab.live.record import RecordResult
from uxlab.live.workload import ModelStats, itl_gaps_ms, ttft_ms
from uxlab.streams.metrics import describe
from uxlab.streams.recording import Chunk, End, Header, Meta, Recording


def tool_then_answer() -> Recording:
    events = [
        Meta(100.0, {"kind": "role"}),
        Meta(200.0, {"kind": "tool_call", "index": 0, "id": "c", "name": "f"}),
        Chunk(210.0, '{"a":', "tool"),
        Chunk(220.0, "1}", "tool"),
        Chunk(900.0, "The", "content"),
        Chunk(930.0, "", "content"),
        Chunk(950.0, " end", "content"),
    ]
    return Recording(Header(id="r"), events, End(960.0, "stop"))


def test_summary_ttft_and_gaps_are_inspects():
    rec = tool_then_answer()
    d = describe(rec)
    assert ttft_ms(rec) == d["ttft_ms"] == 900.0
    assert itl_gaps_ms(rec) == [50.0]  # tool arguments and empty chunks are not output
    assert max(itl_gaps_ms(rec)) == d["itl_ms"]["max"]
    stats = ModelStats("m")
    stats.add(RecordResult(rec, [], 200, 1))
    assert stats.ttfts_ms == [900.0] and np.allclose(stats.gaps_ms, [50.0])


def test_no_output_gives_no_ttft():
    rec = Recording(Header(id="e"), [Meta(10.0, {"kind": "role"})], End(20.0, "stop"))
    assert ttft_ms(rec) is None and itl_gaps_ms(rec) == []
