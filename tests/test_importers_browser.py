"""Browser captures: HAR files (text, first byte, end) and CDP network logs (per event)."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path

import pytest

from uxlab.cli import main
from uxlab.streams import read_replay, write_replay
from uxlab.streams.importers import ImportFormatError, import_source
from uxlab.streams.metrics import describe
from uxlab.streams.recording import Meta

DATA = Path(__file__).parent / "data"
HAR = DATA / "har" / "chat_app.har"
CDP = DATA / "cdp" / "chat_app_network.jsonl"
CHROMEDRIVER = DATA / "cdp" / "chromedriver_performance_log.json"


@pytest.fixture(scope="module")
def har() -> dict:
    return json.loads(HAR.read_text())


def test_har_streams_give_text_first_byte_and_end_but_no_event_times(har):
    result = import_source("har", HAR)
    assert result.warnings == ["1 entries are not event streams (not imported)"]
    openai, anthropic = result.recordings
    assert openai.text == "Lighthouses guide ships at night."
    assert anthropic.text == "A lamp and a lens."  # from a base64 body
    assert [r.header.source["api"] for r in result.recordings] == ["openai", "anthropic"]
    timings = har["log"]["entries"][1]["timings"]
    first_byte = openai.events[0]
    assert isinstance(first_byte, Meta) and first_byte.data == {"kind": "first_byte"}
    assert first_byte.t_ms == pytest.approx(timings["send"] + timings["wait"])
    e2e = timings["send"] + timings["wait"] + timings["receive"]
    assert openai.end.t_ms == pytest.approx(e2e) and openai.end.finish_reason == "stop"
    assert all(c.t_ms is None for c in openai.chunks)
    d = describe(openai)
    assert d["timing"] == "none" and d["ttft_ms"] is None and d["itl_ms"]["p50"] is None
    assert d["e2e_ms"] == pytest.approx(e2e)
    assert openai.header.source["har_timings"]["wait"] == timings["wait"]
    assert openai.header.source["browser"] == "WebInspector 537.36"
    assert openai.header.request["messages"][0]["content"] == "What do lighthouses do?"
    assert openai.header.text_source == "recorded"


def test_har_import_writes_valid_replays(tmp_path):
    assert main(["import", "--from", "har", str(HAR), "-o", str(tmp_path)]) == 0
    files = sorted(tmp_path.glob("*.jsonl"))
    assert len(files) == 2
    assert read_replay(files[0]).text == "Lighthouses guide ships at night."


def test_har_url_query_is_not_kept(tmp_path, har):
    har = copy.deepcopy(har)
    entry = har["log"]["entries"][1]
    entry["request"]["url"] += "?key=SECRET123"
    path = tmp_path / "q.har"
    path.write_text(json.dumps(har))
    rec = import_source("har", path).recordings[0]
    assert "SECRET123" not in json.dumps(rec.header.source)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda h: h.pop("log"), r"log\.entries: missing \(expected a HAR file"),
        (
            lambda h: h["log"]["entries"][1]["timings"].update(wait="slow"),
            r":log\.entries\[1\]: timings\.wait: expected a number of ms",
        ),
        (
            lambda h: h["log"]["entries"][2]["response"]["content"].update(text="%%%"),
            r":log\.entries\[2\]: response\.content\.text: not base64",
        ),
        (
            lambda h: h["log"]["entries"][1]["response"]["content"].update(
                text="data: {not json\n\n"
            ),
            r":log\.entries\[1\] \(event 0\): data: not JSON",
        ),
    ],
)
def test_malformed_har_names_entry_and_field(tmp_path, har, mutate, message):
    har = copy.deepcopy(har)
    mutate(har)
    path = tmp_path / "bad.har"
    path.write_text(json.dumps(har))
    with pytest.raises(ImportFormatError, match=message):
        import_source("har", path)


def test_har_stream_of_an_unknown_api_is_skipped_by_url(tmp_path, har):
    har = copy.deepcopy(har)
    entry = har["log"]["entries"][1]
    entry["request"]["url"] = "http://127.0.0.1:3000/events"
    entry["response"]["content"]["text"] = 'data: {"tick": 1}\n\n'
    path = tmp_path / "x.har"
    path.write_text(json.dumps(har))
    result = import_source("har", path)
    assert len(result.recordings) == 1
    assert result.skipped[0].reason.startswith("an event stream of an API uxlab does not map")
    assert result.skipped[0].origin == "x.har#entry=1"


def test_cdp_event_source_and_fetch_streams_keep_browser_arrival_times():
    result = import_source("cdp", CDP)
    assert not result.skipped
    es, fetch = result.recordings
    assert (
        es.header.source["timing"]
        == "recorded: browser arrival (Network.eventSourceMessageReceived)"
    )
    assert es.text == "Fog horns warn ships."
    assert [c.t_ms for c in es.chunks] == [412.7, 441.1, 470.2, 981.5]
    d = describe(es)
    assert d["timing"] == "recorded" and d["ttft_ms"] == 412.7 and d["e2e_ms"] == 991.0
    assert d["stalls"]["over_250"] == 1  # the 511 ms gap before " ships."
    assert es.header.source["url"] == "http://127.0.0.1:3000/api/chat/completions"
    # fetch(): an event split across two network pieces arrives with the second piece
    assert fetch.header.source["api"] == "anthropic"
    assert fetch.text == "To be seen from far away."
    assert [c.t_ms for c in fetch.chunks] == [531.1, 612.0]
    assert fetch.end.t_ms == 640.2 and fetch.end.finish_reason == "end_turn"
    assert fetch.header.request["messages"][0]["content"] == "Why are lighthouses tall?"


def test_chromedriver_performance_log_gives_the_same_stream(tmp_path):
    (wrapped,) = import_source("cdp", CHROMEDRIVER).recordings
    plain = import_source("cdp", CDP).recordings[0]
    assert [(c.t_ms, c.text) for c in wrapped.chunks] == [(c.t_ms, c.text) for c in plain.chunks]
    again = read_replay(write_replay(wrapped, tmp_path))
    assert again.text == plain.text


def test_cdp_without_request_start_is_skipped_and_without_streams_refused(tmp_path):
    lines = [json.loads(x) for x in CDP.read_text().splitlines()]
    no_start = [m for m in lines if not (m["method"] == "Network.requestWillBeSent"
                                         and m["params"]["requestId"] == "1000.1")]  # fmt: skip
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in no_start))
    result = import_source("cdp", path)
    assert len(result.recordings) == 1
    assert result.skipped[0].reason == "no Network.requestWillBeSent for 1000.1: time zero unknown"
    path.write_text(json.dumps(lines[0]) + "\n")
    with pytest.raises(ImportFormatError, match="the log holds no stream"):
        import_source("cdp", path)


def test_cdp_bad_data_names_line_and_field(tmp_path):
    lines = CDP.read_text().splitlines()
    i = next(k for k, x in enumerate(lines) if "dataReceived" in x)
    msg = json.loads(lines[i])
    msg["params"]["data"] = base64.b64encode(b"event: ping\ndata: {no\n\n").decode()
    lines[i] = json.dumps(msg)
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ImportFormatError, match=r"request 1000\.3 \(event 0\): data: not JSON"):
        import_source("cdp", path)
    msg["params"]["timestamp"] = "soon"
    lines[i] = json.dumps(msg)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ImportFormatError, match=rf"log.jsonl:{i + 1}: params\.timestamp"):
        import_source("cdp", path)


def test_cdp_fetch_bytes_that_are_not_utf8_name_line_and_field(tmp_path):
    lines = CDP.read_text().splitlines()
    i = next(k for k, x in enumerate(lines) if "dataReceived" in x)
    msg = json.loads(lines[i])
    msg["params"]["data"] = base64.b64encode(b"data: \xff\xfe\n\n").decode()
    lines[i] = json.dumps(msg)
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ImportFormatError, match=rf"log.jsonl:{i + 1}: params\.data: not UTF-8"):
        import_source("cdp", path)
    lines = CDP.read_text().splitlines()
    last = max(k for k, x in enumerate(lines) if "dataReceived" in x)
    msg = json.loads(lines[last])
    msg["params"]["data"] = base64.b64encode(b"data: x\n\n\xe2\x82").decode()  # cut in a char
    lines[last] = json.dumps(msg)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ImportFormatError, match=r"end inside a UTF-8 character"):
        import_source("cdp", path)
