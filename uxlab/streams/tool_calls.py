"""The tool calls of a recording, each once: name, id, arguments, when, and whether it finished.

Every event mapping writes a tool call the same way (see `importers.event_mapping`):

- `meta {"kind": "tool_call", "index", "id", "name", ...}` when the call starts (its name, as
  far as the API has said it; `tool_type`, `server`, `caller` and the like when the API has
  them), with `"incomplete": true` added when its pieces never completed (the stream ended,
  failed or was cut before the API said the call was whole);
- `tool` chunks with `tool_index` for the pieces of its input, in arrival order. Joined they
  are the call's arguments: JSON text for function calls, the raw input for tools whose
  input is text (a custom tool, a patch's diff, a shell command, code to run).

Gemini's streamed arguments (`partialArgs`, one JSON path at a time) are written as JSON
text too, and each piece also keeps its path and raw value (`json_path`, and `string_piece`
or `value`): `tool_calls` rebuilds such a call's arguments from the paths, so a call whose
pieces came out of path order (which JSON text cannot say) still has the right arguments.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from uxlab.streams.recording import Chunk, Meta, Recording

TOOL_CALL = "tool_call"
"""The meta kind that starts a tool call."""


@dataclass
class ToolCall:
    """One tool call of a recording."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""
    """The call's input: JSON text for function calls, raw text for text-input tools."""
    t_start_ms: float | None = None
    """When the call started (its start meta, else its first piece)."""
    t_last_ms: float | None = None
    """When its last piece arrived (the start when it has none)."""
    n_pieces: int = 0
    complete: bool = True
    """False when the pieces never completed (`incomplete` on the start meta)."""
    info: dict[str, Any] = field(default_factory=dict)
    """Further facts of the start meta (`tool_type`, `server`, `caller`, ...)."""

    def parsed_arguments(self) -> Any:
        """The arguments as JSON (None when empty or not JSON)."""
        if not self.arguments.strip():
            return None
        try:
            return json.loads(self.arguments)
        except (ValueError, RecursionError):
            return None


_START_KEYS = {"kind", "index", "id", "name", "incomplete"}


def tool_calls(rec: Recording) -> list[ToolCall]:
    """Every tool call of `rec` once, in the order the calls started.

    Pieces whose call never announced itself (no start meta) make a call of their own
    `tool_index`, without a name.
    """
    calls: dict[int, ToolCall] = {}
    by_path: dict[int, list[Chunk]] = {}
    pieces: dict[int, list[str]] = {}
    last_index = 0
    for event in rec.events:
        if isinstance(event, Meta) and event.data.get("kind") == TOOL_CALL:
            index = _int(event.data.get("index"), len(calls))
            last_index = index
            data = event.data
            info = {k: v for k, v in data.items() if k not in _START_KEYS}
            call = calls.get(index)
            if call is None:
                calls[index] = ToolCall(
                    index=index,
                    id=_str(data.get("id")),
                    name=_str(data.get("name")),
                    t_start_ms=event.t_ms,
                    t_last_ms=event.t_ms,
                    complete=not data.get("incomplete"),
                    info=info,
                )
            else:  # the same call again (a live stream's every delta names its index):
                # what it adds is kept, what the first said is not lost
                call.id = call.id or _str(data.get("id"))
                call.name = call.name or _str(data.get("name"))
                call.complete = not data.get("incomplete")
                call.info.update(info)
        elif isinstance(event, Chunk) and event.channel == "tool":
            index = _int(event.extra.get("tool_index"), last_index)
            call = calls.get(index)
            if call is None:
                call = calls[index] = ToolCall(index=index, t_start_ms=event.t_ms)
            call.n_pieces += 1
            call.t_last_ms = event.t_ms
            pieces.setdefault(index, []).append(event.text)
            if "json_path" in event.extra:
                by_path.setdefault(index, []).append(event)
    for index, call in calls.items():
        if index in by_path:
            call.arguments = json.dumps(arguments_from_paths(by_path[index]), ensure_ascii=False)
        else:
            call.arguments = "".join(pieces.get(index, []))
    return list(calls.values())


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# --- arguments streamed by JSON path (Gemini `partialArgs`) --------------------------------

_PATH_TOKEN = re.compile(
    r"""\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\["((?:[^"\\]|\\.)*)"\]|\.?([^.\[\]]+)"""
)
_MAX_INDEX = 10_000
"""Array indices past this are not filled (a path is text from the wire)."""


def parse_json_path(path: str) -> list[str | int] | None:
    """The keys and indices of an RFC 9535 path such as `$.a.b[0]['c d']`; None if not one."""
    if not path.startswith("$"):
        return None
    rest = path[1:]
    tokens: list[str | int] = []
    pos = 0
    while pos < len(rest):
        match = _PATH_TOKEN.match(rest, pos)
        if match is None or match.end() == pos:
            return None
        index, single, double, bare = match.groups()
        if index is not None:
            if int(index) > _MAX_INDEX:
                return None
            tokens.append(int(index))
        else:
            key = next(k for k in (single, double, bare) if k is not None)
            tokens.append(re.sub(r"\\(.)", r"\1", key))
        pos = match.end()
    return tokens


def arguments_from_paths(chunks: list[Chunk]) -> dict[str, Any]:
    """The arguments object that path pieces build: a string piece appends to the string at
    its path, any other value sets it (Gemini's rule)."""
    root: dict[str, Any] = {}
    for chunk in chunks:
        tokens = parse_json_path(str(chunk.extra.get("json_path")))
        if not tokens:
            continue
        if "string_piece" in chunk.extra:
            piece = str(chunk.extra["string_piece"])
            current = _get(root, tokens)
            _set(root, tokens, current + piece if isinstance(current, str) else piece)
        elif "value" in chunk.extra:
            _set(root, tokens, chunk.extra["value"])
    return root


def _get(root: Any, tokens: list[str | int]) -> Any:
    node = root
    for token in tokens:
        if isinstance(token, str) and isinstance(node, dict):
            node = node.get(token)
        elif isinstance(token, int) and isinstance(node, list) and token < len(node):
            node = node[token]
        else:
            return None
    return node


def _set(root: dict[str, Any], tokens: list[str | int], value: Any) -> None:
    node: Any = root
    for token, following in zip(tokens, [*tokens[1:], None], strict=True):
        last = following is None
        child: Any = value if last else ([] if isinstance(following, int) else {})
        if isinstance(token, str):
            if not isinstance(node, dict):
                return
            if last or not isinstance(node.get(token), dict | list):
                node[token] = child
        else:
            if not isinstance(node, list):
                return
            while len(node) <= token:
                node.append(None)
            if last or not isinstance(node[token], dict | list):
                node[token] = child
        if not last:
            node = node[token]
