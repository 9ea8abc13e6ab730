"""JSON under the reading rules: nesting scanned before decoding, only finite numbers,
integers within `MAX_INT_ABS`, and a walk of a decoded value that names the first path
breaking them."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

from uxlab.reading.limits import MAX_DEPTH, MAX_INT_ABS
from uxlab.reading.located import InputProblem

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


def tree_problem(
    value: Any, max_depth: int = MAX_DEPTH, float_limit: float = math.inf
) -> tuple[str, str] | None:
    """(path, problem) of the first value in `value` that breaks the rules, else None.

    Iterative (no recursion, whatever the depth): containers nested deeper than
    `max_depth`, floats that are not finite, integers of `MAX_INT_ABS` or more, keys
    that are not strings. `float_limit`: also floats of this size or more (a decoder that
    turns huge integers into floats asks, to read such a value again exactly).
    """
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        v, path, depth = stack.pop()
        t = type(v)
        if t is float:
            if not abs(v) < float_limit:  # NaN and infinities too
                if math.isfinite(v):
                    return path or "value", f"{v:g} is {float_limit:g} or more"
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
