"""A recording's token usage, as its source reported it, in the categories a price sheet bills.

Each API counts differently, and a token must be billed once:

- OpenAI Chat (`prompt_tokens`, `completion_tokens`): the prompt includes its cached part
  (`prompt_tokens_details.cached_tokens`), the completion its reasoning
  (`completion_tokens_details.reasoning_tokens`). guidellm's export writes `prompt_tokens`
  with `output_tokens`; read the same way.
- OpenAI Responses (`input_tokens_details`, `output_tokens_details`): as Chat, with
  `cached_tokens` in the input and `reasoning_tokens` in the output.
- Anthropic Messages (`cache_read_input_tokens`, `cache_creation_input_tokens`): the input
  does *not* include the cache reads and writes; the output includes thinking (split out when
  `output_tokens_details.thinking_tokens` is given).
- Gemini (`usageMetadata`): the prompt includes `cachedContentTokenCount`;
  `candidatesTokenCount` excludes `thoughtsTokenCount` (billed as output) and
  `toolUsePromptTokenCount` is billed as input. Gemini Interactions (`total_input_tokens`,
  `total_cached_tokens`, `total_output_tokens`, `total_thought_tokens`,
  `total_tool_use_tokens`) the same way.
- Bedrock Converse (`inputTokens`, `outputTokens`, `cacheReadInputTokens`,
  `cacheWriteInputTokens`): input without the cache, as Anthropic.
- Cohere v2: `billed_units` (what is billed), else `tokens`.
- Ollama: `prompt_eval_count`, `eval_count`.
- AIPerf: `input_sequence_length`, `output_sequence_length` (which includes
  `reasoning_token_count`), counted by the benchmark's tokenizer, not the server.
- Anything else with `input_tokens` and `output_tokens` (uxlab's synthetic streams, llmperf,
  vLLM bench, OpenTelemetry and Langfuse imports).

A usage that cannot be billed honestly gives no `TokenUsage` but the reason (`UsageReading`):
no usage at all, a count that is not a whole number, negative or absurd (over
`MAX_USAGE_TOKENS`), a part larger than its whole, or no input or output count. Nothing is
ever counted as zero for want of a number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_USAGE_TOKENS = 10_000_000
"""More tokens than this in one request's usage is not a measurement (uxlab's reading rules
say the same of a stream)."""


@dataclass(frozen=True)
class TokenUsage:
    """One request's tokens in the categories a price sheet bills; no token counted twice."""

    input_tokens: int
    """Input billed at the full input price (cache reads and writes not included)."""
    output_tokens: int
    """Visible output billed at the output price (reasoning not included)."""
    cached_input_tokens: int = 0
    """Input read from the provider's prompt cache."""
    cache_write_tokens: int = 0
    """Input written to the prompt cache (Anthropic, Bedrock)."""
    reasoning_tokens: int = 0
    """Reasoning (thinking) tokens, billed whether or not their text was shown."""
    reasoning_reported: bool = False
    """Whether the source counted reasoning apart from the output (Anthropic usually does
    not: its thinking is then inside `output_tokens`)."""
    counted_by: str = ""
    """Whose count this is, in words (`the server's usage (OpenAI Chat)`)."""
    estimated: bool = False
    """True when uxlab estimated the count from the text (`estimate_usage`)."""

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cached_input_tokens + self.cache_write_tokens

    @property
    def total_output_tokens(self) -> int:
        """Output including reasoning: every token the model generated."""
        return self.output_tokens + self.reasoning_tokens

    def as_dict(self) -> dict[str, Any]:
        """Plain values for JSON output."""
        return {
            "input_tokens": self.input_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "output_tokens": self.output_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "reasoning_reported": self.reasoning_reported,
            "counted_by": self.counted_by,
            "estimated": self.estimated,
        }


@dataclass(frozen=True)
class UsageReading:
    """What a recording's usage gives: a `TokenUsage`, or why it cannot be billed."""

    usage: TokenUsage | None
    problem: str | None = None


NO_USAGE = "no usage in the recording"


class _Bad(ValueError):
    """A usage field that cannot be billed (its path and the problem)."""


def _count(obj: Mapping[str, Any], key: str, where: str = "usage") -> int | None:
    """The whole number of tokens at `obj[key]`, None when absent; `_Bad` when unusable."""
    if key not in obj or obj[key] is None:
        return None
    value = obj[key]
    path = f"{where}.{key}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Bad(f"{path}: {value!r:.40} is not a number of tokens")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise _Bad(f"{path}: {value!r} is not a whole number of tokens")
    if value < 0:
        raise _Bad(f"{path}: {value:g} is negative")
    if value > MAX_USAGE_TOKENS:
        raise _Bad(f"{path}: {value:,.0f} tokens is not plausible (at most {MAX_USAGE_TOKENS:,})")
    return int(value)


def _sub(obj: Mapping[str, Any], key: str, where: str = "usage") -> Mapping[str, Any]:
    """The table at `obj[key]` ({} when absent or null); `_Bad` when it is not a table."""
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _Bad(f"{where}.{key}: {value!r:.40} is not an object")
    return value


