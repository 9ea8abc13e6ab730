"""The cost of one request: its tokens (`usage.TokenUsage`) times a model's prices.

cost = (input x input + cached input x cached_input + cache writes x cache_write + output x
output + reasoning x reasoning) / 1,000,000, each price per million tokens in the sheet's
currency (`sheet.ModelPrice.rate` applies the defaults: cached input and cache writes at the
input price, reasoning at the output price, when the sheet gives none).

`price_recording` is what every command calls for one recording: the usage as read (or
estimated, when asked and there is none), the price chosen, and either the cost or the
reason the recording stays unpriced. Unpriced is never zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pricing.sheet import ModelPrice, PriceChoice
from pricing.usage import NO_USAGE, TokenUsage, UsageReading, estimated_usage, read_usage

PER_TOKENS = 1_000_000


@dataclass(frozen=True)
class Cost:
    """A request's cost by kind of token, in `currency`."""

    input: float
    cached_input: float
    cache_write: float
    output: float
    reasoning: float
    currency: str

    @property
    def total(self) -> float:
        return self.input + self.cached_input + self.cache_write + self.output + self.reasoning

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "input": self.input,
            "cached_input": self.cached_input,
            "cache_write": self.cache_write,
            "output": self.output,
            "reasoning": self.reasoning,
            "currency": self.currency,
        }


def cost_of(usage: TokenUsage, price: ModelPrice) -> Cost:
    """The cost of `usage` at `price` (see the module docstring)."""

    def part(tokens: int, kind: str) -> float:
        return tokens * price.rate(kind) / PER_TOKENS

    return Cost(
        input=part(usage.input_tokens, "input"),
        cached_input=part(usage.cached_input_tokens, "cached_input"),
        cache_write=part(usage.cache_write_tokens, "cache_write"),
        output=part(usage.output_tokens, "output"),
        reasoning=part(usage.reasoning_tokens, "reasoning"),
        currency=price.currency,
    )


@dataclass(frozen=True)
class TextCounts:
    """What an estimate needs of a recording without usage: the request's and chunks' text."""

    request_chars: int | None
    """Characters of the request's messages (None: the request was not recorded)."""
    output_chars: int = 0
    """Characters of content and tool-call chunks."""
    reasoning_chars: int = 0
    output_tokens: float | None = None
    """The sum of the content chunks' `n_tokens` when every one carries it, else None."""
    reasoning_tokens: float | None = None


def request_chars(request: Mapping[str, Any]) -> int | None:
    """Characters of a recorded request's messages and system text, for an estimate of its
    input (None: no messages were recorded)."""
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        return None
    system = request.get("system")
    n = len(system) if isinstance(system, str) else 0
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            n += len(content)
        elif isinstance(content, list):
            for part in content:
                text = part.get("text") if isinstance(part, Mapping) else None
                n += len(text) if isinstance(text, str) else 0
    return n


@dataclass(frozen=True)
class PricedRecording:
    """One recording's usage, price and cost, or why it has no cost."""

    usage: TokenUsage | None
    price: ModelPrice | None
    cost: Cost | None
    unpriced: str | None = None
    """Why there is no cost (None when there is one)."""
    chosen_by: str = ""

    @property
    def total(self) -> float | None:
        return None if self.cost is None else self.cost.total

    @property
    def estimated(self) -> bool:
        return self.usage is not None and self.usage.estimated

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: `cost` (null when unpriced), `unpriced` (the reason), `usage`, `price`."""
        return {
            "cost": None if self.cost is None else self.cost.as_dict(),
            "unpriced": self.unpriced,
            "estimated": self.estimated,
            "usage": None if self.usage is None else self.usage.as_dict(),
            "price": None if self.price is None else self.price.name,
            "price_chosen_by": self.chosen_by or None,
        }


def price_recording(
    choice: PriceChoice,
    vendor: str | None,
    model: str | None,
    raw_usage: Mapping[str, Any] | None,
    text: TextCounts | None = None,
    estimate: bool = False,
) -> PricedRecording:
    """Price one recording: the usage it carries (or, with `estimate`, an estimate from
    `text` when it carries none), at the price `choice` picks for its source."""
    reading: UsageReading = read_usage(raw_usage)
    if reading.usage is None and reading.problem == NO_USAGE and estimate and text is not None:
        reading = estimated_usage(
            text.request_chars,
            text.output_chars,
            text.reasoning_chars,
            text.output_tokens,
            text.reasoning_tokens,
        )
    price, how = choice.price_for(vendor, model)
    if reading.usage is None:
        problem = reading.problem or NO_USAGE
        if problem == NO_USAGE and not estimate:
            problem += " (--estimate-usage would estimate it from the text)"
        return PricedRecording(None, price, None, problem, how if price else "")
    if price is None:
        return PricedRecording(reading.usage, None, None, how)
    return PricedRecording(reading.usage, price, cost_of(reading.usage, price), None, how)
