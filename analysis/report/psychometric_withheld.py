"""What the psychometric part withholds or brackets, and why: answers that separate (a
bracket, not a point), a curve steeper than the tested levels (its gap), too few people for
the 25% / 75% points, a threshold no latency study can find (a unit read wrongly), and the
measured misses behind the person and median-person rows it withholds."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np
import pandas as pd

from analysis.report.data import PsychometricPart, ReportData
from analysis.report.support import MINIMUMS
from analysis.separation import LatencySeparation, find_separation, yes_no_words

if TYPE_CHECKING:
    from analysis.psychometric import MultiConditionFitter, PsychometricFitter

IMPLAUSIBLE_THRESHOLD_MS = 5.0
"""A latency threshold under this is a unit read wrongly, not a finding."""


class ImplausibleThreshold(ValueError):
    """A threshold no latency study can find (a unit read wrongly): the part refuses."""


def _withhold(data: ReportData, table: pd.DataFrame, rows: pd.Series | slice, note: str) -> None:
    """Blank the estimate and interval of `rows` of `table`, and say why once in the notes."""
    table.loc[rows, ["estimate", "ci_low", "ci_high"]] = np.nan
    if note not in data.notes:
        data.notes.append(note)


MIN_TAILS = MINIMUMS["tails"].min_participants
"""The fewest participants the pooled and per-condition 25% / 75% points are printed for."""


def withhold_few_people_tails(
    data: ReportData, table: pd.DataFrame, n_people: int, what: str
) -> str:
    """Blank the 25% / 75% rows of `table` below `MIN_TAILS` participants, with a note;
    returns why in a few words (thresholds.csv's `withheld`), empty when nothing is."""
    if n_people >= MIN_TAILS:
        return ""
    note = (
        f"Psychometric thresholds ({what}): with one participant the curve is that person's "
        f"own, and {PERSON_TAILS_MEASURED}."
        if n_people == 1
        else f"Psychometric thresholds ({what}): with {n_people} participants the 25% / 75% "
        f"points are withheld: {MINIMUMS['tails'].why}."
    )
    _withhold(data, table, table["level"] != 0.5, note)
    people = f"{n_people} participant{'s' if n_people != 1 else ''}"
    return f"{people}: the 25% / 75% points need {MIN_TAILS} (measured biased)"


STEEP_PEOPLE_SHARE = 1 / 8
"""The share of people whose own answers separate (each switches between two tested levels)
from which the pooled 25% / 75% points are withheld: people steeper than the tested levels
(1 of 8 people, 2 of 12, 3 of 20). From a quarter (2 of 8) the tails of the studies of
such people it still printed covered 0.90-0.91 with the truth on a level, over 3,000
studies. How often it withholds them, for such people and for others, and what the tails it
leaves covered: docs/explanation/validation.md ("Pooled tails withheld for people steeper
than the levels")."""

STEEP_TAILS_MEASURED = (
    "with people steeper than the tested levels (about 40% of whose own answers separate "
    "between two levels), the pooled 25% / 75% points' intervals covered 0.90-0.91 when "
    "the truth lay on a tested level (8 people, 3,000 studies, the 352 whose tails were "
    "printed while fewer than a quarter of the people separated), under the 0.93-0.97 "
    "goal: where each person switches within those gaps, which the levels do not show, "
    "moves them (benchmarks/report_validation.py, 2026-12-07)"
)
"""Why the pooled tails are withheld when many people separate (report and thresholds.csv)."""

CONDITION_STEEP_TAILS_MEASURED = (
    "with people steeper than the tested levels and a second factor, each condition's 25% / "
    "75% points' intervals covered 0.92 / 0.89 when the truth lay on a tested level (8 "
    "people, 200 studies, printed in every one), under the 0.93-0.97 goal "
    "(benchmarks/report_validation.py --cells conditions, 2026-12-07)"
)
"""Why each condition's tails are withheld when people separate within a condition."""

THIN_DESIGN_ANSWERS = 6
"""At or below this many answers a person gives a tested level (the median), people who are
not steeper than the levels separate too, by chance: the note says so."""

THIN_DESIGN_MEASURED = (
    "with {answers:g} answers a person gives a tested level, people who are not steeper than "
    "the levels separate too, by chance: the rule withheld the tails of 43-55% of 8-person "
    "studies of people who differ or have a skewed spread with 6 answers a level (18-28% "
    "with 8; benchmarks/report_validation.py, 2026-12-07, 150-300 studies a cell); more "
    "people or more answers a level keep them more often"
)


MIN_TAIL_ANSWERS = 6
"""The fewest answers a person gives a tested level (the median) with which the pooled 25% /
75% points are printed: the fewest the independent simulator validated them with
(`THIN_TAILS_MEASURED`)."""

THIN_TAILS_MEASURED = (
    "the pooled 25% / 75% points were validated on designs of 6 and 8 answers a person gives "
    "each tested level (8 people who differ or have a skewed spread, 6 answers: coverage "
    "0.92-0.96); with 4, those printed covered 0.89-0.98 (0.89-0.90 at 75% with the truth on "
    "a level) and half the studies had them withheld anyway (benchmarks/report_validation.py, "
    f"2026-12-07, 120 studies a cell); give each level at least {MIN_TAIL_ANSWERS} trials a "
    "person (more repeats) for them"
)
"""Why the pooled tails are withheld on a thin design (report and thresholds.csv)."""


def withhold_thin_design_tails(
    data: ReportData, table: pd.DataFrame, answers_per_level: float, what: str = "pooled"
) -> str:
    """Blank the 25% / 75% rows of `table` (pooled, or `what` else) when people answered
    each tested level fewer than `MIN_TAIL_ANSWERS` times (the median), with a note; returns
    why in a few words (thresholds.csv's `withheld`), empty when nothing is."""
    if answers_per_level >= MIN_TAIL_ANSWERS:
        return ""
    note = (
        f"Psychometric thresholds ({what}): each person answered a tested level "
        f"{answers_per_level:g} times (the median), so the 25% / 75% points are withheld: "
        f"{THIN_TAILS_MEASURED}."
    )
    _withhold(data, table, table["level"] != 0.5, note)
    return (
        f"{answers_per_level:g} answers a person a level: the 25% / 75% points are validated "
        f"from {MIN_TAIL_ANSWERS}"
    )


def people_separation(part: PsychometricPart, df: pd.DataFrame) -> dict[str, LatencySeparation]:
    """Each participant whose own answers separate by latency, and how."""
    found = {}
    for pid, person in df.groupby("participant"):
        own = find_separation(person["_x"].to_numpy(), acceptable_answers(part, person))
        if own is not None:
            found[str(pid)] = own
    return found


def separating_within(part: PsychometricPart, df: pd.DataFrame, factors: list[str]) -> set[str]:
    """The participants whose own answers separate by latency within one condition of any
    of `factors` (a person steeper than the levels whose switch moves with the condition
    need not separate over all their answers at once)."""
    found = set()
    for factor in factors:
        for (pid, _), cell in df.groupby(["participant", factor]):
            if find_separation(cell["_x"].to_numpy(), acceptable_answers(part, cell)) is not None:
                found.add(str(pid))
    return found


def withhold_steep_people_tails(
    data: ReportData,
    part: PsychometricPart,
    separated: int,
    n_people: int,
    answers_per_level: float | None = None,
    table: pd.DataFrame | None = None,
    what: str = "pooled",
    within: tuple[int, list[str]] | None = None,
) -> str:
    """Blank the pooled 25% / 75% rows (or those of `table`, each condition's of a factor:
    `what` says which) when at least `STEEP_PEOPLE_SHARE` of the people's own answers
    separate by latency (`separated` of them; `within` = (how many of them only within one
    condition, of which factors), said in the note), with a note (which says so when the
    design is thin: `answers_per_level`, the median answers a person gives a tested level
    where the separations were found, at most `THIN_DESIGN_ANSWERS`); returns why in a few
    words (thresholds.csv's `withheld`), empty when nothing is."""
    if not n_people or separated < STEEP_PEOPLE_SHARE * n_people:
        return ""
    pooled = table is None
    table = part.population if table is None else table
    measured, figure = (
        (STEEP_TAILS_MEASURED, "0.90-0.91")
        if pooled
        else (CONDITION_STEEP_TAILS_MEASURED, "0.89-0.92")
    )
    thin = ""
    if answers_per_level is not None and answers_per_level <= THIN_DESIGN_ANSWERS:
        thin = "; " + THIN_DESIGN_MEASURED.format(answers=answers_per_level)
    where = ""
    if within is not None and within[0]:
        only = "all of them" if within[0] == separated else f"{within[0]} of them"
        where = f" ({only} only within one condition of {', '.join(within[1])})"
    note = (
        f"Psychometric thresholds ({what}): {separated} of {n_people} participants' own "
        f"answers separate by latency{where}, so the 25% / 75% points are withheld: "
        f"{measured}{thin}."
    )
    _withhold(data, table, table["level"] != 0.5, note)
    why = (
        f"{separated} of {n_people} participants switch between two tested levels: the "
        f"25% / 75% points covered {figure} with such people (measured)"
    )
    if thin:
        why += f"; with {answers_per_level:g} answers a level others separate too, by chance"
    return why


MIN_CONDITION_POINTS = MINIMUMS["condition_points"].min_participants
"""The fewest participants each condition's own points are printed for."""


def withhold_few_people_condition_points(
    data: ReportData, table: pd.DataFrame, n_people: int
) -> str:
    """Blank every per-condition point of `table` below `MIN_CONDITION_POINTS`
    participants, with a note (the ratio between conditions stays); returns why in a few
    words (thresholds.csv's `withheld`), empty when nothing is."""
    if n_people >= MIN_CONDITION_POINTS:
        return ""
    note = (
        f"Psychometric thresholds (per condition): with {n_people} participants each "
        f"condition's points are withheld and only the ratio between conditions is given: "
        f"{MINIMUMS['condition_points'].why}."
    )
    _withhold(data, table, slice(None), note)
    return (
        f"{n_people} participants: each condition's points need {MIN_CONDITION_POINTS} "
        "(measured biased); the ratio between conditions is given"
    )


def acceptable_answers(part: PsychometricPart, df: pd.DataFrame) -> np.ndarray:
    """1 where an answer is on the short-latency side (not too slow, acceptable), else 0."""
    y = df["_y"].to_numpy(dtype=float)
    return cast(np.ndarray, 1.0 - y if part.pooled.direction_ == "rising" else y)


def separated_population(data: ReportData, part: PsychometricPart, df: pd.DataFrame) -> None:
    """When every answer on one side of a latency is one answer and every answer on the
    other side the other (pooled over everyone), the data place the switch in a gap
    between two tested levels and nothing more: the pooled fit's point and interval are
    the width penalty's, not the data's (four identical people gave 806 [760, 855] ms,
    narrower than any one of them, for people switching at 700). The population's
    thresholds are then withheld and the report gives the bracket instead."""
    sep = find_separation(df["_x"].to_numpy(), acceptable_answers(part, df))
    if sep is None:
        return
    rising = part.pooled.direction_ == "rising"
    words = yes_no_words(part.yes_means, rising)
    part.population.loc[:, ["estimate", "ci_low", "ci_high"]] = np.nan
    part.withheld = sep
    part.withheld_text = sep.explain(words, data.stimulus, model=FIXED_MODEL)
    part.withheld_short = sep.short(words)
    part.estimator = (
        "pooled fit of all trials; no thresholds: the answers separate by latency, so the "
        "data give a bracket, not an estimate (see below)"
    )
    data.notes.append(f"Psychometric thresholds: {part.estimator}.")


FIXED_MODEL = "A psychometric curve"
"""How a separation's explanation names the model on a fixed design."""

MEDIAN_PERSON_MEASURED = (
    "held to the headline's goal (95% coverage 0.93-0.97, bias under 2% at 50% and 5% at 25 / "
    "75%), the median of per-person fits missed it on the independent simulator's studies: "
    "its participant-bootstrap interval covered 0.58-0.97 at 50% and 0.24-0.94 at 25 / 75%, "
    "its 25 / 75% points were biased up to +9% / -11% (each person's fit of a few dozen "
    "answers is itself biased there; 2026-12-06), and its 50% point, printed alone, came out "
    "+3% to +6% (log scale) high for 4-8 people whose thresholds spread with a right skew "
    "(the median of noisy per-person estimates leans towards their mean) and -4% to -5% for "
    "people steeper than the levels (benchmarks/report_validation.py, 2026-12-07, 200 studies "
    "a cell); on staircase and QUEST+ tables, each person fitted as the report fits them "
    "there, -3% to +5% (people alike at 4 on a staircase, a skewed spread of 4 on QUEST+; "
    "60 studies a cell, benchmarks/adaptive_person_fits.py), so every figure of it is "
    "withheld"
)
"""Why the median person's figures are withheld, as measured (thresholds.csv and report)."""

PERSON_TAILS_MEASURED = (
    "a person's own 25% / 75% points are withheld: with 8 trials per level their 25% point "
    "was biased +5% to +7% (benchmarks/report_validation.py, 2026-12-06), on staircase and "
    "QUEST+ tables their intervals covered 0.90-0.92 for people steeper than the ladder's "
    "steps (benchmarks/adaptive_person_fits.py, 2026-12-07), and for shallow curves with "
    "5-20 trials per level up to +22% (benchmarks/validation_grid.py); the 50% point and "
    "its interval are kept"
)
"""Why each participant's 25 / 75% rows have no estimate (thresholds.csv)."""


def median_bracket(part: PsychometricPart) -> tuple[float, float] | None:
    """Where the median person's 50% point lies when some people's answers separate (each
    counted at either end of their bracket), or None when those brackets do not move the
    median (or no one's answers separate)."""
    if not part.person_separation:
        return None
    lows, highs = [], []
    for pid, f in part.per_participant.items():
        sep = part.person_separation.get(pid)
        bracket = None if sep is None else sep.bracket_ms()
        if bracket is None:
            value = float(f.thresholds_.set_index("level").loc[0.5, "estimate"])
            lows.append(value)
            highs.append(value)
        else:
            low, high = bracket
            lows.append(low if np.isfinite(low) else 0.0)
            highs.append(high if np.isfinite(high) else np.inf)
    low, high = float(np.median(lows)), float(np.median(highs))
    return None if high <= low * (1 + 1e-3) else (low, high)


def fit_gap(
    fitter: PsychometricFitter | MultiConditionFitter, condition: int = 0
) -> tuple[float, float] | None:
    """The tested levels (ms) around the switch of a fitted curve steeper than they show
    (`analysis.steep_tails.steep_gap_ms`), else None."""
    from analysis.steep_tails import steep_gap_ms

    result = getattr(fitter, "result_", None)
    return None if result is None else steep_gap_ms(result.layout, result.theta, condition)


def pooled_gap(p: PsychometricPart) -> tuple[float, float] | None:
    """The gap of the pooled curve when it is steeper than the tested levels show and the
    pooled figures are the population curve's (None otherwise)."""
    if p.estimand != "population" or p.withheld is not None:
        return None
    return fit_gap(p.pooled)


def steep_note(gap: tuple[float, float], whose: str) -> str:
    """Why a steep curve's figures read as a gap."""
    return (
        f"The {whose} is steeper than the tested levels can show (its fitted width is at "
        "the floor the width penalty sets): the answers place the switch between "
        f"{gap[0]:,.0f} and {gap[1]:,.0f} ms, not where in that gap. Every interval spans the "
        "gap, and the point estimates are the fit's place in it, not findings; testing "
        "levels inside the gap would place them."
    )


def steep_flag(gap: tuple[float, float] | None) -> str:
    return "" if gap is None else f"steep: switch between {gap[0]:,.0f} and {gap[1]:,.0f} ms"
