"""`vllm bench serve --save-result --save-detailed` result JSON -> Recordings.

Per-request lists in the result (vllm-project/vllm `vllm/benchmarks/serve.py`), times in
seconds: `ttfts[i]`, `itls[i]` (one gap per chunk after the first), `start_times[i]`
(perf_counter), `generated_texts[i]`, `output_lens[i]`, `input_lens[i]`, `errors[i]`; plus
run keys such as `model_id`, `backend`, `endpoint_type`.

Chunk k of request i arrives at `ttfts[i] + sum(itls[i][:k])` (exactly, in ms). The text of
each chunk was not kept, so the generated text is cut into as many pieces as there were
chunks (`text_source: "split"`); with `--text`, or when the result has no text, the given
or bundled neutral text is laid over instead. Failed requests (`errors[i]` non-empty) are
skipped and reported. `n_tokens` is 1 when `output_lens[i]` equals the chunk count.
Older vLLM releases' TTFT counts the role-only first chunk of a chat stream; 0.33.0's
counts the first chunk with content, `reasoning` or tool calls (checked on its own result).
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import msgspec

from uxlab.reading import MAX_TIME_MS, MISSING, Wording, convert, shown
from uxlab.streams.importers.base import (
    ImportFormatError,
    ImportOptions,
    ImportResult,
    Skipped,
    chunks_from_gaps,
    id_base,
    import_header,
    origin_of,
    read_json,
    selected,
)
from uxlab.streams.recording import End, Recording
from uxlab.streams.split_text import TextTooShortError, lay_text, neutral_text, split_text

Seconds = Annotated[float, msgspec.Meta(ge=0, le=MAX_TIME_MS / 1000.0)]
"""A time in seconds, at most one day (`MAX_TIME_MS` in seconds: the file's field is named
when one is past it; each request's times are checked again, in ms, when read back)."""
Count = Annotated[int, msgspec.Meta(ge=0)]


class VllmResult(msgspec.Struct):
    """A `--save-detailed` result: the per-request lists uxlab reads (other keys kept out)."""

    ttfts: list[Seconds]
    itls: list[list[Seconds]]
    generated_texts: list[str | None] | None = None
    errors: list[Any] | None = None
    output_lens: list[Count | None] | None = None
    start_times: list[float | None] | None = None
    input_lens: list[Count | None] | None = None
    model_id: str | None = None
    endpoint_type: str | None = None
    backend: str | None = None


def _seconds_problem(value: Any, expected: str) -> str:
    """A time that is not seconds, or is past one day (no stream takes that long)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        limit = MAX_TIME_MS / 1000.0
        if value > limit:
            return f"{shown(value)} s is not plausible: at most {limit:,.0f} s (one day)"
    return f"expected {expected}, got {shown(value)}"


WORDING: Wording = {
    "": lambda _: "expected a JSON object (a vLLM result)",
    "ttfts": lambda v: (
        "missing (expected a list of seconds (run with --save-detailed))"
        if v is MISSING
        else f"expected a list of seconds (run with --save-detailed), got {shown(v)}"
    ),
    "itls": lambda v: (
        "missing (expected a list of lists of seconds (--save-detailed))"
        if v is MISSING
        else f"expected a list of lists of seconds (--save-detailed), got {shown(v)}"
    ),
    "ttfts[*]": lambda v: _seconds_problem(v, "seconds"),
    "itls[*]": lambda v: f"expected a list of numbers, got {shown(v)}",
    "itls[*][*]": lambda v: _seconds_problem(v, "a non-negative number"),
    "output_lens[*]": lambda v: f"expected a token count, got {shown(v)}",
}
_REQUEST = re.compile(r"^\w+\[(\d+)\]")


def _error(path: Path, field: str | None, problem: str) -> ImportFormatError:
    """The error at `field`: a request's own list entry names the request."""
    request = _REQUEST.match(field or "")
    where = f"request {request[1]}" if request else ("the result object" if field else None)
    return ImportFormatError(path, where, field, problem)


def import_vllm_bench(path: Path, options: ImportOptions) -> ImportResult:
    """Import the per-request streams of a `vllm bench serve --save-detailed` result."""
    path = Path(path)
    doc = convert(read_json(path), VllmResult, WORDING, error=partial(_error, path))
    top = "the result object"
    ttfts, itls = doc.ttfts, doc.itls
    if len(itls) != len(ttfts):
        raise ImportFormatError(path, top, "itls", f"{len(itls)} entries for {len(ttfts)} ttfts")
    texts = doc.generated_texts or []
    errors = doc.errors or []
    output_lens = doc.output_lens or []
    start_times = doc.start_times or []
    input_lens = doc.input_lens or []
    fallback = options.text if options.text is not None else neutral_text()
    result = ImportResult()
    for i, ttft_s in selected(ttfts, options, result):
        origin = origin_of(path, request=i)
        if i < len(errors) and errors[i]:
            result.skipped.append(Skipped(origin, f"failed: {str(errors[i]).strip()[:80]}"))
            continue
        gaps_ms = [g * 1000.0 for g in itls[i]]
        n_chunks = len(gaps_ms) + 1
        generated = texts[i] if i < len(texts) else None
        pieces, text_name = _texts(generated, n_chunks, fallback, options)
        if options.text is None and generated and text_name != "generated_texts":
            result.warnings.append(
                f"request {i}: generated text shorter than its {n_chunks} chunks; "
                "laid the neutral text over it instead"
            )
        out_len = output_lens[i] if i < len(output_lens) else None
        chunks = chunks_from_gaps(
            ttft_s * 1000.0, gaps_ms, pieces, n_tokens=1 if out_len == n_chunks else None
        )
        start_s = start_times[i] if i < len(start_times) else None
        header = import_header(
            f"{id_base(path, options)}-r{i:04d}",
            importer="vllm-bench",
            origin=origin,
            api=_api(doc),
            model=doc.model_id,
            text_source="split",
            timing="recorded",
            text=text_name,
            start_time_s=start_s,
        )
        usage: dict[str, Any] = {"output_tokens": out_len}
        if i < len(input_lens) and input_lens[i] is not None:
            usage["input_tokens"] = input_lens[i]
        result.recordings.append(
            Recording(
                header=header,
                events=list(chunks),
                end=End(t_ms=chunks[-1].t_ms, finish_reason=None, usage=usage),
            )
        )
    return result


def _texts(
    generated: Any, n_chunks: int, fallback: str, options: ImportOptions
) -> tuple[list[str], str]:
    if options.text is None and isinstance(generated, str) and generated:
        try:
            return split_text(generated, n_chunks), "generated_texts"
        except TextTooShortError:
            pass
    return lay_text(fallback, n_chunks), options.text_name or "uxlab neutral text"


def _api(doc: VllmResult) -> str | None:
    kind = doc.endpoint_type or doc.backend
    if kind in ("openai-chat", "openai_chat"):
        return "openai.chat"
    if kind in ("openai", "vllm"):
        return "openai.completions"
    return str(kind) if kind else None
