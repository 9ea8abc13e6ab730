"""Requested versus realised timing of a schedule, for short reports (`uxlab shape`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from number_text import ms_cell
from uxlab.shaping.empirical import GapPool, load_pool
from uxlab.shaping.profile import Profile
from uxlab.shaping.tokens import word_pieces
from uxlab.streams.metrics import ttft_of
from uxlab.streams.recording import Recording


@dataclass(frozen=True)
class TimingSummary:
    """TTFT and median inter-event gap (ms), requested by the profile and realised."""

    ttft_requested_ms: float
    ttft_realised_ms: float
    itl_requested_p50_ms: float
    itl_realised_p50_ms: float
    n_events: int
    end_ms: float
    tool_first_ms: float = float("nan")
    """When the first output is a tool call: its time, which the profile's TTFT sets (the
    TTFT, the first text, comes later); NaN otherwise."""

    def timing_parts(self) -> list[str]:
        """Realised versus requested TTFT and ITL p50, and the end, as short phrases."""
        asked = f"(asked {ms_cell(self.ttft_requested_ms)})"
        if np.isfinite(self.tool_first_ms):  # the asked time is the tool call's, not TTFT's
            first = [
                f"first output {ms_cell(self.tool_first_ms)} ms, a tool call {asked}",
                f"TTFT {ms_cell(self.ttft_realised_ms)} ms"
                if np.isfinite(self.ttft_realised_ms)
                else "no TTFT (tool calls only)",
            ]
        else:
            first = [f"TTFT {ms_cell(self.ttft_realised_ms)} ms {asked}"]
        return [
            *first,
            f"ITL p50 {ms_cell(self.itl_realised_p50_ms)} ms "
            f"(asked {ms_cell(self.itl_requested_p50_ms)})",
            f"end {ms_cell(self.end_ms)} ms",
        ]


def ttft_or_nan(rec: Recording) -> float:
    """`inspect`'s TTFT (`uxlab.streams.metrics.ttft_of`), NaN where it has none."""
    ttft = ttft_of(rec)
    return float("nan") if ttft is None else ttft


def tool_first_ms(rec: Recording) -> float:
    """The time of the first output when it is a tool call (before any text: the first
    event the shaper's TTFT places), NaN when text comes first or nothing is timed."""
    for chunk in rec.chunks:
        if chunk.text and chunk.t_ms is not None:
            return float(chunk.t_ms) if chunk.channel == "tool" else float("nan")
    return float("nan")


def first_output_or_nan(rec: Recording) -> float:
    """What the shaper's TTFT places: the first output, a tool call's or text's."""
    tool = tool_first_ms(rec)
    return tool if np.isfinite(tool) else ttft_or_nan(rec)


def gaps_ms(rec: Recording) -> np.ndarray:
    """Gaps between successive timed chunks."""
    times = rec.chunk_times_ms()
    times = times[~np.isnan(times)]
    return np.diff(times)


def summarise(source: Recording, schedule: Recording, profile: Profile) -> TimingSummary:
    """Compare what `profile` asks for with what `schedule` holds.

    Requested TTFT is the constant, the recorded value (times the scale), or the median of
    the TTFT distribution; it places the first output, which is a tool call's when one
    comes before any text (`tool_first_ms`, then said beside the realised TTFT). Requested
    ITL p50 is the distribution's median, or the median recorded gap as rescaled. Realised
    values are read from the schedule's chunk times, so re-chunking (gaps per event) and
    stalls show up as differences.
    """
    ttft = profile.ttft
    recorded_ttft = first_output_or_nan(source)
    if ttft.kind == "recorded":
        ttft_req = recorded_ttft
    elif ttft.kind == "scale":
        ttft_req = recorded_ttft * ttft["factor"]
    else:
        ttft_req = ttft.median()
    if profile.headers_ms is not None:
        ttft_req = max(ttft_req, profile.headers_ms)
    itl = profile.itl
    recorded = gaps_ms(source)
    if itl.kind in ("recorded", "scale", "rate"):
        factor = 1.0
        if itl.kind == "scale":
            factor = itl["factor"]
        elif itl.kind == "rate" and recorded.sum() > 0:
            n_tokens = sum(1 if c.n_tokens is None else c.n_tokens for c in source.chunks[1:])
            factor = n_tokens * 1000.0 / itl["tokens_per_s"] / recorded.sum()
        itl_req = float(np.median(recorded)) * factor if len(recorded) else float("nan")
    elif itl.kind == "empirical":
        pool = (
            GapPool.from_recordings([source])
            if itl["source"] == "self"
            else load_pool(itl["source"], "itl", profile.base_dir)
        )
        itl_req = float(np.median(pool.gaps_ms)) * itl["scale"]
    else:
        itl_req = itl.median()
    realised = gaps_ms(schedule)
    if profile.chunk is not None and len(realised):
        # Re-chunked: compare per token (each gap divided by the tokens its event brought).
        per_event = np.array(
            [c.n_tokens or len(word_pieces(c.text)) for c in schedule.chunks if c.t_ms is not None]
        )
        realised = realised / np.maximum(per_event[1:], 1)
    end_ms = (
        schedule.end.t_ms
        if schedule.end is not None and schedule.end.t_ms is not None
        else float("nan")
    )
    return TimingSummary(
        ttft_requested_ms=float(ttft_req),
        ttft_realised_ms=ttft_or_nan(schedule),
        itl_requested_p50_ms=float(itl_req),
        itl_realised_p50_ms=float(np.median(realised)) if len(realised) else float("nan"),
        n_events=len(schedule.chunks),
        end_ms=float(end_ms),
        tool_first_ms=tool_first_ms(schedule),
    )
