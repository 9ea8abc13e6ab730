"""The metrics of recordings under a peer tool's own names and definitions (`inspect --as`).

AIPerf, vLLM's `bench serve` and guidellm each name and define their figures their own way
(`docs/reference/metrics.md` lists them beside uxlab's). This module computes each peer's
figures from the recordings with the peer's definition, so a number can be read against
the peer's report as it stands, not after reading a table.

What all three build on, per recording:

- the *responses with output*: the stream events that carry output, in arrival order: a
  non-empty chunk on any channel (content, reasoning, a tool call's arguments) or a tool
  call's start (its name). A piece marked `same_event` (the importers mark the second and
  later pieces one stream event gave) belongs to the response before it; two events at the
  same moment are two responses (AIPerf records gaps of 0 ms).
- the output token count (OSL): from the recording's usage, the most direct count first:
  AIPerf's `output_sequence_length` (AIPerf's tokenizer), then the server's own count
  (`completion_tokens`, `output_tokens`, `candidatesTokenCount` + `thoughtsTokenCount`,
  `eval_count`, `outputTokens`, Cohere's `tokens.output_tokens`). The source of the count is
  said per figure; without one the token-based figures are not given (a chunk is not a
  token).

Aggregates follow each peer: AIPerf's avg, min, max, percentiles (numpy's linear method) and
population std; vLLM's mean, median, std, p99; guidellm's mean, median, p90, p99, std.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from uxlab.streams.recording import SAME_EVENT, Chunk, Meta, Recording
from uxlab.streams.tool_calls import TOOL_CALL

PEERS = ("aiperf", "vllm", "guidellm")


@dataclass(frozen=True)
class PeerMetric:
    """One figure of a peer: its name, unit and definition, and how it is computed."""

    name: str
    unit: str
    definition: str
    value: Callable[[RecordingFacts], float | list[float] | None]
    per_gap: bool = False
    """A list of values per recording, pooled across recordings (AIPerf's chunk gaps)."""
    needs_tokens: bool = False


@dataclass
class RecordingFacts:
    """What the peers' definitions need of one recording."""

    responses: list[tuple[float, str]]
    """(time in ms, channel) of each response with output (see the module docstring)."""
    last_event_ms: float | None
    end_ms: float | None
    osl: float | None
    osl_source: str | None
    isl: float | None
    reasoning_tokens: float | None
    output_tokens: float | None
    request_start_ns: int | None

    @property
    def first_ms(self) -> float | None:
        return self.responses[0][0] if self.responses else None

    @property
    def last_ms(self) -> float | None:
        return self.responses[-1][0] if self.responses else None


_OSL_KEYS = (
    ("output_sequence_length", "AIPerf's output_sequence_length (its tokenizer)"),
    ("completion_tokens", "the server's usage.completion_tokens"),
    ("output_tokens", "the server's usage.output_tokens"),
    ("candidatesTokenCount", "the server's usageMetadata (candidates + thoughts)"),
    ("eval_count", "the server's eval_count"),
    ("outputTokens", "the server's usage.outputTokens"),
    ("total_output_tokens", "the server's usage.total_output_tokens"),
)


def _number(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok and math.isfinite(value) else None


def _osl(usage: dict[str, Any]) -> tuple[float | None, str | None]:
    for key, source in _OSL_KEYS:
        n = _number(usage.get(key))
        if n is not None:
            if key == "candidatesTokenCount":
                n += _number(usage.get("thoughtsTokenCount")) or 0.0
            return n, source
    tokens = usage.get("tokens")
    if isinstance(tokens, dict) and _number(tokens.get("output_tokens")) is not None:
        return _number(tokens.get("output_tokens")), "the server's usage.tokens.output_tokens"
    return None, None


def facts(rec: Recording) -> RecordingFacts:
    """The facts of one recording the peers' definitions use."""
    responses: list[tuple[float, str]] = []
    last_event: float | None = None
    for event in rec.events:
        if event.t_ms is not None:
            last_event = event.t_ms
        if isinstance(event, Chunk) and event.text and event.t_ms is not None:
            channel, same = event.channel, event.extra.get(SAME_EVENT)
        elif isinstance(event, Meta) and event.data.get("kind") == TOOL_CALL:
            if event.t_ms is None or not event.data.get("name"):
                continue
            channel, same = "tool_call", event.data.get(SAME_EVENT)
        else:
            continue
        if same and responses:
            responses[-1] = (responses[-1][0], responses[-1][1] + "+" + channel)
        else:
            responses.append((event.t_ms, channel))
    usage = dict((rec.end.usage if rec.end is not None else None) or {})
    osl, source = _osl(usage)
    details = usage.get("completion_tokens_details")
    reasoning = _number(usage.get("reasoning_token_count"))
    if reasoning is None and isinstance(details, dict):
        reasoning = _number(details.get("reasoning_tokens"))
    isl = next(
        (
            _number(usage.get(k))
            for k in ("input_sequence_length", "prompt_tokens", "input_tokens")
            if _number(usage.get(k)) is not None
        ),
        None,
    )
    start = rec.header.source.get("request_start_ns")
    return RecordingFacts(
        responses=responses,
        last_event_ms=last_event,
        end_ms=rec.end.t_ms if rec.end is not None else None,
        osl=osl,
        osl_source=source,
        isl=isl,
        reasoning_tokens=reasoning,
        output_tokens=_number(usage.get("output_token_count")),
        request_start_ns=start if isinstance(start, int) and not isinstance(start, bool) else None,
    )


# --- the definitions ----------------------------------------------------------------------


def _gap(f: RecordingFacts, k: int) -> float | None:
    return f.responses[k][0] - f.responses[0][0] if len(f.responses) > k else None


def _gaps(f: RecordingFacts) -> list[float]:
    times = [t for t, _ in f.responses]
    return [b - a for a, b in itertools.pairwise(times)]


def _first_non_reasoning(f: RecordingFacts) -> float | None:
    return next((t for t, ch in f.responses if ch != "reasoning"), None)


def _decode(f: RecordingFacts) -> float | None:
    return None if f.first_ms is None or f.last_ms is None else f.last_ms - f.first_ms


def _itl(f: RecordingFacts) -> float | None:
    decode = _decode(f)
    if decode is None or f.osl is None or f.osl < 2:
        return None
    return decode / (f.osl - 1)


def _per_s(value: float | None) -> float | None:
    return 1000.0 / value if value else None


def _ratio(tokens: float | None, ms: float | None) -> float | None:
    return tokens / ms * 1000.0 if tokens is not None and ms else None


_RESP = "responses with output (a chunk on any channel, a tool call's name)"

AIPERF: tuple[PeerMetric, ...] = (
    PeerMetric(
        "time_to_first_token",
        "ms",
        f"the first of the {_RESP}",
        lambda f: f.first_ms,
    ),
    PeerMetric(
        "time_to_second_token",
        "ms",
        "the second response with output minus the first (a gap)",
        lambda f: _gap(f, 1),
    ),
    PeerMetric(
        "time_to_first_output_token",
        "ms",
        "the first response with non-reasoning output (content or a tool call)",
        _first_non_reasoning,
    ),
    PeerMetric(
        "inter_chunk_latency",
        "ms",
        "every gap between consecutive responses with output, pooled",
        _gaps,
        per_gap=True,
    ),
    PeerMetric(
        "request_latency",
        "ms",
        "the last response with output (AIPerf's end; the stream's terminator comes later)",
        lambda f: f.last_ms,
    ),
    PeerMetric(
        "decode_duration",
        "ms",
        "request_latency - time_to_first_token",
        _decode,
    ),
    PeerMetric(
        "inter_token_latency",
        "ms",
        "(request_latency - time_to_first_token) / (output_sequence_length - 1)",
        _itl,
        needs_tokens=True,
    ),
    PeerMetric(
        "output_token_throughput_per_user",
        "tokens/sec/user",
        "1000 / inter_token_latency",
        lambda f: _per_s(_itl(f)),
        needs_tokens=True,
    ),
    PeerMetric(
        "e2e_output_token_throughput",
        "tokens/sec/user",
        "output_sequence_length / request_latency",
        lambda f: _ratio(f.osl, f.last_ms),
        needs_tokens=True,
    ),
    PeerMetric(
        "prefill_throughput_per_user",
        "tokens/sec/user",
        "input_sequence_length / time_to_first_token",
        lambda f: _ratio(f.isl, f.first_ms),
    ),
    PeerMetric(
        "output_sequence_length",
        "tokens",
        "output tokens, reasoning included",
        lambda f: f.osl,
        needs_tokens=True,
    ),
    PeerMetric("input_sequence_length", "tokens", "input tokens", lambda f: f.isl),
    PeerMetric("reasoning_token_count", "tokens", "reasoning tokens", lambda f: f.reasoning_tokens),
    PeerMetric(
        "output_token_count",
        "tokens",
        "output tokens that are not reasoning",
        lambda f: f.output_tokens,
    ),
)

VLLM: tuple[PeerMetric, ...] = (
    PeerMetric(
        "ttft",
        "ms",
        "the first chunk with content, reasoning or a tool call (vLLM 0.33 leaves out "
        "`reasoning_content`; uxlab's reasoning channel holds both)",
        lambda f: f.first_ms,
    ),
    PeerMetric(
        "tpot",
        "ms",
        "(latency - ttft) / (output_len - 1), output_len the server's count",
        lambda f: (
            (f.last_event_ms - f.first_ms) / (f.osl - 1)
            if f.first_ms is not None
            and f.last_event_ms is not None
            and f.osl is not None
            and f.osl > 1
            else None
        ),
        needs_tokens=True,
    ),
    PeerMetric(
        "itl",
        "ms",
        "every gap between consecutive chunks with output, pooled",
        _gaps,
        per_gap=True,
    ),
    PeerMetric(
        "e2el",
        "ms",
        "latency: the last chunk received (the usage chunk too; `[DONE]` is not a chunk)",
        lambda f: f.last_event_ms,
    ),
)

GUIDELLM: tuple[PeerMetric, ...] = (
    PeerMetric(
        "time_to_first_token_ms",
        "ms",
        "first token iteration - request start: the first response with output",
        lambda f: f.first_ms,
    ),
    PeerMetric(
        "inter_token_latency_ms",
        "ms",
        "(last token - first token) / (output tokens - 1)",
        _itl,
        needs_tokens=True,
    ),
    PeerMetric(
        "time_per_output_token_ms",
        "ms",
        "(last token - request start) / output tokens: TTFT included",
        lambda f: f.last_ms / f.osl if f.last_ms is not None and f.osl else None,
        needs_tokens=True,
    ),
    PeerMetric(
        "request_latency",
        "s",
        "request end - request start (the stream's end)",
        lambda f: f.end_ms / 1000.0 if f.end_ms is not None else None,
    ),
    PeerMetric(
        "output_tokens_per_second",
        "tokens/s",
        "output tokens / request_latency",
        lambda f: _ratio(f.osl, f.end_ms),
        needs_tokens=True,
    ),
)

METRICS: dict[str, tuple[PeerMetric, ...]] = {"aiperf": AIPERF, "vllm": VLLM, "guidellm": GUIDELLM}
STATS: dict[str, tuple[str, ...]] = {
    "aiperf": (
        "avg",
        "min",
        "max",
        "p1",
        "p5",
        "p10",
        "p25",
        "p50",
        "p75",
        "p90",
        "p95",
        "p99",
        "std",
    ),
    "vllm": ("mean", "median", "std", "p99"),
    "guidellm": ("mean", "median", "p90", "p99", "std", "min", "max"),
}


def summary_stats(values: Sequence[float], stats: Sequence[str]) -> dict[str, float | int]:
    """The named statistics of `values` (population std; numpy's linear percentiles)."""
    a = np.asarray(values, dtype=float)
    out: dict[str, float | int] = {"count": len(a)}
    if not len(a):
        return out
    for stat in stats:
        if stat in ("avg", "mean"):
            out[stat] = float(a.mean())
        elif stat in ("median", "p50"):
            out[stat] = float(np.percentile(a, 50))
        elif stat == "std":
            out[stat] = float(a.std())
        elif stat == "min":
            out[stat] = float(a.min())
        elif stat == "max":
            out[stat] = float(a.max())
        elif stat.startswith("p"):
            out[stat] = float(np.percentile(a, float(stat[1:])))
    return out


@dataclass
class PeerView:
    """One peer's figures over some recordings."""

    peer: str
    per_recording: list[dict[str, float | list[float] | None]]
    summary: dict[str, dict[str, float | int]]
    """Per metric: its statistics (`STATS[peer]` and `count`), over the recordings that
    have it (gaps pooled); metrics no recording has are left out and explained in `notes`."""
    notes: dict[str, str] = field(default_factory=dict)
    """Per metric: where its token counts came from, or why it has no value."""
    run: dict[str, float] = field(default_factory=dict)
    """Run-level figures (`benchmark_duration`, `request_throughput`, ...) when computable."""


def peer_view(peer: str, recs: Sequence[Recording], n_errors: int | None = None) -> PeerView:
    """The figures of `peer` over `recs` (`n_errors`: failed requests, when known)."""
    metrics, stats = METRICS[peer], STATS[peer]
    all_facts = [facts(rec) for rec in recs]
    per_recording: list[dict[str, float | list[float] | None]] = []
    for f in all_facts:
        per_recording.append({m.name: m.value(f) for m in metrics})
    summary: dict[str, dict[str, float | int]] = {}
    notes: dict[str, str] = {}
    sources = sorted({f.osl_source for f in all_facts if f.osl_source})
    for m in metrics:
        if m.per_gap:
            values = [v for row in per_recording for v in (row[m.name] or [])]  # type: ignore[union-attr]
        else:
            values = [v for row in per_recording if isinstance(v := row[m.name], float)]
        if values:
            summary[m.name] = summary_stats(values, stats)
            if m.needs_tokens:
                notes[m.name] = "tokens: " + "; ".join(sources)
        elif m.needs_tokens:
            notes[m.name] = "no token counts in these recordings (a chunk is not a token)"
        else:
            notes[m.name] = "no recording has it"
    run = _run_figures(all_facts, n_errors) if peer == "aiperf" else {}
    if peer == "aiperf" and "benchmark_duration" not in run:
        notes["benchmark_duration"] = (
            "needs each request's start on the run's clock (`source.request_start_ns`, kept "
            "by the AIPerf import); these recordings do not have it"
        )
    return PeerView(peer, per_recording, summary, notes, run)


def _run_figures(all_facts: Sequence[RecordingFacts], n_errors: int | None) -> dict[str, float]:
    """AIPerf's run-level figures: the run spans the first request's start to the last
    response with output (`max_response_timestamp`)."""
    run: dict[str, float] = {"request_count": float(len(all_facts))}
    if n_errors is not None:
        run["error_request_count"] = float(n_errors)
        run["completed_request_count"] = float(len(all_facts))
        if all_facts or n_errors:
            run["request_error_rate"] = 100.0 * n_errors / (len(all_facts) + n_errors)
    oslls = [f.osl for f in all_facts if f.osl is not None]
    isls = [f.isl for f in all_facts if f.isl is not None]
    if oslls:
        run["total_osl"] = float(sum(oslls))
    if isls:
        run["total_isl"] = float(sum(isls))
    reasoning = [f.reasoning_tokens for f in all_facts if f.reasoning_tokens is not None]
    if reasoning:
        run["total_reasoning_tokens"] = float(sum(reasoning))
    outputs = [f.output_tokens for f in all_facts if f.output_tokens is not None]
    if outputs:
        run["total_output_tokens"] = float(sum(outputs))
    starts = [f.request_start_ns for f in all_facts]
    if all_facts and all(s is not None for s in starts):
        first = min(s for s in starts if s is not None)
        ends = [(f.request_start_ns or 0) + (f.last_ms or 0.0) * 1e6 for f in all_facts]
        duration_s = (max(ends) - first) / 1e9
        if duration_s > 0:
            run["benchmark_duration"] = duration_s
            run["request_throughput"] = len(all_facts) / duration_s
            if oslls:
                run["output_token_throughput"] = sum(oslls) / duration_s
    return run
