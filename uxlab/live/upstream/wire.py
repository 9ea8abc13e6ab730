"""The client's request as the upstream takes it, and the upstream's HTTP failure as the
client's API answers it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from starlette.responses import JSONResponse, Response

from uxlab.live.clients import Prompt
from uxlab.live.live_request import LiveResult
from uxlab.live.upstream.config import Exchange

_CROSS_WIRE_PARAMS = ("max_tokens", "temperature", "top_p")
"""Parameters forwarded when the client's wire is not the upstream's."""
_NOT_PARAMS = ("model", "messages", "stream", "stream_options", "system")


def upstream_prompt(body: dict[str, Any], wire: str, api: str) -> Prompt:
    """The client's request as a `Prompt` for the upstream API (stream forced on)."""
    messages = [m for m in body["messages"] if isinstance(m, dict)]
    system = body.get("system") if isinstance(body.get("system"), str) else None
    params = {k: v for k, v in body.items() if k not in _NOT_PARAMS}
    if wire != api:
        params = {k: v for k, v in params.items() if k in _CROSS_WIRE_PARAMS}
        if api == "anthropic":  # system messages go in `system`
            texts = [str(m.get("content")) for m in messages if m.get("role") == "system"]
            messages = [m for m in messages if m.get("role") != "system"]
            system = "\n\n".join(texts) or system
    elif api == "anthropic" and "system" in body and system is None:
        params["system"] = body["system"]  # a list of blocks: passed as it is
    return Prompt(messages=messages, system=system, where="serve --upstream", params=params)


def http_failure(
    task: asyncio.Future[LiveResult],
    exchange: Exchange,
    wire: str,
    headers: dict[str, str],
    error_response: Callable[..., JSONResponse],
    api: str,
) -> Response | None:
    """The upstream's HTTP error (or no connection) as this API's error response."""
    if task.cancelled() or task.exception() is not None:
        return None
    result = task.result()
    record = result.record
    if record is None:
        return None
    status = record.status
    if status is not None and status < 400:
        return None  # a stream that failed later: its error goes out in the stream
    err = record.recording.errors[-1].error if record.recording.errors else {}
    extra = dict(headers)
    if status is None:  # no connection, or no response headers in time
        message = f"uxlab serve: the upstream did not answer ({record.message})"
        return error_response(wire, 502, "api_error", message, extra)
    retry = err.get("retry_after_s")
    if retry is not None:
        extra["retry-after"] = str(max(1, round(float(retry))))
    body = err.get("body")
    if isinstance(body, dict) and wire == api:  # the upstream's own words
        return JSONResponse(body, status_code=status, headers=extra)
    kind = "rate_limit_error" if status == 429 else "api_error"
    return error_response(wire, status, kind, str(err.get("message") or ""), extra)
