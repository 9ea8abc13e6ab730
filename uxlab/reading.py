"""One reading discipline for every file and body uxlab parses.

Replay files, the importers' sources, SSE captures, study files and request bodies all go
through the same few checks, so a hostile or damaged input ends as one clean error naming
where and what (never a traceback, never a silent acceptance), before anything is written:

- size: a file over its limit is refused before it is read (`read_bounded_text`);
- nesting: JSON nested deeper than `MAX_DEPTH` levels is refused before the decoder could
  recurse (`json_depth_exceeds`, a cheap bracket scan outside strings);
- numbers: only finite ones (`NaN`, `Infinity`, `1e400` are refused), and integers within
  `MAX_INT_ABS` (decoded integers past 4,300 digits are refused, not raised);
- ranges: a time, a gap, a token count each has a plausible range (`PLAUSIBLE`), checked with
  the field's name (`check_range`);
- types: `check_tree` walks a decoded value without recursion and names the first path that
  breaks these rules.

`InputProblem` is what the helpers raise: a problem and the field path it sits at; each
parser wraps it in its own error type (which names the file and line).
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

MAX_DEPTH = 64
"""JSON nesting levels accepted (objects and arrays); real requests and events use < 20."""
MAX_INT_ABS = 2**63
"""Integers at or above this magnitude are refused (no field of any format needs more)."""
MAX_JSON_FILE_BYTES = 512 * 1024 * 1024
"""A JSON source (benchmark export, replay file) larger than this is refused unread."""
MAX_STUDY_FILE_BYTES = 4 * 1024 * 1024
"""A study file larger than this is refused before the TOML parser sees it (the largest
real study is a few kB; a 100 MB one-line file took a minute in `tomllib`)."""

MAX_TIME_MS = 24 * 3600 * 1000.0
"""A stream time (from the request) or gap past one day is not a measurement."""
MAX_TOKENS = 10_000_000
"""Tokens in one chunk, or in a whole stream's usage."""
MAX_CHUNKS = 1_000_000
"""Chunks an importer builds for one stream from a count (llmperf's output tokens)."""
MAX_STUDY_LEVEL_MS = 10 * 60 * 1000.0
"""A study level in milliseconds (TTFT, a gap, a stall): a participant waits at most minutes."""
MAX_TIMEOUT_S = 3600.0
"""A trial timeout in seconds."""

STUDY_LEVEL_MAX: dict[str, float] = {
    "jitter": MAX_STUDY_LEVEL_MS,
    "itl_scale": 1000.0,
    "tokens_per_s": 100_000.0,
    "chunk_tokens": 10_000,
    "stall_rate_per_s": 1000.0,
    "error_at_token": 1_000_000,
}
"""The highest plausible level of each study factor that is not in ms (those ending in `_ms`
stop at `MAX_STUDY_LEVEL_MS`; any other factor at `MAX_STUDY_LEVEL_OTHER`)."""
MAX_STUDY_LEVEL_OTHER = 1_000_000.0
MAX_SLIDER_ABS = 1_000_000.0
"""A slider's end points stay within ±this (answers are analysed as floats)."""


def study_level_max(name: str) -> float:
    """The highest plausible level of study factor `name`."""
    if name.endswith("_ms"):
        return MAX_STUDY_LEVEL_MS
    return float(STUDY_LEVEL_MAX.get(name, MAX_STUDY_LEVEL_OTHER))


PLAUSIBLE: dict[str, tuple[float, float, str]] = {
    "t_ms": (0.0, MAX_TIME_MS, "ms from the request (at most one day)"),
    "gap_ms": (0.0, MAX_TIME_MS, "ms between events (at most one day)"),
    "n_tokens": (0, MAX_TOKENS, "tokens in one chunk"),
    "tokens": (0, MAX_TOKENS, "tokens"),
    "level_ms": (0.0, MAX_STUDY_LEVEL_MS, "ms (at most 10 minutes)"),
    "timeout_s": (0.0, MAX_TIMEOUT_S, "seconds (at most one hour)"),
}
"""(lowest, highest, what the unit is) of each kind of field, named in the error."""


class InputProblem(ValueError):
    """A value that breaks the reading rules; `field` is its path (None: the whole input)."""

    def __init__(self, field: str | None, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}" if field else problem)


# --- size ----------------------------------------------------------------------------------


