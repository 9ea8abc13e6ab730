"""Which ends of a threshold interval these data actually bound.

A small sample can give a 95% interval whose computed end lies far beyond the tested levels
(a participant jackknife-t on ln ms with ten people once reached 10^57 ms on a study tested
at 100 to 5,000 ms). Printing that number suggests the data bound the threshold there; they
do not. An end beyond `UNBOUNDED_FACTOR` times the highest tested level, or below the lowest
tested level divided by it, is therefore shown as not bounded (the computed number stays in
thresholds.csv, flagged in `ci_unbounded`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from analysis.psychometric import PsychometricFitter

UNBOUNDED_FACTOR = 10.0
"""Ten times the highest tested level (a tenth of the lowest) is one decade past the data on
the log-latency axis the curves are fitted on. Out there no trial constrains the fitted
curve: an interval end that far out is pure extrapolation of the fitted curve's tails (and of
a t quantile applied to a wide spread on ln ms), not a bound the data put on the threshold.
Within one decade an end is still shaped by the outermost tested levels, so it is printed."""


def unbounded_ends(
    ci_low: float, ci_high: float, tested_low: float | None, tested_high: float | None
) -> str:
    """`upper`, `lower`, `both` or "": the interval ends beyond the bounding limits.

    Upper: `ci_high` is infinite or above `UNBOUNDED_FACTOR` x `tested_high`; lower:
    `ci_low` is not positive or below `tested_low` / `UNBOUNDED_FACTOR`. A missing (NaN) end
    or tested range flags nothing.
    """
    upper = lower = False
    if tested_high is not None and math.isfinite(tested_high) and not math.isnan(ci_high):
        upper = ci_high > UNBOUNDED_FACTOR * tested_high
    if tested_low is not None and math.isfinite(tested_low) and not math.isnan(ci_low):
        lower = ci_low <= 0 or ci_low < tested_low / UNBOUNDED_FACTOR
    if upper and lower:
        return "both"
    return "upper" if upper else "lower" if lower else ""


def fitted_range_ms(fitter: PsychometricFitter) -> tuple[float, float]:
    """The lowest and highest stimulus level a fitter saw (ms): the range its own
    interval is judged against."""
    x = np.asarray(fitter.x_ms_, dtype=float)
    return float(x.min()), float(x.max())


def limits_text(tested_low: float, tested_high: float) -> str:
    """`above 50,000 ms or below 10 ms` for a study tested at 100 to 5,000 ms."""
    return (
        f"above {UNBOUNDED_FACTOR * tested_high:,.0f} ms or below "
        f"{tested_low / UNBOUNDED_FACTOR:,.0f} ms"
    )


def unbounded_note_text(
    tested: tuple[float, float] | None,
    whose: str = "tested level",
    what: str = "the threshold",
    model: str = "the fitted curve's tails",
) -> str:
    """The sentence under a table naming the limit once (`tested`: the range it applies,
    None when it differs by row, e.g. per participant; `what` the interval is of and the
    `model` whose extrapolation an end that far out is)."""
    here = f" (here {limits_text(*tested)})" if tested is not None else ""
    return (
        f"An interval end above {UNBOUNDED_FACTOR:g}x the highest {whose} or below a "
        f"tenth of the lowest{here} is shown as not "
        f"bounded: that far out it is pure extrapolation of {model}, so these "
        f"data do not bound {what} there; thresholds.csv keeps the computed number, "
        "flagged in `ci_unbounded`."
    )
