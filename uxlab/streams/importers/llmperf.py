"""ray-project/llmperf `*_individual_responses.json` -> synthetic Recordings.

Each entry of the list (`src/llmperf/common_metrics.py` keys) is one request::

    {"error_code": null, "error_msg": "", "ttft_s": 0.41, "end_to_end_latency_s": 3.2,
     "inter_token_latency_s": 0.021, "request_output_throughput_token_per_s": 46.1,
     "number_input_tokens": 550, "number_output_tokens": 150, "number_total_tokens": 700}

Only per-request aggregates exist, so the stream is built: `number_output_tokens` chunks of
one token, the first at `ttft_s`, the last at `inter_token_latency_s * number_output_tokens`,
the gaps between them equal, the end at `end_to_end_latency_s`. llmperf sums the time to
each content chunk (TTFT, then every gap) and divides by the output tokens, so that
product is when its last content chunk arrived (on the leaderboard data 7-84 ms before the
end). When it is missing, or not between TTFT and the end, the last chunk goes at the end
and the header's `source.last_chunk` says so. Only those moments were recorded: the times
between them are made up (`source.timing` starts with `synthetic`, so `inspect` leaves the
gaps out of ITL and stalls), and so is the text (`text_source: "synthetic"`). Entries with
an `error_code` or `error_msg` are skipped and reported.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import msgspec

from uxlab.reading import MAX_CHUNKS, MAX_TIME_MS, Wording, convert, expected
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
from uxlab.streams.split_text import lay_text, neutral_text

Seconds = Annotated[float, msgspec.Meta(ge=0, le=MAX_TIME_MS / 1000)]
"""A time in seconds, 0 to a day."""


class Outcome(msgspec.Struct):
    """Whether a request failed (read first: a failed one is skipped, its other keys
    unread)."""

    error_code: Any = None
    error_msg: Any = None


class Entry(msgspec.Struct):
    """One request of `*_individual_responses.json` (llmperf's `common_metrics` keys that
    uxlab reads; the others are not read)."""

    ttft_s: Seconds
    end_to_end_latency_s: Seconds
    number_output_tokens: Annotated[int, msgspec.Meta(le=MAX_CHUNKS)]
    number_input_tokens: int | None = None
    inter_token_latency_s: Any = None
    """Loose on purpose: when it is not a number the last chunk goes at the end, and the
    header says why (`_last_chunk_s`)."""


def _seconds(value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"expected a plausible number of seconds (0 to a day), got {value!r}"
    return expected("a number of seconds")(value)


def _tokens(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:g} is not plausible (at most {MAX_CHUNKS:,} chunks are built)"
    return expected("a whole number")(value)


_WORDING: Wording = {
    "": lambda _: "expected an object",
    "ttft_s": _seconds,
    "end_to_end_latency_s": _seconds,
    "number_output_tokens": _tokens,
}
"""The words the hand-written checks said, where the model's would say less."""


def _error(path: Path, where: str | None) -> Callable[[str | None, str], ImportFormatError]:
    return lambda field, problem: ImportFormatError(path, where, field, problem)


def _model_from_name(path: Path) -> str | None:
    """`<model>_<in>_<out>_individual_responses.json` -> model (None if not that shape)."""
    stem = path.name.removesuffix("_individual_responses.json")
    if stem == path.name:
        return None
    parts = stem.rsplit("_", 2)
    return parts[0] if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit() else stem


def import_llmperf(path: Path, options: ImportOptions) -> ImportResult:
    """Build one evenly paced stream per successful llmperf request."""
    path = Path(path)
    doc: list[Any] = convert(
        read_json(path),
        list[Any],
        {"": lambda _: "expected a JSON list of per-request results (individual_responses)"},
        error=_error(path, None),
    )
    text = options.text if options.text is not None else neutral_text()
    model = _model_from_name(path)
    result = ImportResult()
    for i, raw in selected(doc, options, result):
        where = f"record {i}"
        origin = origin_of(path, request=i)
        outcome = convert(raw, Outcome, _WORDING, error=_error(path, where))
        if outcome.error_code or outcome.error_msg:
            reason = f"failed (error_code {outcome.error_code}: "
            reason += f"{str(outcome.error_msg or '').strip()[:60]})"
            result.skipped.append(Skipped(origin, reason))
            continue
        entry = convert(raw, Entry, _WORDING, error=_error(path, where))
        ttft_s, e2e_s = float(entry.ttft_s), float(entry.end_to_end_latency_s)
        n_tokens = entry.number_output_tokens
        if n_tokens < 1:
            result.skipped.append(Skipped(origin, "no output tokens"))
            continue
        if e2e_s < ttft_s:
            raise ImportFormatError(
                path,
                where,
                "end_to_end_latency_s",
                f"{e2e_s} s is before ttft_s {ttft_s} s (the end cannot precede the first token)",
            )
        last_s, last_from = _last_chunk_s(entry, ttft_s, e2e_s, n_tokens)
        gap_ms = (last_s - ttft_s) * 1000.0 / (n_tokens - 1) if n_tokens > 1 else 0.0
        chunks = chunks_from_gaps(
            ttft_s * 1000.0, [gap_ms] * (n_tokens - 1), lay_text(text, n_tokens), n_tokens=1
        )
        if n_tokens > 1:
            chunks[-1].t_ms = last_s * 1000.0  # exact, not a sum of rounded gaps
        header = import_header(
            f"{id_base(path, options)}-r{i:04d}",
            importer="llmperf",
            origin=origin,
            api="openai.chat",
            model=model,
            text_source="synthetic",
            timing="synthetic: recorded TTFT, last chunk and end; even gaps between",
            last_chunk=last_from,
            text=options.text_name or "uxlab neutral text",
        )
        usage: dict[str, Any] = {"output_tokens": n_tokens}
        if entry.number_input_tokens is not None:
            usage["input_tokens"] = entry.number_input_tokens
        result.recordings.append(
            Recording(
                header=header,
                events=list(chunks),
                end=End(t_ms=e2e_s * 1000.0, finish_reason=None, usage=usage),
            )
        )
    return result


def _last_chunk_s(entry: Entry, ttft_s: float, e2e_s: float, n_tokens: int) -> tuple[float, str]:
    """When the last chunk arrived (s), and where that comes from."""
    itl_s = entry.inter_token_latency_s
    if isinstance(itl_s, bool) or not isinstance(itl_s, int | float) or itl_s != itl_s:
        return e2e_s, "end_to_end_latency_s (no inter_token_latency_s)"
    last_s = float(itl_s) * n_tokens
    if n_tokens > 1 and ttft_s <= last_s <= e2e_s:
        return last_s, "inter_token_latency_s * number_output_tokens"
    if n_tokens == 1:
        return ttft_s, "ttft_s (one token)"
    return e2e_s, (
        f"end_to_end_latency_s (inter_token_latency_s * number_output_tokens = {last_s:.3f} s "
        "is not between ttft_s and the end)"
    )
