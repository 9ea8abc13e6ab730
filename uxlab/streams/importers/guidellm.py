"""guidellm `benchmarks.json` -> Recordings: per-request moments, the text, made-up gaps between.

A guidellm report (`guidellm run --output kind=json`, checked with guidellm 0.8.1, report
`metadata.version` 2) holds one entry per benchmark, and in it every request::

    {"benchmarks": [{"requests": {"successful": [req, ...], "errored": [...],
                                  "incomplete": [...]}, ...}], ...}
    req = {"request_id": ..., "request_args": "<JSON of the request>", "output": "...",
           "reasoning_output": "..." | null, "tool_calls": [{"id", "function": {...}}] | null,
           "prompt_tokens": 20, "output_tokens": 30,
           "info": {"timings": {"request_start": t, "first_request_iteration": t,
                                "first_token_iteration": t, "first_output_token_iteration": t,
                                "last_token_iteration": t, "request_end": t,
                                "token_iterations": 30, ...}, "error": null, ...}, ...}

Times are Unix seconds. guidellm keeps, per request, when the first token arrived, when the
first non-reasoning token did, when the last did and when the request ended, and how many
stream iterations carried tokens, but not each iteration's time. So the stream is built:
`token_iterations` chunks, the first at `first_token_iteration`, the last at
`last_token_iteration` (both from `request_start`), evenly spaced between; with reasoning,
the reasoning run ends where the first output token came (`first_output_token_iteration`),
which starts the content run. Those moments are recorded; every time between them is made
up (`source.timing` starts with `synthetic`, so `inspect` leaves the gaps out of ITL and
stalls). The text is the model's own (`output`, `reasoning_output`), cut into the chunks
(`text_source: "split"`). Tool calls are kept (a `tool_call` meta and one `tool` chunk of
arguments each) at the last token's time, since their own time is not in the report. The
end is at `request_end`; `n_tokens` is 1 when `output_tokens` equals `token_iterations`.

Errored and incomplete (cancelled) requests are skipped and reported. `source.origin` is
`benchmarks.json#benchmark=B&request=I`, counting successful requests of each benchmark.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from uxlab.reading import InputProblem, loads_json
from uxlab.streams.importers.base import (
    ImportFormatError,
    ImportOptions,
    ImportResult,
    Skipped,
    id_base,
    import_header,
    origin_of,
    read_json,
    selected,
)
from uxlab.streams.recording import Chunk, End, Event, Meta, Recording
from uxlab.streams.split_text import split_text

TIMING = (
    "synthetic: recorded first token, first output token, last token and end; even gaps between"
)


def import_guidellm(path: Path, options: ImportOptions) -> ImportResult:
    """Import every successful request of every benchmark in a guidellm `benchmarks.json`."""
    path = Path(path)
    doc = read_json(path)
    benchmarks = doc.get("benchmarks") if isinstance(doc, dict) else None
    if not isinstance(benchmarks, list):
        raise ImportFormatError(
            path,
            None,
            "benchmarks",
            'missing (expected a guidellm report: {"benchmarks": [{"requests": ...}]}, '
            "as `guidellm run --output kind=json` writes)",
        )
    metadata = doc.get("metadata")
    version = metadata.get("guidellm_version") if isinstance(metadata, dict) else None
    version = version if isinstance(version, str) else None
    result = ImportResult()
    if options.text is not None:
        result.warnings.append("guidellm reports keep the model's own text: --text is not used")
    successful = _successful(path, benchmarks, result)  # reports the others as it goes
    for _, (b, i, req) in selected(successful, options, result):
        where = f"benchmarks[{b}].requests.successful[{i}]"
        origin = origin_of(path, benchmark=b, request=i)
        rid = f"{id_base(path, options)}-b{b}-r{i:03d}"
        rec = _request(path, where, req, rid, origin, version)
        result.add(origin, rec)
    return result


def _successful(
    path: Path, benchmarks: list[Any], result: ImportResult
) -> Iterator[tuple[int, int, Any]]:
    """(benchmark, request number, request) for every successful request of the file, in
    order (request indices count them over the whole file); each benchmark's errored and
    incomplete requests are reported as skipped when the reading reaches it."""
    for b, bench in enumerate(benchmarks):
        where_b = f"benchmarks[{b}]"
        if not isinstance(bench, dict) or not isinstance(bench.get("requests"), dict):
            raise ImportFormatError(
                path, where_b, "requests", "missing (expected successful/errored/incomplete)"
            )
        requests = bench["requests"]
        for kind in ("errored", "incomplete"):
            others = requests.get(kind) or []
            if not isinstance(others, list):
                raise ImportFormatError(path, where_b, f"requests.{kind}", "expected a list")
            for i, req in enumerate(others):
                reason = _not_completed_reason(kind, req)
                result.skipped.append(Skipped(origin_of(path, benchmark=b, **{kind: i}), reason))
        successful = requests.get("successful") or []
        if not isinstance(successful, list):
            raise ImportFormatError(path, where_b, "requests.successful", "expected a list")
        for i, req in enumerate(successful):
            yield b, i, req


def _not_completed_reason(kind: str, req: Any) -> str:
    info = req.get("info") if isinstance(req, dict) else None
    error = info.get("error") if isinstance(info, dict) else None
    label = "failed" if kind == "errored" else "incomplete (cancelled)"
    return f"{label}: {str(error).strip()[:60]}" if error else label


def _time(timings: dict[str, Any], key: str, path: Path, where: str, required: bool) -> Any:
    value = timings.get(key)
    if value is None:
        if required:
            raise ImportFormatError(
                path, where, f"info.timings.{key}", "missing (expected a time in seconds)"
            )
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise ImportFormatError(
            path, where, f"info.timings.{key}", f"expected a time in seconds, got {value!r:.60}"
        )
    return float(value)


def _request(
    path: Path, where: str, req: Any, rid: str, origin: str, version: str | None
) -> Recording | str:
    if not isinstance(req, dict):
        raise ImportFormatError(path, where, None, "expected an object")
    t = _timings(path, where, req)
    if isinstance(t, str):
        return t
    content = _text(req, "output", path, where)
    reasoning = _text(req, "reasoning_output", path, where)
    chunks = _chunks(t, reasoning, content, req.get("output_tokens"))
    if not chunks and not req.get("tool_calls"):
        return "no output text"
    events: list[Event] = list(chunks)
    events.extend(_tool_events(req.get("tool_calls"), t.ms(t.last), path, where))
    request = _request_body(req.get("request_args"))
    usage = {
        k: req[k]
        for k in ("prompt_tokens", "output_tokens")
        if isinstance(req.get(k), int) and not isinstance(req.get(k), bool)
    }
    header = import_header(
        rid,
        importer="guidellm",
        origin=origin,
        api="openai.chat",
        model=request.get("model") if isinstance(request.get("model"), str) else None,
        request=request,
        text_source="split",
        timing=TIMING,
        request_id=req.get("request_id"),
        tool_calls_at="last token (their own time is not in the report)"
        if req.get("tool_calls")
        else None,
        guidellm_version=version,
    )
    return Recording(header=header, events=events, end=End(t.ms(t.end), None, usage or None))


@dataclass(frozen=True)
class _Timings:
    """A request's `info.timings` (seconds) and its number of token iterations."""

    start: float
    first: float
    last: float
    end: float
    first_output: float | None
    n_chunks: int

    def ms(self, t: float) -> float:
        """`t` in ms from the request's start."""
        return (t - self.start) * 1000.0


