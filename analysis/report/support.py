"""What a sample can support: the minimum number of participants of each part, with its basis.

Parts that resample or cluster participants need several of them. The population
thresholds' interval is the participant jackknife with t on N - 1 degrees of freedom
(`analysis.small_sample_interval`): `benchmarks/small_sample_coverage.py` (200 simulated
studies per size, people who differ, the design of `studies/ttft-threshold.toml`) found it
covering the truth `MEASURED_COVERAGE` of the time (worst and best of the 25 / 50 / 75%
points) where the percentile participant bootstrap it replaced covered
`BOOTSTRAP_COVERAGE`. Below `MIN_POPULATION` no interval is printed: with 2 participants
it covered, but only by spanning 35-42x (t on 1 degree of freedom), which says nothing;
docs/explanation/small-samples.md has the table and the reasons. Parts still resting on a
percentile participant bootstrap or a sandwich covariance keep `MIN_PARTICIPANTS`.
Below its minimum a part is skipped with one line saying why, and verdicts against
published figures read "not enough data".

Flags for single estimates: `estimate_flags` marks an estimate outside the tested stimulus
range as extrapolated, and an interval with a bound equal to the estimate or spanning under
1% of it as degenerate, with the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

MEASURED_ON = "2026-12-06"
# N -> (worst, best) coverage of the nominal 95% interval over the 25/50/75% points:
# participant jackknife-t (the report's) and the percentile participant bootstrap, both
# around the report's pooled estimate (the cumulative-normal pooled curve).
MEASURED_COVERAGE: dict[int, tuple[float, float]] = {
    2: (0.96, 0.97),
    3: (0.95, 0.975),
    4: (0.96, 0.98),
    6: (0.93, 0.94),
    8: (0.94, 0.95),
    12: (0.93, 0.955),
    16: (0.935, 0.955),
}
BOOTSTRAP_COVERAGE: dict[int, tuple[float, float]] = {
    2: (0.67, 0.75),
    4: (0.83, 0.885),
    8: (0.875, 0.89),
    16: (0.895, 0.935),
}
OBSERVERS_MEASURED_ON = "2026-12-06"
OBSERVERS_COVERAGE: dict[int, tuple[float, float]] = {
    4: (0.92, 0.99),
    8: (0.89, 0.98),
    20: (0.91, 0.97),
}
"""N -> (worst, best) coverage of the population thresholds' interval over every kind of
people the independent simulator draws (alike, differing, steeper than the tested levels,
a skewed spread; the truth on a level or between two), at the levels the report prints
there (at 4 only the 50% point): benchmarks/report_validation.py, 150 studies per cell
(Monte-Carlo SE about 0.018), the pooled curve a cumulative normal. The claim line quotes
this range, not one kind of people's."""
MIN_POPULATION = 4
"""The smallest N the report prints a population interval for: the jackknife-t interval
covered 0.93 or more at every level from 3 participants, but spans over 4x at 3 (t on 2
degrees of freedom); from 4 it is at most about 2.9x."""
MOS_MEASURED_ON = "2026-12-06"
MOS_COVERAGE = {2: 0.803, 4: 0.920, 8: 0.917, 16: 0.932, 32: 0.940}
"""Coverage of the MOS interval (participant jackknife-t) of the population's mean rating
per level, by N (400 studies per N, averaged over the 8 levels)."""
MIN_MOS = 16
"""The smallest N the MOS interval is printed for: where its coverage first reaches 0.93."""
MIN_PARTICIPANTS = 8
"""The minimum of parts still resting on a percentile participant bootstrap or a sandwich
covariance (the bootstrap covered at least 0.85 at every level from 8 participants)."""

COVERAGE_BASIS = (
    "the 95% interval of the pooled threshold (participant jackknife, t on N - 1 degrees "
    f"of freedom) covered the truth {MEASURED_COVERAGE[4][0]:.0%}-{MEASURED_COVERAGE[4][1]:.0%} "
    f"of the time with 4 participants and {MEASURED_COVERAGE[8][0]:.0%}-"
    f"{MEASURED_COVERAGE[8][1]:.0%} with 8 (the percentile participant bootstrap: "
    f"{BOOTSTRAP_COVERAGE[4][0]:.0%}-{BOOTSTRAP_COVERAGE[4][1]:.0%} and "
    f"{BOOTSTRAP_COVERAGE[8][0]:.0%}-{BOOTSTRAP_COVERAGE[8][1]:.0%}); with 2 it spans "
    "35-42x and with 3 over 4x, so none is printed below 4 (measured by simulation, "
    f"benchmarks/small_sample_coverage.py, {MEASURED_ON})"
)


