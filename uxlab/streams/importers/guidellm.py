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

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import msgspec
import numpy as np

from uxlab.reading import MISSING, InputProblem, Wording, convert, loads_json
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


Seconds = float | None
"""A moment in Unix seconds (finite: the reading rules refuse the others)."""
Count = Annotated[int, msgspec.Meta(ge=0)]


class Timings(msgspec.Struct):
    """A request's `info.timings`: which are required is decided by hand (a request with
    no first token is skipped before its last token is asked for)."""

    request_start: float
    first_token_iteration: Seconds = None
    last_token_iteration: Seconds = None
    request_end: Seconds = None
    first_output_token_iteration: Seconds = None
    token_iterations: Annotated[int, msgspec.Meta(ge=1)] | None = None


class Info(msgspec.Struct):
    timings: Timings


class Function(msgspec.Struct):
    name: str
    arguments: Any = None


class ToolCall(msgspec.Struct):
    function: Function
    id: Any = None


class GuidellmRequest(msgspec.Struct):
    """A successful request: its text, tool calls, token counts and timings."""

    info: Info
    output: str | None = None
    reasoning_output: str | None = None
    tool_calls: list[ToolCall] | None = None
    prompt_tokens: Count | None = None
    output_tokens: Count | None = None
    request_id: Any = None
    request_args: Any = None


class Requests(msgspec.Struct):
    successful: list[Any] | None = None
    errored: list[Any] | None = None
    incomplete: list[Any] | None = None


class Benchmark(msgspec.Struct):
    requests: Requests


class Metadata(msgspec.Struct):
    guidellm_version: str | None = None


class Report(msgspec.Struct):
    """A guidellm report, down to each benchmark's lists of requests (each request is read
    as a GuidellmRequest when its turn comes, so its error names it)."""

    benchmarks: list[Benchmark]
    metadata: Metadata | None = None


_NO_REPORT = (
    'missing (expected a guidellm report: {"benchmarks": [{"requests": ...}]}, '
    "as `guidellm run --output kind=json` writes)"
)
_NO_TIMINGS = (
    "missing (expected the request's timings; guidellm reports older than 0.4 keep other "
    "fields and are not read)"
)


def _seconds(value: Any) -> str:
    if value is MISSING or value is None:
        return "missing (expected a time in seconds)"
    return f"expected a time in seconds, got {value!r:.60}"


REPORT_WORDING: Wording = {
    "": lambda _: _NO_REPORT,
    "benchmarks": lambda _: _NO_REPORT,
    "benchmarks[*]": lambda _: "missing (expected successful/errored/incomplete)",
    "benchmarks[*].requests": lambda _: "missing (expected successful/errored/incomplete)",
    "benchmarks[*].requests.successful": lambda _: "expected a list",
    "benchmarks[*].requests.errored": lambda _: "expected a list",
    "benchmarks[*].requests.incomplete": lambda _: "expected a list",
}
REQUEST_WORDING: Wording = {
    "": lambda _: "expected an object",
    "info": lambda _: _NO_TIMINGS,
    "info.timings": lambda _: _NO_TIMINGS,
    **{f"info.timings.{key}": _seconds for key in Timings.__struct_fields__},
    "info.timings.token_iterations": lambda v: f"expected a whole number >= 1, got {v!r:.40}",
    "output": lambda v: f"expected text, got {type(v).__name__}",
    "reasoning_output": lambda v: f"expected text, got {type(v).__name__}",
    "tool_calls": lambda _: "expected a list of tool calls",
}
_BENCHMARK = re.compile(r"^(benchmarks\[\d+\])\.?(.*)$")


def _report_error(path: Path, field: str | None, problem: str) -> ImportFormatError:
    """A report's error: one inside a benchmark is said at that benchmark."""
    inside = _BENCHMARK.match(field or "")
    if inside is None:
        return ImportFormatError(path, None, field, problem)
    return ImportFormatError(path, inside[1], inside[2] or "requests", problem)


def import_guidellm(path: Path, options: ImportOptions) -> ImportResult:
    """Import every successful request of every benchmark in a guidellm `benchmarks.json`."""
    path = Path(path)
    doc = convert(read_json(path), Report, REPORT_WORDING, error=partial(_report_error, path))
    version = doc.metadata.guidellm_version if doc.metadata is not None else None
    result = ImportResult()
    if options.text is not None:
        result.warnings.append("guidellm reports keep the model's own text: --text is not used")
    successful = _successful(path, doc.benchmarks, result)  # reports the others as it goes
    for _, (b, i, req) in selected(successful, options, result):
        where = f"benchmarks[{b}].requests.successful[{i}]"
        origin = origin_of(path, benchmark=b, request=i)
        rid = f"{id_base(path, options)}-b{b}-r{i:03d}"
        rec = _request(path, where, req, rid, origin, version)
        result.add(origin, rec)
    return result


