"""NVIDIA GenAI-Perf `profile_export.json` -> Recordings (lossless: times and raw SSE text).

Schema (written by Perf Analyzer, `src/profile_data_exporter.cc`)::

    {"service_kind": "openai", "endpoint": "v1/chat/completions",
     "experiments": [
       {"experiment": {"mode": "concurrency", "value": 10},
        "requests": [
          {"timestamp": <ns>,
           "request_inputs": {"payload": "<request JSON text>"},
           "response_timestamps": [<ns>, ...],
           "response_outputs": [{"response": "data: {...}\\n\\n"}, ...]}]}]}

Each response's arrival time is `response_timestamps[i] - timestamp` (ns -> ms). OpenAI
responses are raw SSE text and go through the same mapping as `openai-sse` (role prelude ->
meta, `[DONE]` -> end). Triton-style outputs (`{"text_output": "..."}`) become chunks as they
are. Request index in `source.origin`: `experiment=E&request=R`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

from uxlab.reading import InputProblem, Wording, convert, expected, loads_json
from uxlab.streams.importers.base import (
    ImportFormatError,
    ImportOptions,
    ImportResult,
    Skipped,
    id_base,
    import_header,
    map_located,
    origin_of,
    read_json,
    selected,
)
from uxlab.streams.importers.openai_sse import openai_chat_events_to_recording
from uxlab.streams.importers.sse_capture import response_text_events
from uxlab.streams.recording import Chunk, End, Recording
from uxlab.streams.sse import SseEvent


class ResponseOutput(msgspec.Struct):
    """One response: the raw SSE text (`response`), or Triton's `text_output`."""

    response: str | msgspec.UnsetType = msgspec.UNSET
    text_output: Any = msgspec.UNSET


class RequestInputs(msgspec.Struct):
    payload: Any = None


class GenaiRequest(msgspec.Struct):
    """A request of an experiment: when it was sent and each response's time (ns)."""

    timestamp: int | float  # ns since the epoch: an int keeps every digit (a float, 2**53)
    response_timestamps: list[int | float]
    response_outputs: list[ResponseOutput]
    request_inputs: RequestInputs | None = None


class Experiment(msgspec.Struct):
    requests: list[Any]
    experiment: Any = None


class GenaiExport(msgspec.Struct):
    """A `profile_export.json`, down to each experiment's list of requests (each request is
    read as a GenaiRequest when its turn comes, so its error names it)."""

    experiments: list[Experiment]
    endpoint: str | None = None
    service_kind: Any = None


EXPORT_WORDING: Wording = {
    "": lambda _: "expected a JSON object with `experiments`",
    "experiments": expected("a list of experiments"),
    "experiments[*].requests": expected("a list of requests"),
    "experiments[*]": expected("an object"),
}
REQUEST_WORDING: Wording = {
    "": lambda _: "expected an object",
    "timestamp": expected("a time in ns"),
    "response_timestamps": expected("a list of times in ns"),
    "response_timestamps[*]": lambda v: f"not a number: {v!r:.60}",
    "response_outputs": expected("a list of responses"),
    "response_outputs[*]": lambda _: "expected an object",
    "response_outputs[*].response": lambda _: "expected the raw SSE text",
}
_EXPERIMENT = re.compile(r"^(experiments\[\d+\])\.?(.*)$")


def _export_error(path: Path, field: str | None, problem: str) -> ImportFormatError:
    """An export's error: one inside an experiment is said at that experiment."""
    inside = _EXPERIMENT.match(field or "")
    if inside is None:
        return ImportFormatError(path, "record 0" if field else None, field, problem)
    return ImportFormatError(path, inside[1], inside[2] or None, problem)


