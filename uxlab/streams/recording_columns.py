"""What the metrics need of one recording, as columns: `RecordingColumns`, built by
`inspect_load` from any recording and by `canonical_batch` from canonical files."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from pricing.corpus import RecordingFacts


@dataclass
class RecordingColumns:
    """What the metrics need of one recording: per-chunk columns and per-recording values."""

    id: str
    t_ms: np.ndarray
    """float64 per chunk (every channel, empty chunks too): arrival time, NaN when unknown."""
    channel_code: np.ndarray
    """int8 per chunk: `CHANNEL_CODES`."""
    n_chars: np.ndarray
    """int64 per chunk: characters of text."""
    n_tokens: np.ndarray
    """float64 per chunk: tokens, NaN when unknown."""
    first_event_ms: float
    """The first known time of any event, else the end's (NaN when none)."""
    first_output_ms: float
    """TTFO: the first non-empty chunk of any channel or tool call's start (NaN: none)."""
    n_tool_calls: int
    n_incomplete_tool_calls: int
    server_decode_tokens_per_s: float
    """The decode rate the server reported (`stream_arrays.server_decode_rate`; NaN: none)."""
    end_ms: float
    """The end event's time (NaN when truncated or unknown)."""
    finish_reason: str | None
    error: str | None
    """The type of the first mid-stream error event, or None."""
    truncated: bool
    synthetic: bool = False
    """The header says the gaps were made up on import (`stream_arrays.has_synthetic_gaps`)."""
    billing: RecordingFacts | None = None
    """What its price needs (`uxlab.streams.billing`; None when read without a header)."""
