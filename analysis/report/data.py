"""What the report's analyses produce: the options, one dataclass per part and `ReportData`
holding them all, and how a failing part is recorded instead of raised."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from analysis.exclusions import ExclusionResult, ExclusionRules
from analysis.ratings import OrdinalLatencyFitter, RatingSeparation
from analysis.survival import AbandonmentAFTFitter
from analysis.trial_table import TrialTable

THRESHOLD_COLUMNS = [
    "measure",
    "stimulus",
    "group",
    "level",
    "estimate",
    "ci_low",
    "ci_high",
    "n_trials",
    "condition",
    "n_participants",
    "extrapolated",
    "degenerate",
    "estimand",
    "ci_unbounded",
    "simulated_participants",
    "true_value",
    "covers_truth",
    "withheld",
]


# What a pooled psychometric figure estimates (`--estimand`), in words for the report.
ESTIMANDS = {
    "population": "the population curve's point (all participants' trials pooled)",
    "median-person": "the median participant's own point (median of per-person fits)",
}


ABANDON_SHARES = (0.1, 0.5)


@dataclass
class ReportOptions:
    """What to analyse and how."""

    stimulus: str | None = None
    judgement: str | None = None
    rating: str | None = None
    acceptable_at: float | None = None
    n_boot: int = 1000
    seed: int = 0
    rules: ExclusionRules = field(default_factory=ExclusionRules)
    per_participant: bool = True
    progress: bool = False
    score_corpus: Path | None = None
    prices: Any = None  # a pricing.PriceChoice: cost the scored corpus (`--prices`)
    estimate_usage: bool = False  # price recordings without usage from an estimate
    title: str | None = None
    estimand: str = "population"  # or "median-person" (see ESTIMANDS)
    judgement_kind: str | None = None  # immediacy | acceptability | smoothness (else inferred)


class Estimate(NamedTuple):
    """An estimate (ms) with its 95% interval."""

    estimate: float
    ci_low: float
    ci_high: float


@dataclass
class ConditionFit:
    """One condition's curve from a joint fit across the levels of another factor (shared
    lapse): its thresholds table and predictions."""

    fitter: Any  # MultiConditionFitter
    condition: str
    thresholds_: pd.DataFrame  # level, estimate, ci_low, ci_high, n_trials
    x_range_ms: tuple[float, float]

    def predict(self, x_ms) -> np.ndarray:
        return self.fitter.predict(x_ms, self.condition)

    def threshold(self, level: float = 0.5) -> Estimate:
        row = self.thresholds_.set_index("level").loc[level]
        return Estimate(float(row.estimate), float(row.ci_low), float(row.ci_high))


@dataclass
class PsychometricPart:
    """Binary-judgement thresholds: pooled, per participant, per level of the other factors."""

    column: str
    yes_means: str
    pooled: Any  # PsychometricFitter
    population: pd.DataFrame  # level, estimate, ci_low, ci_high (participants resampled)
    per_participant: dict[str, Any] = field(default_factory=dict)
    per_condition: dict[str, ConditionFit] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    estimand: str = "population"  # what `population` estimates (ESTIMANDS)
    estimator: str = (  # how, in words
        "pooled fit of all trials; 95% interval: participant jackknife, t on N - 1 df"
    )
    other: pd.DataFrame | None = None  # the other estimand's table, when it could be made
    # why the adaptive design's thresholds are withheld (`analysis.small_sample_interval.
    # withheld_reason`: a LatencySeparation or words), the report's paragraph and a few words
    withheld: Any = None
    withheld_text: str = ""
    withheld_short: str = ""


@dataclass
class SurvivalPart:
    """Abandonment: KM per condition, AFT model, times by which 10%/50% gave up."""

    sdata: pd.DataFrame
    km: dict[str, Any]
    km_table: pd.DataFrame
    aft: AbandonmentAFTFitter | None
    aft_error: str | None
    # condition, share, estimate, ci_low, ci_high, n_trials, extrapolated, and the shortest
    # and longest wait observed in the condition (abandonment_part.WAITED)
    times: pd.DataFrame


@dataclass
class RatingPart:
    """Ratings: MOS table, ordinal model and the acceptable-rating threshold."""

    column: str
    scale_size: int
    acceptable_at: float
    acceptable_source: str
    table: pd.DataFrame
    ordinal: OrdinalLatencyFitter | None
    ordinal_error: str | None
    population: pd.DataFrame | None
    n_unrated_abandoned: int = 0
    separation: RatingSeparation | None = None
    """Set when the ratings separate by latency: `population` then has no estimates."""


@dataclass
class ReportData:
    """Everything the report shows."""

    table: TrialTable
    options: ReportOptions
    exclusions: ExclusionResult
    kept: pd.DataFrame
    stimulus: str
    factors: list[str]
    cells: pd.DataFrame
    study_info: dict[str, str]
    psychometric: PsychometricPart | None = None
    survival: SurvivalPart | None = None
    ratings: RatingPart | None = None
    references: pd.DataFrame | None = None
    chains: dict[str, Any] | None = None  # agent chains: analysis.chains.chain_section
    adaptive: dict[str, Any] | None = None  # sessions' adaptive estimates (adaptive_part)
    fidelity: dict[str, Any] | None = None  # playback fidelity per session (fidelity_part)
    # session kinds and the simulated truth: a truth_part.TruthPart (Any: truth_part reads
    # this module's tables, so importing it here would make a cycle)
    truth: Any = None
    thresholds: pd.DataFrame | None = None
    score: pd.DataFrame | None = None
    score_errors: list[str] = field(default_factory=list)
    score_fixed_levels: dict[str, float] = field(default_factory=dict)
    costs: Any = None  # the cost section (cost_part.CostSection), with --prices
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # parts below their minimum N, one line each
    failed_parts: list[tuple[str, str]] = field(default_factory=list)  # (part, one-line error)
    sessions: pd.DataFrame | None = None  # session facts (sessions_part.session_facts)
    nothing_left: str | None = None  # why no trial is left (exclusions.nothing_left_message)

    @property
    def n_participants(self) -> int:
        """Participants analysed (after exclusions)."""
        return int(self.kept["participant"].nunique())

    @property
    def tested_range(self) -> tuple[float, float]:
        """The lowest and highest stimulus level among the analysed trials (ms)."""
        levels = self.kept[self.stimulus].astype(float)
        if levels.empty:
            return float("nan"), float("nan")
        return float(levels.min()), float(levels.max())


def one_line_error(exc: BaseException) -> str:
    """`ZeroDivisionError: float division by zero` (first line only, at most 300 characters)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    line = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return line if len(line) <= 300 else line[:297] + "..."


def run_part(data: ReportData, name: str, fn, default=None):
    """Run one part of the report; a failure is recorded (part, one-line error), not raised."""
    try:
        return fn()
    except Exception as exc:
        data.failed_parts.append((name, one_line_error(exc)))
        return default
