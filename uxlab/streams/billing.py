"""What pricing needs of one recording, gathered while `uxlab inspect` reads it.

A recording is priced from its own header and end (`source.vendor`, `source.model`,
`end.usage`; see `pricing`); an estimate, when asked for, needs the characters of the
request's messages and of the chunks by channel. The time of the first visible text and
whether reasoning was streamed as text say what hidden reasoning cost in waiting.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pricing.cost import TextCounts, request_chars

CONTENT, REASONING, TOOL = 0, 1, 2
"""`inspect_load.CHANNEL_CODES` of the three channels."""


@dataclass(frozen=True)
class BillingFacts:
    """One recording as its price needs it."""

    vendor: str | None
    model: str | None
    usage: dict[str, Any] | None
    text: TextCounts
    first_visible_ms: float
    """The first non-empty content chunk (NaN when none): what hidden reasoning delays."""
    reasoning_shown: bool
    """Whether any reasoning text was streamed."""
    failed: bool
    """A mid-stream error, an error finish or no end (the request did not complete)."""

    @property
    def source(self) -> str:
        parts = [p for p in (self.vendor, self.model) if p]
        return "/".join(parts) or "unknown"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def billing_facts(
    source: Mapping[str, Any],
    request: Mapping[str, Any],
    usage: dict[str, Any] | None,
    t_ms: np.ndarray,
    channel_code: np.ndarray,
    n_chars: np.ndarray,
    n_tokens: np.ndarray,
    failed: bool,
) -> BillingFacts:
    """The facts of one recording from its header parts and its chunk columns."""
    said = n_chars > 0
    content = said & (channel_code == CONTENT)
    reasoning = said & (channel_code == REASONING)
    visible_out = said & (channel_code != REASONING)

    def tokens(mask: np.ndarray) -> float | None:
        known = n_tokens[mask]
        return float(known.sum()) if known.size and not np.isnan(known).any() else None

    times = t_ms[content]
    return BillingFacts(
        vendor=_text(source.get("vendor")),
        model=_text(source.get("model")),
        usage=usage if isinstance(usage, dict) else None,
        text=TextCounts(
            request_chars=request_chars(request),
            output_chars=int(n_chars[visible_out].sum()),
            reasoning_chars=int(n_chars[reasoning].sum()),
            output_tokens=tokens(visible_out),
            reasoning_tokens=tokens(reasoning) if reasoning.any() else 0.0,
        ),
        first_visible_ms=float(times[0]) if times.size else math.nan,
        reasoning_shown=bool(reasoning.any()),
        failed=failed,
    )