def _part(part: int | None, whole: int, part_name: str, whole_name: str) -> int:
    if part is None:
        return 0
    if part > whole:
        raise _Bad(f"{part_name} ({part:,}) is larger than {whole_name} ({whole:,})")
    return part


def _need(value: int | None, what: str, keys: Mapping[str, Any]) -> int:
    if value is None:
        names = ", ".join(sorted(keys)) or "none"
        raise _Bad(f"usage has no {what} token count (its keys: {names})")
    return value


def _openai_like(u: Mapping[str, Any], api: str) -> TokenUsage:
    """Chat (prompt/completion) or Responses (input/output with *_details)."""
    chat = "prompt_tokens" in u or "completion_tokens" in u
    in_key, out_key = ("prompt_tokens", "completion_tokens") if chat else ("input_tokens", "")
    prompt = _need(_count(u, in_key), "input", u)
    completion = _count(u, "completion_tokens") if chat else None
    if completion is None:
        completion = _count(u, "output_tokens")
        out_key = "output_tokens"
    completion = _need(completion, "output", u)
    in_details = _sub(u, "prompt_tokens_details" if chat else "input_tokens_details")
    out_details = _sub(u, "completion_tokens_details" if chat else "output_tokens_details")
    in_where = "usage." + ("prompt_tokens_details" if chat else "input_tokens_details")
    out_where = "usage." + ("completion_tokens_details" if chat else "output_tokens_details")
    cached = _part(
        _count(in_details, "cached_tokens", in_where),
        prompt,
        f"{in_where}.cached_tokens",
        f"usage.{in_key}",
    )
    raw_reasoning = _count(out_details, "reasoning_tokens", out_where)
    reasoning = _part(
        raw_reasoning, completion, f"{out_where}.reasoning_tokens", f"usage.{out_key}"
    )
    return TokenUsage(
        input_tokens=prompt - cached,
        cached_input_tokens=cached,
        output_tokens=completion - reasoning,
        reasoning_tokens=reasoning,
        reasoning_reported=raw_reasoning is not None,
        counted_by=f"the server's usage ({api})",
    )


def _anthropic(u: Mapping[str, Any]) -> TokenUsage:
    output = _need(_count(u, "output_tokens"), "output", u)
    details = _sub(u, "output_tokens_details")
    thinking = _count(details, "thinking_tokens", "usage.output_tokens_details")
    reasoning = _part(
        thinking, output, "usage.output_tokens_details.thinking_tokens", "usage.output_tokens"
    )
    return TokenUsage(
        input_tokens=_need(_count(u, "input_tokens"), "input", u),
        cached_input_tokens=_count(u, "cache_read_input_tokens") or 0,
        cache_write_tokens=_count(u, "cache_creation_input_tokens") or 0,
        output_tokens=output - reasoning,
        reasoning_tokens=reasoning,
        reasoning_reported=thinking is not None,
        counted_by="the server's usage (Anthropic Messages)",
    )


def _gemini(u: Mapping[str, Any]) -> TokenUsage:
    prompt = _need(_count(u, "promptTokenCount"), "input", u)
    cached = _part(
        _count(u, "cachedContentTokenCount"),
        prompt,
        "usage.cachedContentTokenCount",
        "usage.promptTokenCount",
    )
    candidates = _count(u, "candidatesTokenCount")
    thoughts = _count(u, "thoughtsTokenCount")
    if candidates is None and thoughts is None and _count(u, "totalTokenCount") is None:
        _need(None, "output", u)
    return TokenUsage(
        input_tokens=prompt - cached + (_count(u, "toolUsePromptTokenCount") or 0),
        cached_input_tokens=cached,
        output_tokens=candidates or 0,  # absent with a total: nothing visible was generated
        reasoning_tokens=thoughts or 0,
        reasoning_reported=True,
        counted_by="the server's usageMetadata (Gemini)",
    )


def _gemini_interactions(u: Mapping[str, Any]) -> TokenUsage:
    prompt = _need(_count(u, "total_input_tokens"), "input", u)
    cached = _part(
        _count(u, "total_cached_tokens"),
        prompt,
        "usage.total_cached_tokens",
        "usage.total_input_tokens",
    )
    return TokenUsage(
        input_tokens=prompt - cached + (_count(u, "total_tool_use_tokens") or 0),
        cached_input_tokens=cached,
        output_tokens=_need(_count(u, "total_output_tokens"), "output", u),
        reasoning_tokens=_count(u, "total_thought_tokens") or 0,
        reasoning_reported="total_thought_tokens" in u,
        counted_by="the server's usage (Gemini Interactions)",
    )


def _bedrock(u: Mapping[str, Any]) -> TokenUsage:
    return TokenUsage(
        input_tokens=_need(_count(u, "inputTokens"), "input", u),
        cached_input_tokens=_count(u, "cacheReadInputTokens") or 0,
        cache_write_tokens=_count(u, "cacheWriteInputTokens") or 0,
        output_tokens=_need(_count(u, "outputTokens"), "output", u),
        counted_by="the server's usage (Bedrock Converse)",
    )


