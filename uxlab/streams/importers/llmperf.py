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

from pathlib import Path
from typing import Any

from uxlab.reading import MAX_CHUNKS, MAX_TIME_MS
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
    require,
    selected,
)
from uxlab.streams.recording import End, Recording
from uxlab.streams.split_text import lay_text, neutral_text


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
    doc = read_json(path)
    if not isinstance(doc, list):
        raise ImportFormatError(
            path, None, None, "expected a JSON list of per-request results (individual_responses)"
        )
    text = options.text if options.text is not None else neutral_text()
    model = _model_from_name(path)
    result = ImportResult()
    for i, entry in selected(doc, options, result):
        where = f"record {i}"
        origin = origin_of(path, request=i)
        if not isinstance(entry, dict):
            raise ImportFormatError(path, where, None, "expected an object")
        if entry.get("error_code") or entry.get("error_msg"):
            reason = f"failed (error_code {entry.get('error_code')}: "
            reason += f"{str(entry.get('error_msg') or '').strip()[:60]})"
            result.skipped.append(Skipped(origin, reason))
            continue
        ttft_s = _seconds(entry, "ttft_s", path, where)
        e2e_s = _seconds(entry, "end_to_end_latency_s", path, where)
        n_tokens = require(entry, "number_output_tokens", (int,), "a whole number", path, where)
        if n_tokens > MAX_CHUNKS:
            raise ImportFormatError(
                path,
                where,
                "number_output_tokens",
                f"{n_tokens:g} is not plausible (at most {MAX_CHUNKS:,} chunks are built)",
            )
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
        if isinstance(entry.get("number_input_tokens"), int):
            usage["input_tokens"] = entry["number_input_tokens"]
        result.recordings.append(
            Recording(
                header=header,
                events=list(chunks),
                end=End(t_ms=e2e_s * 1000.0, finish_reason=None, usage=usage),
            )
        )
    return result


def _last_chunk_s(
    entry: dict[str, Any], ttft_s: float, e2e_s: float, n_tokens: int
) -> tuple[float, str]:
    """When the last chunk arrived (s), and where that comes from."""
    itl_s = entry.get("inter_token_latency_s")
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


def _seconds(entry: dict[str, Any], key: str, path: Path, where: str) -> float:
    value = require(entry, key, (int, float), "a number of seconds", path, where)
    if not 0 <= value <= MAX_TIME_MS / 1000:
        raise ImportFormatError(
            path, where, key, f"expected a plausible number of seconds (0 to a day), got {value!r}"
        )
    return float(value)
