"""The scored-recordings section: a corpus of recordings scored against the fitted threshold
and abandonment model, and its blocks."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysis.report.blocks import Bullets, Heading, Para, Table
from analysis.report.data import ReportData
from number_text import share_interval

if TYPE_CHECKING:
    from analysis.report.blocks import Block


def score_part(data: ReportData) -> None:
    from analysis.score import ScoreError, read_corpus_timings, score_corpus

    corpus = data.options.score_corpus
    if corpus is None:  # (asked for only with --score)
        return
    try:
        timings, errors = read_corpus_timings(corpus)
    except ScoreError as exc:
        data.notes.append(f"Scoring skipped: {exc}")
        return
    n_draws = max(200, min(data.options.n_boot, 2000))
    draws, data.score_threshold_source = threshold_draws(data, n_draws)
    aft = data.survival.aft if data.survival is not None else None
    from analysis.score import STREAM_METRIC_FOR_FACTOR

    fixed = {
        f: float(data.kept[f].min()) for f in data.factors if f not in STREAM_METRIC_FOR_FACTOR
    }
    data.score_fixed_levels = fixed
    data.score = score_corpus(
        timings,
        data.stimulus,
        threshold_draws_ms=draws if draws is not None and draws.size else None,
        aft=aft,
        fixed_levels=fixed,
        n_draws=n_draws,
        seed=data.options.seed,
    )
    data.score_errors = errors


def threshold_draws(data: ReportData, n_draws: int) -> tuple[np.ndarray | None, str]:
    """Draws of the 50% threshold the report prints, and where they come from in words: its
    population interval as a log-normal (the participant jackknife-t: people resampled, not
    trials); below the population minimum, the pooled fit's trial-level bootstrap (these
    participants only); none when the report withholds the threshold."""
    from analysis.score import threshold_draws_from_ci

    p = data.psychometric
    if p is None:
        return None, "no yes/no threshold"
    mid = p.population.set_index("level").loc[0.5]
    if np.isfinite(mid.estimate) and np.isfinite(mid.ci_low) and np.isfinite(mid.ci_high):
        draws = threshold_draws_from_ci(
            float(mid.estimate),
            (float(mid.ci_low), float(mid.ci_high)),
            n_draws,
            data.options.seed,
        )
        return draws, (
            "the 50% threshold drawn from the population interval the report prints (a "
            "log-normal with that 95% interval), so the share carries the spread between "
            "people"
        )
    if np.isfinite(mid.estimate):
        draws = p.pooled.threshold_samples(0.5)
        return draws[np.isfinite(draws)], (
            "the 50% threshold drawn from the pooled fit's bootstrap of the trials, without a "
            "population interval: it describes these participants only"
        )
    return None, "no 50% threshold: the report withholds it (see the psychometric section)"


def score_blocks(data: ReportData) -> list[Block]:
    """The scored-recordings section."""
    blocks: list[Block] = []
    if data.score is not None:
        blocks.append(Heading("Scored recordings"))
        blocks.append(
            Para(
                "Per source: the share of streams whose measured value lies past the pooled "
                "50% threshold and the predicted share abandoned before the stream ends, with "
                f"95% intervals: {data.score_threshold_source}; the AFT "
                "model's parameter uncertainty for the share abandoned."
            )
        )
        if data.score_fixed_levels:
            held = ", ".join(f"{k}={v:g}" for k, v in data.score_fixed_levels.items())
            blocks.append(
                Para(
                    f"Study factors a recording cannot supply are held at their "
                    f"lowest level for the prediction: {held}."
                )
            )
        blocks.append(Table(_score_table(data.score), "Scored corpus"))
        if data.score_errors:
            blocks.append(Bullets([f"skipped: {e}" for e in data.score_errors[:20]]))
    return blocks


def _score_table(score: pd.DataFrame) -> pd.DataFrame:
    """The scored corpus with each share and its interval in one cell, as percentages."""
    columns = ["source", "n_streams", "median_ttft_ms", "median_ttfo_ms", "median_itl_ms"]
    out = score[[c for c in columns if c in score]].rename(
        columns={
            "n_streams": "streams",
            "median_ttft_ms": "median TTFT (ms)",
            "median_ttfo_ms": "median time to first output (ms)",
            "median_itl_ms": "median ITL (ms/token)",
        }
    )

    def pct(row: pd.Series, est: str, lo: str, hi: str) -> str:
        return share_interval(row[est], row[lo], row[hi])

    if "share_past_threshold" in score:
        out["past the 50% threshold [95% CI]"] = [
            pct(r, "share_past_threshold", "share_ci_low", "share_ci_high")
            for _, r in score.iterrows()
        ]
    if "p_abandon" in score:
        out["predicted abandoned [95% CI]"] = [
            pct(r, "p_abandon", "p_abandon_ci_low", "p_abandon_ci_high")
            for _, r in score.iterrows()
        ]
    return out
