"""Scoring a corpus of recordings with the fitted models (`uxlab report --score CORPUS`).

Replay files (README contract 1, `*.jsonl`) are read here with `json` directly, so
`analysis` stays independent of `uxlab`. Per stream: TTFT = time of the first non-empty
content or reasoning chunk (a role-only prelude does not count), TTFO = time of the first
output of any kind (a chunk on any channel, a tool call's start included: an agent's turn
that only calls a tool has a TTFO and no TTFT), the median inter-token gap (a gap between
chunks divided by the later chunk's `n_tokens` when known), and the end time. A stream
without a TTFT counts for none of the shares that need one.

Per source (vendor/model): the share of streams whose TTFT lies past the fitted 50%
threshold, and the predicted share that would be abandoned before the stream ends under the
abandonment model. Uncertainty is carried over from the fits: each of `n_draws` draws takes a
threshold from the caller's draws (the report passes its population interval as a
log-normal, `threshold_draws_from_ci`) and AFT parameters from their robust sampling
distribution, and the interval is the 2.5-97.5 percentile of the per-source figure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

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

    @property
    def tokens_per_s(self) -> float:
        return 1000.0 / self.itl_median_ms if self.itl_median_ms > 0 else float("nan")


def _source_label(header: dict) -> str:
    source = header.get("source") or {}
    parts = [str(source[k]) for k in ("vendor", "model") if source.get(k)]
    return "/".join(parts) or str(source.get("origin") or source.get("kind") or "unknown")


def read_stream_timing(path: Path) -> StreamTiming:
    """Read one replay file; raise ScoreError naming file:line for what cannot be used."""
    header: dict | None = None
    chunk_times: list[float] = []
    chunk_tokens: list[float] = []
    ttft_ms = end_ms = ttfo_ms = None
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
            elif kind == "chunk" and event.get("t_ms") is not None:
                if not event.get("text"):
                    continue
                if ttfo_ms is None:
                    ttfo_ms = float(event["t_ms"])
                if event.get("channel", "content") not in ("content", "reasoning"):
                    continue
                t_ms = float(event["t_ms"])
                if ttft_ms is None:
                    ttft_ms = t_ms
                chunk_times.append(t_ms)
                chunk_tokens.append(float(event.get("n_tokens") or 1))
            elif kind == "end":
                end_ms = event.get("t_ms")
    if header is None:
        raise ScoreError(f"{path}:1: empty file (expected a replay header)")
    if ttfo_ms is None:
        raise ScoreError(f"{path}: no timed output of any kind (cannot measure TTFT or TTFO)")
    if end_ms is None:
        end_ms = chunk_times[-1] if chunk_times else ttfo_ms
    gaps = np.diff(chunk_times) / np.asarray(chunk_tokens[1:])
    itl = float(np.median(gaps)) if len(gaps) else float("nan")
    return StreamTiming(
        path=str(path),
        source=_source_label(header),
        ttft_ms=float("nan") if ttft_ms is None else ttft_ms,
        ttfo_ms=ttfo_ms,
        end_ms=float(end_ms),
        itl_median_ms=itl,
        n_chunks=len(chunk_times),
    )


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


def score_corpus(
    timings: pd.DataFrame,
    stimulus: str,
    threshold_draws_ms: np.ndarray | None = None,
    aft=None,
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
        rows.append(row)
    return pd.DataFrame(rows)
