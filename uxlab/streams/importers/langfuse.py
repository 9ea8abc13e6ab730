"""Langfuse generations -> Recordings (`--from langfuse`).

**Langfuse** (`--from langfuse`): observations as the public API lists them (a JSON list, or
`{"data": [...]}`, or one per line), each `{"type": "GENERATION", "startTime",
"completionStartTime", "endTime", "model", "output", "usage" | "usageDetails", "level",
"statusMessage", ...}` with ISO times; `level: "ERROR"` is skipped and reported.

The recording is built as `trace_recording` describes (first chunk and end recorded, gaps
between made up).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

from uxlab.reading import MISSING, Wording, convert
from uxlab.streams.importers.base import (
    ImportFormatError,
    ImportOptions,
    ImportResult,
    Requests,
    Skipped,
    id_base,
    origin_of,
)
from uxlab.streams.importers.trace_recording import (
    arguments,
    documents,
    iso_us,
    output_messages,
    trace_recording,
)


class Usage(msgspec.Struct):
    """`usageDetails` (or the older `usage`): the token counts uxlab keeps."""

    input: int | None = None
    output: int | None = None


class Generation(msgspec.Struct):
    """A GENERATION observation as the Langfuse public API lists it (the keys uxlab
    reads). Its `output` is what the application logged, loose by design."""

    id: Any = None
    traceId: Any = None
    startTime: str | None = None
    endTime: str | None = None
    completionStartTime: str | None = None
    model: str | None = None
    output: Any = None
    usage: Usage | None = None
    usageDetails: Usage | None = None


def _time(value: Any) -> str:
    if value is MISSING or value is None:
        return "missing (expected an ISO 8601 time)"
    return f"expected an ISO 8601 time, got {value!r:.60}"


_WORDING: Wording = {"startTime": _time, "endTime": _time, "completionStartTime": _time}
"""The words the hand-written checks said, where the model's would say less."""


def _error(path: Path, where: str, field: str | None, problem: str) -> ImportFormatError:
    return ImportFormatError(path, where, field, problem)


def _us(gen: Generation, key: str, path: Path, where: str) -> int | None:
    """The time at `key` in whole microseconds (None when absent), else an error."""
    value = getattr(gen, key)
    us = iso_us(value)
    if value is not None and us is None:
        raise ImportFormatError(path, where, key, _time(value))
    return us


# -- Langfuse --------------------------------------------------------------------------


def _observations(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for where, doc in documents(path):
        items = doc.get("data") if isinstance(doc, dict) and "data" in doc else doc
        if isinstance(items, dict):
            items = [items]
        if not isinstance(items, list):
            raise ImportFormatError(path, where, None, "expected Langfuse observations (a list)")
        for i, obs in enumerate(items):
            if isinstance(obs, dict):
                yield (f"{where}:[{i}]" if len(items) > 1 or where != "1" else f"[{i}]"), obs


def import_langfuse(path: Path, options: ImportOptions) -> ImportResult:
    """One recording per Langfuse GENERATION observation."""
    path = Path(path)
    result = ImportResult()
    generations = Requests(
        _observations(path), lambda item: item[1].get("type") == "GENERATION", options, result
    )
    for this, (where, obs) in generations:
        origin = origin_of(path, observation=obs.get("id"))
        if obs.get("level") == "ERROR":  # read before the rest: its times may be missing
            result.skipped.append(Skipped(origin, f"error: {obs.get('statusMessage') or 'ERROR'}"))
            continue
        gen = convert(obs, Generation, _WORDING, error=partial(_error, path, where))
        start = _us(gen, "startTime", path, where)
        end = _us(gen, "endTime", path, where)
        if start is None or end is None:
            missing = "startTime" if start is None else "endTime"
            raise ImportFormatError(path, where, missing, "missing (expected an ISO 8601 time)")
        if end < start:
            raise ImportFormatError(path, where, "endTime", "before startTime")
        first = _us(gen, "completionStartTime", path, where)
        ttft_ms = None if first is None else (first - start) / 1000.0
        if ttft_ms is not None and not 0 <= ttft_ms <= (end - start) / 1000.0:
            raise ImportFormatError(
                path, where, "completionStartTime", "not between startTime and endTime"
            )
        parts, calls, finish = _langfuse_output(gen.output)
        counts = (gen.usageDetails if obs.get("usageDetails") else gen.usage) or Usage()
        usage = {
            f"{k}_tokens": v
            for k, v in (("input", counts.input), ("output", counts.output))
            if v is not None
        }
        result.recordings.append(
            trace_recording(
                f"{id_base(path, options)}-g{this:04d}",
                importer="langfuse",
                origin=origin,
                ttft_ms=ttft_ms,
                end_ms=(end - start) / 1000.0,
                parts=parts,
                tool_calls=calls,
                output_tokens=usage.get("output_tokens"),
                finish_reason=finish,
                usage=usage or None,
                model=gen.model,
                trace_id=gen.traceId,
            )
        )
    if generations.n_others:
        result.warnings.append(
            f"{generations.n_others} observation(s) are not generations (not imported)"
        )
    return result


def _langfuse_output(output: Any) -> tuple[list[tuple[str, str]], list[dict[str, Any]], str | None]:
    if isinstance(output, str):
        return [("content", output)], [], None
    if isinstance(output, dict):
        calls = [
            {
                "id": c.get("id"),
                "name": (c.get("function") or {}).get("name"),
                "arguments": arguments((c.get("function") or {}).get("arguments")),
            }
            for c in output.get("tool_calls") or []
            if isinstance(c, dict)
        ]
        parts: list[tuple[str, str]] = []
        if isinstance(output.get("reasoning_content"), str):
            parts.append(("reasoning", output["reasoning_content"]))
        if isinstance(output.get("content"), str):
            parts.append(("content", output["content"]))
        return parts, calls, None
    if isinstance(output, list):
        return output_messages(output)
    return [], [], None
