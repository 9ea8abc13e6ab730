"""The reference table: each published figure beside the measured threshold it maps to.

The figures and their citations live in `analysis/reference_figures.toml` (loaded by
`analysis.reference.load_reference_figures`). Each figure names what it should be compared
with (`compare_with`, e.g. "psychometric ttft_ms 0.5", "rating ttft_ms 0.5",
"abandonment 0.1"); this module finds that estimate among the report's results and says
whether the figure lies inside, overlaps, below or above its 95% CI (with the interval's width
beside every verdict, `precision`, to which the report adds the design's sensitivity where it
is simulated: `sensitivity_words`), or "not decided (...)" where the
figure meets a side of the interval these data do not bound (an end past the limits of
`analysis.report.interval_bounds`, given the levels the estimate is judged against). A figure
whose measure this study did not measure is listed as such, so the table always shows every
figure. Every verdict carries the number of participants behind it (`n_participants`); below
the minimum (`analysis.report.support`), or when the estimate has no interval or lies outside
the tested levels, the verdict is "not enough data", never "below" / "above".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from analysis.reference import NOT_DECIDED, place
from analysis.report.blocks import ci_ends
from analysis.report.interval_bounds import unbounded_ends

Measured = tuple[float, float, float] | tuple[float, float, float, str]
"""An estimate with its 95% interval (ms), and where it comes from when that is worth saying."""

COLUMNS = [
    "id",
    "label",
    "figure",
    "figure_low_ms",
    "figure_high_ms",
    "compared_with",
    "estimate",
    "ci_low",
    "ci_high",
    "ci_unbounded",
    "our_estimate",
    "verdict",
    "precision",
    "n_participants",
    "evidence",
    "note",
    "citation",
]


def _as_dict(item: Any) -> dict[str, Any]:
    if isinstance(item, Mapping):
        return dict(item)
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return dataclasses.asdict(item)
    return dict(vars(item))


def _first(d: Mapping[str, Any], *keys: str, default: Any = None) -> Any:
    for k in keys:
        if d.get(k) not in (None, ""):
            return d[k]
    return default


def _to_ms(value: float, unit: str) -> float:
    """A figure in ms (per token for rates): s -> ms, tokens/s -> ms per token."""
    unit = (unit or "ms").strip().lower().replace(" ", "")
    if unit in ("s", "sec", "seconds"):
        return value * 1000.0
    if unit in ("tokens/s", "tok/s", "tokens_per_s"):
        return 1000.0 / value if value else float("inf")
    return float(value)


def figure_range_ms(fig: Mapping[str, Any]) -> tuple[float, float]:
    """(low, high) of a figure in ms; equal for a point figure; NaN when not a latency."""
    unit = str(_first(fig, "unit", default="ms"))
    low = _first(fig, "low_ms", "low", "value_low", "min")
    high = _first(fig, "high_ms", "high", "value_high", "max")
    value = _first(fig, "value_ms", "value")
    if isinstance(value, list | tuple) and len(value) == 2:
        low, high = value
    if low is None and high is None and value is not None:
        low = high = value
    try:
        lo_ms, hi_ms = _to_ms(float(low), unit), _to_ms(float(high), unit)
    except (TypeError, ValueError):
        return float("nan"), float("nan")
    return min(lo_ms, hi_ms), max(lo_ms, hi_ms)


def verdict(
    low_ms: float, high_ms: float, ci_low: float, ci_high: float, ci_unbounded: str = ""
) -> str:
    """Where the figure lies relative to our CI: inside, overlaps, below, above, or not
    decided when
    it meets a side `ci_unbounded` names (`analysis.reference.place`)."""
    return place(low_ms, high_ms, ci_low, ci_high, ci_unbounded)


def _match(compare_with: str, measured: Mapping[str, Measured]) -> str | None:
    """The key of `measured` a figure's `compare_with` names (measure, stimulus, level)."""
    text = compare_with.lower().replace("=", " ").replace(":", " ").replace(",", " ")
    words = set(text.split())
    best, best_score = None, 0
    for key in measured:
        parts = key.lower().split(":")
        measure, rest = parts[0], parts[1:]
        if not any(w.startswith(measure[:7]) for w in words):
            continue
        numbers = {f"{float(w):g}" for w in words if _is_number(w)}
        score = 1 + sum(1 for p in rest if p in words or (_is_number(p) and p in numbers))
        stimulus_named = [p for p in rest if not _is_number(p)]
        names_other_factor = any(w.endswith(("_ms", "_s")) for w in words)
        if stimulus_named and names_other_factor and not set(stimulus_named) & words:
            continue  # the figure names another latency factor
        if score > best_score:
            best, best_score = key, score
    return best


