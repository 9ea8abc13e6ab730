"""Costs pooled per source: what a request costs a stack, beside how fast it was.

Per source (the recordings' `vendor/model`): the mean, median (p50) and p90 cost of the
priced requests (numpy's linear percentiles, as every other uxlab summary); the recordings
left unpriced and why; and `tokens_per_s_per_dollar`, the speed a unit of money buys: the
median decode rate (output tokens per second after the first) divided by the all-in cost
of a million output tokens (the source's total cost, input included, over its output and
reasoning tokens, times a million). "Dollar" is one unit of the sheet's currency.

Reasoning tokens are billed whether their text was shown or hidden; `n_hidden_reasoning`
counts the recordings that were billed reasoning tokens but streamed no reasoning text, and
`first_visible_p50_ms` is the median time to the first answer (content) text, which such
hidden reasoning delays.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pricing.cost import PricedRecording


@dataclass(frozen=True)
class CostRow:
    """One recording as the pooled summary needs it."""

    source: str
    priced: PricedRecording
    decode_tokens_per_s: float = math.nan
    first_visible_ms: float = math.nan
    """The first non-empty content chunk (what the reader sees first; NaN when none)."""
    reasoning_shown: bool = False
    """Whether the stream carried reasoning text."""


@dataclass
class SourceCosts:
    """The pooled costs of one source."""

    source: str
    currency: str
    n_recordings: int
    n_priced: int
    n_estimated: int
    mean: float
    p50: float
    p90: float
    total: float
    output_tokens: int
    cost_per_million_output: float
    decode_tokens_per_s_p50: float
    tokens_per_s_per_dollar: float
    reasoning_tokens_p50: float
    reasoning_cost_share: float
    """Share of the source's bill spent on reasoning tokens (NaN when nothing priced)."""
    n_hidden_reasoning: int
    n_shown_reasoning: int
    first_visible_p50_ms: float
    unpriced: dict[str, int] = field(default_factory=dict)
    """Reason -> recordings left unpriced for it."""
    prices: tuple[str, ...] = ()
    """The sheet entries used."""

    def as_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["prices"] = list(self.prices)
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}


def _p(values: Sequence[float], q: float) -> float:
    finite = [v for v in values if v == v]
    return float(np.percentile(finite, q)) if finite else math.nan


def pool_source(source: str, rows: Sequence[CostRow], currency: str) -> SourceCosts:
    """The pooled costs of `rows`, all of one source."""
    priced = [r for r in rows if r.priced.cost is not None]
    totals = [r.priced.cost.total for r in priced if r.priced.cost is not None]
    reasoning_cost = sum(r.priced.cost.reasoning for r in priced if r.priced.cost is not None)
    out_tokens = sum(
        r.priced.usage.total_output_tokens for r in priced if r.priced.usage is not None
    )
    total = float(sum(totals))
    per_million = total / out_tokens * 1_000_000 if out_tokens else math.nan
    decode = _p([r.decode_tokens_per_s for r in priced], 50)
    speed_per_money = decode / per_million if per_million == per_million > 0 else math.nan
    billed = [r for r in priced if r.priced.usage is not None and r.priced.usage.reasoning_tokens]
    return SourceCosts(
        source=source,
        currency=currency,
        n_recordings=len(rows),
        n_priced=len(priced),
        n_estimated=sum(r.priced.estimated for r in priced),
        mean=float(np.mean(totals)) if totals else math.nan,
        p50=_p(totals, 50),
        p90=_p(totals, 90),
        total=total if totals else math.nan,
        output_tokens=out_tokens,
        cost_per_million_output=per_million,
        decode_tokens_per_s_p50=decode,
        tokens_per_s_per_dollar=speed_per_money,
        reasoning_tokens_p50=_p(
            [float(r.priced.usage.reasoning_tokens) for r in priced if r.priced.usage], 50
        ),
        reasoning_cost_share=reasoning_cost / total if total else math.nan,
        n_hidden_reasoning=sum(not r.reasoning_shown for r in billed),
        n_shown_reasoning=sum(r.reasoning_shown for r in billed),
        first_visible_p50_ms=_p([r.first_visible_ms for r in rows], 50),
        unpriced=dict(Counter(r.priced.unpriced for r in rows if r.priced.unpriced)),
        prices=tuple(sorted({r.priced.price.name for r in priced if r.priced.price})),
    )


def pool_by_source(rows: Sequence[CostRow], currency: str) -> list[SourceCosts]:
    """`pool_source` of each source, in order of first appearance."""
    groups: dict[str, list[CostRow]] = {}
    for row in rows:
        groups.setdefault(row.source, []).append(row)
    return [pool_source(source, part, currency) for source, part in groups.items()]