def _timings(path: Path, where: str, req: dict[str, Any]) -> _Timings | str:
    """The request's timings, checked (a reason to skip it when it has no output token)."""
    info = req.get("info")
    timings = info.get("timings") if isinstance(info, dict) else None
    if not isinstance(timings, dict):
        raise ImportFormatError(
            path, where, "info.timings", "missing (expected the request's timings; guidellm "
            "reports older than 0.4 keep other fields and are not read)"
        )  # fmt: skip
    start: float = _time(timings, "request_start", path, where, True)
    first = _time(timings, "first_token_iteration", path, where, False)
    if first is None:
        return "no output tokens"
    last = _time(timings, "last_token_iteration", path, where, True)
    end = _time(timings, "request_end", path, where, True)
    first_output = _time(timings, "first_output_token_iteration", path, where, False)
    if not start <= first <= last <= end:
        raise ImportFormatError(
            path,
            where,
            "info.timings",
            "expected request_start <= first_token_iteration <= last_token_iteration <= "
            f"request_end, got {start}, {first}, {last}, {end}",
        )
    n_chunks = timings.get("token_iterations")
    if isinstance(n_chunks, bool) or not isinstance(n_chunks, int) or n_chunks < 1:
        raise ImportFormatError(
            path, where, "info.timings.token_iterations", f"expected a whole number >= 1, got "
            f"{n_chunks!r:.40}"
        )  # fmt: skip
    return _Timings(start, first, last, end, first_output, n_chunks)