def _structured_key(item: Any, measured: Mapping[str, Measured]) -> str | None:
    """`measure:stimulus:level` (or `measure:level`) from a figure with those attributes."""
    if not all(hasattr(item, a) for a in ("measure", "stimulus", "level")):
        return None
    try:
        level = f"{float(item.level):g}"
    except (TypeError, ValueError):
        return None
    parts = [item.measure, item.stimulus, level] if item.stimulus else [item.measure, level]
    key = ":".join(str(p) for p in parts)
    return key if key in measured else None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


NOT_ENOUGH = "not enough data"
NOT_COMPARED = "not compared"
VERDICTS = ("inside", "overlaps", "below", "above")
"""The verdicts that compare a figure with an interval (the others say why none is made)."""


def precision_words(
    ci_low: float, ci_high: float, tested: tuple[float, float] | None = None
) -> str:
    """`95% CI spans x1.54 (596-919 ms)`: how far apart two figures must be for this
    interval to tell them apart; an end these data do not bound (`ci_ends`) is said so."""
    lower, upper = ci_ends(ci_low, ci_high, tested)
    if not (lower[0].isdigit() and upper[0].isdigit()):
        return f"95% CI {lower} to {upper}"
    return f"95% CI spans ×{ci_high / ci_low:.2f} ({lower}-{upper} ms)"


SENSITIVITY_POWER = 0.8
"""The power the precision column's distance is given at (a design's usual target)."""


ROUGH_BELOW = 8
"""Below this many people one study's design power is rough: right for the typical study,
but on tables drawn from a known truth the real power at the printed distance ranged over
0.46-1.00 (10-90%) between studies of 4 people, 0.51-0.97 of 8 and 0.63-0.92 of 20 (median
0.78-0.86, 0.78-0.80, 0.81: benchmarks/design_power_check.py, 2026-12-08)."""


def sensitivity_words(ratio: float, n_participants: int) -> str:
    """`80% power to exclude a figure ×1.85 or more from the true threshold (simulated ...)`
    (a design's sensitivity: `uxlab.plan.sensitivity`); past ×10, that no such figure is
    found; below `ROUGH_BELOW` people, that it is rough."""
    source = (
        f"simulated from a truth fitted to these {n_participants} people: rough with so few"
        if n_participants < ROUGH_BELOW
        else "simulated from a truth fitted to these data"
    )
    if not np.isfinite(ratio):
        return (
            f"under {SENSITIVITY_POWER:.0%} power to exclude even a figure ×10 from the true "
            f"threshold ({source})"
        )
    return (
        f"{SENSITIVITY_POWER:.0%} power to exclude a figure ×{ratio:.2f} or more from the "
        f"true threshold ({source})"
    )