@dataclass(frozen=True)
class Minimum:
    """One part of the report that needs several participants."""

    part: str
    min_participants: int
    why: str


MINIMUMS: dict[str, Minimum] = {
    "population": Minimum(
        "population thresholds (pooled fit, participant jackknife-t interval)",
        MIN_POPULATION,
        COVERAGE_BASIS,
    ),
    "per_condition": Minimum(
        "the ratio between conditions' 50% points (joint fit, participant jackknife-t)",
        MIN_POPULATION,
        "the same interval as the population thresholds', over the joint fit of every "
        "condition (each participant left out of all conditions at once), so the same "
        "minimum",
    ),
    "condition_points": Minimum(
        "per-condition thresholds (each condition's points from the joint fit; the ratio "
        "between conditions is printed from 4)",
        MIN_PARTICIPANTS,
        "with 4 participants who differ each condition's 50% point was biased +3.3% on the "
        "log scale (+4.7% as a mean ratio) over 100 independent-simulator studies, and +4.9% "
        "in another 100, over the 2% goal, while the ratio between conditions met it (bias "
        "-0.2% to +1.0%, coverage 0.98-1.00); from 8 the points met it "
        f"(benchmarks/report_validation.py, {OBSERVERS_MEASURED_ON})",
    ),
    "tails": Minimum(
        "pooled and per-condition 25% / 75% points (fixed designs)",
        MIN_PARTICIPANTS,
        "with 4 participants they were biased +6% to +10% at 25% and up to -7% at 75% on the "
        "independent simulator's fixed designs (people who differ, steeper than the levels "
        "or with a skewed spread), over the 5% goal, and still up to +4.1% / -4.6% with the "
        "pooled curve a cumulative normal; from 8 the pooled points' intervals the report "
        "prints covered 0.92-0.99 with a log-scale bias within -1.5% to +2.8% (people alike, "
        "who differ or with a skewed spread, 0.92 at 75% with a skewed spread over 1,300 "
        "studies; those of people steeper than the levels covered "
        "0.90-0.91 with the truth on a level, so the pooled points are withheld when one in "
        "eight of the people switches between two tested levels, 2026-12-07), each "
        "condition's 0.92-0.97 within -3.6% to +3.0% (withheld by the same rule, counted "
        "within each condition, since they covered 0.89-0.92 with such people and the "
        "truth on a level) "
        f"(benchmarks/report_validation.py, {OBSERVERS_MEASURED_ON})",
    ),
    "mixed_rating": Minimum(
        "mixed rating fit (random intercept per participant, participants resampled)",
        MIN_PARTICIPANTS,
        "the spread between participants cannot be estimated from a handful of them, and "
        "its interval is a percentile participant bootstrap, which covered only "
        f"{BOOTSTRAP_COVERAGE[4][0]:.0%}-{BOOTSTRAP_COVERAGE[4][1]:.0%} with 4 participants "
        f"and {BOOTSTRAP_COVERAGE[8][0]:.0%}-{BOOTSTRAP_COVERAGE[8][1]:.0%} with 8 on the "
        "pooled threshold (benchmarks/small_sample_coverage.py)",
    ),
    "ordinal_clustered": Minimum(
        "clustered interval of the ordinal rating model",
        MIN_PARTICIPANTS,
        "a cluster-robust (sandwich) covariance rests on one score sum per participant; "
        "with few participants it is too small (with one it cannot be computed); the "
        "same minimum as the percentile participant bootstrap is used, not measured "
        "separately",
    ),
    "aft_clustered": Minimum(
        "clustered intervals of the abandonment model (time ratios, times to give up)",
        MIN_PARTICIPANTS,
        "the same sandwich covariance over participants as the ordinal model; the same "
        "minimum, not measured separately",
    ),
    "mos_interval": Minimum(
        "MOS intervals (participant jackknife-t)",
        MIN_MOS,
        "each person rates several times, so the interval leaves out one participant at a "
        "time; measured on the mean rating per level, it covers "
        + ", ".join(f"{c:.2f} with {n}" for n, c in MOS_COVERAGE.items())
        + " participants (the percentile participant bootstrap it replaced: 0.78 with 4, "
        "0.85 with 8, 0.90 with 16; a t-interval over ratings leaves the 1-5 scale in "
        "10-31% of studies below 8 and stays at 0.82-0.89), so none is printed below "
        f"{MIN_MOS}, where it first reaches 0.93 (benchmarks/cluster_bootstrap_coverage.py, "
        f"{MOS_MEASURED_ON})",
    ),
    "verdicts": Minimum(
        "verdicts against published figures (inside / overlaps / below / above)",
        MIN_POPULATION,
        "a verdict compares a figure with the population interval, which needs the "
        "population thresholds' minimum (as measured there)",
    ),
}