def _cohere(u: Mapping[str, Any]) -> TokenUsage:
    key = "billed_units" if isinstance(u.get("billed_units"), Mapping) else "tokens"
    table = _sub(u, key)
    where = f"usage.{key}"
    return TokenUsage(
        input_tokens=_need(_count(table, "input_tokens", where), "input", table),
        output_tokens=_need(_count(table, "output_tokens", where), "output", table),
        counted_by=f"the server's usage.{key} (Cohere)",
    )


def _ollama(u: Mapping[str, Any]) -> TokenUsage:
    return TokenUsage(
        input_tokens=_need(_count(u, "prompt_eval_count"), "input", u),
        output_tokens=_need(_count(u, "eval_count"), "output", u),
        counted_by="the server's prompt_eval_count / eval_count (Ollama)",
    )


def _aiperf(u: Mapping[str, Any]) -> TokenUsage:
    output = _need(_count(u, "output_sequence_length"), "output", u)
    raw = _count(u, "reasoning_token_count")
    reasoning = _part(raw, output, "usage.reasoning_token_count", "usage.output_sequence_length")
    return TokenUsage(
        input_tokens=_need(_count(u, "input_sequence_length"), "input", u),
        output_tokens=output - reasoning,
        reasoning_tokens=reasoning,
        reasoning_reported=raw is not None,
        counted_by="the benchmark's tokenizer (AIPerf input/output_sequence_length)",
    )


def _plain(u: Mapping[str, Any]) -> TokenUsage:
    return TokenUsage(
        input_tokens=_need(_count(u, "input_tokens"), "input", u),
        output_tokens=_need(_count(u, "output_tokens"), "output", u),
        counted_by="the recording's usage (input_tokens, output_tokens)",
    )


def _dialect(u: Mapping[str, Any]) -> TokenUsage:
    keys = set(u)
    if keys & {"promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount"}:
        return _gemini(u)
    if keys & {"total_input_tokens", "total_output_tokens"}:
        return _gemini_interactions(u)
    if keys & {"prompt_tokens", "completion_tokens"}:
        return _openai_like(u, "OpenAI Chat")
    if keys & {"input_sequence_length", "output_sequence_length"}:
        return _aiperf(u)
    if keys & {"prompt_eval_count", "eval_count"}:
        return _ollama(u)
    if keys & {"inputTokens", "outputTokens"}:
        return _bedrock(u)
    if keys & {"billed_units", "tokens"} and not keys & {"input_tokens", "output_tokens"}:
        return _cohere(u)
    if keys & {"cache_read_input_tokens", "cache_creation_input_tokens"}:
        return _anthropic(u)
    details = u.get("output_tokens_details")
    if isinstance(details, Mapping) and "thinking_tokens" in details:
        return _anthropic(u)
    if keys & {"input_tokens_details", "output_tokens_details"}:
        return _openai_like(u, "OpenAI Responses")
    if keys & {"input_tokens", "output_tokens"}:
        return _plain(u)
    names = ", ".join(sorted(keys)) or "none"
    raise _Bad(f"usage has no token counts uxlab knows (its keys: {names})")


def read_usage(raw: Any) -> UsageReading:
    """The billable tokens of a recording's `end.usage` (see the module docstring)."""
    if raw is None or (isinstance(raw, Mapping) and not raw):
        return UsageReading(None, NO_USAGE)
    if not isinstance(raw, Mapping):
        return UsageReading(None, f"usage: {raw!r:.40} is not an object")
    try:
        return UsageReading(_dialect(raw))
    except _Bad as exc:
        return UsageReading(None, str(exc))


CHARS_PER_TOKEN = 4.0
"""The estimate's rule of thumb: a token is about four characters of English text."""


def estimate_tokens(n_chars: int, n_tokens_known: float | None = None) -> int:
    """Tokens of a text: `n_tokens_known` when the stream carried it, else chars / 4 (up)."""
    if n_tokens_known is not None and math.isfinite(n_tokens_known):
        return round(n_tokens_known)
    return math.ceil(n_chars / CHARS_PER_TOKEN)


def estimated_usage(
    request_chars: int | None,
    output_chars: int,
    reasoning_chars: int,
    output_tokens_known: float | None = None,
    reasoning_tokens_known: float | None = None,
) -> UsageReading:
    """An estimate for a recording without usage, from its request's and its chunks' text.

    Output and reasoning tokens are the chunks' own `n_tokens` when every chunk carries
    one, else characters / `CHARS_PER_TOKEN`; input tokens are the request's message
    characters / `CHARS_PER_TOKEN`. Without the request's text there is no estimate."""
    if request_chars is None:
        return UsageReading(None, f"{NO_USAGE}, and no request text to estimate the input from")
    return UsageReading(
        TokenUsage(
            input_tokens=estimate_tokens(request_chars),
            output_tokens=estimate_tokens(output_chars, output_tokens_known),
            reasoning_tokens=estimate_tokens(reasoning_chars, reasoning_tokens_known),
            reasoning_reported=True,
            counted_by=f"estimated by uxlab (characters / {CHARS_PER_TOKEN:g}, or the chunks' "
            "n_tokens)",
            estimated=True,
        )
    )