def _chunks(t: _Timings, reasoning: str, content: str, output_tokens: Any) -> list[Chunk]:
    """The text cut into the report's token iterations, evenly spaced from the first token to
    the last (reasoning, then content from the first output token on)."""
    n_chunks = t.n_chunks
    # How many chunks are reasoning: all before the first output token, else by text share.
    if not reasoning:
        n_reasoning = 0
    elif t.first_output is None or not content:
        n_reasoning = n_chunks
    else:
        share = len(reasoning) / (len(reasoning) + len(content))
        n_reasoning = min(max(round(n_chunks * share), 1), n_chunks - 1)
    # A run cannot have more chunks than its text has characters (guidellm also counts
    # tool-call deltas as token iterations); such a run gets fewer chunks.
    n_content = min(n_chunks - n_reasoning, len(content))
    n_reasoning = min(n_reasoning, len(reasoning))
    if n_reasoning + n_content == 0:
        return []
    if n_reasoning and n_content:
        assert t.first_output is not None
        switch = min(max(t.first_output, t.first), t.last)
        # reasoning: first .. just before the switch; content: switch .. last (both exact)
        t_reasoning = np.linspace(t.ms(t.first), t.ms(switch), n_reasoning + 1)[:-1]
        t_content = np.linspace(t.ms(switch), t.ms(t.last), n_content)
        times = np.concatenate([t_reasoning, t_content])
    else:
        times = np.linspace(t.ms(t.first), t.ms(t.last), n_reasoning + n_content)
    per_chunk = 1 if output_tokens == n_chunks else None
    texts = _cut(reasoning, n_reasoning) + _cut(content, n_content)
    if len(texts) != n_chunks:
        per_chunk = None
    channels = ["reasoning"] * n_reasoning + ["content"] * n_content
    return [
        Chunk(t_ms=float(t_ms), text=text, channel=channel, n_tokens=per_chunk)
        for t_ms, text, channel in zip(times, texts, channels, strict=True)
    ]


def _text(req: dict[str, Any], key: str, path: Path, where: str) -> str:
    value = req.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ImportFormatError(path, where, key, f"expected text, got {type(value).__name__}")
    return value


def _cut(text: str, n: int) -> list[str]:
    """`text` in exactly `n` non-empty pieces (`n` <= its length), token-like where it can."""
    return split_text(text, n) if n else []


def _tool_events(calls: Any, t_ms: float, path: Path, where: str) -> list[Event]:
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise ImportFormatError(path, where, "tool_calls", "expected a list of tool calls")
    events: list[Event] = []
    for k, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise ImportFormatError(
                path, where, f"tool_calls[{k}].function.name", "missing (expected a string)"
            )
        meta = {"kind": "tool_call", "index": k, "id": call.get("id"), "name": fn["name"]}
        events.append(Meta(t_ms=t_ms, data=meta))
        arguments = fn.get("arguments")
        if isinstance(arguments, str) and arguments:
            events.append(Chunk(t_ms=t_ms, text=arguments, channel="tool", extra={"tool_index": k}))
    return events


def _request_body(raw: Any) -> dict[str, Any]:
    """The request's JSON body from `request_args` (a JSON string in guidellm 0.8)."""
    if isinstance(raw, str):
        try:
            raw = loads_json(raw)
        except InputProblem:
            return {}
    body = raw.get("body") if isinstance(raw, dict) else None
    return body if isinstance(body, dict) else {}