MEDIAN_INTERVAL_MEASURED = (
    "on the independent simulator's people (alike, differing, steeper than the grid's steps "
    "or with a skewed spread; 8, 12 and 20 of them, 1,000 studies a cell) it covered the "
    "median person's point 0.93-0.96 of the time after QUEST+ (40 trials) and 0.93-0.95 "
    "after interleaved staircases (48 trials), where the percentile participant bootstrap it "
    "replaced covered 0.91-0.95 (benchmarks/adaptive_median_coverage.py, 2026-12-07); with "
    "people who give up, whom the procedure counts as 'too slow' (uxlab's simulator), the "
    "QUEST+ estimates sat 3-4% below their truth and it covered 0.94-0.97 at 10-20 trials a "
    "person but 0.86-0.93 at 40 (uxlab plan on ttft-quest.toml, 2026-12-07)"
)
"""How the interval of the adaptive median was measured (`analysis.report.adaptive_part`)."""

MINIMUMS["adaptive_median"] = Minimum(
    "interval of the median of the sessions' own adaptive estimates (sign test, interpolated)",
    MIN_PARTICIPANTS,
    f"the fewest people it was measured with: {MEDIAN_INTERVAL_MEASURED}",
)


def coverage_at(n_participants: int) -> tuple[int, tuple[float, float]] | None:
    """The measured coverage at the largest measured N not above `n_participants`."""
    measured = [n for n in sorted(MEASURED_COVERAGE) if n <= n_participants]
    if not measured:
        return None
    return measured[-1], MEASURED_COVERAGE[measured[-1]]


def enough(key: str, n_participants: int) -> bool:
    """Whether `n_participants` reaches the minimum of part `key` (see `MINIMUMS`)."""
    return n_participants >= MINIMUMS[key].min_participants


def coverage_phrase(n_participants: int) -> str:
    """`the population thresholds' 95% interval covers the truth about 93-98% of the time
    (measured at N = 3)`, or a plain statement below the smallest measured N."""
    at = coverage_at(n_participants)
    if n_participants < 1:
        return "no participant is left to analyse"
    if n_participants < 2 or at is None:
        return "one participant cannot be resampled"
    n, (worst, best) = at
    if n_participants < MIN_POPULATION:
        return (
            f"the population thresholds' 95% interval (participant jackknife-t) would span "
            f"{'35-42' if n_participants < 3 else 'over 4'}x: it covers the truth only by "
            "saying almost nothing"
        )
    measured = [k for k in sorted(OBSERVERS_COVERAGE) if k <= n_participants]
    n, (worst, best) = measured[-1], OBSERVERS_COVERAGE[measured[-1]]
    return (
        f"the population thresholds' 95% interval (participant jackknife-t) covers the truth "
        f"about {worst:.0%}-{best:.0%} of the time (measured at N = {n} over people alike, "
        "differing, steeper than the tested levels or with a skewed spread: "
        f"benchmarks/report_validation.py, {OBSERVERS_MEASURED_ON})"
    )


JACKKNIFE_PARTS = ("population", "verdicts", "per_condition")
"""Parts whose interval is the participant jackknife-t (the others: a percentile
participant bootstrap or a sandwich covariance)."""


