"""`uxlab record` keeps the token usage of every response it writes, for all four APIs, and
`inspect --prices` bills it: recorded over real HTTP on loopback from a fake vendor that, as
OpenAI does, streams the usage only when the request asks for it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from live_servers import DETAILED_USAGE, FakeVendor, serve_in_thread

from uxlab.cli import main

SHEET = """\
[sheet]
currency = "EUR"
date = 2026-12-06
source = "test prices"

[[price]]
model = "usage-details"
input = 1.0
cached_input = 0.1
output = 4.0
"""
# 1,200 input of which 1,000 cached, 300 output (reasoning included), in every API's terms:
# (200 x 1 + 1,000 x 0.1 + 300 x 4) / 1e6. Anthropic's 150 + 50 written to the cache (at the
# input price) make the same 200.
EXPECTED_EUR = (200 * 1.0 + 1000 * 0.1 + 300 * 4.0) / 1e6


@pytest.fixture(scope="module")
def vendor():
    fake = FakeVendor()
    with serve_in_thread(fake.app) as base:
        fake.base = base
        yield fake


def _record(vendor, api: str, out: Path, *extra: str) -> int:
    url = vendor.base + ("/v1beta" if api == "gemini" else "/v1")
    head = ["record", "--api", api, "--url", url, "--model", "usage-details", "--prompt", "hi"]
    return main([*head, "--repeats", "3", "--concurrency", "2", "-o", str(out), *extra])


@pytest.mark.parametrize("api", ["openai", "openai-responses", "anthropic", "gemini"])
def test_every_recorded_response_keeps_its_usage_and_is_billed(vendor, api, tmp_path, capsys):
    out = tmp_path / api
    assert _record(vendor, api, out) == 0
    capsys.readouterr()
    files = sorted(out.glob("*.jsonl"))
    assert len(files) == 3
    want = dict(DETAILED_USAGE[api])
    for path in files:
        end = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
        assert end["type"] == "end" and end["usage"] == want, path.name
    if api == "openai":
        asked = [r["body"]["stream_options"] for r in vendor.requests[-3:]]
        assert asked == [{"include_usage": True}] * 3
    sheet = tmp_path / "prices.toml"
    sheet.write_text(SHEET, encoding="utf-8")
    assert main(["inspect", str(out), "--prices", str(sheet), "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    recs = [x for x in lines if "summary" not in x]
    assert len(recs) == 3
    for rec in recs:
        assert rec["unpriced"] is None
        assert rec["cost"]["currency"] == "EUR"
        assert rec["cost"]["total"] == pytest.approx(EXPECTED_EUR, rel=1e-12)
        usage = rec["usage"]
        assert usage["cached_input_tokens"] == 1000
        assert usage["reasoning_tokens"] == (0 if api == "anthropic" else 297)
        assert usage["reasoning_reported"] is (api != "anthropic")


def test_usage_is_still_requested_when_other_stream_options_are_passed(vendor, tmp_path, capsys):
    out = tmp_path / "o"
    code = _record(
        vendor, "openai", out, "--param", 'stream_options={"include_obfuscation": false}'
    )
    assert code == 0
    capsys.readouterr()
    body = vendor.requests[-1]["body"]
    assert body["stream_options"] == {"include_obfuscation": False, "include_usage": True}
    for path in out.glob("*.jsonl"):
        end = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
        assert end["usage"] == DETAILED_USAGE["openai"]


def test_a_server_that_sends_no_usage_gives_unpriced_recordings_named_as_such(
    vendor, tmp_path, capsys
):
    """An OpenAI-compatible server that ignores include_usage (some do) is not billed at 0."""
    out = tmp_path / "o"
    assert _record(vendor, "openai", out) == 0
    for path in out.glob("*.jsonl"):  # as such a server leaves it
        lines = path.read_text(encoding="utf-8").splitlines()
        end = json.loads(lines[-1])
        end["usage"] = None
        path.write_text("\n".join([*lines[:-1], json.dumps(end)]) + "\n", encoding="utf-8")
    sheet = tmp_path / "prices.toml"
    sheet.write_text(SHEET, encoding="utf-8")
    capsys.readouterr()
    assert main(["inspect", str(out), "--prices", str(sheet)]) == 0
    text = capsys.readouterr().out
    assert "0 of 3 priced" in text and "Unpriced (3; never counted as 0):" in text
