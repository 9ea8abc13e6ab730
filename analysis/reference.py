"""Published latency figures (``reference_figures.toml``) and how our estimates compare.

Each figure is a point or a range in ms (or ms per token) with its citation, what it
measured, the estimate it maps to (``compare_with``: "psychometric ttft_ms 0.5",
"abandonment 0.1", ...) and whether people were measured behind it. `compare` says where a
figure lies relative to one estimate's interval: ``inside`` (a point or a whole range within
the CI), ``overlaps`` (a range sharing only part of the CI's values), ``below`` (entirely
under ci_low) or ``above`` (entirely over ci_high); ``not decided (...)`` when the figure is
not beyond a bounded end and the interval has an end these data do not bound
(thresholds.csv's ``ci_unbounded``, or an infinite ``ci_high``): the data then neither rule
the figure out nor support it.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

DEFAULT_PATH = Path(__file__).with_name("reference_figures.toml")
UNITS = ("ms", "ms/token")
MEASURES = ("psychometric", "rating", "abandonment")
# What kind of judgement a figure is about; a figure is compared only with a measure of the
# same kind (a reading pace with smoothness), and a server SLO with none (not perception).
JUDGEMENTS = ("immediacy", "acceptability", "abandonment", "smoothness", "reading", "server-slo")
COMPARABLE = {
    "immediacy": ("immediacy",),
    "acceptability": ("acceptability",),
    "abandonment": ("abandonment",),
    "smoothness": ("smoothness",),
    "reading": (),  # a reading pace is not a judgement of streaming: no question measures it
    "server-slo": (),
}
REQUIRED = (
    "id",
    "label",
    "unit",
    "measured",
    "citation",
    "compare_with",
    "perception_study",
    "note",
)


class ReferenceFileError(ValueError):
    """A reference-figures file that does not follow its schema (names file, entry, key)."""


@dataclass(frozen=True)
class ReferenceFigure:
    """One published figure and the estimate it should be compared with."""

    id: str
    label: str
    unit: str
    measured: str
    citation: str
    compare_with: str
    perception_study: bool
    note: str
    value: float | None = None
    low: float | None = None
    high: float | None = None
    url: str = ""
    compare_note: str = ""
    evidence: str = ""
    judgement: str = ""  # one of JUDGEMENTS ("" in old files: compared as before)

    @property
    def range_ms(self) -> tuple[float, float]:
        """(low, high) in the figure's unit; equal for a point figure."""
        low = self.low if self.low is not None else self.value
        high = self.high if self.high is not None else self.value
        assert low is not None and high is not None, "a value, or low and high (checked on load)"
        return float(low), float(high)

    @property
    def figure(self) -> str:
        """The figure as printed in a table, e.g. "100 ms (50-200)" or "500-800 ms"."""
        low, high = self.range_ms
        if self.value is None:
            return f"{low:g}–{high:g} {self.unit}"
        if low == high:
            return f"{self.value:g} {self.unit}"
        return f"{self.value:g} {self.unit} ({low:g}–{high:g})"

    @property
    def measure(self) -> str:
        return self.compare_with.split()[0]

    @property
    def stimulus(self) -> str | None:
        parts = self.compare_with.split()
        return parts[1] if len(parts) == 3 else None

    @property
    def level(self) -> float:
        return float(self.compare_with.split()[-1])


def _check(entry: dict[str, Any], where: str) -> ReferenceFigure:
    missing = [key for key in REQUIRED if key not in entry]
    if missing:
        raise ReferenceFileError(f"{where}: missing key(s) {', '.join(missing)}")
    known = set(ReferenceFigure.__dataclass_fields__)
    unknown = sorted(set(entry) - known)
    if unknown:
        raise ReferenceFileError(
            f"{where}: unknown key(s) {', '.join(unknown)}; "
            f"known keys are {', '.join(sorted(known))}"
        )
    if entry.get("unit") not in UNITS:
        raise ReferenceFileError(
            f"{where}: unit {entry['unit']!r}; use one of {', '.join(UNITS)} (convert seconds "
            "and tokens/s first)"
        )
    if entry.get("value") is None and (entry.get("low") is None or entry.get("high") is None):
        raise ReferenceFileError(f"{where}: give value, or low and high")
    for key in ("value", "low", "high"):
        if key in entry and not (isinstance(entry[key], int | float) and entry[key] > 0):
            raise ReferenceFileError(f"{where}: {key} = {entry[key]!r}; must be a number > 0")
    low, high = entry.get("low"), entry.get("high")
    if low is not None and high is not None and low > high:
        raise ReferenceFileError(f"{where}: low {entry['low']} is above high {entry['high']}")
    parts = str(entry["compare_with"]).split()
    shape_ok = (
        len(parts) in (2, 3)
        and parts[0] in MEASURES
        and (len(parts) == 3) != (parts[0] == "abandonment")
    )
    try:
        level_ok = 0.0 < float(parts[-1]) < 1.0
    except (ValueError, IndexError):
        level_ok = False
    if not (shape_ok and level_ok):
        raise ReferenceFileError(
            f"{where}: compare_with {entry['compare_with']!r}; expected "
            "'<psychometric|rating> <stimulus column> <level>' or 'abandonment <share>', "
            "with the level or share between 0 and 1"
        )
    if "judgement" in entry and entry["judgement"] not in JUDGEMENTS:
        raise ReferenceFileError(
            f"{where}: judgement {entry['judgement']!r}; use one of {', '.join(JUDGEMENTS)}"
        )
    if not isinstance(entry["perception_study"], bool):
        raise ReferenceFileError(f"{where}: perception_study must be true or false")
    return ReferenceFigure(**entry)


