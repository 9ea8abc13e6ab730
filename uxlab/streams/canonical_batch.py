"""The columns of many canonical replay files at once (`uxlab inspect`'s common case).

A file of a header, canonical chunks and an end (what uxlab writes) is decoded and validated
in one pass (`replay_decode.canonical_file`), and its chunks turned into columns right away
(`canonical_columns`, while they are in the processor's cache). What is left is the order of
its times and the few numbers per file the metrics need: done file by file, a dozen small
numpy calls a file. `columns_of_canonical` does them once for a group of files, over their
chunks laid end to end, and hands back each file's columns as views of the group's arrays.
A file whose times go back gets None: the caller reads it again on the precise path, which
names the line and field.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from uxlab.streams.recording import End, Header
from uxlab.streams.recording_columns import RecordingColumns
from uxlab.streams.replay_decode import never_decrease
from uxlab.streams.replay_models import CanonicalChunk
from uxlab.streams.stream_arrays import server_decode_rate

CHANNEL_CODES: dict[str, int] = {"content": 0, "reasoning": 1, "tool": 2}
"""The channel of each chunk as a small integer (`RecordingColumns.channel_code`)."""


@dataclass
class CanonicalFile:
    """One file as `canonical_file` decoded it, its chunks as columns (`canonical_columns`),
    its times' order not yet checked."""

    header: Header
    end: End
    synthetic: bool
    """The header says the gaps were made up (`stream_arrays.has_synthetic_gaps`)."""
    t_ms: np.ndarray
    """float64 per chunk, NaN when unknown."""
    n_tokens: np.ndarray
    """float64 per chunk, NaN when unknown."""
    n_chars: np.ndarray
    """int64 per chunk."""
    channel_code: np.ndarray | None
    """int8 per chunk (`CHANNEL_CODES`), None when every chunk is content."""


def canonical_columns(
    header: Header, chunks: list[CanonicalChunk], end: End, synthetic: bool
) -> CanonicalFile:
    """A decoded file with its chunks as columns: taken right after decoding, while the
    chunks are still in the processor's cache (a group's chunks at once are not). One list
    comprehension a column (faster than `map(attrgetter)`), made an array by `np.fromiter`
    (faster than `np.array`, which looks for the type of every item)."""
    n = len(chunks)
    channels = [c.channel for c in chunks]
    codes = None
    if channels.count("content") != n:
        codes = np.fromiter(map(CHANNEL_CODES.__getitem__, channels), np.int8, n)
    t_ms = [c.t_ms for c in chunks]
    n_tokens = [c.n_tokens for c in chunks]
    return CanonicalFile(
        header=header,
        end=end,
        synthetic=synthetic,
        t_ms=_array(t_ms, float),
        # Whole numbers: int64 then float64 (exact below 2**53) beats float() of each.
        n_tokens=_array(n_tokens, np.int64).astype(float, copy=False),
        n_chars=np.fromiter([len(c.text) for c in chunks], dtype=np.int64, count=n),
        channel_code=codes,
    )


def _array(values: list[Any], dtype: type) -> np.ndarray:
    """`values` as an array of `dtype`; float64 with NaN for None when one is None."""
    try:
        return np.fromiter(values, dtype=dtype, count=len(values))
    except TypeError:  # a None: slower, but None -> NaN
        return np.array(values, dtype=float)


def columns_of_canonical(files: Sequence[CanonicalFile]) -> list[RecordingColumns | None]:
    """Each file's columns, or None for a file whose known times go back (see the module).
    Every file has at least one chunk."""
    if not files:
        return []
    sizes = np.fromiter((len(f.t_ms) for f in files), dtype=np.int64, count=len(files))
    starts = np.zeros(len(files) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    rec_of = np.repeat(np.arange(len(files)), sizes)
    t_ms = np.concatenate([f.t_ms for f in files])
    n_tokens = np.concatenate([f.n_tokens for f in files])
    n_chars = np.concatenate([f.n_chars for f in files])
    if all(f.channel_code is None for f in files):
        codes = np.zeros(len(t_ms), dtype=np.int8)
    else:
        codes = np.concatenate(
            [np.zeros(len(f.t_ms), np.int8) if f.channel_code is None else f.channel_code
             for f in files]
        )  # fmt: skip
    end_ms = np.array([f.end.t_ms for f in files], dtype=float)  # None -> NaN

    # Files of known times only: they never go back, the end not before the last chunk.
    unknown = np.isnan(t_ms)
    has_unknown = np.bincount(rec_of[unknown], minlength=len(files)) > 0
    same_file = rec_of[1:] == rec_of[:-1]
    back = same_file & (np.diff(t_ms) < 0.0)  # NaN compares False: those files come below
    goes_back = np.bincount(rec_of[1:][back], minlength=len(files)) > 0
    goes_back |= end_ms < t_ms[starts[1:] - 1]
    first_event = t_ms[starts[:-1]]

    # TTFO: the first known time of a non-empty chunk (canonical files have no tool-call
    # metas), as `stream_arrays.output_facts` has it.
    said = np.flatnonzero((n_chars > 0) & ~unknown)
    at = np.searchsorted(said, starts[:-1])
    has_said = at < len(said)
    has_said[has_said] = said[at[has_said]] < starts[1:][has_said]
    first_output = np.full(len(files), np.nan)
    first_output[has_said] = t_ms[said[at[has_said]]]
    tool_text = (n_chars > 0) & (codes == CHANNEL_CODES["tool"])
    n_tool_calls = np.bincount(rec_of[tool_text], minlength=len(files)) > 0

    out: list[RecordingColumns | None] = []
    bounds = starts.tolist()
    for i, f in enumerate(files):
        a, b = bounds[i], bounds[i + 1]
        first = float(first_event[i])
        if has_unknown[i]:
            known = t_ms[a:b][~unknown[a:b]]
            if not never_decrease(known, f.end):
                out.append(None)
                continue
            first = float(known[0]) if len(known) else math.nan
        elif goes_back[i]:
            out.append(None)
            continue
        end_t = f.end.t_ms
        if math.isnan(first) and end_t is not None:
            first = end_t
        rate = server_decode_rate(f.end.usage)
        out.append(
            RecordingColumns(  # a canonical file: no error events, never truncated
                id=f.header.id,
                t_ms=t_ms[a:b],
                channel_code=codes[a:b],
                n_chars=n_chars[a:b],
                n_tokens=n_tokens[a:b],
                first_event_ms=first,
                first_output_ms=float(first_output[i]),
                n_tool_calls=int(n_tool_calls[i]),
                n_incomplete_tool_calls=0,
                server_decode_tokens_per_s=math.nan if rate is None else rate,
                end_ms=math.nan if end_t is None else end_t,
                finish_reason=f.end.finish_reason,
                error=None,
                truncated=False,
                synthetic=f.synthetic,
            )
        )
    return out