def measured_phrase(table: dict[int, tuple[float, float]], n_participants: int, what: str) -> str:
    """What `what` covered at this N, or at the measured Ns on either side of it (never a
    figure measured at another N passed off as this one's). `table`: N -> (worst, best)."""

    def said(n: int) -> str:
        worst, best = table[n]
        return f"{worst:.0%}" if worst == best else f"{worst:.0%}-{best:.0%}"

    if n_participants in table:
        return (
            f"{what} covers the truth only about {said(n_participants)} of the time "
            f"(measured at N = {n_participants})"
        )
    below = [n for n in sorted(table) if n < n_participants]
    above = [n for n in sorted(table) if n > n_participants]
    near = " and ".join(f"{said(n)} at N = {n}" for n in below[-1:] + above[:1])
    return (
        f"{what} covers the truth too rarely (measured: {near}; N = {n_participants} lies between)"
    )


def bootstrap_coverage_phrase(n_participants: int) -> str:
    """What the percentile participant bootstrap covered at or around this N."""
    return measured_phrase(
        BOOTSTRAP_COVERAGE,
        n_participants,
        "a percentile participant bootstrap (measured on the pooled threshold)",
    )


def skipped_line(key: str, n_participants: int) -> str:
    """`<part>: skipped with 2 participant(s), <why>; runs from 8 participants.`"""
    m = MINIMUMS[key]
    why = coverage_phrase(n_participants)
    if key == "per_condition":
        why = why.replace("the population thresholds'", "each condition's")
    if key == "mos_interval" and n_participants >= 2:
        why = measured_phrase(
            {n: (c, c) for n, c in MOS_COVERAGE.items()},
            n_participants,
            "the MOS interval (participant jackknife-t)",
        )
    elif key not in JACKKNIFE_PARTS and n_participants >= 2:
        why = bootstrap_coverage_phrase(n_participants)
    if key in ("ordinal_clustered", "aft_clustered"):
        why = "a cluster-robust covariance from so few participants is too small (from one it "
        why += "cannot be computed)"
    return (
        f"{m.part}: skipped with {n_participants} participant(s), because {why}; runs from "
        f"{m.min_participants} participants."
    )


class EstimateFlags(NamedTuple):
    """What `estimate_flags` finds: outside the tested levels, and why an interval is
    degenerate ("" when it is not)."""

    extrapolated: bool
    degenerate: str


def estimate_flags(
    estimate: float,
    ci_low: float,
    ci_high: float,
    tested_low: float | None = None,
    tested_high: float | None = None,
) -> EstimateFlags:
    """(extrapolated, degenerate reason or "") for one estimate with its 95% interval.

    Extrapolated: the estimate lies outside [tested_low, tested_high] (the stimulus levels
    the data covers). Degenerate: a bound equals the estimate, or the interval spans under
    1% of the estimate; both mean the resamples hardly varied (answers perfectly separated
    between two tested levels, or too few units to resample), not that the estimate is
    precise.
    """
    extrapolated = False
    if math.isfinite(estimate) and tested_low is not None and tested_high is not None:
        extrapolated = estimate < tested_low * (1 - 1e-9) or estimate > tested_high * (1 + 1e-9)
    if not (math.isfinite(estimate) and math.isfinite(ci_low) and math.isfinite(ci_high)):
        return EstimateFlags(extrapolated, "")
    tol = 1e-6 * max(abs(estimate), 1e-12)
    if abs(ci_low - estimate) <= tol or abs(ci_high - estimate) <= tol:
        return EstimateFlags(
            extrapolated,
            (
                "a bound equals the estimate: the resamples did not vary on that side "
                "(separated answers or too few units to resample)"
            ),
        )
    if estimate > 0 and (ci_high - ci_low) / estimate < 0.01:
        return EstimateFlags(
            extrapolated,
            (
                "spans under 1% of the estimate: the resamples hardly varied "
                "(separated answers or too few units to resample)"
            ),
        )
    return EstimateFlags(extrapolated, "")


def flag_text(extrapolated: bool, degenerate: str) -> str:
    """Short marks for a table cell: `extrapolated`, `degenerate interval`."""
    marks = []
    if extrapolated:
        marks.append("extrapolated")
    if degenerate:
        marks.append("degenerate interval")
    return ", ".join(marks)
