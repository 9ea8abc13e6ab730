"""`shape()`: re-time a Recording with a Profile into a schedule, deterministically from a seed.

The steps, all on numpy arrays:

1. *Units*: the recording's chunks, or (when the profile re-chunks) their texts split into
   token-like pieces (`tokens.py`), each piece timed by spreading its chunk's recorded gap
   evenly over the pieces. Positions (stalls, errors) count tokens: a chunk's `n_tokens`,
   or 1 per unit where unknown.
2. *Times*: TTFT (at least `headers_ms`) for the first unit, then one gap per unit drawn
   from the ITL model (AR(1) correlated scores when `rho` is set), plus stalls, cumulated:
   gaps are sampled, never independent offsets, so times never decrease.
3. *Error*: with `error_at`, units after token N are dropped and an `error` event plus an
   `end` with `finish_reason: "error"` come when the next unit would have arrived.
4. *Events*: units grouped into k-token events (never across a channel change, a meta or
   error event, or a chunk with extra keys); an event arrives with its last token. Meta and
   error events keep their position; the end follows the last chunk by the recorded tail.

Random streams are independent per step (`default_rng([seed, step])`), so e.g. changing
the ITL model leaves the TTFT draw of the same seed unchanged.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from typing import cast

import numpy as np

from uxlab.errors import UxlabError
from uxlab.shaping.distributions import Dist, correlated_scores
from uxlab.shaping.empirical import GapPool, load_pool
from uxlab.shaping.profile import Profile, Stalls
from uxlab.shaping.tokens import split_pieces
from uxlab.streams.recording import Chunk, End, ErrorEvent, Event, Header, Recording

RNG_TTFT, RNG_ITL, RNG_STALL_COUNT, RNG_STALL_MS, RNG_CHUNK = 1, 2, 3, 4, 5
"""The random streams of a shaping, each seeded by (seed, this number): a part's draws do
not move when another part changes (the live schedule draws its chunking from `RNG_CHUNK`,
as a recording's shaping does)."""


class ShapeError(UxlabError, ValueError):
    """A recording that the profile cannot be applied to (says which and what to change)."""


def derive_seed(base_seed: int, recording_id: str) -> int:
    """A per-recording seed: the first 4 bytes (big-endian) of SHA-256 of `"<seed>:<id>"`."""
    digest = hashlib.sha256(f"{base_seed}:{recording_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def schedule_id(source_id: str, profile: Profile, seed: int) -> str:
    """`<source id>~<8 hex of SHA-256 of the canonical profile table and seed>`."""
    blob = json.dumps({"profile": profile.to_table(), "seed": seed}, sort_keys=True)
    return f"{source_id}~{hashlib.sha256(blob.encode()).hexdigest()[:8]}"


@dataclass
class Units:
    """The timed pieces that the profile re-times (one per chunk unless re-chunking)."""

    texts: list[str]
    channels: list[str]
    tokens: np.ndarray  # tokens in each unit (1 where unknown)
    counted: np.ndarray  # True where the source chunk's n_tokens was known
    recorded_ms: np.ndarray  # recorded arrival time (NaN where unknown)
    source: np.ndarray  # index of the source chunk
    whole: np.ndarray  # True for chunks kept as they are (they carry extra keys)

    def __len__(self) -> int:
        return len(self.texts)


def build_units(chunks: list[Chunk], rechunk: bool) -> Units:
    """Units of the recording's chunks; split into token-like pieces when `rechunk`."""
    if not rechunk:
        return Units(
            texts=[c.text for c in chunks],
            channels=[c.channel for c in chunks],
            tokens=np.array([1 if c.n_tokens is None else c.n_tokens for c in chunks], np.int64),
            counted=np.array([c.n_tokens is not None for c in chunks], dtype=bool),
            recorded_ms=np.array([np.nan if c.t_ms is None else c.t_ms for c in chunks], float),
            source=np.arange(len(chunks), dtype=np.int64),
            whole=np.ones(len(chunks), dtype=bool),
        )
    texts: list[str] = []
    channels: list[str] = []
    tokens: list[int] = []
    counted: list[bool] = []
    source: list[int] = []
    whole: list[bool] = []
    piece_index: list[int] = []
    piece_count: list[int] = []
    for i, c in enumerate(chunks):
        keep = bool(c.extra)
        pieces = [c.text] if keep else split_pieces(c.text, c.n_tokens)
        m = len(pieces)
        if m == 1:
            piece_tokens = [1 if c.n_tokens is None else c.n_tokens]
        else:
            piece_tokens = [0 if c.n_tokens == 0 else 1] * m
            if c.n_tokens is not None and c.n_tokens > m:
                piece_tokens[-1] += c.n_tokens - m
        texts.extend(pieces)
        channels.extend([c.channel] * m)
        tokens.extend(piece_tokens)
        counted.extend([c.n_tokens is not None] * m)
        source.extend([i] * m)
        whole.extend([keep] * m)
        piece_index.extend(range(1, m + 1))
        piece_count.extend([m] * m)
    # A chunk's pieces share its recorded gap evenly (the first chunk's pieces all arrive
    # with it): t = t_prev + (t - t_prev) * j / m.
    chunk_ms = np.array([np.nan if c.t_ms is None else c.t_ms for c in chunks], dtype=float)
    prev_ms = np.concatenate([chunk_ms[:1], chunk_ms[:-1]])
    src = np.asarray(source, dtype=np.int64)
    frac = np.asarray(piece_index, dtype=float) / np.asarray(piece_count, dtype=float)
    recorded_ms = prev_ms[src] + (chunk_ms[src] - prev_ms[src]) * frac
    return Units(
        texts=texts,
        channels=channels,
        tokens=np.asarray(tokens, dtype=np.int64),
        counted=np.asarray(counted, dtype=bool),
        recorded_ms=recorded_ms,
        source=src,
        whole=np.asarray(whole, dtype=bool),
    )


# -- drawing times -----------------------------------------------------------------------------


def draw_ttft_ms(ttft: Dist, recorded_ms: float, rng: np.random.Generator, rid: str) -> float:
    """One TTFT draw (ms)."""
    if ttft.kind in ("recorded", "scale"):
        if not np.isfinite(recorded_ms):
            raise ShapeError(
                f"{rid}: the recording has no timing, so TTFT {ttft.to_spec()!r} cannot "
                "be applied; give a TTFT (e.g. --ttft 800 / ttft = 800)"
            )
        return float(recorded_ms * (ttft["factor"] if ttft.kind == "scale" else 1.0))
    return float(ttft.from_scores(rng.standard_normal(1))[0])


def draw_gaps_ms(
    profile: Profile,
    units: Units,
    rng: np.random.Generator,
    rid: str,
    self_pool: GapPool | None = None,
) -> np.ndarray:
    """The `len(units) - 1` gaps (ms) between successive units, before stalls."""
    itl = profile.itl
    n_gaps = max(len(units) - 1, 0)
    if itl.kind in ("recorded", "scale", "rate"):
        recorded = np.diff(units.recorded_ms)
        if not np.all(np.isfinite(recorded)):
            raise ShapeError(
                f"{rid}: the recording has no timing, so ITL {itl.to_spec()!r} cannot be "
                "applied; give a sampled ITL (e.g. --itl lognormal:median=30,sigma=0.5)"
            )
        if itl.kind == "recorded":
            return recorded
        if itl.kind == "scale":
            return cast(np.ndarray, recorded * itl["factor"])
        total_ms = float(recorded.sum())
        if total_ms <= 0:
            raise ShapeError(
                f"{rid}: all recorded gaps are 0, so ITL {itl.to_spec()!r} has no shape to "
                "keep; use a sampled ITL such as constant:50"
            )
        target_ms = float(units.tokens[1:].sum()) * 1000.0 / itl["tokens_per_s"]
        return cast(np.ndarray, recorded * (target_ms / total_ms))
    if itl.kind == "empirical":
        if itl["source"] == "self":
            pool = self_pool if self_pool is not None else GapPool(np.zeros(0), ())
            if len(pool.gaps_ms) == 0:
                raise ShapeError(f"{rid}: empirical:self needs a recording with timed gaps")
        else:
            pool = load_pool(itl["source"], "itl", profile.base_dir)
        if itl["block"] > 1:
            gaps = pool.block_bootstrap(rng, n_gaps, int(itl["block"]))
        else:
            from scipy import special  # here: loading a study need not import it

            gaps = pool.quantiles(special.ndtr(correlated_scores(rng, n_gaps, profile.rho)))
        return cast(np.ndarray, gaps * itl["scale"])
    return itl.from_scores(correlated_scores(rng, n_gaps, profile.rho))


def draw_poisson_stalls(
    stalls: Stalls, gaps_ms: np.ndarray, count_rng: np.random.Generator, ms_rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Poisson stalls per gap: (count per gap, total stall ms per gap).

    A gap of g ms holds Poisson(rate_per_s * g / 1000) stalls, each a draw of `stalls.ms`.
    """
    n = len(gaps_ms)
    if stalls.rate_per_s <= 0 or stalls.ms is None or n == 0:
        return np.zeros(n, dtype=np.int64), np.zeros(n)
    counts = count_rng.poisson(stalls.rate_per_s * np.maximum(gaps_ms, 0) / 1000.0)
    durations = stalls.ms.sample(ms_rng, int(counts.sum()))
    owner = np.repeat(np.arange(n), counts)
    return counts, np.bincount(owner, weights=durations, minlength=n)


# -- the schedule ------------------------------------------------------------------------------


def shape(recording: Recording, profile: Profile, seed: int = 0) -> Recording:
    """Re-time `recording` with `profile`; the result's header records source, seed, profile."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ShapeError(f"seed must be a whole number >= 0, got {seed!r}")
    seed = int(seed)
    rid = recording.id
    chunks = recording.chunks
    if not chunks:
        raise ShapeError(f"{rid}: the recording has no chunks to re-time")
    units = build_units(chunks, rechunk=profile.chunk is not None)
    n = len(units)

    def rng(step: int) -> np.random.Generator:
        return np.random.default_rng([seed, step])

    ttft_ms = draw_ttft_ms(profile.ttft, units.recorded_ms[0], rng(RNG_TTFT), rid)
    self_pool = GapPool.from_recordings([recording]) if profile.itl.kind == "empirical" else None
    gaps_ms = draw_gaps_ms(profile, units, rng(RNG_ITL), rid, self_pool)
    first_ms = max(ttft_ms, profile.headers_ms or 0.0)

    # Stalls: extra_ms[i] is added just before unit i (i = 0 delays the first token).
    extra_ms = np.zeros(n)
    tokens_before = np.concatenate([[0], np.cumsum(units.tokens)[:-1]])
    for after_tokens, ms in profile.stalls.at:
        i = int(np.searchsorted(tokens_before, after_tokens, side="left"))
        if i < n:
            extra_ms[i] += ms
    _, poisson_ms = draw_poisson_stalls(
        profile.stalls, gaps_ms, rng(RNG_STALL_COUNT), rng(RNG_STALL_MS)
    )
    extra_ms[1:] += poisson_ms
    times_ms = first_ms + extra_ms[0] + np.concatenate([[0.0], np.cumsum(gaps_ms + extra_ms[1:])])

    last_src_t = chunks[-1].t_ms
    end = recording.end
    tail_ms = 0.0
    if end is not None and end.t_ms is not None and last_src_t is not None:
        tail_ms = max(end.t_ms - last_src_t, 0.0)

    # Error injection: keep the units whose tokens all come before token N.
    kept = n
    if profile.error_at is not None:
        kept = int(np.searchsorted(np.cumsum(units.tokens), profile.error_at.token, side="right"))

    others = _others_by_position(recording)
    breaks_after = {p - 1 for p in others if p > 0}
    bounds = _group_bounds(units, kept, profile, breaks_after, rng(RNG_CHUNK))
    if bounds:
        # An event arrives with its last token. TTFT counts the first event with text (an
        # empty role-only chunk does not count): shift so that event comes at the TTFT.
        anchor = next((stop for start, stop in bounds if any(units.texts[start:stop])),
                      bounds[0][1])  # fmt: skip
        times_ms = np.maximum(times_ms - (times_ms[anchor - 1] - times_ms[0]), 0.0)
    # An injected error comes when the next token would have, or where the end would be.
    error_t_ms = round(float(times_ms[kept] if kept < n else times_ms[-1] + tail_ms), 3)
    events = _assemble(recording, units, times_ms, kept, first_ms, bounds, others)
    if profile.error_at is not None:
        err = profile.error_at
        events.append(ErrorEvent(t_ms=error_t_ms, error={"type": err.type, "message": err.message}))
        new_end: End | None = End(t_ms=error_t_ms, finish_reason="error", usage=None)
    elif end is not None:
        last_ms = float(times_ms[-1])
        new_end = End(
            t_ms=round(last_ms + tail_ms, 3),
            finish_reason=end.finish_reason,
            usage=copy.deepcopy(end.usage),
            extra=copy.deepcopy(end.extra),
        )
    else:
        new_end = None
    header = _schedule_header(recording.header, profile, seed, first_ms)
    return Recording(header=header, events=events, end=new_end)


def _group_bounds(
    units: Units, kept: int, profile: Profile, breaks_after: set[int], rng: np.random.Generator
) -> list[tuple[int, int]]:
    """(start, stop) unit ranges of the output events."""
    if kept == 0:
        return []
    if profile.chunk is None:
        return [(i, i + 1) for i in range(kept)]
    lo, hi = profile.chunk.min_tokens, profile.chunk.max_tokens
    sizes = rng.integers(lo, hi + 1, size=kept) if hi > lo else np.full(kept, lo)
    # A new event must start at a channel change, around a whole chunk, and after a source
    # chunk that is followed by a meta/error event (so those keep their position).
    barrier = np.zeros(kept, dtype=bool)
    ch = np.asarray(units.channels[:kept])
    src = units.source[:kept]
    whole = units.whole[:kept]
    barrier[1:] = (ch[1:] != ch[:-1]) | whole[1:] | whole[:-1]
    if breaks_after:
        after = np.isin(src[:-1], list(breaks_after)) & (src[1:] != src[:-1])
        barrier[1:] |= after
    bounds = []
    start, g = 0, 0
    sizes_list = sizes.tolist()
    barrier_list = barrier.tolist()
    target = sizes_list[0]
    for i in range(1, kept):
        if barrier_list[i] or i - start >= target:
            bounds.append((start, i))
            start, g = i, g + 1
            target = sizes_list[g]
    bounds.append((start, kept))
    return bounds


def _others_by_position(recording: Recording) -> dict[int, list[Event]]:
    """Meta and error events, keyed by how many source chunks precede them."""
    others: dict[int, list[Event]] = {}
    seen = 0
    for e in recording.events:
        if isinstance(e, Chunk):
            seen += 1
        else:
            others.setdefault(seen, []).append(e)
    return others


def _assemble(
    recording: Recording,
    units: Units,
    times_ms: np.ndarray,
    kept: int,
    first_ms: float,
    bounds: list[tuple[int, int]],
    others: dict[int, list[Event]],
) -> list[Event]:
    """Output events: grouped chunks with meta/error events in their recorded positions."""
    src_chunks = recording.chunks
    # Source chunks whose units were all kept (metas after them survive an injected error).
    complete = len(src_chunks) if kept == len(units) else int(units.source[kept])

    source = units.source.tolist()
    tokens = units.tokens.tolist()
    counted_list = units.counted.tolist()
    whole = units.whole.tolist()
    # Rounded like the replay writer (1 µs), so a schedule in memory equals its file.
    times = np.round(times_ms, 3).tolist()
    n_units = len(units)
    out: list[Event] = []
    # Events before the first chunk (role prelude, tool-call start) keep their place in
    # the wait: their recorded time is scaled by new TTFT / recorded TTFT.
    recorded_first = units.recorded_ms[0]
    for e in others.get(0, []):
        if e.t_ms is None or not np.isfinite(recorded_first) or recorded_first <= 0:
            t = first_ms
        else:
            t = min(e.t_ms * first_ms / recorded_first, first_ms)
        out.append(_moved(e, round(t, 3)))
    for start, stop in bounds:
        t_ms = times[stop - 1]
        if stop - start == 1 and whole[start]:
            c = src_chunks[source[start]]
            out.append(
                Chunk(
                    t_ms=t_ms,
                    text=c.text,
                    channel=c.channel,
                    n_tokens=c.n_tokens,
                    extra=copy.deepcopy(c.extra) if c.extra else {},
                )
            )
        else:
            counted = all(counted_list[start:stop])
            out.append(
                Chunk(
                    t_ms=t_ms,
                    text="".join(units.texts[start:stop]),
                    channel=units.channels[start],
                    n_tokens=sum(tokens[start:stop]) if counted else None,
                )
            )
        last_src = source[stop - 1]
        chunk_done = stop == n_units or source[stop] != last_src
        if chunk_done and last_src + 1 <= complete:
            out.extend(_moved(e, t_ms) for e in others.get(last_src + 1, []))
    return out


def _moved(e: Event, t_ms: float) -> Event:
    moved = copy.deepcopy(e)
    moved.t_ms = t_ms
    return moved


def _schedule_header(src: Header, profile: Profile, seed: int, first_ms: float) -> Header:
    header = copy.deepcopy(src)
    header.id = schedule_id(src.id, profile, seed)
    header.retime = {"from": src.id, "seed": seed, "profile": profile.to_table()}
    http = dict(header.extra.get("http") or {})
    if profile.headers_ms is not None:
        http["headers_ms"] = profile.headers_ms
    elif isinstance(http.get("headers_ms"), int | float):
        http["headers_ms"] = min(float(http["headers_ms"]), first_ms)
    if http:
        header.extra["http"] = http
    return header
