"""Another tool's real export given to the wrong `--from`: the failure (or the empty
import) ends with the format the file looks like (`uxlab.streams.importers.sniff`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from uxlab.streams.importers import IMPORTERS, ImportFormatError, import_source
from uxlab.streams.importers.sniff import sniff_format

DATA = Path(__file__).parent / "data"

REAL_EXPORTS = {
    "aiperf": DATA / "aiperf-run1" / "profile_export.jsonl",
    "genai-perf": DATA / "genai-perf" / "profile_export.json",
    "guidellm": DATA / "guidellm-0.8.1" / "benchmarks.json",
    "har": DATA / "har" / "chat_app.har",
    "llmperf": DATA / "llmperf" / "meta-llama-Llama-2-7b-chat-hf_550_150_individual_responses.json",
    "vllm-bench": next((DATA / "vllm-bench").glob("*.json")),
    "cdp": DATA / "cdp" / "chromedriver_performance_log.json",
    "otel": DATA / "traces" / "otlp_genai_spans.json",
    "langfuse": DATA / "traces" / "langfuse_observations.json",
    "bedrock": DATA / "bedrock" / "converse_stream_timed.jsonl",
    "ollama": DATA / "ollama" / "chat_tool_call.ndjson",
}


@pytest.mark.parametrize("fmt", sorted(REAL_EXPORTS))
def test_each_real_export_is_recognised_as_its_own_format(fmt):
    assert fmt in IMPORTERS
    found = sniff_format(REAL_EXPORTS[fmt])
    assert found is not None and found[0] == fmt


@pytest.mark.parametrize(
    ("right", "given"),
    [
        ("aiperf", "genai-perf"),
        ("genai-perf", "aiperf"),
        ("guidellm", "vllm-bench"),
        ("vllm-bench", "llmperf"),
        ("har", "cdp"),
        ("cdp", "har"),
        ("otel", "aiperf"),
        ("langfuse", "aiperf"),
        ("bedrock", "aiperf"),
        ("ollama", "genai-perf"),
    ],
)
def test_the_wrong_format_names_the_right_one(right, given):
    with pytest.raises(ImportFormatError) as err:
        import_source(given, REAL_EXPORTS[right])
    assert str(err.value).endswith(f": import it with --from {right})")


def test_an_import_of_nothing_says_what_the_file_looks_like():
    """Langfuse's importer finds no generations in an AIPerf export: a warning names it."""
    result = import_source("langfuse", REAL_EXPORTS["aiperf"])
    assert not result.recordings
    assert any(w.endswith("import it with --from aiperf)") for w in result.warnings)


def test_no_guess_for_a_folder_an_sse_capture_or_plain_text(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    assert sniff_format(tmp_path) is None
    assert sniff_format(tmp_path / "notes.txt") is None
    assert sniff_format(DATA / "openai-sse" / "chat_usage.sse") is None
