"""The reading rules as numbers: sizes, nesting, magnitudes and the plausible range of each
kind of field (a time, a gap, a token count, a study level)."""

from __future__ import annotations

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
