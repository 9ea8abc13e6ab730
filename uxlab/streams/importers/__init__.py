"""Importers: one small module per foreign format, each `(path, ImportOptions) -> ImportResult`.

`IMPORTERS` maps the `--from` name of `uxlab import` to its function. The SSE event
mappings (one per API, shared with the live recorder, which calls them with
`strict=False`) are `openai_chat_events_to_recording`, `anthropic_events_to_recording`,
`openai_responses_events_to_recording` and `gemini_events_to_recording`, each
`(events, header, *, strict=True) -> Recording` where `events` is a sequence of
`uxlab.streams.sse.SseEvent` (arrival `t_ms` or None, event name or None, data text);
`EVENT_MAPPINGS` names them by API.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from uxlab.reading import InputProblem
from uxlab.streams.importers.aiperf import import_aiperf
from uxlab.streams.importers.anthropic_sse import (
    anthropic_events_to_recording,
    import_anthropic_sse,
)
from uxlab.streams.importers.base import (
    ImportFormatError,
    ImportOptions,
    ImportResult,
    Skipped,
    StreamEventError,
    check_result,
)
from uxlab.streams.importers.bedrock import bedrock_events_to_recording, import_bedrock
from uxlab.streams.importers.cdp import import_cdp
from uxlab.streams.importers.cohere_sse import cohere_events_to_recording, import_cohere_sse
from uxlab.streams.importers.event_mapping import count_malformed
from uxlab.streams.importers.gemini_interactions import (
    gemini_interactions_events_to_recording,
    import_gemini_interactions,
)
from uxlab.streams.importers.gemini_sse import gemini_events_to_recording, import_gemini_sse
from uxlab.streams.importers.genai_perf import import_genai_perf
from uxlab.streams.importers.guidellm import import_guidellm
from uxlab.streams.importers.har import import_har
from uxlab.streams.importers.json_chunks import import_json_chunks
from uxlab.streams.importers.langfuse import import_langfuse
from uxlab.streams.importers.llmperf import import_llmperf
from uxlab.streams.importers.ollama import import_ollama
from uxlab.streams.importers.openai_responses_sse import (
    import_openai_responses_sse,
    openai_responses_events_to_recording,
)
from uxlab.streams.importers.openai_sse import (
    import_openai_sse,
    openai_chat_events_to_recording,
)
from uxlab.streams.importers.otel import import_otel
from uxlab.streams.importers.sniff import format_hint
from uxlab.streams.importers.sse_capture import EventMapping
from uxlab.streams.importers.vllm_bench import import_vllm_bench
from uxlab.streams.sse import SseLimitError

Importer = Callable[[Path, ImportOptions], ImportResult]

IMPORTERS: dict[str, Importer] = {
    "openai-sse": import_openai_sse,
    "openai-responses-sse": import_openai_responses_sse,
    "anthropic-sse": import_anthropic_sse,
    "gemini-sse": import_gemini_sse,
    "gemini-interactions-sse": import_gemini_interactions,
    "cohere-sse": import_cohere_sse,
    "ollama": import_ollama,
    "genai-perf": import_genai_perf,
    "aiperf": import_aiperf,
    "vllm-bench": import_vllm_bench,
    "llmperf": import_llmperf,
    "guidellm": import_guidellm,
    "har": import_har,
    "cdp": import_cdp,
    "json-chunks": import_json_chunks,
    "otel": import_otel,
    "langfuse": import_langfuse,
    "bedrock": import_bedrock,
}

EVENT_MAPPINGS: dict[str, EventMapping] = {
    "openai": openai_chat_events_to_recording,
    "openai-responses": openai_responses_events_to_recording,
    "anthropic": anthropic_events_to_recording,
    "gemini": gemini_events_to_recording,
}
"""The SSE event mapping of each live API (the names of `uxlab record --api`)."""

STREAM_MAPPINGS: dict[str, EventMapping] = {
    **EVENT_MAPPINGS,
    "cohere": cohere_events_to_recording,
    "gemini-interactions": gemini_interactions_events_to_recording,
    "bedrock": bedrock_events_to_recording,
}
"""Every API's event mapping, the live ones and those only imported (how `json-chunks`,
`har` and `cdp` map a stream they have told the API of)."""


def import_source(fmt: str, path: str | Path, options: ImportOptions | None = None) -> ImportResult:
    """Run the importer named `fmt` on `path`; every recording is checked (`check_result`)
    before the result comes back, so nothing is written from a source that fails."""
    if fmt not in IMPORTERS:
        raise ImportFormatError(
            path, None, "--from", f"unknown format {fmt!r} (one of {', '.join(IMPORTERS)})"
        )
    try:
        result = IMPORTERS[fmt](Path(path), options or ImportOptions())
    except (InputProblem, SseLimitError) as exc:  # a check below the importer's own ones
        raise ImportFormatError(path, None, None, str(exc) + format_hint(path, fmt)) from None
    except ImportFormatError as exc:
        hint = format_hint(path, fmt)
        if not hint:
            raise
        raise ImportFormatError(exc.path, exc.where, exc.field, exc.problem + hint) from None
    said = any("import it with --from" in s.reason for s in result.skipped)
    if not result.recordings and not said and (hint := format_hint(path, fmt)):
        result.warnings.append(f"nothing imported{hint}")
    return check_result(result, path)


__all__ = [
    "EVENT_MAPPINGS",
    "IMPORTERS",
    "STREAM_MAPPINGS",
    "EventMapping",
    "ImportFormatError",
    "ImportOptions",
    "ImportResult",
    "Importer",
    "Skipped",
    "StreamEventError",
    "anthropic_events_to_recording",
    "count_malformed",
    "gemini_events_to_recording",
    "import_source",
    "openai_chat_events_to_recording",
    "openai_responses_events_to_recording",
]
