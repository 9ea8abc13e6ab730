"""Request building for each live API: URL, headers (with the key) and JSON body.

The key only ever lives in the headers returned by `build_request`; the `request` record
stored in a replay header comes from `request_record`, which never sees it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from uxlab.errors import UxlabError

APIS = ("openai", "openai-responses", "anthropic", "gemini")

DEFAULT_KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
}

DEFAULT_URLS = {
    "openai": "https://api.openai.com/v1",
    "openai-responses": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com/v1",
    "gemini": "https://generativelanguage.googleapis.com/v1beta",
}
"""Each API's vendor endpoint (`uxlab record` without `--url`)."""

API_NAMES = {
    "openai": "openai.chat",
    "openai-responses": "openai.responses",
    "anthropic": "anthropic.messages",
    "gemini": "gemini.sse",
}


class ClientError(UxlabError):
    """A problem with the request options (no key, unknown API, bad parameter)."""


@dataclass
class Prompt:
    """One prompt of a workload: chat messages, and where it came from (file:line)."""

    messages: list[dict[str, Any]]
    system: str | None = None
    where: str = "--prompt"
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class BuiltRequest:
    """What goes on the wire. `headers` may hold the key: never store or print them."""

    url: str
    headers: dict[str, str]
    body: dict[str, Any]


def api_key_from_env(api: str, env_name: str | None) -> str | None:
    """The key from the environment variable `env_name` (default per API), or None."""
    name = env_name or DEFAULT_KEY_ENV[api]
    return os.environ.get(name) or None


def request_params(
    api: str, max_tokens: int | None, temperature: float | None, items: list[str]
) -> dict[str, Any]:
    """Request parameters in `api`'s own names: the output-token cap, the temperature, and
    `KEY=JSON` items (a value that is not JSON is sent as the string); `ClientError` names
    an item without `=`."""
    from uxlab.reading import InputProblem, loads_json

    params: dict[str, Any] = {}
    if max_tokens is not None:
        if api == "gemini":
            params["generationConfig"] = {"maxOutputTokens": max_tokens}
        elif api == "openai-responses":
            params["max_output_tokens"] = max_tokens
        else:
            params["max_tokens"] = max_tokens
    if temperature is not None:
        if api == "gemini":
            params.setdefault("generationConfig", {})["temperature"] = temperature
        else:
            params["temperature"] = temperature
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ClientError(f"--param {item!r}: expected KEY=JSON, e.g. top_p=0.9")
        try:
            params[name] = loads_json(value)
        except InputProblem:
            params[name] = value
    return params


def _join(base: str, path: str) -> str:
    return base.rstrip("/") + path


def build_request(
    api: str,
    base_url: str,
    model: str,
    prompt: Prompt,
    key: str | None,
    params: dict[str, Any] | None = None,
) -> BuiltRequest:
    """The streaming request for `api` at `base_url` (e.g. `https://api.openai.com/v1`)."""
    params = {**(params or {}), **prompt.params}
    headers = {"accept": "text/event-stream", "content-type": "application/json"}
    messages = prompt.messages
    if api == "openai":
        msgs = ([{"role": "system", "content": prompt.system}] if prompt.system else []) + messages
        body = {"model": model, "messages": msgs, "stream": True, **params}
        # The usage (what `inspect --prices` bills) is streamed only when asked for: ask even
        # when --param sets other stream options.
        options = body.get("stream_options")
        body["stream_options"] = {**(options if isinstance(options, dict) else {})}
        body["stream_options"]["include_usage"] = True
        if key:
            headers["authorization"] = f"Bearer {key}"
        return BuiltRequest(_join(base_url, "/chat/completions"), headers, body)
    if api == "openai-responses":
        body = {"model": model, "input": messages, "stream": True, **params}
        if prompt.system:
            body["instructions"] = prompt.system
        if key:
            headers["authorization"] = f"Bearer {key}"
        return BuiltRequest(_join(base_url, "/responses"), headers, body)
    if api == "anthropic":
        body = {
            "model": model,
            "messages": messages,
            "stream": True,
            "max_tokens": params.pop("max_tokens", 1024),
            **params,
        }
        if prompt.system:
            body["system"] = prompt.system
        headers["anthropic-version"] = "2023-06-01"
        if key:
            headers["x-api-key"] = key
        return BuiltRequest(_join(base_url, "/messages"), headers, body)
    if api == "gemini":
        contents = [
            {
                "role": "model" if m.get("role") == "assistant" else "user",
                "parts": [{"text": m.get("content", "")}],
            }
            for m in messages
        ]
        body = {"contents": contents, **params}
        if prompt.system:
            body["systemInstruction"] = {"parts": [{"text": prompt.system}]}
        if key:
            headers["x-goog-api-key"] = key
        url = _join(base_url, f"/models/{model}:streamGenerateContent?alt=sse")
        return BuiltRequest(url, headers, body)
    raise ClientError(f"--api: unknown API {api!r}; use one of {', '.join(APIS)}")


def request_record(api: str, model: str, prompt: Prompt, body: dict[str, Any]) -> dict[str, Any]:
    """The `request` kept in the replay header: model, messages, params (no key, no headers)."""
    skip = {
        "model",
        "messages",
        "input",
        "contents",
        "stream",
        "system",
        "instructions",
        "systemInstruction",
    }
    record: dict[str, Any] = {
        "api": API_NAMES[api],
        "model": model,
        "messages": prompt.messages,
        "params": {k: v for k, v in body.items() if k not in skip},
    }
    if prompt.system:
        record["system"] = prompt.system
    return record
