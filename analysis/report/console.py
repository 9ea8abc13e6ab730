"""What `uxlab report` prints: the kind of data, the trials and pooled 50% thresholds, the
abandonment time ratios, the notes and what was left out (the report's files hold the rest).

Each function returns lines; the command prints them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from analysis.report.blocks import NO_LOWER_BOUND, NO_UPPER_BOUND
from analysis.report.interval_bounds import UNBOUNDED_FACTOR
from analysis.report.support import MIN_POPULATION

if TYPE_CHECKING:
    from analysis.report.data import ReportData


def kinds_line(data: ReportData) -> tuple[str, bool] | None:
    """What the data are, and whether it is a warning (simulated and real sessions mixed,
    said on stderr with the count of each kind); None for real data only."""
    part = data.truth
    banner = part.kinds.banner() if part is not None else None
    if part is None or banner is None:
        return None
    if part.kinds.kind == "mixed":
        return f"uxlab report: {banner}", True
    return banner.replace("`", ""), False


def summary_lines(data: ReportData) -> list[str]:
    """The trials, the pooled 50% thresholds and the abandonment time ratios."""
    t = data.thresholds
    n_people = data.kept["participant"].nunique()
    lines = [
        f"{len(data.kept)} trials from {n_people} participant{'' if n_people == 1 else 's'}; "
        f"stimulus {data.stimulus}"
    ]
    for measure in ("psychometric", "rating"):
        row = t[
            (t.measure == measure)
            & (t.group == "pooled")
            & (t.condition == "all")
            & (t.level == 0.5)
        ]
        if len(row):
            lines.append(_threshold_line(measure, row.iloc[0], data))
            if row.iloc[0].get("estimand") == "median-person":  # withheld: the other estimand
                lines.extend(_population_line(t, data))
    for r in t[t.measure == "psychometric_ratio"].itertuples():  # ratios between conditions
        interval = (
            f"[×{r.ci_low:.2f}, ×{r.ci_high:.2f}]"
            if r.ci_low == r.ci_low
            else no_interval(data.n_participants)
        )
        lines.append(
            f"  psychometric  50% threshold ratio {r.condition}: ×{r.estimate:.2f} {interval}"
        )
    if data.survival is not None and data.survival.aft is not None:
        for r in data.survival.aft.time_ratios_.itertuples():
            bounded_below = r.ci_low > 0 and r.ci_high == r.ci_high  # False for NaN too
            interval = (
                f"[{r.ci_low:.2f}, {upper_bound(r.ci_high, '.2f')}]"
                if bounded_below
                else "(no finite interval: the give-ups do not pin it down)"
            )
            if bounded_below and not data.survival.aft.clustered_:
                interval += " (trials treated as independent: describes these participants)"
            lines.append(
                f"  abandonment   time ratio {r.per} of {r.factor}: {r.time_ratio:.2f} {interval}"
            )
    return lines


def _threshold_line(measure: str, r: Any, data: ReportData) -> str:
    """One pooled 50% threshold: the estimate and its interval, a bracket, or none."""
    if r.estimate != r.estimate:  # NaN, e.g. ratings that separate by latency
        low, high = r.get("bracket_low_ms", float("nan")), r.get("bracket_high_ms")
        if low == low and high == high:  # separated answers: the bracket, no point
            return (
                f"  {measure:<13} 50% threshold  between {low:,.0f} and {high:,.0f} ms "
                "(the answers separate there: a bracket, not an estimate)"
            )
        why = _why_no_threshold(measure, r, data)
        return f"  {measure:<13} 50% threshold     none  ({why})"
    what = f" ({r.estimand})" if isinstance(r.get("estimand"), str) else ""
    if r.ci_low == r.ci_low:  # not NaN
        interval = threshold_interval(r, data.tested_range)
    elif r.get("estimand") == "median-person":  # withheld as measured, not for N
        interval = "(median of per-person fits; no interval: see the report)"
    else:  # below the minimum the figure describes these people, not a population
        interval, what = no_interval(data.n_participants), ""
    marks = ", extrapolated" if bool(r.get("extrapolated", False)) else ""
    return f"  {measure:<13} 50% threshold {r.estimate:8.0f} ms  {interval}{marks}{what}"


def _population_line(t: Any, data: ReportData) -> list[str]:
    """Under `--estimand median-person`, the population curve's 50% point (thresholds.csv's
    group `population`) on a line of its own, when the report gives it with an interval."""
    pop = t[
        (t.measure == "psychometric")
        & (t.group == "population")
        & (t.condition == "all")
        & (t.level == 0.5)
    ]
    if not len(pop):
        return []
    r = pop.iloc[0]
    if not (r.estimate == r.estimate and r.ci_low == r.ci_low):  # NaN: withheld, or below 4
        return []
    interval = threshold_interval(r, data.tested_range)
    return [
        f"  {'':<13} 50% threshold {r.estimate:8.0f} ms  {interval} (population curve's, "
        "another estimand)"
    ]


def _why_no_threshold(measure: str, r: Any, data: ReportData) -> str:
    """Why a pooled 50% threshold has no estimate, in a few words."""
    p = data.psychometric if measure == "psychometric" else None
    procedure = p.procedure if p is not None else None
    adaptive = procedure is not None
    if r.get("estimand") == "median-person":  # withheld as measured, not for N
        return "the median participant's is withheld: see the report"
    if adaptive:  # the pooled fit mixes people tested at their own levels
        return f"withheld on this adaptive design ({procedure}); each person's is in the report"
    return "no estimate from these data: see the report"


def threshold_interval(r: Any, tested: tuple[float, float]) -> str:
    """`[312, 1,869]`; an end thresholds.csv flags in `ci_unbounded` as not bounded, with the
    limit: `[312, no upper bound from these data (computed end above 50,000 ms = 10x the
    highest tested level)]`."""
    which = r.get("ci_unbounded", "")
    which = which if isinstance(which, str) else ""
    low = f"{r.ci_low:.0f}"
    high = upper_bound(r.ci_high, ".0f")
    if which in ("lower", "both"):
        low = (
            f"{NO_LOWER_BOUND} (computed end below {tested[0] / UNBOUNDED_FACTOR:,.0f} ms = "
            "a tenth of the lowest tested level)"
        )
    if which in ("upper", "both") and r.ci_high != float("inf"):
        high = (
            f"{NO_UPPER_BOUND} (computed end above {UNBOUNDED_FACTOR * tested[1]:,.0f} ms = "
            f"{UNBOUNDED_FACTOR:g}x the highest tested level)"
        )
    return f"[{low}, {high}]"


def upper_bound(high: float, spec: str) -> str:
    """An interval's upper bound as the report writes it: infinite means the data do not
    bound it."""
    return format(high, spec) if high != float("inf") else "no upper bound from these data"


def no_interval(n_participants: int) -> str:
    """What a pooled threshold without an interval is: `(these 2 participants' pooled
    trials; no population interval below 4 participants)`."""
    who = "this participant's" if n_participants == 1 else f"these {n_participants} participants'"
    if n_participants < MIN_POPULATION:
        return f"({who} trials; no population interval below {MIN_POPULATION} participants)"
    return f"({who} trials; no population interval could be computed)"


def notes_lines(data: ReportData) -> list[str]:
    """The report's notes, the participants left out and the parts skipped."""
    from analysis.exclusions import FIDELITY_REASON, rule_summary

    lines = [f"note: {note}" for note in data.notes]
    for line in rule_summary(data.exclusions):
        # participants left out, and trials shown outside the timing tolerance: both change
        # what the figures above rest on (practice and attention-check trials never count)
        if "participant(s)" in line or line.startswith(FIDELITY_REASON):
            lines.append(f"left out: {line}")
    lines += [f"skipped: {line}" for line in dict.fromkeys(data.skipped)]
    return lines
