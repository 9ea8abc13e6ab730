"""Stream metrics: TTFT, inter-token gaps, TPOT, stalls and throughput, each definition named.

Benchmark tools disagree on what "TTFT" and "ITL" mean (is a role-only prelude a token? is
reasoning output? is TTFT a gap?), so every number here says which definition it uses.
All times are milliseconds from the moment the request was sent (the recording's clock).

Definitions
-----------
output chunk
    A chunk on channel ``content`` or ``reasoning`` whose text is not empty. Tool-call chunks
    (channel ``tool``) and empty chunks (a role-only prelude) are not output; see
    ``uxlab.streams.stream_arrays.OUTPUT_CHANNELS``.
``ttft_ms`` (TTFT, content)
    Time of the first output chunk: what a reader sees first, reasoning included.
``ttfo_ms`` (time to first output)
    Time of the first thing of any kind an agent's user would see or act on: a non-empty
    chunk on any channel (content, reasoning or a tool call's arguments) or a tool call's
    start (its name). Equal to ``ttft_ms`` for a chat answer; a turn that only calls a tool
    has no TTFT but has a TTFO. AIPerf's ``time_to_first_token`` counts the same responses
    on OpenAI Chat streams (reasoning and tool-call deltas with a name or arguments); its
    ``time_to_first_output_token`` is another thing (the first non-reasoning output).
``n_tool_calls``, ``n_incomplete_tool_calls``
    Tool calls (`uxlab.streams.tool_calls`), and those whose pieces never completed.
``ttft_first_event_ms`` (TTFT, first event)
    Time of the first event of any kind: role prelude, ping, empty chunk, error or end.
``ttst_ms`` (time to second token)
    The first output chunk's time when it carries two or more tokens, else the time of the
    second output chunk: an absolute time from the request, like TTFT.
``second_token_gap_ms``
    ``ttst_ms - ttft_ms``: the wait between the first and the second token (0 when the first
    chunk carries two tokens). AIPerf's and GenAI-Perf's "time to second token" is this gap.
``timing``
    Where the chunk times come from: ``recorded`` (the stream's own times: measured, or the
    schedule a generated or shaped stream is played on), ``synthetic`` (the source kept only
    some moments, e.g. TTFT and the end, and the importer filled in the times between; the
    header's ``source.timing`` starts with ``synthetic``) or ``none`` (no times). Synthetic
    gaps are not measurements: ITL, stalls, TTST and the second-token gap are left out
    (null) for such recordings and their gaps are not pooled, unless
    ``include_synthetic=True``. TTFT, e2e and TPOT come from the kept moments and stay.
``itl_ms`` (inter-token latency, per gap)
    Gaps between consecutive output chunks, one sample per gap, not divided by the tokens a
    chunk carries (vLLM's convention). TTFT is not a gap. Summaries: ``mean, p50, p90, p99,
    max`` (linear-interpolated percentiles), ``cv`` (population std / mean) and ``lag1``
    (lag-1 autocorrelation of the gaps: positive when slow gaps follow slow gaps).
``stalls``
    Gaps between output chunks longer than 250 ms (``over_250``) and than 1000 ms
    (``over_1000``), and the longest gap (``longest_ms``). TTFT itself is never a stall.
``tpot_ms`` (time per output token)
    ``(t_last - t_first) / (tokens - 1)`` over output chunks, where ``tokens`` is the sum of
    ``n_tokens`` when every output chunk carries it, else the number of output chunks.
``decode_tokens_per_s``
    ``1000 / tpot_ms``: tokens per second after the first one.
``server_decode_tokens_per_s``
    The server's own decode rate where the stream reports it (Ollama's ``eval_count /
    eval_duration`` in the end's usage), to read beside ``decode_tokens_per_s``.
``chars_per_s``
    Characters of output after the first output chunk, divided by ``t_last - t_first`` in
    seconds: how fast text is revealed once it has started.
``tokens_per_chunk``
    ``n_tokens / n_output_chunks`` when ``n_tokens`` is known (chunking: 1.0 means one token
    per event).
``e2e_ms``
    Time of the ``end`` event (missing for a truncated stream, or when the end's time is
    unknown); shown even when the chunks' times are not known (a HAR import).

A recording without timing (an output chunk with ``t_ms`` null) gets NaN for every timing
metric and still reports its counts and characters.

Everything is computed with numpy over one flat array of all output chunks of all recordings
(offsets per recording, ``np.diff``, grouped sorting for percentiles), so 10,000 recordings
of 500 chunks take a fraction of a second once parsed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from uxlab.streams.recording import Recording
from uxlab.streams.stream_arrays import OUTPUT_CHANNELS, StreamArrays

if TYPE_CHECKING:
    import pandas as pd

STALL_THRESHOLDS_MS: tuple[int, int] = (250, 1000)
"""A gap between output chunks longer than these is a stall (strictly greater)."""

ITL_PERCENTILES: tuple[int, ...] = (50, 90, 99)

#: Column order of `describe_many`.
COLUMNS: tuple[str, ...] = (
    "id",
    "n_chunks",
    "n_output_chunks",
    "n_reasoning_chunks",
    "n_tool_chunks",
    "n_tool_calls",
    "n_incomplete_tool_calls",
    "n_tokens",
    "n_chars",
    "ttft_ms",
    "ttfo_ms",
    "ttft_first_event_ms",
    "ttst_ms",
    "second_token_gap_ms",
    "e2e_ms",
    "itl_mean_ms",
    "itl_p50_ms",
    "itl_p90_ms",
    "itl_p99_ms",
    "itl_max_ms",
    "itl_cv",
    "itl_lag1",
    "tpot_ms",
    "decode_tokens_per_s",
    "server_decode_tokens_per_s",
    "chars_per_s",
    "tokens_per_chunk",
    "stalls_over_250",
    "stalls_over_1000",
    "stall_longest_ms",
    "finish_reason",
    "error",
    "truncated",
    "has_timing",
    "timing",
)

TIMINGS: tuple[str, ...] = ("recorded", "synthetic", "none")
"""The values of the `timing` metric (see the module docstring)."""


def _as_arrays(recs: Sequence[Recording] | StreamArrays) -> StreamArrays:
    return recs if isinstance(recs, StreamArrays) else StreamArrays.from_recordings(recs)


def grouped_percentiles(
    values: np.ndarray, groups: np.ndarray, n_groups: int, qs: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """Percentiles of `values` within each group (numpy's linear method), vectorised.

    Returns an array of shape (len(qs), n_groups) (NaN for empty groups) and the group sizes.
    """
    sizes = np.bincount(groups, minlength=n_groups)
    group_starts = np.cumsum(sizes) - sizes
    if len(values) >= 32 * n_groups and (groups[1:] >= groups[:-1]).all():
        # Long groups one after the other (recordings of many chunks): sort each slice in
        # place, ~4x faster than one argsort of everything.
        sorted_values = values.copy()
        for start, size in zip(group_starts.tolist(), sizes.tolist(), strict=True):
            if size > 1:
                sorted_values[start : start + size].sort()
    else:
        # Sort within groups with one argsort: offset each group past the previous one's
        # values (an offset key sorts ~5x faster than np.lexsort). Only the order comes from
        # the key: the values read back are the exact originals.
        span = float(values.max() - min(values.min(), 0.0)) + 1.0 if len(values) else 1.0
        order = np.argsort(values + groups * span, kind="quicksort")
        sorted_values = values[order]
    out = np.full((len(qs), n_groups), np.nan)
    has = sizes > 0
    n = sizes[has]
    base = group_starts[has]
    for row, q in enumerate(qs):
        pos = q / 100.0 * (n - 1)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, n - 1)
        frac = pos - lo
        v_lo = sorted_values[base + lo]
        v_hi = sorted_values[base + hi]
        out[row, has] = v_lo + (v_hi - v_lo) * frac
    return out, sizes


def linear_percentiles(values: np.ndarray, qs: Sequence[float]) -> list[float]:
    """`np.percentile(values, qs)` (its default, linear method), the same floats bit for bit,
    of a non-empty 1-d array without NaN: a partition of a copy at the few places needed.

    `np.percentile` itself imports `numpy.ma` on its first call (8 ms of `uxlab inspect`'s
    start-up, about 0.15 s) and sorts out the places with `np.unique`."""
    n = len(values)
    places = [(n - 1) * (q / 100) for q in qs]  # numpy: (n - 1) * (q / 100), in float64
    lows = [min(math.floor(p), n - 1) for p in places]
    highs = [min(low + 1, n - 1) for low in lows]
    parted = np.partition(values, sorted({0, n - 1, *lows, *highs}))
    out = []
    for place, low, high in zip(places, lows, highs, strict=True):
        a, b = float(parted[low]), float(parted[high])
        t = place - low
        if place >= n - 1:  # numpy takes the last value
            out.append(float(parted[n - 1]))
        elif t >= 0.5:  # numpy's `_lerp`: from the nearer end
            out.append(b - (b - a) * (1 - t))
        else:
            out.append(a + (b - a) * t)
    return out


def describe_many(
    recs: Sequence[Recording] | StreamArrays, include_synthetic: bool = False
) -> pd.DataFrame:
    """One row per recording with every metric of the module docstring (columns `COLUMNS`).

    Timing metrics are NaN where undefined (no output, one chunk, no timing, truncated, or
    synthetic gaps unless `include_synthetic`).
    """
    import pandas as pd

    return pd.DataFrame(describe_columns(recs, include_synthetic), columns=list(COLUMNS))


def describe_columns(
    recs: Sequence[Recording] | StreamArrays, include_synthetic: bool = False
) -> dict[str, Any]:
    """`describe_many` as a dict of columns (numpy arrays and lists), without pandas.

    For callers that only print or write the numbers (`uxlab inspect`): importing pandas
    takes longer than the metrics of a thousand recordings.
    """
    a = _as_arrays(recs)
    n_recs = len(a)
    counts = a.n_output_chunks
    timed = a.has_timing
    synthetic = a.is_synthetic
    gaps_known = timed if include_synthetic else timed & ~synthetic
    nonempty = counts > 0
    first_idx = np.minimum(a.starts[:-1], max(len(a.t_ms) - 1, 0))
    last_idx = np.maximum(a.starts[1:] - 1, 0)
    ok_t = nonempty & timed
    t_first = _at(a.t_ms, first_idx, ok_t, n_recs)
    decode_ms = _at(a.t_ms, last_idx, ok_t, n_recs) - t_first
    tokens = _token_columns(a, nonempty, decode_ms)
    ttst_ms = _ttst(a, first_idx, t_first, ok_t, gaps_known)
    chars_total, chars_per_s = _char_columns(a, first_idx, decode_ms)
    gaps = _gap_columns(a, include_synthetic, gaps_known)
    return {
        "id": a.ids,
        "n_chunks": a.n_chunks,
        "n_output_chunks": counts,
        "n_reasoning_chunks": a.n_reasoning_chunks,
        "n_tool_chunks": a.n_tool_chunks,
        "n_tool_calls": a.n_tool_calls,
        "n_incomplete_tool_calls": a.n_incomplete_tool_calls,
        "n_tokens": tokens["n_tokens"],
        "n_chars": chars_total,
        "ttft_ms": t_first,
        "ttfo_ms": a.first_output_ms,
        "ttft_first_event_ms": np.where(timed, a.first_event_ms, np.nan),
        "ttst_ms": ttst_ms,
        "second_token_gap_ms": ttst_ms - t_first,
        "e2e_ms": a.end_ms,  # the end's own time, known or not, whatever the chunks' times
        "itl_mean_ms": gaps["itl_mean_ms"],
        "itl_p50_ms": gaps["itl_p50_ms"],
        "itl_p90_ms": gaps["itl_p90_ms"],
        "itl_p99_ms": gaps["itl_p99_ms"],
        "itl_max_ms": gaps["itl_max_ms"],
        "itl_cv": gaps["itl_cv"],
        "itl_lag1": gaps["itl_lag1"],
        "tpot_ms": tokens["tpot_ms"],
        "decode_tokens_per_s": tokens["decode_tokens_per_s"],
        "server_decode_tokens_per_s": a.server_decode_tokens_per_s,
        "chars_per_s": chars_per_s,
        "tokens_per_chunk": tokens["tokens_per_chunk"],
        "stalls_over_250": gaps["stalls_over_250"],
        "stalls_over_1000": gaps["stalls_over_1000"],
        "stall_longest_ms": gaps["itl_max_ms"],
        "finish_reason": a.finish_reason,
        "error": a.error,
        "truncated": a.truncated,
        "has_timing": timed,
        "timing": np.where(timed, np.where(synthetic, "synthetic", "recorded"), "none").tolist(),
    }


def _at(values: np.ndarray, idx: np.ndarray, ok: np.ndarray, n_recs: int) -> np.ndarray:
    """Per recording: `values[idx]` where `ok`, NaN elsewhere."""
    res = np.full(n_recs, np.nan)
    if len(values):
        res[ok] = values[idx[ok]]
    return res


def _token_columns(
    a: StreamArrays, nonempty: np.ndarray, decode_ms: np.ndarray
) -> dict[str, np.ndarray]:
    """Tokens and the rates they give: summed n_tokens when every output chunk has it,
    else the chunk count stands in for the rates (and n_tokens is NaN)."""
    n_recs, counts, rec_of = len(a), a.n_output_chunks, a.recording_of_chunk()
    unknown_at = np.isnan(a.n_tokens)
    if unknown_at.any():
        tok_unknown = np.bincount(rec_of[unknown_at], minlength=n_recs) > 0
        weights = np.nan_to_num(a.n_tokens)
    else:  # every chunk's tokens known (what uxlab writes): nothing to count or replace
        tok_unknown = np.zeros(n_recs, dtype=bool)
        weights = a.n_tokens
    tok_sum = np.bincount(rec_of, weights=weights, minlength=n_recs)
    n_tokens = np.where(tok_unknown | ~nonempty, np.nan, tok_sum)
    n_tokens[~nonempty] = 0.0
    tokens_for_tpot = np.where(np.isnan(n_tokens), counts, n_tokens).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        tpot_ms = np.where(tokens_for_tpot > 1, decode_ms / (tokens_for_tpot - 1), np.nan)
        return {
            "n_tokens": n_tokens,
            "tpot_ms": tpot_ms,
            "decode_tokens_per_s": np.where(tpot_ms > 0, 1000.0 / tpot_ms, np.nan),
            "tokens_per_chunk": np.where(nonempty, n_tokens / np.maximum(counts, 1), np.nan),
        }


def _ttst(
    a: StreamArrays,
    first_idx: np.ndarray,
    t_first: np.ndarray,
    ok_t: np.ndarray,
    gaps_known: np.ndarray,
) -> np.ndarray:
    """TTST: the first chunk if it carries two or more tokens, else the second chunk."""
    n_recs, counts = len(a), a.n_output_chunks
    first_tokens = _at(a.n_tokens, first_idx, counts > 0, n_recs)
    second_idx = np.minimum(first_idx + 1, max(len(a.t_ms) - 1, 0))
    t_second = _at(a.t_ms, second_idx, ok_t & (counts >= 2), n_recs)
    ttst_ms = np.where(first_tokens >= 2, t_first, t_second)
    return np.where(gaps_known, ttst_ms, np.nan)  # a made-up second chunk is no TTST


def _char_columns(
    a: StreamArrays, first_idx: np.ndarray, decode_ms: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(characters in all, characters per second after the first chunk)."""
    n_recs = len(a)
    chars_total = np.bincount(a.recording_of_chunk(), weights=a.n_chars, minlength=n_recs)
    chars_total = chars_total.astype(np.int64)
    chars_first = _at(a.n_chars, first_idx, a.n_output_chunks > 0, n_recs)  # NaN-filled
    with np.errstate(divide="ignore", invalid="ignore"):
        chars_per_s = np.where(
            decode_ms > 0, (chars_total - chars_first) / (decode_ms / 1000), np.nan
        )
    return chars_total, chars_per_s


def _gap_columns(
    a: StreamArrays, include_synthetic: bool, gaps_known: np.ndarray
) -> dict[str, np.ndarray]:
    """The inter-chunk gaps' statistics, per recording (consecutive output chunks)."""
    n_recs = len(a)
    gaps_ms, gap_rec = a.measured_gaps(include_synthetic)
    pct, n_gaps = grouped_percentiles(gaps_ms, gap_rec, n_recs, (*ITL_PERCENTILES, 100))
    has_gaps = n_gaps > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.bincount(gap_rec, weights=gaps_ms, minlength=n_recs) / n_gaps
        dev = gaps_ms - mean[gap_rec]
        var = np.bincount(gap_rec, weights=dev * dev, minlength=n_recs) / n_gaps
        cv = np.where(mean > 0, np.sqrt(var) / mean, np.nan)
        pair = gap_rec[1:] == gap_rec[:-1]
        lag_num = np.bincount(
            gap_rec[1:][pair], weights=(dev[1:] * dev[:-1])[pair], minlength=n_recs
        )
        lag_den = var * n_gaps
        lag1 = np.where((n_gaps >= 3) & (lag_den > 0), lag_num / lag_den, np.nan)
    over_250, over_1000 = (  # counted as integers: a bincount with weights sums floats
        np.where(gaps_known, np.bincount(gap_rec[gaps_ms > thr], minlength=n_recs), np.nan)
        for thr in STALL_THRESHOLDS_MS
    )
    return {
        "itl_mean_ms": np.where(has_gaps, mean, np.nan),
        "itl_p50_ms": pct[0],
        "itl_p90_ms": pct[1],
        "itl_p99_ms": pct[2],
        "itl_max_ms": pct[3],
        "itl_cv": np.where(has_gaps, cv, np.nan),
        "itl_lag1": lag1,
        "stalls_over_250": over_250,
        "stalls_over_1000": over_1000,
    }


def nest(row: Mapping[str, Any], ndigits: int | None = None) -> dict[str, Any]:
    """One `describe_many` row as the nested, JSON-ready dict that `describe` returns.

    NaN becomes None; with `ndigits`, numbers are rounded (3 = to the microsecond).
    """

    def _num(value: Any) -> float | None:
        if value is None:
            return None
        number = float(value)
        if math.isnan(number):
            return None
        return number if ndigits is None else round(number, ndigits)

    def _count(value: Any) -> int | None:
        value = _num(value)
        return None if value is None else int(value)

    return {
        "id": row["id"],
        "n_chunks": _count(row["n_chunks"]),
        "n_output_chunks": _count(row["n_output_chunks"]),
        "n_reasoning_chunks": _count(row["n_reasoning_chunks"]),
        "n_tool_chunks": _count(row["n_tool_chunks"]),
        "n_tool_calls": _count(row["n_tool_calls"]),
        "n_incomplete_tool_calls": _count(row["n_incomplete_tool_calls"]),
        "n_tokens": _count(row["n_tokens"]),
        "n_chars": _count(row["n_chars"]),
        "ttft_ms": _num(row["ttft_ms"]),
        "ttfo_ms": _num(row["ttfo_ms"]),
        "ttft_first_event_ms": _num(row["ttft_first_event_ms"]),
        "ttst_ms": _num(row["ttst_ms"]),
        "second_token_gap_ms": _num(row["second_token_gap_ms"]),
        "e2e_ms": _num(row["e2e_ms"]),
        "itl_ms": {
            "mean": _num(row["itl_mean_ms"]),
            "p50": _num(row["itl_p50_ms"]),
            "p90": _num(row["itl_p90_ms"]),
            "p99": _num(row["itl_p99_ms"]),
            "max": _num(row["itl_max_ms"]),
            "cv": _num(row["itl_cv"]),
            "lag1": _num(row["itl_lag1"]),
        },
        "tpot_ms": _num(row["tpot_ms"]),
        "decode_tokens_per_s": _num(row["decode_tokens_per_s"]),
        "server_decode_tokens_per_s": _num(row["server_decode_tokens_per_s"]),
        "chars_per_s": _num(row["chars_per_s"]),
        "tokens_per_chunk": _num(row["tokens_per_chunk"]),
        "stalls": {
            "over_250": _count(row["stalls_over_250"]),
            "over_1000": _count(row["stalls_over_1000"]),
            "longest_ms": _num(row["stall_longest_ms"]),
        },
        "finish_reason": row["finish_reason"],
        "error": row["error"],
        "truncated": bool(row["truncated"]),
        "has_timing": bool(row["has_timing"]),
        "timing": row["timing"],
    }


def is_output(channel: str, n_chars: int) -> bool:
    """Whether a chunk of `n_chars` characters on `channel` is an output chunk (the module
    docstring): not empty, on one of `OUTPUT_CHANNELS`. For what was played or shown."""
    return n_chars > 0 and channel in OUTPUT_CHANNELS


def output_times_ms(rec: Recording) -> list[float] | None:
    """The times of `rec`'s output chunks in order, or None when one of them has no time
    (then every timing metric is undefined, as in `describe_many`)."""
    times: list[float] = []
    for chunk in rec.chunks:
        if chunk.text and chunk.channel in OUTPUT_CHANNELS:
            if chunk.t_ms is None:
                return None
            times.append(chunk.t_ms)
    return times


def ttft_of(rec: Recording) -> float | None:
    """``ttft_ms`` of one recording (the module docstring; `describe`'s value, without the
    other metrics): its first output chunk's time, None without output or timing."""
    times = output_times_ms(rec)
    return times[0] if times else None


def describe(rec: Recording, include_synthetic: bool = False) -> dict[str, Any]:
    """The metrics of one recording as a nested dict (``itl_ms: {mean, p50, ...}``, ``stalls``).

    Same definitions as `describe_many` (see the module docstring); NaN becomes None.
    """
    return nest(_first_row(describe_columns([rec], include_synthetic)))


def _first_row(columns: Mapping[str, Any]) -> dict[str, Any]:
    return {name: values[0] for name, values in columns.items()}


def summarize(
    recs: Sequence[Recording] | StreamArrays,
    table: pd.DataFrame | Mapping[str, Any] | None = None,
    include_synthetic: bool = False,
) -> dict[str, Any]:
    """A pooled summary over many recordings (pass `table` if `describe_many` already ran).

    ITL and stall figures pool the gaps of all recordings (every gap weighs the same, so long
    recordings weigh more), synthetic gaps left out unless `include_synthetic`; TTFT and e2e
    figures are percentiles across recordings.
    """
    a = _as_arrays(recs)
    df = describe_columns(a, include_synthetic) if table is None else table
    return pooled_summary(df, a.measured_gaps(include_synthetic)[0], include_synthetic)


def pooled_summary(
    table: pd.DataFrame | Mapping[str, Any], gaps_ms: np.ndarray, include_synthetic: bool = False
) -> dict[str, Any]:
    """`summarize` from a `describe_columns` table and the pooled ITL gaps of its recordings.

    For tables put together from parts (the groups of files `uxlab inspect` reads in
    parallel): `gaps_ms` must hold the gaps in the table's recording order.
    """
    df = table
    gap_pct: dict[float, float] = {}
    if len(gaps_ms):  # one pass for the four pooled percentiles of millions of gaps
        qs = (50, 90, 99, 100)
        gap_pct = dict(zip(qs, linear_percentiles(gaps_ms, qs), strict=True))

    def pct(values: np.ndarray, q: float) -> float | None:
        if values is gaps_ms:
            return gap_pct.get(q)
        values = values[~np.isnan(values)]
        return linear_percentiles(values, (q,))[0] if len(values) else None

    ttft = np.asarray(df["ttft_ms"], dtype=float)
    ttfo = np.asarray(df["ttfo_ms"], dtype=float)
    e2e = np.asarray(df["e2e_ms"], dtype=float)
    over = {thr: int((gaps_ms > thr).sum()) for thr in STALL_THRESHOLDS_MS}
    stalled = np.nan_to_num(np.asarray(df["stalls_over_250"], dtype=float)) > 0
    return {
        "n_recordings": len(df["id"]),
        "n_gaps": len(gaps_ms),
        "ttft_ms": {"p50": pct(ttft, 50), "p90": pct(ttft, 90), "max": pct(ttft, 100)},
        "ttfo_ms": {"p50": pct(ttfo, 50), "p90": pct(ttfo, 90), "max": pct(ttfo, 100)},
        "ttfo_only": int((np.isnan(ttft) & ~np.isnan(ttfo)).sum()),
        "tool_calls": int(np.asarray(df["n_tool_calls"]).sum()),
        "incomplete_tool_calls": int(np.asarray(df["n_incomplete_tool_calls"]).sum()),
        "e2e_ms": {"p50": pct(e2e, 50), "p90": pct(e2e, 90), "max": pct(e2e, 100)},
        "itl_ms": {
            "mean": float(gaps_ms.mean()) if len(gaps_ms) else None,
            "p50": pct(gaps_ms, 50),
            "p90": pct(gaps_ms, 90),
            "p99": pct(gaps_ms, 99),
            "max": pct(gaps_ms, 100),
        },
        "stalls": {
            "over_250": over[STALL_THRESHOLDS_MS[0]],
            "over_1000": over[STALL_THRESHOLDS_MS[1]],
            "recordings_with_stall": int(stalled.sum()),
            "longest_ms": pct(gaps_ms, 100),
        },
        "errors": sum(e is not None for e in df["error"]),
        "truncated": int(np.asarray(df["truncated"], dtype=bool).sum()),
        "without_timing": int((~np.asarray(df["has_timing"], dtype=bool)).sum()),
        "synthetic_timing": sum(t == "synthetic" for t in df["timing"]),
        "synthetic_gaps_pooled": include_synthetic,
    }
