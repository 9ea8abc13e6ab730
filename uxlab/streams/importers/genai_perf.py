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

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from uxlab.reading import InputProblem, loads_json
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
    require,
    selected,
)
from uxlab.streams.importers.openai_sse import openai_chat_events_to_recording
from uxlab.streams.importers.sse_capture import response_text_events
from uxlab.streams.recording import Chunk, End, Recording
from uxlab.streams.sse import SseEvent


def import_genai_perf(path: Path, options: ImportOptions) -> ImportResult:
    """Import every request of every experiment in a GenAI-Perf `profile_export.json`."""
    path = Path(path)
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise ImportFormatError(path, None, None, "expected a JSON object with `experiments`")
    experiments = require(doc, "experiments", (list,), "a list of experiments", path, "record 0")
    endpoint = str(doc.get("endpoint") or "")
    result = ImportResult()
    for _, (e, r, req) in selected(_requests(path, experiments), options, result):
        rec = _request(path, req, e, r, endpoint, doc, options)
        if isinstance(rec, str):
            result.skipped.append(Skipped(origin_of(path, experiment=e, request=r), rec))
            continue
        if rec.end is None:
            result.warnings.append(f"{rec.id}: no [DONE] or finish_reason; kept as truncated")
        result.recordings.append(rec)
    return result


def _requests(path: Path, experiments: list[Any]) -> Iterator[tuple[int, int, Any]]:
    """`(experiment, request, request object)` over all experiments, checked as reached."""
    for e, exp in enumerate(experiments):
        where = f"experiments[{e}]"
        requests = require(exp, "requests", (list,), "a list of requests", path, where)
        for r, req in enumerate(requests):
            yield e, r, req


def _request(
    path: Path,
    req: Any,
    e: int,
    r: int,
    endpoint: str,
    doc: dict[str, Any],
    options: ImportOptions,
) -> Recording | str:
    """One request as a Recording, or the reason it is skipped."""
    where = f"experiments[{e}].requests[{r}]"
    if not isinstance(req, dict):
        raise ImportFormatError(path, where, None, "expected an object")
    t0_ns = require(req, "timestamp", (int, float), "a time in ns", path, where)
    stamps = require(req, "response_timestamps", (list,), "a list of times in ns", path, where)
    outputs = require(req, "response_outputs", (list,), "a list of responses", path, where)
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
        api="openai.chat" if "chat" in endpoint else _text_or_none(doc.get("service_kind")),
        model=_text_or_none(request.get("model")) if isinstance(request, dict) else None,
        request=request if isinstance(request, dict) else {},
        experiment=(doc["experiments"][e].get("experiment") or None),
    )
    events, triton = _responses(path, where, t0_ns, stamps, outputs)
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


def _request_payload(req: dict[str, Any]) -> Any:
    """The request as sent (its JSON payload; the raw text when it is not JSON)."""
    inputs = req.get("request_inputs") or {}
    payload = inputs.get("payload") if isinstance(inputs, dict) else None
    if not (isinstance(payload, str) and payload):
        return {}
    try:
        return loads_json(payload)
    except InputProblem:
        return {"payload": payload}


def _responses(
    path: Path, where: str, t0_ns: float, stamps: list[Any], outputs: list[Any]
) -> tuple[list[SseEvent], list[Chunk]]:
    """(the SSE events of `response` texts, the chunks of Triton `text_output`s), each at
    its response timestamp in ms from the request's."""
    events: list[SseEvent] = []
    triton: list[Chunk] = []
    for k, (ts, out) in enumerate(zip(stamps, outputs, strict=True)):
        if isinstance(ts, bool) or not isinstance(ts, int | float):
            raise ImportFormatError(
                path, where, f"response_timestamps[{k}]", f"not a number: {ts!r}"
            )
        t_ms = (ts - t0_ns) / 1e6
        if t_ms < 0:
            raise ImportFormatError(
                path, where, f"response_timestamps[{k}]", "earlier than the request `timestamp`"
            )
        if not isinstance(out, dict):
            raise ImportFormatError(path, where, f"response_outputs[{k}]", "expected an object")
        if "response" in out:
            raw = out["response"]
            if not isinstance(raw, str):
                raise ImportFormatError(
                    path, where, f"response_outputs[{k}].response", "expected the raw SSE text"
                )
            events.extend(response_text_events(t_ms, raw))
        elif "text_output" in out:
            text = out["text_output"]
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
