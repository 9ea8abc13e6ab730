"""Scoring a corpus of recordings with the fitted models (`uxlab report --score CORPUS`).

Replay files (README contract 1, `*.jsonl`) are read here with `json` directly, so
`analysis` stays independent of `uxlab`. Per stream: TTFT = time of the first non-empty
content or reasoning chunk (a role-only prelude does not count), TTFO = time of the first
output of any kind (a chunk on any channel, a tool call's start included: an agent's turn
that only calls a tool has a TTFO and no TTFT), the median inter-token gap (a gap between
chunks divided by the later chunk's `n_tokens` when known), and the end time. A stream
without a TTFT counts for none of the shares that need one.

Per source (vendor/model): the share of streams whose TTFT lies past the fitted 50%
threshold, the predicted share that would be abandoned before the stream ends under the
abandonment model, and the predicted share *satisfied* (neither past the threshold nor
abandoned: `satisfied_draws`), which `analysis.costs` divides the cost by. Uncertainty is
carried over from the fits: each of `n_draws` draws takes a threshold from the caller's
draws (the report passes its population interval as a log-normal,
`threshold_draws_from_ci`) and AFT parameters from their robust sampling
distribution, and the interval is the 2.5-97.5 percentile of the per-source figure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from pricing.corpus import source_label
from pricing.cost import TextCounts, request_chars

if TYPE_CHECKING:
    from analysis.survival import AbandonmentAFTFitter

# Study factors a stream's own timing can stand in for.
STREAM_METRIC_FOR_FACTOR = {
    "ttft_ms": "ttft_ms",
    "itl_ms": "itl_median_ms",
    "tokens_per_s": "tokens_per_s",
}


class ScoreError(ValueError):
    """A corpus that cannot be scored (names the file and line)."""


@dataclass
class StreamTiming:
    """The timing of one recorded stream, in ms from the send."""

    path: str
    source: str
    ttft_ms: float
    """NaN for a turn that only calls tools."""
    ttfo_ms: float
    end_ms: float
    itl_median_ms: float
    n_chunks: int
    vendor: str | None = None
    model: str | None = None
    usage: dict[str, Any] | None = None
    """The end event's usage as the source reported it (priced by `analysis.costs`)."""
    failed: bool = False
    """A mid-stream error, an error finish or no end: the request did not complete."""
    text: TextCounts | None = None
    """What an estimate of its tokens needs (`--estimate-usage`)."""
    first_visible_ms: float = float("nan")
    """The first non-empty content chunk (hidden reasoning delays it)."""
    decode_tokens_per_s: float = float("nan")
    """1000 / TPOT, as `uxlab inspect` defines it: (last - first output chunk) / (tokens - 1)
    with tokens the chunks' `n_tokens` when every one carries it, else the chunks."""
    reasoning_shown: bool = False

    @property
    def tokens_per_s(self) -> float:
        return 1000.0 / self.itl_median_ms if self.itl_median_ms > 0 else float("nan")


