"""What a sample can support: the minimum number of participants of each part, with its basis.

Parts that resample or cluster participants need several of them: with few, a percentile
cluster bootstrap can only recombine the people there are, and its 95% interval is far too
narrow. The minimum is measured, not assumed: `benchmarks/cluster_bootstrap_coverage.py`
(400 simulated studies per size, the project's observers on `studies/ttft-threshold.toml`)
found the participant-resampled interval of the pooled threshold covering the truth
`MEASURED_COVERAGE` of the time (worst of the 25 / 50 / 75% points). Below
`MIN_PARTICIPANTS` such parts are skipped with one line saying why, and verdicts against
published figures read "not enough data".

Flags for single estimates: `estimate_flags` marks an estimate outside the tested stimulus
range as extrapolated, and an interval with a bound equal to the estimate or spanning under
1% of it as degenerate, with the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

MEASURED_ON = "2026-12-03"
# N -> (worst, best) coverage of the nominal 95% interval over the 25/50/75% points.
MEASURED_COVERAGE: dict[int, tuple[float, float]] = {
    2: (0.81, 0.82),
    4: (0.87, 0.89),
    8: (0.90, 0.93),
    16: (0.92, 0.92),
    32: (0.92, 0.95),
}
MIN_PARTICIPANTS = 8
"""The smallest measured N at which the interval covers at least 0.90 at every level
(the participant bootstrap with the pooled counts' parametric bootstrap as its floor)."""

COVERAGE_BASIS = (
    "a percentile bootstrap that resamples participants covers the truth only "
    f"{MEASURED_COVERAGE[2][0]:.0%}-{MEASURED_COVERAGE[2][1]:.0%} of the time with 2 "
    f"participants, {MEASURED_COVERAGE[4][0]:.0%}-{MEASURED_COVERAGE[4][1]:.0%} with 4 and "
    f"{MEASURED_COVERAGE[8][0]:.0%}-{MEASURED_COVERAGE[8][1]:.0%} with 8 (nominal 95%; "
    "measured by simulation, benchmarks/cluster_bootstrap_coverage.py, "
    f"{MEASURED_ON})"
)


@dataclass(frozen=True)
class Minimum:
    """One part of the report that needs several participants."""

    part: str
    min_participants: int
    why: str


MINIMUMS: dict[str, Minimum] = {
    "population": Minimum(
        "population thresholds (pooled fit, participants resampled)",
        MIN_PARTICIPANTS,
        COVERAGE_BASIS,
    ),
    "mixed_rating": Minimum(
        "mixed rating fit (random intercept per participant, participants resampled)",
        MIN_PARTICIPANTS,
        "the spread between participants cannot be estimated from a handful of them, and "
        "its interval is the participant bootstrap of the population thresholds (as measured "
        "there)",
    ),
    "ordinal_clustered": Minimum(
        "clustered interval of the ordinal rating model",
        MIN_PARTICIPANTS,
        "a cluster-robust (sandwich) covariance rests on one score sum per participant; "
        "with few participants it is too small (with one it cannot be computed); the "
        "same minimum as the participant bootstrap is used, not measured separately",
    ),
    "aft_clustered": Minimum(
        "clustered intervals of the abandonment model (time ratios, times to give up)",
        MIN_PARTICIPANTS,
        "the same sandwich covariance over participants as the ordinal model; the same "
        "minimum, not measured separately",
    ),
    "mos_interval": Minimum(
        "MOS intervals (participants resampled)",
        MIN_PARTICIPANTS,
        "each person rates several times, so the interval resamples participants; measured "
        "on the mean rating per level, it covers 0.49 with 2 participants, 0.78 with 4, 0.85 "
        "with 8 and 0.90 with 16, while a t-interval over ratings leaves the 1-5 scale in "
        "10-31% of studies below 8 and stays at 0.82-0.89 (benchmarks/"
        f"cluster_bootstrap_coverage.py, {MEASURED_ON})",
    ),
    "verdicts": Minimum(
        "verdicts against published figures (inside / below / above)",
        MIN_PARTICIPANTS,
        "a verdict compares a figure with the population interval, which needs the "
        "population thresholds' minimum (as measured there)",
    ),
}


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
    """`a participant-resampled 95% interval covers the truth about 46-49% of the time
    (measured at N = 2)`, or a plain statement below the smallest measured N."""
    at = coverage_at(n_participants)
    if n_participants < 1:
        return "no participant is left to analyse"
    if n_participants < 2 or at is None:
        return "one participant cannot be resampled"
    n, (worst, best) = at
    return (
        f"a participant-resampled 95% interval covers the truth about {worst:.0%}-{best:.0%} "
        f"of the time (measured at N = {n})"
    )


def skipped_line(key: str, n_participants: int) -> str:
    """`<part>: skipped with 2 participant(s), <why>; runs from 8 participants.`"""
    m = MINIMUMS[key]
    why = coverage_phrase(n_participants)
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
