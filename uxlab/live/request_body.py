"""What a request body must be before `uxlab serve` reads anything from it.

`parse_request_body(raw, wire)` decodes the JSON (any decoding failure, a nesting too deep
for the decoder, an integer too long to convert: all one `BodyError`) and checks the shape
of every field the server uses: `messages` a list of `{role, content}` objects whose
content is text or a list of parts (each an object; a text part's `text` a string, never
null or missing), `stream` a boolean, `stream_options` an
object, `model` a string, Anthropic's `system` text or parts. A `BodyError` names the
field (`param`) and becomes an HTTP 400 in the API's error format, never a 500.
"""

from __future__ import annotations

from typing import Any

from uxlab.errors import UxlabError
from uxlab.reading import loads_json


class BodyError(UxlabError):
    """A request body the server refuses; `param` names the field (None: the whole body)."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


def parse_request_body(raw: bytes, wire: str) -> dict[str, Any]:
    """The request's JSON object, its used fields checked (raises BodyError)."""
    try:
        body = loads_json(raw.decode("utf-8"))  # the reading rules: nesting, finite numbers
    except (ValueError, RecursionError) as exc:  # also UnicodeDecodeError, int too long
        raise BodyError(f"the body is not JSON ({_short(exc)})") from None
    if not isinstance(body, dict):
        raise BodyError(f"the body must be a JSON object, got {type(body).__name__}")
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise BodyError("messages: expected a list of {role, content}", "messages")
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise BodyError(f"{where}: expected an object {{role, content}}", "messages")
        if not isinstance(m.get("role"), str):
            raise BodyError(f"{where}.role: expected a string", "messages")
        _check_content(m.get("content"), f"{where}.content")
    for key, kind, name in (
        ("stream", bool, "true or false"),
        ("model", str, "a string"),
        ("stream_options", dict, "an object"),
    ):
        if body.get(key) is not None and not isinstance(body[key], kind):
            raise BodyError(f"{key}: expected {name}, got {_short(body[key])}", key)
    if wire == "anthropic" and body.get("system") is not None:
        _check_content(body["system"], "system")
    return body


def _check_content(content: Any, where: str) -> None:
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        raise BodyError(f"{where}: expected text or a list of parts", where.split("[")[0])
    for k, part in enumerate(content):
        if not isinstance(part, dict):
            raise BodyError(f"{where}[{k}]: expected an object", where.split("[")[0])
        kind = part.get("type")
        if kind is not None and not isinstance(kind, str):
            raise BodyError(f"{where}[{k}].type: expected a string", where.split("[")[0])
        # a text part carries its text; any part that has a `text` field has it as a string
        if ("text" in part or kind == "text") and not isinstance(part.get("text"), str):
            raise BodyError(
                f"{where}[{k}].text: expected a string, got {_short(part.get('text'))}",
                where.split("[")[0],
            )


def _short(value: Any) -> str:
    text = str(value) if isinstance(value, Exception) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
