"""The summary's sentences about the participants one by one: how their 50% thresholds
spread, whether they differ more than their trials' noise allows, who is bracketed, and
whether the pooled threshold resembles any of them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from number_text import duration

if TYPE_CHECKING:
    import pandas as pd

    from analysis.report.data import PsychometricPart


SAME_THRESHOLD = 1e-3
"""Relative difference under which two thresholds are the same number (fits of identical
answers differ in the optimiser's last digits: 806.225 against 806.223 ms)."""


def _level(value: float) -> str:
    """A tested level for prose (`650 ms`), or the end of the tested range."""
    return duration(value) if np.isfinite(value) else "beyond the tested levels"


def bracket_words(low: float, high: float) -> str:
    """Where a person's switch lies: `between 200 ms and 3.0 s`, or `below 1.0 s` /
    `above 650 ms` when one side lies past the tested levels (NaN)."""
    if np.isfinite(low) and np.isfinite(high):
        return f"between {_level(low)} and {_level(high)}"
    return f"below {_level(high)}" if np.isfinite(high) else f"above {_level(low)}"


def individual_sentences(p: PsychometricPart, mid: pd.Series) -> list[str]:
    """How the per-participant 50% thresholds spread, and whether the pooled one is
    among them; participants whose answers separate are bracketed, not estimated."""
    out: list[str] = []
    bracketed = {pid: sep.bracket_ms() for pid, sep in p.person_separation.items()}
    values = np.array(
        [
            f.thresholds_.set_index("level").loc[0.5, "estimate"]
            for pid, f in p.per_participant.items()
            if pid not in bracketed
        ]
    )
    if bracketed:
        counts: dict[str, int] = {}
        for low, high in bracketed.values():
            words = bracket_words(low, high)
            counts[words] = counts.get(words, 0) + 1
        said = "; ".join(f"{words} for {n}" for words, n in counts.items())
        never = sum(sep.one_kind for sep in p.person_separation.values())
        how = (
            "separate by latency"
            if not never
            else "never switch within the tested levels"
            if never == len(bracketed)
            else f"separate by latency ({never} never switch within the tested levels)"
        )
        out.append(
            f"{len(bracketed)} of {len(p.per_participant)} participants' answers {how}, so "
            "each one's switch is only bracketed by the tested levels, not "
            f"estimated: {said}."
        )
    if len(values) >= 2 and np.ptp(values) <= SAME_THRESHOLD * float(np.median(values)):
        out.append(
            f"Every estimated individual 50% threshold is the same: {duration(float(values[0]))} "
            f"({len(values)} participants)."
        )
    elif len(values) >= 4:
        q1, q3 = np.percentile(values, [25, 75])
        # of the people with an estimate only: a bracketed switch has no point to rank
        who = f"the {len(values)} estimated" if bracketed else "participants"
        spread = f"the middle half of {who} lie between {duration(q1)} and {duration(q3)}"
        differ = p.people_differ_p
        head = (
            "Individual thresholds differ"
            if differ < DIFFER_P  # NaN compares False
            else "Individual estimates spread"
        )
        out.append(f"{head}: {spread}{_differ_words(p)}.")
    elif len(values) >= 2:
        listed = ", ".join(duration(v) for v in np.sort(values))
        out.append(f"Individual 50% thresholds: {listed}{_differ_words(p)}.")
    if len(values) >= 2 and _outside_every_person(p, bracketed, float(mid.estimate)):
        out.append(
            f"The pooled threshold ({duration(mid.estimate)}) lies outside every "
            "individual's 95% interval: the pooled curve resembles none of these participants."
        )
    return out


DIFFER_P = 0.05
"""Below this p the per-person curves are said to differ (`people_differ`)."""


ADAPTIVE_DIFFER = (
    "; whether they differ beyond their own trials' noise is not tested on adaptive designs "
    "(one curve for all against one each rejected people alike at the 0.05 level in 8-16% "
    "of 1-up/2-down staircase studies of 4-8 people and 11-40% of QUEST+ ones: "
    "benchmarks/people_differ_test.py, 2026-12-07)"
)
"""Why adaptive designs get no test of people differing (`people_differ`)."""


def _differ_words(p: PsychometricPart) -> str:
    """What the test of one curve for all against one each says, with its p, as a clause
    to end a sentence with (empty without a test)."""
    if p.procedure is not None:
        return ADAPTIVE_DIFFER
    if not np.isfinite(p.people_differ_p):
        return ""
    value = p.people_differ_p
    shown = "p < 0.001" if value < 0.001 else f"p = {value:.3f}".rstrip("0").rstrip(".")
    test = f"(one curve for all against one each, likelihood-ratio {shown})"
    if value < DIFFER_P:
        return f"; they differ more than their own trials' noise allows {test}"
    return (
        f"; no more apart than their own trials' noise allows {test}, so these data do not "
        "show that participants differ"
    )


def _outside_every_person(
    p: PsychometricPart, bracketed: dict[str, tuple[float, float]], pooled_ms: float
) -> bool:
    """Whether the pooled 50% point lies outside every estimated person's 95% interval (a
    person without one: outside their point by more than `SAME_THRESHOLD`). Intervals, not
    points: the pooled curve is a cumulative normal and a person's a logistic, so on the
    same answers their 50% points differ by about 1% (851 against 863 ms for four identical
    people), which says nothing about the pooled curve resembling no one."""
    if not np.isfinite(pooled_ms):
        return False
    for pid, f in p.per_participant.items():
        if pid in bracketed:
            continue
        row = f.thresholds_.set_index("level").loc[0.5]
        low, high = float(row.ci_low), float(row.ci_high)
        if not (np.isfinite(low) and np.isfinite(high)):
            low = high = float(row.estimate)
        tol = SAME_THRESHOLD * abs(pooled_ms)
        if low - tol <= pooled_ms <= high + tol:
            return False
    return True
