"""What the report's analyses produce: the options, one dataclass per part and `ReportData`
holding them all, and how a failing part is recorded instead of raised."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, overload

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from analysis.exclusions import ExclusionResult, ExclusionRules
from analysis.psychometric import MultiConditionFitter, PsychometricFitter
from analysis.ratings import OrdinalLatencyFitter, RatingSeparation
from analysis.report.truth_data import TruthPart
from analysis.separation import LatencySeparation
from analysis.survival import AbandonmentAFTFitter
from analysis.trial_table import TrialTable

if TYPE_CHECKING:
    from analysis.chains import ChainSection
    from pricing.corpus import PricedCorpus
    from pricing.sheet import PriceChoice

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
    "bracket_low_ms",
    "bracket_high_ms",
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
    prices: PriceChoice | None = None  # cost the scored corpus (`--prices`)
    estimate_usage: bool = False  # price recordings without usage from an estimate
    title: str | None = None
    estimand: str = "population"  # or "median-person" (see ESTIMANDS)
    judgement_kind: str | None = None  # immediacy | acceptability | smoothness (else inferred)
    # how the stimulus levels were chosen (analysis.design_detection.PROCEDURES); None: from
    # study.json or sessions.csv, else detected from the levels people were tested at
    procedure: str | None = None
    # how far (a ratio) a figure must lie from the true pooled 50% threshold for a study of
    # this design to exclude it 80% of the time, from (kept trials, stimulus, yes/no column):
    # `uxlab report` gives the plan's simulator (`uxlab.plan.sensitivity`), which analysis
    # cannot import; None: the verdicts carry the interval's width only
    design_power: Callable[[pd.DataFrame, str, str], float] | None = None


class Estimate(NamedTuple):
    """An estimate (ms) with its 95% interval."""

    estimate: float
    ci_low: float
    ci_high: float


@dataclass
class ConditionFit:
    """One condition's curve from a joint fit across the levels of another factor (shared
    lapse): its thresholds table and predictions."""

    fitter: MultiConditionFitter
    condition: str
    thresholds_: pd.DataFrame  # level, estimate, ci_low, ci_high, n_trials
    x_range_ms: tuple[float, float]

    def predict(self, x_ms: ArrayLike) -> np.ndarray:
        return self.fitter.predict(x_ms, self.condition)

    def threshold(self, level: float = 0.5) -> Estimate:
        row = self.thresholds_.set_index("level").loc[level]
        return Estimate(float(row.estimate), float(row.ci_low), float(row.ci_high))


@dataclass
class PsychometricPart:
    """Binary-judgement thresholds: pooled, per participant, per level of the other factors."""

    column: str
    yes_means: str
    pooled: PsychometricFitter
    population: pd.DataFrame  # level, estimate, ci_low, ci_high (participants resampled)
    per_participant: dict[str, PsychometricFitter] = field(default_factory=dict)
    per_condition: dict[str, ConditionFit] = field(default_factory=dict)
    # per other factor: each condition's 50% point over the first condition's
    # (`analysis.condition_contrast`: factor, condition, reference, level, ratio, ci_low,
    # ci_high, n_participants)
    contrasts: list[pd.DataFrame] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    estimand: str = "population"  # what `population` estimates (ESTIMANDS)
    estimator: str = (  # how, in words
        "pooled fit of all trials; 95% interval: participant jackknife, t on N - 1 df"
    )
    other: pd.DataFrame | None = None  # the other estimand's table, when it could be made
    # why the adaptive design's thresholds are withheld (`analysis.small_sample_interval.
    # withheld_reason`: a LatencySeparation or words), the report's paragraph and a few words
    withheld: LatencySeparation | str | None = None
    withheld_text: str = ""
    withheld_short: str = ""
    # participants whose own answers separate by latency (`analysis.separation.
    # LatencySeparation`): their switch is bracketed by two tested levels, not estimated
    person_separation: dict[str, LatencySeparation] = field(default_factory=dict)
    median_withheld: str = ""  # why the median person's figures are withheld, if they are
    tails_withheld: str = ""  # why the pooled 25% / 75% points are withheld, if they are
    # per condition label (as in `per_condition`): why its points, or its 25% / 75% points,
    # are withheld, if they are
    conditions_withheld: dict[str, str] = field(default_factory=dict)
    procedure: str | None = None  # the adaptive procedure that chose the levels (None: fixed)
    one_person: bool = False  # one participant: `pooled` is their own fit, as a person's
    # p of one curve for all fitted participants against one each (`people_differ`)
    people_differ_p: float = float("nan")
    # on an adaptive design, the model's table before its missed points were withheld: not
    # printed, kept for the planner to compare its own computation of it
    model_population: pd.DataFrame | None = None

    def population_beside_median(self) -> pd.DataFrame | None:
        """Under `--estimand median-person` on a fixed design, the population curve's table
        (indexed by level) that the report sets beside the withheld median person's figures;
        None otherwise (on an adaptive design a pooled fit mixes people tested at their own
        levels)."""
        if self.estimand != "median-person" or self.other is None or self.procedure is not None:
            return None
        return self.other.set_index("level")


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
class AdaptivePart:
    """The section's content: one row per participant and track (`table`: COLUMNS), the
    median per track (`medians`: factor, track, procedure, target, participants, median,
    ci_low, ci_high) and each factor's tested (lowest, highest) level (`tested_ranges`)."""

    table: pd.DataFrame
    medians: pd.DataFrame
    tested: dict[str, tuple[float, float]]


