"""What pricing needs of one recording, gathered while `uxlab inspect --prices` reads it.

A recording is priced from its own header and end (`source.vendor`, `source.model`,
`end.usage`; see `pricing`); an estimate, when asked for, needs the characters of the
request's messages and of the chunks by channel. The time of the first answer text and
whether reasoning was streamed as text say what hidden reasoning cost in waiting.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from pricing.corpus import RecordingFacts
from pricing.cost import TextCounts, request_chars

CONTENT, REASONING = 0, 1
"""`inspect_load.CHANNEL_CODES` of the content and reasoning channels."""


def billing_facts(
    path: str,
    source: Mapping[str, Any],
    request: Mapping[str, Any],
    usage: dict[str, Any] | None,
    t_ms: np.ndarray,
    channel_code: np.ndarray,
    n_chars: np.ndarray,
    n_tokens: np.ndarray,
    end_ms: float,
    failed: bool,
) -> RecordingFacts:
    """The facts of one recording from its header parts and its chunk columns (the decode
    rate is the metrics' and is filled in by `uxlab.streams.costs`)."""
    said = n_chars > 0
    content = said & (channel_code == CONTENT)
    reasoning = said & (channel_code == REASONING)
    visible_out = said & (channel_code != REASONING)

    def tokens(mask: np.ndarray) -> float | None:
        known = n_tokens[mask]
        return float(known.sum()) if known.size and not np.isnan(known).any() else None

    times = t_ms[content]
    return RecordingFacts.of_header(
        path,
        source,
        usage=usage if isinstance(usage, dict) else None,
        text=TextCounts(
            request_chars=request_chars(request),
            output_chars=int(n_chars[visible_out].sum()),
            reasoning_chars=int(n_chars[reasoning].sum()),
            output_tokens=tokens(visible_out),
            reasoning_tokens=tokens(reasoning) if reasoning.any() else 0.0,
        ),
        end_ms=end_ms,
        failed=failed,
        first_visible_ms=float(times[0]) if times.size else math.nan,
        reasoning_shown=bool(reasoning.any()),
    )