def load_reference_figures(path: str | Path | None = None) -> list[ReferenceFigure]:
    """The figures of `path` (default: the bundled reference_figures.toml), validated."""
    path = Path(path) if path is not None else DEFAULT_PATH
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ReferenceFileError(f"{path}: not valid TOML ({exc})") from None
    entries = data.get("figure")
    if not isinstance(entries, list) or not entries:
        raise ReferenceFileError(f"{path}: expected one or more [[figure]] tables")
    figures, seen = [], set()
    for i, entry in enumerate(entries):
        where = f"{path}: [[figure]] #{i + 1} ({entry.get('id', 'no id')})"
        fig = _check(entry, where)
        if fig.id in seen:
            raise ReferenceFileError(f"{where}: id {fig.id!r} is used twice")
        seen.add(fig.id)
        figures.append(fig)
    return figures


NOT_DECIDED = "not decided"
"""The verdict's first words when the data cannot rule a figure in or out."""


def unbounded_sides(ci_high: float, ci_unbounded: object = "") -> tuple[bool, bool]:
    """(no lower bound, no upper bound) from thresholds.csv's `ci_unbounded` (`upper`,
    `lower`, `both`; empty or NaN: none) and an infinite `ci_high`."""
    which = ci_unbounded if isinstance(ci_unbounded, str) else ""
    no_upper = which in ("upper", "both") or math.isinf(ci_high)
    return which in ("lower", "both"), no_upper


def place(low: float, high: float, ci_low: float, ci_high: float, ci_unbounded: object = "") -> str:
    """Where the range [low, high] (equal for a point) lies relative to [ci_low, ci_high]:
    `below` / `above` when it lies entirely beyond an end these data bound, `inside` when it
    lies within a bounded interval, `overlaps` when a range and the interval share only
    part of their values, else (an end not bounded, per `unbounded_sides`)
    `not decided (the interval has no upper bound from these data)`: no bound on a side
    means the data can neither rule the figure out there nor say it agrees."""
    no_lower, no_upper = unbounded_sides(ci_high, ci_unbounded)
    if high < ci_low and not no_lower:
        return "below"
    if low > ci_high and not no_upper:
        return "above"
    if no_lower and no_upper:
        return f"{NOT_DECIDED} (the interval is not bounded by these data on either side)"
    if no_lower or no_upper:
        side = "upper" if no_upper else "lower"
        return f"{NOT_DECIDED} (the interval has no {side} bound from these data)"
    if ci_low <= low and high <= ci_high:
        return "inside"
    return "overlaps"


def compare(
    figure: ReferenceFigure, ci_low: float, ci_high: float, ci_unbounded: object = ""
) -> str:
    """Where the figure lies relative to the interval [ci_low, ci_high] (`place`); `no
    interval` when an end is missing."""
    if math.isnan(ci_low) or math.isnan(ci_high):
        return "no interval"
    return place(*figure.range_ms, ci_low, ci_high, ci_unbounded)


def compare_with_thresholds(
    figures: list[ReferenceFigure], thresholds: pd.DataFrame, group: str = "pooled"
) -> pd.DataFrame:
    """One row per figure next to the matching row of a thresholds table.

    `thresholds` has the thresholds.csv columns (measure, stimulus, group, level, estimate,
    ci_low, ci_high, and `ci_unbounded`: an end it flags makes an overlapping figure
    "not decided (...)", see `place`); abandonment rows match on measure and level alone.
    Figures without a matching estimate get verdict "not measured".
    """
    rows = []
    for fig in figures:
        sel = (thresholds["measure"] == fig.measure) & (thresholds["group"] == group)
        sel &= (thresholds["level"] - fig.level).abs() < 1e-9
        if fig.stimulus is not None:
            sel &= thresholds["stimulus"] == fig.stimulus
        match = thresholds[sel]
        row = {
            "id": fig.id,
            "label": fig.label,
            "figure": fig.figure,
            "compare_with": fig.compare_with,
            "estimate": float("nan"),
            "ci_low": float("nan"),
            "ci_high": float("nan"),
            "ci_unbounded": "",
            "verdict": "not measured",
            "perception_study": fig.perception_study,
            "note": fig.note,
            "citation": fig.citation,
        }
        if len(match):
            best = match.iloc[0]
            unbounded = best.get("ci_unbounded", "")
            unbounded = unbounded if isinstance(unbounded, str) else ""
            row.update(
                estimate=best.estimate,
                ci_low=best.ci_low,
                ci_high=best.ci_high,
                ci_unbounded=unbounded,
            )
            row["verdict"] = compare(fig, best.ci_low, best.ci_high, unbounded)
        rows.append(row)
    return pd.DataFrame(rows)
