"""The report's building blocks (headings, paragraphs, bullets, tables, figures) and the cell
texts the sections share; `render` writes them as HTML and Markdown."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.report.data import ReportData, one_line_error
from analysis.report.interval_bounds import unbounded_ends, unbounded_note_text


@dataclass
class Heading:
    text: str
    level: int = 2


@dataclass
class Para:
    text: str
    kind: str = "p"  # p | note


@dataclass
class Bullets:
    items: list[str]


@dataclass
class Table:
    frame: pd.DataFrame
    caption: str = ""


@dataclass
class Figure:
    name: str
    png: bytes
    caption: str


Block = Heading | Para | Bullets | Table | Figure
"""One piece of the report's content, in the order it is read."""


def figure_or_note(
    data: ReportData, name: str, draw: Callable[[], bytes], caption: str
) -> Figure | Para:
    """A figure, or a note naming the failure when drawing it fails (recorded in the data)."""
    try:
        return Figure(name, draw(), caption)
    except Exception as exc:
        data.failed_parts.append((f"figure {name}", one_line_error(exc)))
        return Para(f"Figure {name} could not be drawn: {one_line_error(exc)}", "note")


def degenerate_note(frame: pd.DataFrame) -> list[Block]:
    """A note explaining degenerate intervals when a table's `flags` column marks any."""
    if "flags" not in frame.columns or not frame["flags"].str.contains("degenerate").any():
        return []
    return [
        Para(
            "Degenerate interval: a bound equals the estimate, or the interval spans under 1% "
            "of it; the resamples hardly varied (answers perfectly separated between two "
            "tested levels, or too few units to resample), so it does not show precision.",
            "note",
        )
    ]


NO_UPPER_BOUND = "no upper bound from these data"
"""An infinite upper bound, or one past `interval_bounds.UNBOUNDED_FACTOR` x the highest
tested level: these data do not bound the interval from above."""

NO_LOWER_BOUND = "no lower bound from these data"
"""A lower bound below the lowest tested level / `interval_bounds.UNBOUNDED_FACTOR` (or not
positive): these data do not bound the interval from below."""


def ci_ends(low: float, high: float, tested: tuple[float, float] | None = None) -> tuple[str, str]:
    """The two ends of an interval as cells print them (ms, no decimals): given the `tested`
    (lowest, highest) levels, an end beyond the limits of `interval_bounds.unbounded_ends`
    reads as not bounded (`no upper bound from these data`), as does an infinite upper end."""
    which = unbounded_ends(low, high, *tested) if tested is not None else ""
    lower = NO_LOWER_BOUND if which in ("lower", "both") else f"{low:,.0f}"
    upper = NO_UPPER_BOUND if which in ("upper", "both") or np.isposinf(high) else f"{high:,.0f}"
    return lower, upper


def ci_range(low: float, high: float, tested: tuple[float, float] | None = None) -> str:
    """`376 to 1,869` (ms, no decimals); `312 to no upper bound from these data` for an end
    `ci_ends` reads as not bounded."""
    lower, upper = ci_ends(low, high, tested)
    return f"{lower} to {upper}"


def unbounded_note(
    cells: list[str],
    tested: tuple[float, float] | None,
    whose: str,
    model: str = "the fitted curve's tails",
) -> list[Block]:
    """The note naming the bounding limit, when any of a table's interval `cells` is shown
    as not bounded (`model`: whose extrapolation an end that far out is)."""
    if not any(NO_UPPER_BOUND in c or NO_LOWER_BOUND in c for c in cells):
        return []
    return [Para(unbounded_note_text(tested, whose, model=model), "note")]


def estimate_with_ci(
    est: float, low: float, high: float, observed: tuple[float, float] | None = None
) -> str:
    """`1,150 [376, 1,869]`; `not reached` when fewer than that share gave up while waiting;
    given the `observed` (shortest, longest) waits, an end `ci_ends` reads as not bounded
    prints so (an infinite upper end always): `1,150 [376, no upper bound from these data]`."""
    lower, upper = ci_ends(low, high, observed)
    if not np.isfinite(est):
        return "not reached" if not np.isfinite(low) else f"not reached [{lower}, {upper}]"
    return f"{est:,.0f} [{lower}, {upper}]"