def import_genai_perf(path: Path, options: ImportOptions) -> ImportResult:
    """Import every request of every experiment in a GenAI-Perf `profile_export.json`."""
    path = Path(path)
    doc = convert(read_json(path), GenaiExport, EXPORT_WORDING, error=partial(_export_error, path))
    endpoint = doc.endpoint or ""
    result = ImportResult()
    for _, (e, r, req) in selected(_requests(doc.experiments), options, result):
        rec = _request(path, req, e, r, endpoint, doc, options)
        if isinstance(rec, str):
            result.skipped.append(Skipped(origin_of(path, experiment=e, request=r), rec))
            continue
        if rec.end is None:
            result.warnings.append(f"{rec.id}: no [DONE] or finish_reason; kept as truncated")
        result.recordings.append(rec)
    return result


def _requests(experiments: list[Experiment]) -> Iterator[tuple[int, int, Any]]:
    """`(experiment, request, request object)` over all experiments."""
    for e, exp in enumerate(experiments):
        for r, req in enumerate(exp.requests):
            yield e, r, req


def _request(
    path: Path,
    raw: Any,
    e: int,
    r: int,
    endpoint: str,
    doc: GenaiExport,
    options: ImportOptions,
) -> Recording | str:
    """One request as a Recording, or the reason it is skipped."""
    where = f"experiments[{e}].requests[{r}]"
    req = convert(raw, GenaiRequest, REQUEST_WORDING, error=partial(ImportFormatError, path, where))
    stamps, outputs = req.response_timestamps, req.response_outputs
    if len(stamps) != len(outputs):
        raise ImportFormatError(
            path,
            where,
            "response_outputs",
            f"{len(outputs)} responses for {len(stamps)} response_timestamps (must be equal)",
        )
    if not stamps:
        return "no responses (the request failed or was cancelled)"
    request = _request_payload(req)
    origin = origin_of(path, experiment=e, request=r)
    header = import_header(
        f"{id_base(path, options)}-e{e}-r{r:04d}",
        importer="genai-perf",
        origin=origin,
        api="openai.chat" if "chat" in endpoint else _text_or_none(doc.service_kind),
        model=_text_or_none(request.get("model")) if isinstance(request, dict) else None,
        request=request if isinstance(request, dict) else {},
        experiment=(doc.experiments[e].experiment or None),
    )
    events, triton = _responses(path, where, req)
    if triton:
        return Recording(
            header=header, events=list(triton), end=End(t_ms=triton[-1].t_ms, finish_reason=None)
        )
    return map_located(
        openai_chat_events_to_recording,
        events,
        header,
        path,
        lambda i: f"{where}.response_outputs (event {i})",
    )


def _request_payload(req: GenaiRequest) -> Any:
    """The request as sent (its JSON payload; the raw text when it is not JSON)."""
    payload = req.request_inputs.payload if req.request_inputs is not None else None
    if not (isinstance(payload, str) and payload):
        return {}
    try:
        return loads_json(payload)
    except InputProblem:
        return {"payload": payload}


def _responses(path: Path, where: str, req: GenaiRequest) -> tuple[list[SseEvent], list[Chunk]]:
    """(the SSE events of `response` texts, the chunks of Triton `text_output`s), each at
    its response timestamp in ms from the request's."""
    events: list[SseEvent] = []
    triton: list[Chunk] = []
    for k, (ts, out) in enumerate(zip(req.response_timestamps, req.response_outputs, strict=True)):
        t_ms = (ts - req.timestamp) / 1e6
        if t_ms < 0:
            raise ImportFormatError(
                path, where, f"response_timestamps[{k}]", "earlier than the request `timestamp`"
            )
        if out.response is not msgspec.UNSET:
            events.extend(response_text_events(t_ms, out.response))
        elif out.text_output is not msgspec.UNSET:
            text = out.text_output
            if isinstance(text, str) and text:
                triton.append(Chunk(t_ms=t_ms, text=text, channel="content"))
        else:
            raise ImportFormatError(
                path,
                where,
                f"response_outputs[{k}]",
                "expected a `response` (SSE text) or `text_output` key",
            )
    return events, triton


def _text_or_none(value: Any) -> str | None:
    """A non-empty string as it is; anything else (a number, a list) is not a name."""
    return value if isinstance(value, str) and value else None