def read_stream_timing(path: Path) -> StreamTiming:
    """Read one replay file; raise ScoreError naming file:line for what cannot be used."""
    header: dict[str, Any] | None = None
    chunk_times: list[float] = []
    chunk_tokens: list[float] = []
    all_counted = True
    ttft_ms = end_ms = ttfo_ms = None
    end: dict[str, Any] | None = None
    errors = False
    chars = {"content": 0, "reasoning": 0, "tool": 0}
    tokens: dict[str, float | None] = {"content": 0.0, "reasoning": 0.0, "tool": 0.0}
    first_visible_ms = float("nan")
    with open(path, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ScoreError(f"{path}:{line_no}: not JSON ({exc.msg})") from exc
            kind = event.get("type")
            if line_no == 1:
                if kind != "header":
                    raise ScoreError(f"{path}:1: type: expected 'header', got {kind!r}")
                header = event
            elif kind == "meta" and event.get("kind") == "tool_call":
                if ttfo_ms is None and event.get("t_ms") is not None:
                    ttfo_ms = float(event["t_ms"])
            elif kind == "error":
                errors = True
            elif kind == "chunk" and event.get("t_ms") is not None:
                if not event.get("text"):
                    continue
                channel = event.get("channel", "content")
                if channel in chars and isinstance(event["text"], str):
                    chars[channel] += len(event["text"])
                    n = event.get("n_tokens")
                    known = tokens[channel]
                    tokens[channel] = (
                        known + n if isinstance(n, int) and known is not None else None
                    )
                    if channel == "content" and first_visible_ms != first_visible_ms:
                        first_visible_ms = float(event["t_ms"])
                if ttfo_ms is None:
                    ttfo_ms = float(event["t_ms"])
                if event.get("channel", "content") not in ("content", "reasoning"):
                    continue
                t_ms = float(event["t_ms"])
                if ttft_ms is None:
                    ttft_ms = t_ms
                chunk_times.append(t_ms)
                chunk_tokens.append(float(event.get("n_tokens") or 1))
                all_counted = all_counted and isinstance(event.get("n_tokens"), int)
            elif kind == "end":
                end_ms = event.get("t_ms")
                end = event
    if header is None:
        raise ScoreError(f"{path}:1: empty file (expected a replay header)")
    if ttfo_ms is None:
        raise ScoreError(f"{path}: no timed output of any kind (cannot measure TTFT or TTFO)")
    if end_ms is None:
        end_ms = chunk_times[-1] if chunk_times else ttfo_ms
    gaps = np.diff(chunk_times) / np.asarray(chunk_tokens[1:])
    itl = float(np.median(gaps)) if len(gaps) else float("nan")
    raw_source, raw_request = header.get("source"), header.get("request")
    source: dict[str, Any] = raw_source if isinstance(raw_source, dict) else {}
    request: dict[str, Any] = raw_request if isinstance(raw_request, dict) else {}
    visible = [tokens["content"], tokens["tool"]]
    n_out = sum(chunk_tokens) if all_counted else len(chunk_times)
    span_ms = chunk_times[-1] - chunk_times[0] if chunk_times else 0.0
    decode = 1000.0 * (n_out - 1) / span_ms if n_out > 1 and span_ms > 0 else float("nan")
    return StreamTiming(
        path=str(path),
        source=source_label(source),
        ttft_ms=float("nan") if ttft_ms is None else ttft_ms,
        ttfo_ms=ttfo_ms,
        end_ms=float(end_ms),
        itl_median_ms=itl,
        n_chunks=len(chunk_times),
        vendor=_text(source.get("vendor")),
        model=_text(source.get("model")),
        usage=end.get("usage") if end is not None else None,
        failed=errors or end is None or end.get("finish_reason") == "error",
        text=TextCounts(
            request_chars=request_chars(request),
            output_chars=chars["content"] + chars["tool"],
            reasoning_chars=chars["reasoning"],
            output_tokens=None if None in visible else sum(v or 0.0 for v in visible),
            reasoning_tokens=tokens["reasoning"],
        ),
        first_visible_ms=first_visible_ms,
        decode_tokens_per_s=decode,
        reasoning_shown=chars["reasoning"] > 0,
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def read_corpus_timings(corpus: str | Path) -> tuple[pd.DataFrame, list[str]]:
    """Timing of every `*.jsonl` under `corpus` (a file or folder) and the errors of bad files."""
    corpus = Path(corpus)
    if not corpus.exists():
        raise ScoreError(f"{corpus}: no such file or folder")
    paths = [corpus] if corpus.is_file() else sorted(corpus.rglob("*.jsonl"))
    rows, errors = [], []
    for p in paths:
        try:
            timing = read_stream_timing(p)
        except (ScoreError, UnicodeDecodeError) as exc:
            errors.append(str(exc))
            continue
        rows.append({**timing.__dict__, "tokens_per_s": timing.tokens_per_s})
    if not rows:
        raise ScoreError(f"{corpus}: no usable replay files ({len(errors)} bad)")
    return pd.DataFrame(rows), errors


def threshold_draws_from_ci(
    estimate_ms: float, ci_ms: tuple[float, float], n_draws: int, seed: int
) -> np.ndarray:
    """Draws of a threshold when only its CI is known: log-normal matching the 95% CI."""
    lo, hi = np.log(ci_ms[0]), np.log(ci_ms[1])
    sd = max((hi - lo) / (2 * 1.959964), 1e-9)
    return np.exp(np.random.default_rng(seed).normal(np.log(estimate_ms), sd, n_draws))


def _interval(values: np.ndarray) -> tuple[float, float, float]:
    return (
        float(np.median(values)),
        float(np.percentile(values, 2.5)),
        float(np.percentile(values, 97.5)),
    )


def satisfied_draws(
    values: np.ndarray | None, thresholds_ms: np.ndarray | None, p_abandon: np.ndarray | None
) -> np.ndarray | None:
    """Per draw, the predicted share of streams that neither lie past the threshold nor are
    abandoned: the mean over streams of ``[value <= threshold] * (1 - P(abandon))``.

    `thresholds_ms` has one threshold per draw, `p_abandon` one row per draw (streams as
    columns, NaN where the model cannot predict: left out of the mean); a stream without the
    metric (a turn that only calls tools) is not past the threshold. With one of the two
    models only, the share satisfies that one; with neither, None."""
    if thresholds_ms is None and p_abandon is None:
        return None
    if thresholds_ms is not None and values is not None:
        within = values[None, :] <= thresholds_ms[:, None]
        ok = np.where(np.isfinite(values)[None, :], within, True).astype(float)
    else:
        ok = np.ones_like(p_abandon, dtype=float)
    if p_abandon is not None:
        ok = ok * (1.0 - p_abandon)
    with np.errstate(invalid="ignore"):
        return cast(np.ndarray, np.nanmean(ok, axis=1))


def score_corpus(
    timings: pd.DataFrame,
    stimulus: str,
    threshold_draws_ms: np.ndarray | None = None,
    aft: AbandonmentAFTFitter | None = None,
    fixed_levels: dict[str, float] | None = None,
    n_draws: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """Per source: share of streams past the 50% threshold and predicted abandonment, with CIs.

    `stimulus` is the study factor the threshold was fitted on (its stream metric is taken
    from `STREAM_METRIC_FOR_FACTOR`); `aft` is a fitted `AbandonmentAFTFitter`; factors of the
    AFT model with no stream metric are held at `fixed_levels`.
    """
    metric = STREAM_METRIC_FOR_FACTOR.get(stimulus)
    rows = []
    probs = None
    paired_thresholds = None
    if threshold_draws_ms is not None and metric is not None:
        paired_thresholds = np.asarray(threshold_draws_ms, dtype=float)
        if aft is not None and len(paired_thresholds) != n_draws:  # one threshold per AFT draw
            rng = np.random.default_rng(seed + 1)
            paired_thresholds = rng.choice(paired_thresholds, size=n_draws, replace=True)
    if aft is not None:
        levels = pd.DataFrame(index=timings.index)
        for spec in aft.specs_:
            source_col = STREAM_METRIC_FOR_FACTOR.get(spec.factor)
            if source_col is not None:
                levels[spec.factor] = timings[source_col].to_numpy()
            else:
                levels[spec.factor] = (fixed_levels or {}).get(spec.factor, 0.0)
        usable = np.isfinite(levels.to_numpy(dtype=float)).all(axis=1)
        probs = np.full((n_draws, len(timings)), np.nan)
        probs[:, usable] = aft.abandon_probability(
            levels[usable], timings["end_ms"].to_numpy()[usable], n_draws=n_draws, seed=seed
        )
    for source, part in timings.groupby("source"):
        idx = timings.index.get_indexer(part.index)
        row = {
            "source": source,
            "n_streams": len(part),
            "median_ttft_ms": float(part["ttft_ms"].median()),
            "median_ttfo_ms": float(part["ttfo_ms"].median()),
            "median_itl_ms": float(part["itl_median_ms"].median()),
        }
        if threshold_draws_ms is not None and metric is not None:
            values = part[metric].to_numpy()
            values = values[np.isfinite(values)][None, :]  # tool-only turns have no TTFT
            if values.size:
                share = (values > threshold_draws_ms[:, None]).mean(axis=1)
                row["share_past_threshold"], row["share_ci_low"], row["share_ci_high"] = _interval(
                    share
                )
        if probs is not None:
            p = np.nanmean(probs[:, idx], axis=1)
            row["p_abandon"], row["p_abandon_ci_low"], row["p_abandon_ci_high"] = _interval(p)
        values = part[metric].to_numpy(dtype=float) if metric is not None else None
        satisfied = satisfied_draws(
            values, paired_thresholds, None if probs is None else probs[:, idx]
        )
        if satisfied is not None:
            low_high = _interval(satisfied)
            row["p_satisfied"], row["p_satisfied_ci_low"], row["p_satisfied_ci_high"] = low_high
            row["satisfied_from"] = (
                "threshold and abandonment"
                if paired_thresholds is not None and probs is not None
                else ("threshold only" if probs is None else "abandonment only")
            )
        rows.append(row)
    return pd.DataFrame(rows)
