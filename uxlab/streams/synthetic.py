"""A documented, seeded generator of synthetic token streams over a given text.

`synthesize` cuts a text into token-like pieces (`tokenize`: words with their leading space,
punctuation, newlines and runs of spaces; long words split, about 4 characters a token) and
lays them out in time:

- the first output arrives at ``ttft_ms``; an optional role prelude (a ``meta`` event)
  arrives earlier, at ``prelude_ms``;
- gaps between chunks are drawn from a `GapModel`: lognormal around a median ITL
  (``median_ms * exp(sigma * z)``), with occasional *bursts* (several tokens arriving
  together, gap 0.2-2 ms) and optional *hiccups* (120-180 ms pauses, as seen in real
  engine traces);
- an optional reasoning phase streams first on channel ``reasoning``;
- an optional tool call (`ToolCall`) streams its JSON arguments on channel ``tool``, then
  the tool runs (``run_ms``), then the answer starts (``resume_ms`` later);
- ``stall_at`` inserts pauses of ``stall_ms`` before given answer tokens;
- ``error_at`` cuts the answer before a given token with a mid-stream error event
  (default Anthropic's ``overloaded_error``), followed by the end event.

Everything random comes from ``numpy.random.default_rng(seed)``: the same arguments give the
same Recording, byte for byte once written. The header says so: ``source.kind`` is
``"synthetic"``, ``source.origin`` names this generator with its parameters, and
``text_source`` is ``"synthetic"`` (the text was written, not produced by a model).

This module is independent of the shaping profiles: it makes *sources*, shaping re-times them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from uxlab.errors import UxlabError
from uxlab.streams.recording import Chunk, End, ErrorEvent, Header, Meta, Recording

GENERATOR = "uxlab.streams.synthetic/1"


class SyntheticSpecError(UxlabError, ValueError):
    """A generator argument that cannot make a stream (says which and what would be right)."""


_PIECE = re.compile(r" ?\w+| ?[^\w\s]{1,3}|\n|[^\S\n]+")
_LONG_PIECE = 8  # longer pieces are cut into 4-character parts (about 4 characters a token)


def tokenize(text: str) -> list[str]:
    """Cut text into token-like pieces whose concatenation is exactly `text`.

    Words keep their leading space (as BPE tokens do), punctuation goes in runs of up to
    three characters (``{"``, ``."``, a code fence), newlines stand alone, runs of spaces
    (code indentation) are one piece, and pieces longer than 8 characters are cut into parts
    of 4 characters.
    """
    pieces: list[str] = []
    for match in _PIECE.finditer(text):
        piece = match.group()
        if len(piece) > _LONG_PIECE and not piece.isspace():
            pieces.extend(piece[i : i + 4] for i in range(0, len(piece), 4))
        else:
            pieces.append(piece)
    return pieces


@dataclass(frozen=True)
class GapModel:
    """How the gap between two chunks is drawn (all times in ms).

    A gap is ``median_ms * exp(sigma * z)`` with ``z`` standard normal (lognormal with that
    median); with probability ``burst_prob`` it is instead a burst gap, uniform in
    0.2-2 ms; with probability ``hiccup_prob`` it is a hiccup, uniform in 120-180 ms.
    """

    median_ms: float = 30.0
    sigma: float = 0.35
    burst_prob: float = 0.05
    hiccup_prob: float = 0.0

    def __post_init__(self) -> None:
        if not self.median_ms > 0:
            raise SyntheticSpecError(f"GapModel.median_ms must be positive, got {self.median_ms}")
        if not self.sigma >= 0:
            raise SyntheticSpecError(f"GapModel.sigma must not be negative, got {self.sigma}")
        probs = (self.burst_prob, self.hiccup_prob)
        if not all(0 <= p <= 1 for p in probs) or sum(probs) > 1:
            raise SyntheticSpecError(
                f"GapModel.burst_prob={self.burst_prob} and hiccup_prob={self.hiccup_prob} "
                "must be probabilities in [0, 1] with a sum of at most 1"
            )

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """`n` gaps in ms (never negative)."""
        gaps_ms = self.median_ms * np.exp(self.sigma * rng.standard_normal(n))
        kind = rng.random(n)
        burst = kind < self.burst_prob
        hiccup = (kind >= self.burst_prob) & (kind < self.burst_prob + self.hiccup_prob)
        gaps_ms[burst] = rng.uniform(0.2, 2.0, int(burst.sum()))
        gaps_ms[hiccup] = rng.uniform(120.0, 180.0, int(hiccup.sum()))
        return gaps_ms

    def describe(self) -> str:
        return (
            f"lognormal(median_ms={self.median_ms:g}, sigma={self.sigma:g}, "
            f"burst_prob={self.burst_prob:g}, hiccup_prob={self.hiccup_prob:g})"
        )


@dataclass(frozen=True)
class ToolCall:
    """A tool call streamed before the answer: its JSON arguments arrive on channel `tool`,
    the tool runs for `run_ms`, and the answer's first token comes `resume_ms` later."""

    name: str
    arguments: dict[str, Any]
    call_id: str = "call_0"
    run_ms: float = 600.0
    resume_ms: float = 350.0


def _gap_model(itl: GapModel | float) -> GapModel:
    return itl if isinstance(itl, GapModel) else GapModel(median_ms=float(itl))


def _as_list(value: int | Sequence[int] | None) -> list[int]:
    if value is None:
        return []
    if isinstance(value, int):
        return [value]
    return list(value)


class _Timeline:
    """Appends chunks in time order, grouping tokens into chunks and drawing the gaps."""

    def __init__(self, rng: np.random.Generator, tokens_per_chunk: int) -> None:
        self.rng = rng
        self.tokens_per_chunk = tokens_per_chunk
        self.events: list[Chunk | Meta | ErrorEvent] = []
        self.t_ms: float | None = None  # time of the last chunk
        self.n_tokens = 0

    def stream(
        self,
        pieces: list[str],
        channel: str,
        gaps: GapModel,
        first_at_ms: float,
        pauses_ms: dict[int, float] | None = None,
    ) -> None:
        """Stream `pieces`; the first chunk at `first_at_ms`, pauses before given pieces."""
        k = self.tokens_per_chunk
        groups = [pieces[i : i + k] for i in range(0, len(pieces), k)]
        drawn = gaps.draw(self.rng, len(groups))
        t = first_at_ms
        for g, group in enumerate(groups):
            if g > 0:
                t += float(drawn[g])
            for piece_index in range(g * k, g * k + len(group)):
                t += (pauses_ms or {}).get(piece_index, 0.0)
            t = round(t, 3)
            self.events.append(
                Chunk(t_ms=t, text="".join(group), channel=channel, n_tokens=len(group))
            )
            self.n_tokens += len(group)
        if groups:
            self.t_ms = t

    def next_gap(self, gaps: GapModel) -> float:
        return float(gaps.draw(self.rng, 1)[0])


def synthesize(
    text: str,
    *,
    id: str,
    ttft_ms: float,
    seed: int,
    itl: GapModel | float = GapModel(),
    reasoning: str | None = None,
    tool_call: ToolCall | None = None,
    stall_at: int | Sequence[int] | None = None,
    stall_ms: float = 2000.0,
    error_at: int | None = None,
    error_type: str = "overloaded_error",
    error_message: str = "Overloaded",
    tokens_per_chunk: int = 1,
    prelude_ms: float | None = None,
    prompt: str | None = None,
    model: str = "synthetic",
    finish_reason: str = "stop",
) -> Recording:
    """A synthetic Recording of `text` with seeded timing (see the module docstring).

    `stall_at` and `error_at` count answer tokens (pieces of `tokenize(text)`), from 0;
    `tokens_per_chunk` groups that many pieces into one chunk (provider coalescing).
    """
    answer = tokenize(text)
    stalls = _as_list(stall_at)
    _check_spec(ttft_ms, tokens_per_chunk, prelude_ms, stalls, error_at, len(answer))
    gaps = _gap_model(itl)
    rng = np.random.default_rng(seed)

    line = _Timeline(rng, tokens_per_chunk)
    if prelude_ms is not None:
        line.events.append(
            Meta(t_ms=round(prelude_ms, 3), data={"kind": "role", "role": "assistant"})
        )
    next_at = float(ttft_ms)
    if reasoning:
        line.stream(tokenize(reasoning), "reasoning", gaps, next_at)
        next_at = line.t_ms + line.next_gap(gaps) if line.t_ms is not None else next_at
    if tool_call is not None:
        next_at = _stream_tool_call(line, tool_call, gaps, next_at)

    shown = answer if error_at is None else answer[:error_at]
    pauses = {at: float(stall_ms) for at in stalls if at < len(shown)}
    line.stream(shown, "content", gaps, next_at, pauses)
    last_ms = line.t_ms if line.t_ms is not None else next_at

    end_ms = round(last_ms + line.next_gap(gaps), 3)
    reason: str | None = finish_reason
    if error_at is not None:
        err_ms = end_ms
        line.events.append(
            ErrorEvent(t_ms=err_ms, error={"type": error_type, "message": error_message})
        )
        end_ms = round(err_ms + 0.5, 3)
        reason = "error"

    params: dict[str, Any] = {
        "ttft_ms": ttft_ms,
        "itl": asdict(gaps),
        "tokens_per_chunk": tokens_per_chunk,
        "prelude_ms": prelude_ms,
        "reasoning": reasoning is not None,
        "tool_call": tool_call.name if tool_call is not None else None,
        "stall_at": stalls or None,
        "stall_ms": stall_ms if stalls else None,
        "error_at": error_at,
    }
    origin = _origin(
        seed=seed,
        ttft_ms=ttft_ms,
        gaps=gaps,
        tokens_per_chunk=tokens_per_chunk,
        stalls=stalls,
        stall_ms=stall_ms,
        error_at=error_at,
        error_type=error_type,
    )
    header = Header(
        id=id,
        source={
            "kind": "synthetic",
            "model": model,
            "origin": origin,
            "generator": {"name": GENERATOR, "seed": seed, "params": params},
        },
        request={"messages": [{"role": "user", "content": prompt}]} if prompt is not None else {},
        text_source="synthetic",
    )
    usage = {"output_tokens": line.n_tokens}
    if prompt is not None:
        usage = {"input_tokens": len(tokenize(prompt)), **usage}
    return Recording(
        header=header, events=line.events, end=End(t_ms=end_ms, finish_reason=reason, usage=usage)
    )


def _check_spec(
    ttft_ms: float,
    tokens_per_chunk: int,
    prelude_ms: float | None,
    stalls: list[int],
    error_at: int | None,
    n_answer: int,
) -> None:
    """Raise `SyntheticSpecError` naming the first parameter `synthesize` cannot honour."""
    if ttft_ms < 0:
        raise SyntheticSpecError(f"ttft_ms must not be negative, got {ttft_ms}")
    if tokens_per_chunk < 1:
        raise SyntheticSpecError(f"tokens_per_chunk must be at least 1, got {tokens_per_chunk}")
    if prelude_ms is not None and not 0 <= prelude_ms <= ttft_ms:
        raise SyntheticSpecError(f"prelude_ms must lie in [0, ttft_ms], got {prelude_ms}")
    for name, at in [("stall_at", a) for a in stalls] + [("error_at", error_at)]:
        if at is not None and not 0 <= at < max(n_answer, 1):
            raise SyntheticSpecError(
                f"{name}={at} is outside the answer's {n_answer} tokens "
                f"(use 0..{max(n_answer - 1, 0)}; tokens are pieces of tokenize(text))"
            )


def _stream_tool_call(line: _Timeline, tool_call: ToolCall, gaps: GapModel, at_ms: float) -> float:
    """The call's name, its streamed arguments and its result on `line`; returns when the
    answer resumes."""
    line.events.append(
        Meta(
            t_ms=round(at_ms, 3),
            data={"kind": "tool_call", "id": tool_call.call_id, "name": tool_call.name},
        )
    )
    args = json.dumps(tool_call.arguments, ensure_ascii=False)
    line.stream(tokenize(args), "tool", gaps, at_ms)
    done_ms = (line.t_ms or at_ms) + tool_call.run_ms
    line.events.append(
        Meta(t_ms=round(done_ms, 3), data={"kind": "tool_result", "id": tool_call.call_id})
    )
    return done_ms + tool_call.resume_ms


def _origin(
    *,
    seed: int,
    ttft_ms: float,
    gaps: GapModel,
    tokens_per_chunk: int,
    stalls: list[int],
    stall_ms: float,
    error_at: int | None,
    error_type: str,
) -> str:
    """The header's one-line account of how the recording was made."""
    origin = f"{GENERATOR} seed={seed} ttft_ms={ttft_ms:g} itl={gaps.describe()}"
    if tokens_per_chunk > 1:
        origin += f" tokens_per_chunk={tokens_per_chunk}"
    if stalls:
        origin += f" stall_at={stalls} stall_ms={stall_ms:g}"
    if error_at is not None:
        origin += f" error_at={error_at} error={error_type}"
    return origin
