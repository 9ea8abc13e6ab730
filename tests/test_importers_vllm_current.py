"""vLLM 0.33.0's own `bench serve --save-detailed` result (made against `uxlab serve`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from uxlab.streams.importers import import_source
from uxlab.streams.metrics import describe

RESULT = Path(__file__).parent / "data" / "vllm-0.33.0" / "result.json"


def test_vllm_033_result_imports_with_its_own_ttft_gaps_and_text():
    doc = json.loads(RESULT.read_text())
    result = import_source("vllm-bench", RESULT)
    assert not result.skipped and not any(doc["errors"])
    assert len(result.recordings) == len(doc["ttfts"]) == 4
    for i, rec in enumerate(result.recordings):
        times = rec.chunk_times_ms()
        assert times[0] == pytest.approx(doc["ttfts"][i] * 1000, abs=1e-9)
        np.testing.assert_allclose(np.diff(times), np.array(doc["itls"][i]) * 1000, atol=1e-9)
        if doc["generated_texts"][i]:  # vLLM keeps content only (request 2 is all reasoning)
            assert rec.text == doc["generated_texts"][i]
        d = describe(rec)
        assert d["ttft_ms"] == pytest.approx(doc["ttfts"][i] * 1000, abs=1e-9)
        assert d["timing"] == "recorded"
        # vLLM's tpot is (latency - ttft) / (output_len - 1): uxlab's when tokens = chunks
        if doc["output_lens"][i] == len(times):
            tpot = (doc["latencies"][i] - doc["ttfts"][i]) / (doc["output_lens"][i] - 1) * 1000
            assert d["tpot_ms"] == pytest.approx(tpot, rel=1e-6)


@pytest.mark.parametrize(
    ("field", "where"),
    [("ttfts", lambda d: d["ttfts"]), ("itls", lambda d: next(g for g in d["itls"] if g))],
)
def test_a_time_past_one_day_names_its_field_and_the_bound_in_seconds(tmp_path, field, where):
    """vLLM writes seconds: the bound is one day in seconds (it was the ms bound, so a
    2-day TTFT passed the model and failed later, named by request only)."""
    from uxlab.streams.importers import ImportFormatError

    doc = json.loads(RESULT.read_text())
    where(doc)[0] = 200_000
    bad = tmp_path / "result.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(ImportFormatError) as err:
        import_source("vllm-bench", bad)
    message = str(err.value)
    assert f"{field}[" in message
    assert "200000 s is not plausible: at most 86,400 s (one day)" in message