def _successful(
    path: Path, benchmarks: list[Benchmark], result: ImportResult
) -> Iterator[tuple[int, int, Any]]:
    """(benchmark, request number, request) for every successful request of the file, in
    order (request indices count them over the whole file); each benchmark's errored and
    incomplete requests are reported as skipped when the reading reaches it."""
    for b, bench in enumerate(benchmarks):
        requests = bench.requests
        for kind, others in (("errored", requests.errored), ("incomplete", requests.incomplete)):
            for i, req in enumerate(others or []):
                reason = _not_completed_reason(kind, req)
                result.skipped.append(Skipped(origin_of(path, benchmark=b, **{kind: i}), reason))
        for i, req in enumerate(requests.successful or []):
            yield b, i, req


def _not_completed_reason(kind: str, req: Any) -> str:
    info = req.get("info") if isinstance(req, dict) else None
    error = info.get("error") if isinstance(info, dict) else None
    label = "failed" if kind == "errored" else "incomplete (cancelled)"
    return f"{label}: {str(error).strip()[:60]}" if error else label


def _request(
    path: Path, where: str, raw: Any, rid: str, origin: str, version: str | None
) -> Recording | str:
    req = convert(
        raw, GuidellmRequest, REQUEST_WORDING, error=partial(ImportFormatError, path, where)
    )
    t = _timings(path, where, req.info.timings)
    if isinstance(t, str):
        return t
    content, reasoning = req.output or "", req.reasoning_output or ""
    chunks = _chunks(t, reasoning, content, req.output_tokens)
    if not chunks and not req.tool_calls:
        return "no output text"
    events: list[Event] = list(chunks)
    events.extend(_tool_events(req.tool_calls or [], t.ms(t.last)))
    request = _request_body(req.request_args)
    usage = {
        k: v
        for k, v in (("prompt_tokens", req.prompt_tokens), ("output_tokens", req.output_tokens))
        if v is not None
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
        request_id=req.request_id,
        tool_calls_at="last token (their own time is not in the report)"
        if req.tool_calls
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


def _timings(path: Path, where: str, timings: Timings) -> _Timings | str:
    """The request's timings, checked (a reason to skip it when it has no output token)."""
    start, first = timings.request_start, timings.first_token_iteration
    if first is None:
        return "no output tokens"
    needed = {
        "last_token_iteration": timings.last_token_iteration,
        "request_end": timings.request_end,
    }
    for key, value in needed.items():
        if value is None:
            raise ImportFormatError(path, where, f"info.timings.{key}", _seconds(MISSING))
    last, end = timings.last_token_iteration, timings.request_end
    assert last is not None and end is not None
    if not start <= first <= last <= end:
        raise ImportFormatError(
            path,
            where,
            "info.timings",
            "expected request_start <= first_token_iteration <= last_token_iteration <= "
            f"request_end, got {start}, {first}, {last}, {end}",
        )
    if timings.token_iterations is None:
        raise ImportFormatError(
            path, where, "info.timings.token_iterations", "expected a whole number >= 1, got None"
        )
    return _Timings(
        start, first, last, end, timings.first_output_token_iteration, timings.token_iterations
    )


def _chunks(t: _Timings, reasoning: str, content: str, output_tokens: int | None) -> list[Chunk]:
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


def _cut(text: str, n: int) -> list[str]:
    """`text` in exactly `n` non-empty pieces (`n` <= its length), token-like where it can."""
    return split_text(text, n) if n else []


def _tool_events(calls: list[ToolCall], t_ms: float) -> list[Event]:
    events: list[Event] = []
    for k, call in enumerate(calls):
        fn = call.function
        meta = {"kind": "tool_call", "index": k, "id": call.id, "name": fn.name}
        events.append(Meta(t_ms=t_ms, data=meta))
        if isinstance(fn.arguments, str) and fn.arguments:
            events.append(
                Chunk(t_ms=t_ms, text=fn.arguments, channel="tool", extra={"tool_index": k})
            )
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