def compare_figures(
    figures: Iterable[Any],
    measured: Mapping[str, Measured],
    n_participants: int | None = None,
    min_participants: int = 0,
    withheld: Mapping[str, str] | None = None,
    tested: Mapping[str, tuple[float, float]] | None = None,
    described: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """One row per figure: the figure in ms, the matched estimate [CI] and the verdict.

    `measured` maps keys like `psychometric:ttft_ms:0.5`, `rating:ttft_ms:0.5`,
    `abandonment:0.1` to (estimate, ci_low, ci_high) in ms, optionally with a fourth item
    saying where the estimate comes from (e.g. the condition). `tested` maps a key to the
    (lowest, highest) levels (or waits) its interval is judged against: an end past the
    limits of `interval_bounds.unbounded_ends` is flagged in `ci_unbounded`, printed as not
    bounded, and a figure that meets that side is "not decided (...)". With `n_participants`
    below `min_participants`, no interval, or a reason in `withheld` (key -> why, e.g. the
    estimate is extrapolated), the verdict is "not enough data (...)", or the reason itself
    when it starts "not decided" or "not compared". `described` gives the words for a key
    that has no estimate (e.g. the bracket of separated answers).
    """
    withheld = withheld or {}
    tested = tested or {}
    rows = []
    for item in figures:
        fig = _as_dict(item)
        if hasattr(item, "range_ms"):  # analysis.reference.ReferenceFigure: ms or ms/token
            lo, hi = item.range_ms
            if hasattr(item, "figure"):
                fig["figure"] = item.figure
        else:
            lo, hi = figure_range_ms(fig)
        compare_with = str(_first(fig, "compare_with", "compared_with", "maps_to", default=""))
        key = _structured_key(item, measured)
        if key is None and compare_with:
            key = _match(compare_with, measured)
        perception = _first(fig, "perception_study", default=None)
        note = str(_first(fig, "note", default=""))
        kind = str(_first(fig, "evidence", default=""))
        if perception is None:
            evidence = kind or note
        else:
            evidence = ("perception study" if perception else "NO perception study") + (
                f" ({kind})" if kind else ""
            )
        row = {
            "id": str(_first(fig, "id", default="")),
            "label": str(_first(fig, "label", "name", "title", "id", default="")),
            "figure": _figure_text(fig, lo, hi),
            "figure_low_ms": lo,
            "figure_high_ms": hi,
            "compared_with": compare_with or "–",
            "estimate": np.nan,
            "ci_low": np.nan,
            "ci_high": np.nan,
            "ci_unbounded": "",
            "our_estimate": "not measured in this study",
            "verdict": "–",
            "precision": "",
            "n_participants": n_participants,
            "evidence": evidence,
            "note": note,
            "citation": str(_first(fig, "citation", "source", default="")),
        }
        if key is not None and np.isfinite(lo):
            entry = measured[key]
            est, ci_lo, ci_hi = entry[0], entry[1], entry[2]
            if len(entry) == 4:  # where the estimate comes from
                row["compared_with"] = f"{compare_with} ({entry[3]})"
            has_ci = bool(np.isfinite(ci_lo) and not np.isnan(ci_hi))  # inf: no upper bound
            rng = tested.get(key)
            which = unbounded_ends(ci_lo, ci_hi, *rng) if rng is not None and has_ci else ""
            row.update(
                estimate=est,
                ci_low=ci_lo,
                ci_high=ci_hi,
                ci_unbounded=which,
                our_estimate=(
                    "{:,.0f} ms [{}, {}]".format(est, *ci_ends(ci_lo, ci_hi, rng))
                    if has_ci
                    else f"{est:,.0f} ms (no population interval)"
                    if np.isfinite(est)
                    else "no estimate"
                ),
                verdict=verdict(lo, hi, ci_lo, ci_hi, which),
            )
            why = withheld.get(key)
            if n_participants is not None and n_participants < min_participants:
                why = f"N = {n_participants}, needs {min_participants} participants"
            elif not has_ci:
                why = why or "no interval"
            if why:  # a reason may say itself that the data cannot decide (a bracket)
                as_is = why.startswith((NOT_DECIDED, NOT_COMPARED))
                row["verdict"] = why if as_is else f"{NOT_ENOUGH} ({why})"
            if row["verdict"] in VERDICTS:  # how finely the interval behind it places things
                row["precision"] = precision_words(ci_lo, ci_hi, rng)
            if not np.isfinite(est) and described is not None and key in described:
                row["our_estimate"] = described[key]
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def _figure_text(fig: Mapping[str, Any], lo: float, hi: float) -> str:
    text = _first(fig, "figure", "value_text", default=None)
    if text is not None and not isinstance(text, int | float | list | tuple):
        return str(text)
    if not np.isfinite(lo):
        return str(_first(fig, "value", default="–"))
    return f"{lo:,.0f} ms" if lo == hi else f"{lo:,.0f}–{hi:,.0f} ms"