def read_bounded_bytes(path: str | Path, max_bytes: int, what: str = "file") -> bytes:
    """The bytes of `path`, or InputProblem when it is larger than `max_bytes` (not read)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise InputProblem(
                None, f"the {what} is {size:,} bytes, over the limit of {max_bytes:,} bytes"
            )
        data = f.read(size + 1)  # a buffer the size of the file, not of the limit
        if len(data) > size:  # the file grew meanwhile: read on, still within the limit
            data += f.read(max_bytes + 1 - len(data))
    if len(data) > max_bytes:
        raise InputProblem(None, f"the {what} is over the limit of {max_bytes:,} bytes")
    return data


def read_bounded_text(path: str | Path, max_bytes: int, what: str = "file") -> str:
    """The UTF-8 text of `path` within `max_bytes`; InputProblem when too big or not UTF-8."""
    data = read_bounded_bytes(path, max_bytes, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputProblem(None, f"not UTF-8 ({exc.reason} at byte {exc.start})") from None


# --- nesting -------------------------------------------------------------------------------

_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]+")


def json_depth_exceeds(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether JSON `text` nests objects and arrays deeper than `limit` (brackets in strings
    do not count). Linear, and free for most inputs: fewer brackets than the limit in all
    cannot nest past it. Works on JSON Lines too (each line returns to depth 0)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    brackets = "".join(_BRACKETS.findall(_JSON_STRING.sub("", text)))
    if len(brackets) <= limit:
        return False
    codes = np.frombuffer(brackets.encode("ascii"), dtype=np.uint8)
    steps = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1).astype(np.int64)
    depth = np.cumsum(steps)
    # Depth never goes below 0 (a stray closer, or the next line of JSON Lines): measured
    # from the lowest point reached so far.
    floor = np.minimum.accumulate(np.minimum(depth, 0))
    return bool((depth - floor).max() > limit)


# --- decoding ------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise InputProblem(None, f"{name} is not a JSON number (use null)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InputProblem(None, f"{text} is out of the range of a number")
    return value


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def loads_json(text: str, *, check: bool = True) -> Any:
    """Decode JSON `text` under the reading rules; InputProblem (with line and column when
    the text is not JSON) for anything else. `check`: also run `check_tree` on the value."""
    if json_depth_exceeds(text):
        raise InputProblem(None, f"nested deeper than {MAX_DEPTH} levels")
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise InputProblem(
            None, f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    except RecursionError:  # pragma: no cover - the depth scan comes first
        raise InputProblem(None, f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # an integer past Python's digit limit
        if isinstance(exc, InputProblem):
            raise
        raise InputProblem(None, f"not a usable number ({str(exc)[:80]})") from None
    if check:
        check_tree(value)
    return value


# --- checking decoded values ---------------------------------------------------------------


def tree_problem(value: Any, max_depth: int = MAX_DEPTH) -> tuple[str, str] | None:
    """(path, problem) of the first value in `value` that breaks the rules, else None.

    Iterative (no recursion, whatever the depth): containers nested deeper than
    `max_depth`, floats that are not finite, integers of `MAX_INT_ABS` or more, keys
    that are not strings.
    """
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        v, path, depth = stack.pop()
        t = type(v)
        if t is float:
            if not math.isfinite(v):
                return path or "value", f"{v} is not a finite number"
        elif t is int:
            if not -MAX_INT_ABS < v < MAX_INT_ABS:
                return path or "value", "an integer too large to be a real value"
        elif t is dict:
            if depth >= max_depth:
                return path or "value", f"nested deeper than {max_depth} levels"
            for k, item in reversed(v.items()):  # reversed: the first problem pops first
                if type(k) is not str:
                    return path or "value", f"a key that is not a string ({type(k).__name__})"
                if type(item) in (dict, list, float, int):
                    stack.append((item, f"{path}.{k}" if path else k, depth + 1))
        elif t is list or t is tuple:
            if depth >= max_depth:
                return path or "value", f"nested deeper than {max_depth} levels"
            for i in range(len(v) - 1, -1, -1):
                item = v[i]
                if type(item) in (dict, list, tuple, float, int):
                    stack.append((item, f"{path}[{i}]", depth + 1))
    return None


def check_tree(value: Any, prefix: str = "") -> None:
    """Raise InputProblem naming the first path in `value` that breaks the rules."""
    found = tree_problem(value)
    if found is not None:
        path, problem = found
        raise InputProblem(f"{prefix}{path}" if prefix else path, problem)


def check_range(value: Any, kind: str, field: str) -> float:
    """`value` as a number within the plausible range of `kind` (a `PLAUSIBLE` key)."""
    low, high, unit = PLAUSIBLE[kind]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputProblem(field, f"expected a number of {unit}, got {value!r:.60}")
    if not math.isfinite(value):
        raise InputProblem(field, f"{value} is not a finite number")
    if value < low:
        raise InputProblem(field, f"{value:g} is below {low:g} ({unit})")
    if value > high:
        raise InputProblem(field, f"{value:g} is not plausible: at most {high:g} {unit}")
    return value