@dataclass
class FidelityPart:
    """The section's content: the per-session table (COLUMNS) and the totals."""

    table: pd.DataFrame
    n_flagged: int  # trials shown outside the study's timing tolerance
    n_judged: int  # trials judged against it
    excluded: bool  # whether the rule that leaves flagged trials out was on
    # what happened to the flagged trials, as the exclusions table counts them: left out by
    # that rule, kept; the rest were left out before it by another (a practice trial, an
    # excluded participant)
    n_left_out: int
    n_kept: int
    cpus: list[int] | None  # the machines' CPU counts (sessions.csv), when recorded
    unmeasured: list[str]  # the "lateness measured at" cells of sessions not measured
    n_sessions: int
    browser: pd.DataFrame | None  # painted times (`browser_part`)


@dataclass
class CostSection:
    """What the section shows: the corpus's costs and the per-source table."""

    costs: PricedCorpus
    table: pd.DataFrame
    front: list[str] = field(default_factory=list)


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
    chains: ChainSection | None = None  # agent chains (analysis.chains.chain_section)
    adaptive: AdaptivePart | None = None  # sessions' adaptive estimates
    fidelity: FidelityPart | None = None  # playback fidelity per session
    truth: TruthPart | None = None  # session kinds and the simulated truth
    # thresholds.csv (`thresholds_csv.thresholds_table`): its columns only when it failed
    thresholds: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=THRESHOLD_COLUMNS)
    )
    score: pd.DataFrame | None = None
    score_errors: list[str] = field(default_factory=list)
    score_fixed_levels: dict[str, float] = field(default_factory=dict)
    score_threshold_source: str = ""  # where the scored threshold's draws come from, in words
    costs: CostSection | None = None  # the cost section, with --prices
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


Result = TypeVar("Result")


@overload
def run_part(data: ReportData, name: str, fn: Callable[[], Result]) -> Result | None: ...
@overload
def run_part(data: ReportData, name: str, fn: Callable[[], Result], default: Result) -> Result: ...
def run_part(
    data: ReportData, name: str, fn: Callable[[], Result], default: Result | None = None
) -> Result | None:
    """Run one part of the report; a failure is recorded (part, one-line error), not raised
    (and the part is `default`)."""
    try:
        return fn()
    except Exception as exc:
        data.failed_parts.append((name, one_line_error(exc)))
        return default
