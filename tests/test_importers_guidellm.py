"""guidellm 0.8.1's own report (made against `uxlab serve`) imported; its numbers kept."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from uxlab.cli import main
from uxlab.streams.importers import ImportFormatError, import_source
from uxlab.streams.metrics import describe
from uxlab.streams.recording import Meta

REPORT = Path(__file__).parent / "data" / "guidellm-0.8.1" / "benchmarks.json"


@pytest.fixture(scope="module")
def doc() -> dict:
    return json.loads(REPORT.read_text())


@pytest.fixture(scope="module")
def result():
    return import_source("guidellm", REPORT)


def requests(doc: dict) -> list[dict]:
    return doc["benchmarks"][0]["requests"]["successful"]


def test_every_request_with_guidellms_own_ttft_e2e_and_itl(result, doc):
    reqs = requests(doc)
    assert len(result.recordings) == len(reqs) == 4 and not result.skipped
    for rec, req in zip(result.recordings, reqs, strict=True):
        d = describe(rec)
        assert d["timing"] == "synthetic"
        assert d["ttft_ms"] == pytest.approx(req["time_to_first_token_ms"], abs=1e-6)
        assert d["e2e_ms"] == pytest.approx(req["request_latency"] * 1000, abs=1e-6)
        if req["output_tokens"] == req["info"]["timings"]["token_iterations"]:
            # guidellm's ITL is (last - first token) / (tokens - 1): uxlab's TPOT
            assert d["tpot_ms"] == pytest.approx(req["inter_token_latency_ms"], abs=1e-6)
        assert d["itl_ms"]["p50"] is None  # the gaps between are made up: left out
        assert rec.header.source["model"] == "uxlab"
        assert rec.header.source["guidellm_version"] == "0.8.1"
        assert rec.header.source["timing"].startswith("synthetic")
        assert rec.header.text_source == "split"


def test_text_reasoning_and_tool_calls_are_kept(result, doc):
    reqs = requests(doc)
    for rec, req in zip(result.recordings, reqs, strict=True):
        assert rec.text == req["output"]
        reasoning = "".join(c.text for c in rec.chunks if c.channel == "reasoning")
        assert reasoning == (req["reasoning_output"] or "")
    reasoning_rec = next(
        r for r, q in zip(result.recordings, reqs, strict=True) if q["reasoning_output"]
    )
    assert reasoning_rec.chunks[0].channel == "reasoning"
    tool_rec, tool_req = next(
        (r, q) for r, q in zip(result.recordings, reqs, strict=True) if q["tool_calls"]
    )
    metas = [e for e in tool_rec.events if isinstance(e, Meta)]
    assert metas[0].data["name"] == tool_req["tool_calls"][0]["function"]["name"]
    args = "".join(c.text for c in tool_rec.chunks if c.channel == "tool")
    assert args == tool_req["tool_calls"][0]["function"]["arguments"]


def test_reasoning_then_content_switch_at_the_first_output_token(tmp_path, doc):
    doc = copy.deepcopy(doc)
    req = requests(doc)[0]
    timings = req["info"]["timings"]
    req["reasoning_output"] = "Thinking about the meeting first, then writing it."
    timings["first_output_token_iteration"] = timings["first_token_iteration"] + 0.2
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps(doc))
    rec = import_source("guidellm", path, None).recordings[0]
    switch_ms = (timings["first_output_token_iteration"] - timings["request_start"]) * 1000
    first_content = next(c for c in rec.chunks if c.channel == "content")
    assert first_content.t_ms == pytest.approx(switch_ms, abs=1e-6)
    assert all(c.t_ms < switch_ms for c in rec.chunks if c.channel == "reasoning")
    assert rec.text == req["output"]


def test_errored_and_incomplete_requests_are_skipped_with_the_reason(tmp_path, doc):
    doc = copy.deepcopy(doc)
    reqs = doc["benchmarks"][0]["requests"]
    bad = copy.deepcopy(reqs["successful"][0])
    bad["info"]["error"] = "HTTP 500: overloaded"
    reqs["errored"] = [bad]
    reqs["incomplete"] = [copy.deepcopy(reqs["successful"][1])]
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps(doc))
    result = import_source("guidellm", path)
    assert len(result.recordings) == 4
    assert sorted(s.reason for s in result.skipped) == [
        "failed: HTTP 500: overloaded",
        "incomplete (cancelled)",
    ]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("benchmarks"), r"benchmarks: missing \(expected a guidellm report"),
        (
            lambda d: requests(d)[2]["info"].pop("timings"),
            r":benchmarks\[0\]\.requests\.successful\[2\]: info\.timings: missing",
        ),
        (
            lambda d: requests(d)[1]["info"]["timings"].update(request_end=0.0),
            r"successful\[1\]: info\.timings: expected request_start <= ",
        ),
        (
            lambda d: requests(d)[0]["info"]["timings"].update(token_iterations="30"),
            r"successful\[0\]: info\.timings\.token_iterations: expected a whole number",
        ),
        (
            lambda d: requests(d)[0].update(output=7),
            r"successful\[0\]: output: expected text, got int",
        ),
    ],
)
def test_malformed_reports_name_the_request_and_field(tmp_path, doc, mutate, message):
    doc = copy.deepcopy(doc)
    mutate(doc)
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ImportFormatError, match=message):
        import_source("guidellm", path)


def test_import_command(tmp_path, capsys):
    assert main(["import", "--from", "guidellm", str(REPORT), "-o", str(tmp_path)]) == 0
    assert "imported 4 stream(s)" in capsys.readouterr().out
    assert len(list(tmp_path.glob("*.jsonl"))) == 4


def _mutations(value, rng, depth=0):
    """Yield copies of a JSON value with one leaf or key mutated (type swaps, deletions)."""
    if isinstance(value, dict):
        for key in list(value):
            for bad in (None, "x", -1.5, [], True):
                yield {**value, key: bad}
            yield {k: v for k, v in value.items() if k != key}
            if depth < 4 and isinstance(value[key], dict | list):
                for inner in _mutations(value[key], rng, depth + 1):
                    yield {**value, key: inner}
    elif isinstance(value, list) and value:
        k = int(rng.integers(len(value)))
        for inner in _mutations(value[k], rng, depth + 1):
            yield [*value[:k], inner, *value[k + 1 :]]


def test_mutated_reports_give_a_clean_error_or_recordings(tmp_path, doc):
    """Fuzz-style: every single mutation of one request is an ImportFormatError naming the
    file, or an import; never another exception."""
    import numpy as np

    rng = np.random.default_rng(7)
    req = copy.deepcopy(requests(doc)[2])  # the reasoning one
    for unread in ("input_metrics", "output_metrics", "request_args"):
        req.pop(unread)
    small = {"metadata": doc["metadata"], "benchmarks": [{"requests": {"successful": [req]}}]}
    path = tmp_path / "benchmarks.json"
    n = 0
    for mutated in _mutations(req, rng):
        small["benchmarks"][0]["requests"]["successful"] = [mutated]
        path.write_text(json.dumps(small))
        try:
            result = import_source("guidellm", path)
        except ImportFormatError as exc:
            assert str(exc).startswith(f"{path}:")  # where: the request, or its event
        else:
            for rec in result.recordings:
                times = [c.t_ms for c in rec.chunks]
                assert times == sorted(times)
        n += 1
    assert n > 200
