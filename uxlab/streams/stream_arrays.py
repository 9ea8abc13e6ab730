"""The output chunks of many recordings as flat numpy arrays, collected in one pass:
what `uxlab.streams.metrics` computes every definition over (output chunks, first
events, tool calls, the end), and the per-recording facts read on the way."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from operator import attrgetter
from typing import Any, cast

import numpy as np

from uxlab.streams.recording import Chunk, End, ErrorEvent, Header, Meta, Recording
from uxlab.streams.replay_file import paused_gc
from uxlab.streams.tool_calls import TOOL_CALL

OUTPUT_CHANNELS: tuple[str, ...] = ("content", "reasoning")
"""Channels whose non-empty chunks count as output for TTFT, ITL, TPOT and stalls."""


# ITL kinds of a shaping profile that keep the source's gaps (scaled or not): a shaped
# schedule of a synthetic recording keeps synthetic gaps only with these.
_GAP_KEEPING_ITL = ("recorded", "scale", "rate")


def has_synthetic_gaps(header: Header) -> bool:
    """Whether a recording's chunk times between its kept moments were made up on import.

    True when `source.timing` starts with ``synthetic`` (llmperf, guidellm imports), unless
    the recording is a shaped schedule whose inter-token gaps were drawn anew.
    """
    timing = header.source.get("timing") if isinstance(header.source, dict) else None
    if not (isinstance(timing, str) and timing.startswith("synthetic")):
        return False
    retime = header.retime
    if isinstance(retime, dict):
        itl = (retime.get("profile") or {}).get("itl")
        kind = itl.get("dist") if isinstance(itl, dict) else itl
        return kind in _GAP_KEEPING_ITL
    return True


@dataclass
class StreamArrays:
    """The output chunks of many recordings as flat arrays, with per-recording offsets.

    Output chunk ``j`` of recording ``i`` is at index ``starts[i] + j``.
    """

    ids: list[str]
    starts: np.ndarray
    """int64, length n_recordings + 1: offsets into the flat arrays."""
    t_ms: np.ndarray
    """float64: arrival time of each output chunk (NaN when unknown)."""
    n_tokens: np.ndarray
    """float64: tokens in each output chunk (NaN when unknown)."""
    n_chars: np.ndarray
    """int64: characters in each output chunk."""
    n_chunks: np.ndarray
    """int64 per recording: all chunks, any channel, empty ones included."""
    n_reasoning_chunks: np.ndarray
    n_tool_chunks: np.ndarray
    first_event_ms: np.ndarray
    """float64 per recording: the first known event time (NaN when none)."""
    first_output_ms: np.ndarray
    """float64 per recording: the first non-empty chunk of any channel or tool call's start
    (TTFO; NaN when none or unknown)."""
    n_tool_calls: np.ndarray
    """int64 per recording: tool calls."""
    n_incomplete_tool_calls: np.ndarray
    server_decode_tokens_per_s: np.ndarray
    """float64 per recording: the rate the server reported (NaN when none)."""
    end_ms: np.ndarray
    """float64 per recording: the end event's time (NaN when truncated or unknown)."""
    finish_reason: list[str | None]
    error: list[str | None]
    """The type of the first mid-stream error event, or None."""
    truncated: np.ndarray
    synthetic: np.ndarray | None = None
    """bool per recording: `has_synthetic_gaps` of its header (None: none is)."""

    @cached_property
    def is_synthetic(self) -> np.ndarray:
        """bool per recording: its gaps were made up on import (see `has_synthetic_gaps`)."""
        if self.synthetic is None:
            return np.zeros(len(self), dtype=bool)
        return np.asarray(self.synthetic, dtype=bool)

    @classmethod
    def from_recordings(cls, recs: Sequence[Recording]) -> StreamArrays:
        """Collect the arrays (one pass over the events; the metrics are then vectorised)."""
        with paused_gc():
            return cls._collect(recs)

    @classmethod
    def _collect(cls, recs: Sequence[Recording]) -> StreamArrays:
        t_all: list[float | None] = []
        tok_all: list[int | None] = []
        chars_all: list[int] = []
        counts = np.zeros(len(recs), dtype=np.int64)
        n_chunks = np.zeros(len(recs), dtype=np.int64)
        n_reasoning = np.zeros(len(recs), dtype=np.int64)
        n_tool = np.zeros(len(recs), dtype=np.int64)
        first_event = np.full(len(recs), np.nan)
        first_output = np.full(len(recs), np.nan)
        n_calls = np.zeros(len(recs), dtype=np.int64)
        n_incomplete = np.zeros(len(recs), dtype=np.int64)
        server_rate = np.full(len(recs), np.nan)
        end_ms = np.full(len(recs), np.nan)
        truncated = np.zeros(len(recs), dtype=bool)
        finish: list[str | None] = []
        error: list[str | None] = []
        # Per-chunk work is done by C-level map/attrgetter/count; this pass dominates the
        # metric time for big corpora (~0.5 us a chunk).
        get_t, get_tok, get_text = attrgetter("t_ms"), attrgetter("n_tokens"), attrgetter("text")
        get_channel = attrgetter("channel")
        for i, rec in enumerate(recs):
            events = rec.events
            kinds = list(map(type, events))
            chunks: list[Chunk]
            if kinds.count(Chunk) == len(kinds):
                chunks = cast(list[Chunk], events)  # every event is a chunk
            else:
                chunks = cast(
                    list[Chunk], [e for e, kind in zip(events, kinds, strict=True) if kind is Chunk]
                )
            channels = list(map(get_channel, chunks))
            n_tool[i] = channels.count("tool")
            n_chunks[i] = len(chunks)
            if channels.count("content") + channels.count("reasoning") == len(chunks) and all(
                map(get_text, chunks)
            ):
                out = chunks  # the common case: every chunk is output
            else:
                out = [c for c in chunks if c.text and c.channel in OUTPUT_CHANNELS]
            counts[i] = len(out)
            n_reasoning[i] = (
                channels.count("reasoning")
                if out is chunks
                else sum(1 for c in out if c.channel == "reasoning")
            )
            t_all.extend(map(get_t, out))
            tok_all.extend(map(get_tok, out))
            chars_all.extend(map(len, map(get_text, out)))
            first = next((e.t_ms for e in events if e.t_ms is not None), None)
            facts = output_facts(events, rec.end)
            first_output[i], n_calls[i], n_incomplete[i], server_rate[i] = facts
            end = rec.end
            if first is None and end is not None:
                first = end.t_ms
            if first is not None:
                first_event[i] = first
            if end is not None and end.t_ms is not None:
                end_ms[i] = end.t_ms
            truncated[i] = end is None
            finish.append(end.finish_reason if end is not None else None)
            if ErrorEvent in kinds:
                first_error = cast(ErrorEvent, events[kinds.index(ErrorEvent)])
                error.append(error_type(first_error.error))
            else:
                error.append(None)
        starts = np.zeros(len(recs) + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        return cls(
            ids=[rec.id for rec in recs],
            starts=starts,
            t_ms=np.array(t_all, dtype=float),  # None -> nan
            n_tokens=np.array(tok_all, dtype=float),
            n_chars=np.array(chars_all, dtype=np.int64),
            n_chunks=n_chunks,
            n_reasoning_chunks=n_reasoning,
            n_tool_chunks=n_tool,
            first_event_ms=first_event,
            first_output_ms=first_output,
            n_tool_calls=n_calls,
            n_incomplete_tool_calls=n_incomplete,
            server_decode_tokens_per_s=server_rate,
            end_ms=end_ms,
            finish_reason=finish,
            error=error,
            truncated=truncated,
            synthetic=np.array([has_synthetic_gaps(rec.header) for rec in recs], dtype=bool),
        )

    @classmethod
    def concat(cls, parts: Sequence[StreamArrays]) -> StreamArrays:
        """The arrays of several groups of recordings, one after the other."""
        if not parts:
            return cls.from_recordings([])
        offsets = np.cumsum([0] + [p.starts[-1] for p in parts[:-1]])
        starts = np.concatenate(
            [[0]] + [p.starts[1:] + off for p, off in zip(parts, offsets, strict=True)]
        ).astype(np.int64)

        def cat(name: str) -> np.ndarray:
            return np.concatenate([getattr(p, name) for p in parts])

        return cls(
            ids=[i for p in parts for i in p.ids],
            starts=starts,
            t_ms=cat("t_ms"),
            n_tokens=cat("n_tokens"),
            n_chars=cat("n_chars"),
            n_chunks=cat("n_chunks"),
            n_reasoning_chunks=cat("n_reasoning_chunks"),
            n_tool_chunks=cat("n_tool_chunks"),
            first_event_ms=cat("first_event_ms"),
            first_output_ms=cat("first_output_ms"),
            n_tool_calls=cat("n_tool_calls"),
            n_incomplete_tool_calls=cat("n_incomplete_tool_calls"),
            server_decode_tokens_per_s=cat("server_decode_tokens_per_s"),
            end_ms=cat("end_ms"),
            finish_reason=[f for p in parts for f in p.finish_reason],
            error=[e for p in parts for e in p.error],
            truncated=cat("truncated"),
            synthetic=np.concatenate([p.is_synthetic for p in parts]),
        )

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def n_output_chunks(self) -> np.ndarray:
        return np.diff(self.starts)

    # The derived arrays below are computed once per instance (the arrays are not changed
    # after construction): describe and summarize each need them several times.
    @cached_property
    def has_timing(self) -> np.ndarray:
        """Per recording: every output chunk has a time."""
        unknown_at = np.isnan(self.t_ms)
        if not unknown_at.any():  # every time known (what uxlab writes): no count needed
            return np.ones(len(self), dtype=bool)
        rec_of = self.recording_of_chunk()
        unknown = np.bincount(rec_of[unknown_at], minlength=len(self))
        return cast(np.ndarray, unknown == 0)

    @cached_property
    def _recording_of_chunk(self) -> np.ndarray:
        return np.repeat(np.arange(len(self)), self.n_output_chunks)

    def recording_of_chunk(self) -> np.ndarray:
        """For each flat output chunk, the index of its recording."""
        return self._recording_of_chunk

    @cached_property
    def _gaps(self) -> tuple[np.ndarray, np.ndarray]:
        rec_of = self.recording_of_chunk()
        # A gap joins two chunks of one recording: all but those across a recording's start.
        same = np.ones(max(len(rec_of) - 1, 0), dtype=bool)
        across = self.starts[1:-1] - 1
        same[across[(across >= 0) & (across < len(same))]] = False
        gaps_ms = np.diff(self.t_ms)[same]
        gap_rec = rec_of[1:][same]
        if self.has_timing.all():
            return gaps_ms, gap_rec
        keep = self.has_timing[gap_rec]
        return gaps_ms[keep], gap_rec[keep]

    def gaps(self) -> tuple[np.ndarray, np.ndarray]:
        """ITL gaps of recordings with timing, and the recording index of each gap."""
        return self._gaps

    def measured_gaps(self, include_synthetic: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """`gaps()` without those of recordings whose gaps are synthetic (unless included)."""
        gaps_ms, gap_rec = self._gaps
        if include_synthetic or not self.is_synthetic.any():
            return gaps_ms, gap_rec
        keep = ~self.is_synthetic[gap_rec]
        return gaps_ms[keep], gap_rec[keep]


def output_facts(
    events: Sequence[Chunk | Meta | ErrorEvent], end: End | None
) -> tuple[float, int, int, float]:
    """(TTFO, tool calls, incomplete tool calls, the server's decode rate) of one
    recording's events (NaN where unknown); see the module docstring."""
    first = math.nan
    starts: list[Meta] = []
    tool_indices: set[Any] = set()
    for e in events:
        if isinstance(e, Meta):
            if e.data.get("kind") == TOOL_CALL:
                starts.append(e)
            else:
                continue
        elif isinstance(e, Chunk):
            if not e.text:
                continue
            if e.channel == "tool":
                tool_indices.add(e.extra.get("tool_index"))
        else:
            continue
        if math.isnan(first) and e.t_ms is not None:
            first = e.t_ms
    announced = {m.data.get("index") for m in starts}
    n_calls = len(starts) + len(tool_indices - announced)
    n_incomplete = sum(bool(m.data.get("incomplete")) for m in starts)
    rate = server_decode_rate(end.usage if end is not None else None)
    return first, n_calls, n_incomplete, math.nan if rate is None else rate


def server_decode_rate(usage: Mapping[str, Any] | None) -> float | None:
    """The server's own decode rate in tokens/s: Ollama's `eval_count / eval_duration` (ns)
    in the end's usage; None when the usage does not have them."""
    if not isinstance(usage, Mapping):
        return None
    count, duration = usage.get("eval_count"), usage.get("eval_duration")
    if isinstance(count, bool) or isinstance(duration, bool):
        return None
    if not isinstance(count, int | float) or not isinstance(duration, int | float):
        return None
    return float(count) / float(duration) * 1e9 if duration > 0 else None


def error_type(error: Mapping[str, Any]) -> str:
    """The `type` of a mid-stream error object ("error" when it has none)."""
    kind = error.get("type")
    return kind if isinstance(kind, str) and kind else "error"
