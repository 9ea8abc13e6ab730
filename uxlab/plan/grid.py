"""The planning grid (participants x repeats) and the targets a cell may meet.

`parse_range("4:40", 8)` gives up to 8 whole numbers from 4 to 40, spaced evenly in log
(the precision of a threshold improves with the square root of the trials, so log steps
put the cells where the contours bend); "4:40:4" asks for 4 values, "8,16,32" lists them,
"12" is one value.

Targets (`parse_target`):

- ``ci_width<=200ms``: the expected (mean over simulated studies) width of the 95% interval
  of the 50% threshold is at most 200 ms; ``ci_width@0.75<=300ms`` for another level.
- ``ci_width_median<=200ms``: the median width instead of the mean (``ci_width_median@0.75``
  for another level). Both are over the studies that give an interval.
- ``ci_width<=200ms@80%``: assurance (accuracy in parameter estimation, Kelley & Maxwell
  2003): at least 80% of all simulated studies give a 95% interval at most 200 ms wide; a
  study with no interval counts as failing. With a level: ``ci_width@0.75<=300ms@80%``
  (the ``@`` before ``<=`` is the threshold's level, the ``@...%`` after the width the
  share of studies).
- ``exclude=800ms`` or ``exclude=<reference figure id>``: the interval of the 50% threshold
  leaves out that figure (for a range, all of it) in at least the `--power` share of
  studies (0.8 by default).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from uxlab.plan.defaults import DEFAULT_POWER, DEFAULT_REFERENCE
from uxlab.plan.design import PlanError


def parse_range(text: str, n_values: int, what: str = "range") -> list[int]:
    """Whole numbers for one grid axis (see the module docstring)."""
    text = text.strip()
    try:
        if text.isdigit():
            values = [int(text)]
        elif "," in text:
            values = sorted({int(v) for v in text.split(",") if v.strip()})
        else:
            parts = [int(p) for p in text.split(":")]
            if len(parts) not in (2, 3):
                raise ValueError
            lo, hi = parts[0], parts[1]
            count = parts[2] if len(parts) == 3 else n_values
            if lo > hi or count < 1:
                raise ValueError
            raw = np.exp(np.linspace(math.log(lo), math.log(hi), count)) if lo > 0 else [lo]
            values = sorted({round(v) for v in raw} | {lo, hi})
    except ValueError:
        raise PlanError(
            f"{what} {text!r}: expected LOW:HIGH (e.g. 4:40), LOW:HIGH:COUNT (4:40:8), a "
            "list (8,16,32) or one whole number, LOW <= HIGH"
        ) from None
    if not values or values[0] < 1:
        raise PlanError(f"{what} {text!r}: every value must be at least 1")
    return values


@dataclass(frozen=True)
class Reference:
    """A figure the 50% threshold's interval should leave out: a point or a range (ms)."""

    label: str
    low_ms: float
    high_ms: float

    def excluded(self, ci_low: np.ndarray, ci_high: np.ndarray) -> np.ndarray:
        """Whether each interval leaves the whole figure out (NaN intervals: False)."""
        with np.errstate(invalid="ignore"):
            return (ci_high < self.low_ms) | (ci_low > self.high_ms)


WIDTH_STATISTICS = ("mean", "median", "assurance")


@dataclass(frozen=True)
class Target:
    """What a cell must achieve: `kind` "ci_width" (max_ms at `level`, judged on the
    `statistic` of the widths: "mean", "median" or "assurance", the share of studies at most
    max_ms wide, which must reach `assurance`) or "exclude"."""

    text: str
    kind: str
    level: float = 0.5
    max_ms: float | None = None
    reference: Reference | None = None
    power: float = DEFAULT_POWER
    statistic: str = "mean"
    assurance: float | None = None

    @property
    def assurance_column(self) -> str:
        """The plan table's column for this assurance target (share of studies whose 95%
        interval at the level is at most max_ms wide)."""
        return f"assurance[ci_width_{int(self.level * 100)}<={self.max_ms:g}ms]"


def reference_from(text: str, units: tuple[str, ...] = ("ms",)) -> Reference:
    """`800ms` / `800` or the id of a figure in `analysis/reference_figures.toml` (in one of
    `units`)."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(ms)?\s*", text)
    if m:
        value = float(m.group(1))
        return Reference(f"{value:g} ms", value, value)
    from analysis.reference import load_reference_figures

    figures = {f.id: f for f in load_reference_figures()}
    figure = figures.get(text.strip())
    if figure is None:
        known = ", ".join(f.id for f in figures.values() if f.unit == "ms")
        raise PlanError(
            f"reference {text!r}: give a number of ms (e.g. 800ms) or a reference figure id "
            f"({known})"
        )
    if figure.unit not in units:
        raise PlanError(f"reference {text!r} is in {figure.unit}; the planner needs ms")
    low, high = figure.range_ms
    return Reference(f"{figure.id} ({figure.figure})", float(low), float(high))


CI_WIDTH_TARGET = re.compile(
    r"\s*ci_width(?P<median>_median)?(?:@(?P<level>0?\.[0-9]+))?\s*<=\s*"
    r"(?P<ms>[0-9]+(?:\.[0-9]+)?)\s*(?:ms)?\s*(?:@\s*(?P<share>[0-9]+(?:\.[0-9]+)?)\s*%)?\s*"
)


def parse_target(text: str, power: float = DEFAULT_POWER) -> Target:
    """A `--target` (see the module docstring)."""
    m = CI_WIDTH_TARGET.fullmatch(text)
    if m:
        level = float(m["level"]) if m["level"] else 0.5
        if level not in (0.25, 0.5, 0.75):
            raise PlanError(f"target {text!r}: the level must be 0.25, 0.5 or 0.75")
        share = float(m["share"]) / 100.0 if m["share"] else None
        if m["median"] and share is not None:
            raise PlanError(
                f"target {text!r}: an assurance (@80%) goes with ci_width, not ci_width_median"
            )
        if share is not None and not 0.0 < share < 1.0:
            raise PlanError(f"target {text!r}: the assurance must be between 0% and 100%")
        statistic = "median" if m["median"] else "assurance" if share is not None else "mean"
        return Target(
            text.strip(),
            "ci_width",
            level,
            float(m["ms"]),
            power=power,
            statistic=statistic,
            assurance=share,
        )
    m = re.fullmatch(r"\s*exclude\s*=\s*(.+)", text)
    if m:
        return Target(text.strip(), "exclude", reference=reference_from(m.group(1)), power=power)
    raise PlanError(
        f"target {text!r}: expected ci_width<=200ms (mean width), ci_width_median<=200ms "
        "(median), ci_width<=200ms@80% (assurance: at least 80% of studies at most 200 ms), "
        "@0.25 or @0.75 after ci_width for another level (ci_width@0.75<=300ms@80%), or "
        "exclude=800ms (or exclude=<reference figure id>)"
    )


def default_reference(stimulus: str) -> Reference | None:
    """The figure the power column tests when none is named: `DEFAULT_REFERENCE` for a TTFT
    study, else the first figure compared with this stimulus's 50% threshold (e.g. 30 ms
    per token for `itl_ms`); None when the figures have none for it."""
    if stimulus == "ttft_ms":
        return reference_from(DEFAULT_REFERENCE)
    from analysis.reference import load_reference_figures

    for figure in load_reference_figures():
        if figure.compare_with == f"psychometric {stimulus} 0.5":
            return reference_from(figure.id, units=("ms", "ms/token"))
    return None
