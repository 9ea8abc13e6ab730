"""The columns of many canonical replay files at once (`uxlab inspect`'s common case).

A file of a header, canonical chunks and an end (what uxlab writes) is decoded and validated
in one pass (`replay_decode.canonical_file`), and its chunks turned into columns right away
(`canonical_columns`, while they are in the processor's cache). What is left is the order of
its times and the few numbers per file the metrics need: done file by file, a dozen small
numpy calls a file. `columns_of_canonical` does them once for a group of files, over their
chunks laid end to end, and hands back each file's columns as views of the group's arrays.
A file whose times go back gets None: the caller reads it again on the precise path, which
names the line and field. When every file of the group has its times known and in order
(what `inspect` mostly reads), `arrays_of_canonical` makes the group's metric arrays
(`StreamArrays`) at once, without a set of columns a file.
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
from uxlab.streams.stream_arrays import OUTPUT_CHANNELS, StreamArrays, server_decode_rate

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


@dataclass
class _Group:
    """A group of canonical files' chunks laid end to end, with what each file needs."""

    starts: np.ndarray
    """int64, one more than the files: where each file's chunks start."""
    rec_of: np.ndarray
    """int64 per chunk: its file."""
    t_ms: np.ndarray
    n_tokens: np.ndarray
    n_chars: np.ndarray
    codes: np.ndarray
    all_content: bool
    end_ms: np.ndarray
    """float64 per file: the end's time (NaN when unknown)."""
    has_unknown: np.ndarray
    """bool per file: a chunk's time is unknown."""
    goes_back: np.ndarray
    """bool per file (of those with every time known): its times go back."""
    unknown: np.ndarray
    """bool per chunk: its time is unknown."""
    first_output: np.ndarray
    """float64 per file: TTFO (see `columns_of_canonical`)."""
    n_tool_calls: np.ndarray
    """int64 per file."""


def _group(files: Sequence[CanonicalFile]) -> _Group:
    sizes = np.fromiter((len(f.t_ms) for f in files), dtype=np.int64, count=len(files))
    starts = np.zeros(len(files) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    rec_of = np.repeat(np.arange(len(files)), sizes)
    t_ms = np.concatenate([f.t_ms for f in files])
    n_tokens = np.concatenate([f.n_tokens for f in files])
    n_chars = np.concatenate([f.n_chars for f in files])
    all_content = all(f.channel_code is None for f in files)
    if all_content:
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

    # TTFO: the first known time of a non-empty chunk (canonical files have no tool-call
    # metas), as `stream_arrays.output_facts` has it.
    said = np.flatnonzero((n_chars > 0) & ~unknown)
    at = np.searchsorted(said, starts[:-1])
    has_said = at < len(said)
    has_said[has_said] = said[at[has_said]] < starts[1:][has_said]
    first_output = np.full(len(files), np.nan)
    first_output[has_said] = t_ms[said[at[has_said]]]
    if all_content:
        n_tool_calls = np.zeros(len(files), dtype=np.int64)
    else:
        tool_text = (n_chars > 0) & (codes == CHANNEL_CODES["tool"])
        n_tool_calls = (np.bincount(rec_of[tool_text], minlength=len(files)) > 0).astype(np.int64)
    return _Group(
        starts, rec_of, t_ms, n_tokens, n_chars, codes, all_content, end_ms,
        has_unknown, goes_back, unknown, first_output, n_tool_calls,
    )  # fmt: skip


def _decode_rates(files: Sequence[CanonicalFile]) -> list[float]:
    rates = (server_decode_rate(f.end.usage) for f in files)
    return [math.nan if rate is None else rate for rate in rates]


def arrays_of_canonical(files: Sequence[CanonicalFile]) -> StreamArrays | None:
    """The metric arrays of a group of files (`StreamArrays`, as `inspect_load`'s
    `arrays_from_columns` of their columns), straight from the group's chunks: None when a
    file has a chunk of unknown time or times that go back (`columns_of_canonical` then
    sorts the files out one by one). Every file has at least one chunk."""
    n = len(files)
    if not n:
        return None
    g = _group(files)
    if g.has_unknown.any() or g.goes_back.any():
        return None
    output = g.n_chars > 0
    if not g.all_content:
        output &= np.isin(g.codes, [CHANNEL_CODES[c] for c in OUTPUT_CHANNELS])
    starts = g.starts
    t_ms, n_tokens, n_chars = g.t_ms, g.n_tokens, g.n_chars
    if not output.all():
        starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(g.rec_of[output], minlength=n), out=starts[1:])
        t_ms, n_tokens, n_chars = t_ms[output], n_tokens[output], n_chars[output]
    if g.all_content:
        n_reasoning, n_tool = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    else:
        reasoning = output & (g.codes == CHANNEL_CODES["reasoning"])
        n_reasoning = np.bincount(g.rec_of[reasoning], minlength=n)
        n_tool = np.bincount(g.rec_of[g.codes == CHANNEL_CODES["tool"]], minlength=n)
    return StreamArrays(
        ids=[f.header.id for f in files],
        starts=starts,
        t_ms=t_ms,
        n_tokens=n_tokens,
        n_chars=n_chars,
        n_chunks=np.diff(g.starts),
        n_reasoning_chunks=n_reasoning,
        n_tool_chunks=n_tool,
        first_event_ms=g.t_ms[g.starts[:-1]],  # every time known, no metas: the first chunk's
        first_output_ms=g.first_output,
        n_tool_calls=g.n_tool_calls,
        n_incomplete_tool_calls=np.zeros(n, dtype=np.int64),
        server_decode_tokens_per_s=np.array(_decode_rates(files), dtype=float),
        end_ms=g.end_ms,
        finish_reason=[f.end.finish_reason for f in files],
        error=[None] * n,
        truncated=np.zeros(n, dtype=bool),
        synthetic=np.array([f.synthetic for f in files], dtype=bool),
    )


def columns_of_canonical(files: Sequence[CanonicalFile]) -> list[RecordingColumns | None]:
    """Each file's columns, or None for a file whose known times go back (see the module).
    Every file has at least one chunk."""
    if not files:
        return []
    g = _group(files)
    t_ms, unknown = g.t_ms, g.unknown
    first_event = t_ms[g.starts[:-1]]
    rates = _decode_rates(files)
    out: list[RecordingColumns | None] = []
    bounds = g.starts.tolist()
    for i, f in enumerate(files):
        a, b = bounds[i], bounds[i + 1]
        first = float(first_event[i])
        if g.has_unknown[i]:
            known = t_ms[a:b][~unknown[a:b]]
            if not never_decrease(known, f.end):
                out.append(None)
                continue
            first = float(known[0]) if len(known) else math.nan
        elif g.goes_back[i]:
            out.append(None)
            continue
        end_t = f.end.t_ms
        if math.isnan(first) and end_t is not None:
            first = end_t
        out.append(
            RecordingColumns(  # a canonical file: no error events, never truncated
                id=f.header.id,
                t_ms=t_ms[a:b],
                channel_code=g.codes[a:b],
                n_chars=g.n_chars[a:b],
                n_tokens=g.n_tokens[a:b],
                first_event_ms=first,
                first_output_ms=float(g.first_output[i]),
                n_tool_calls=int(g.n_tool_calls[i]),
                n_incomplete_tool_calls=0,
                server_decode_tokens_per_s=rates[i],
                end_ms=math.nan if end_t is None else end_t,
                finish_reason=f.end.finish_reason,
                error=None,
                truncated=False,
                synthetic=f.synthetic,
            )
        )
    return out
