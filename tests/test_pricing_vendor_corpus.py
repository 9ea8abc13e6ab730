"""Usage as real vendors streamed it (the 111 recordings of `tests/data/vendor-corpus`, from
the SDKs' and frameworks' own test suites): every usage is read into billed categories or
refused with a reason, and where the vendor states its own total, the categories add up to
it (no token billed twice, none lost)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pricing.usage import read_usage
from uxlab.streams.importers import import_source

CORPUS = Path(__file__).parent / "data" / "vendor-corpus"
MANIFEST = json.loads((CORPUS / "MANIFEST.json").read_text(encoding="utf-8"))
BROKEN = {"vercel-ai/parallel-tool-call-wrapper.1.jsonl"}
TOTAL_KEYS = ("total_tokens", "totalTokenCount")


def _usages() -> list[tuple[str, dict | None]]:
    found = []
    for entry in MANIFEST:
        if entry["file"] in BROKEN:
            continue
        for rec in import_source(entry["format"], CORPUS / entry["file"]).recordings:
            found.append((entry["file"], rec.end.usage if rec.end is not None else None))
    return found


@pytest.fixture(scope="module")
def usages():
    return _usages()


def test_every_vendor_usage_is_billed_or_refused_with_a_reason(usages):
    billed = refused = 0
    for name, raw in usages:
        reading = read_usage(raw)
        if reading.usage is None:
            refused += 1
            assert reading.problem, name
        else:
            billed += 1
            assert not reading.usage.estimated and reading.usage.counted_by, name
    assert billed >= 60 and refused >= 1  # most are billable; a few carry no counts


def test_billed_categories_add_up_to_the_vendors_own_total(usages):
    checked = 0
    for name, raw in usages:
        total = next((raw[k] for k in TOTAL_KEYS if raw and isinstance(raw.get(k), int)), None)
        usage = read_usage(raw).usage
        if total is None or usage is None:
            continue
        assert usage.total_input_tokens + usage.total_output_tokens == total, (name, raw)
        checked += 1
    assert checked >= 30


def test_hidden_reasoning_is_billed_where_vendors_report_it(usages):
    reasoning = [
        read_usage(raw).usage.reasoning_tokens
        for _, raw in usages
        if read_usage(raw).usage is not None and read_usage(raw).usage.reasoning_reported
    ]
    assert sum(1 for r in reasoning if r > 0) >= 10
