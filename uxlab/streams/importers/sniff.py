"""Which `uxlab import --from` format a file looks like, from marks near its start.

Used only to add a hint when an import fails, or imports nothing, with the format the user
named: `... (it looks like an AIPerf profile export: import it with --from aiperf)`. A
guess, never a decision: the named importer's own checks stay the only ones applied.
"""

from __future__ import annotations

from pathlib import Path

from uxlab.streams.importers.detect_api import looks_like_ollama

_HEAD_BYTES = 8192
"""How much of a file's start the marks are looked for in."""

_MARKS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("cdp", ('"Network.',), "a Chrome DevTools network log"),
    ("har", ('"log"', '"entries"'), "a HAR file"),
    ("otel", ('"resourceSpans"',), "an OTLP JSON trace export"),
    ("genai-perf", ('"experiments"', '"service_kind"'), "a GenAI-Perf profile export"),
    ("guidellm", ('"guidellm_version"',), "a GuideLLM benchmarks file"),
    ("llmperf", ('"ttft_s"', '"inter_token_latency_s"'), "LLMPerf individual responses"),
    ("vllm-bench", ('"endpoint_type"', '"num_prompts"'), "a vLLM bench result"),
    ("aiperf", ('"x_request_id"',), "an AIPerf profile export"),
    ("langfuse", ('"completionStartTime"',), "a Langfuse observations export"),
)
"""(format, strings that must all be in the file's start, what such a file is), the most
telling first."""

_BEDROCK = ('"messageStart"', '"contentBlockDelta"', '"messageStop"')


def sniff_format(path: str | Path) -> tuple[str, str] | None:
    """(format, what the file is) when the file's start carries one format's marks, else
    None (a folder, an unreadable file, or no mark found)."""
    file = Path(path)
    if not file.is_file():
        return None
    try:
        with file.open("rb") as f:
            head = f.read(_HEAD_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    start = head.lstrip()
    if start.startswith(("data:", "event:", ": t_ms")):
        return None  # an SSE capture: which API it speaks is `sse_capture.check_api`'s call
    if looks_like_ollama(head.split("\n", 1)[0]):
        return "ollama", "Ollama's NDJSON"
    for fmt, marks, what in _MARKS:
        if all(mark in head for mark in marks):
            return fmt, what
    if any(mark in head for mark in _BEDROCK):
        return "bedrock", "a Bedrock ConverseStream log"
    return None


def format_hint(path: str | Path, named: str) -> str:
    """` (it looks like X: import it with --from F)` when the file looks like another format
    than `named`, else empty."""
    found = sniff_format(path)
    if found is None or found[0] == named:
        return ""
    fmt, what = found
    return f" (it looks like {what}: import it with --from {fmt})"
