"""`timing`: recorded, synthetic or none; made-up gaps stay out of ITL and stalls by default."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from uxlab.cli import main
from uxlab.shaping import Profile, shape
from uxlab.streams import write_replay
from uxlab.streams.importers import import_source
from uxlab.streams.metrics import describe, summarize
from uxlab.streams.recording import Chunk, End, Header, Recording
from uxlab.streams.stream_arrays import has_synthetic_gaps

ROW = {
    "error_code": None,
    "error_msg": "",
    "ttft_s": 0.5,
    "end_to_end_latency_s": 2.5,
    "inter_token_latency_s": 0.02,  # x 100 tokens = 2.0 s: the last chunk, 0.5 s before the end
    "number_input_tokens": 10,
    "number_output_tokens": 100,
}


def llmperf_file(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "m_10_100_individual_responses.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def recorded(rid: str, times: list[float]) -> Recording:
    chunks = [Chunk(t_ms=t, text="ab", n_tokens=1) for t in times]
    return Recording(Header(id=rid, source={"kind": "live"}), list(chunks), End(times[-1] + 5))


def test_llmperf_last_chunk_at_itl_times_tokens(tmp_path: Path) -> None:
    rec = import_source("llmperf", llmperf_file(tmp_path, [ROW])).recordings[0]
    times = rec.chunk_times_ms()
    assert times[0] == 500.0
    assert times[-1] == pytest.approx(2000.0, abs=1e-9)
    assert rec.end.t_ms == 2500.0
    np.testing.assert_allclose(np.diff(times), 1500.0 / 99, rtol=1e-9)
    assert rec.header.source["last_chunk"] == "inter_token_latency_s * number_output_tokens"
    assert has_synthetic_gaps(rec.header)


@pytest.mark.parametrize("itl_s", [None, 0.001, 0.5])
def test_llmperf_last_chunk_falls_back_to_the_end_and_says_why(tmp_path: Path, itl_s) -> None:
    row = {**ROW, "inter_token_latency_s": itl_s}
    if itl_s is None:
        del row["inter_token_latency_s"]
    rec = import_source("llmperf", llmperf_file(tmp_path, [row])).recordings[0]
    assert rec.chunk_times_ms()[-1] == 2500.0
    assert rec.header.source["last_chunk"].startswith("end_to_end_latency_s")


def test_describe_leaves_synthetic_gaps_out_unless_asked(tmp_path: Path) -> None:
    rec = import_source("llmperf", llmperf_file(tmp_path, [ROW])).recordings[0]
    d = describe(rec)
    assert d["timing"] == "synthetic"
    assert d["itl_ms"]["p50"] is None and d["itl_ms"]["max"] is None
    assert d["stalls"] == {"over_250": None, "over_1000": None, "longest_ms": None}
    assert d["ttst_ms"] is None and d["second_token_gap_ms"] is None
    # the recorded moments stay
    assert d["ttft_ms"] == 500.0 and d["e2e_ms"] == 2500.0
    assert d["tpot_ms"] == pytest.approx(1500.0 / 99)
    pooled = describe(rec, include_synthetic=True)
    assert pooled["itl_ms"]["p50"] == pytest.approx(1500.0 / 99)
    assert pooled["stalls"]["over_250"] == 0
    assert pooled["timing"] == "synthetic"


def test_timing_values_and_pooled_summary(tmp_path: Path) -> None:
    synthetic = import_source("llmperf", llmperf_file(tmp_path, [ROW])).recordings[0]
    real = recorded("real", [100.0, 130.0, 170.0])
    untimed = Recording(
        Header(id="untimed"), [Chunk(t_ms=None, text="a"), Chunk(None, "b")], End(None)
    )
    assert [describe(r)["timing"] for r in (synthetic, real, untimed)] == [
        "synthetic",
        "recorded",
        "none",
    ]
    summary = summarize([synthetic, real, untimed])
    assert summary["n_gaps"] == 2 and summary["itl_ms"]["max"] == 40.0
    assert summary["synthetic_timing"] == 1 and summary["synthetic_gaps_pooled"] is False
    both = summarize([synthetic, real, untimed], include_synthetic=True)
    assert both["n_gaps"] == 2 + 99


def test_a_schedule_drawn_anew_is_no_longer_synthetic(tmp_path: Path) -> None:
    rec = import_source("llmperf", llmperf_file(tmp_path, [ROW])).recordings[0]
    kept = shape(rec, Profile(), seed=1)  # recorded gaps kept
    assert has_synthetic_gaps(kept.header)
    drawn = shape(rec, Profile.from_table({"itl": "constant:30"}), seed=1)
    assert not has_synthetic_gaps(drawn.header)
    assert describe(drawn)["itl_ms"]["p50"] == pytest.approx(30.0)


def test_inspect_json_and_table_mark_synthetic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "replays"
    folder.mkdir()
    rec = import_source("llmperf", llmperf_file(tmp_path, [ROW])).recordings[0]
    write_replay(rec, folder)
    write_replay(recorded("real", [100.0, 130.0, 170.0]), folder)
    assert main(["inspect", str(folder), "--json"]) == 0
    rows = {r["id"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert rows[rec.id]["timing"] == "synthetic" and rows[rec.id]["itl_ms"]["p50"] is None
    assert rows["real"]["timing"] == "recorded"

    monkeypatch.setenv("COLUMNS", "80")
    assert main(["inspect", str(folder)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith(rec.id[:8]))
    assert line.split()[3:6] == ["synth", "synth", "synth"]
    assert "Pooled over 2 recordings (ITL and stalls pool all 2 gaps" in " ".join(out.split())
    assert "synthetic gaps in 1 recording(s): left out of ITL/stalls" in out

    assert main(["inspect", str(folder), "--include-synthetic"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith(rec.id[:8]))
    assert line.split()[3] == "~15.2"
    assert "pool all 101 gaps" in " ".join(out.split())


def test_empirical_pools_leave_synthetic_gaps_out(tmp_path: Path) -> None:
    from uxlab.shaping.empirical import load_pool
    from uxlab.shaping.spec import ProfileError

    folder = tmp_path / "pool"
    folder.mkdir()
    write_replay(import_source("llmperf", llmperf_file(tmp_path, [ROW])).recordings[0], folder)
    with pytest.raises(ProfileError, match="made-up gaps of llmperf"):
        load_pool(str(folder), "itl")
    write_replay(recorded("real", [100.0, 130.0, 170.0]), folder)
    assert sorted(load_pool(str(folder), "itl").gaps_ms.tolist()) == [30.0, 40.0]
