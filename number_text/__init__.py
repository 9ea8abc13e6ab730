"""How numbers print: one home for the number texts the report, the CLI and the study
description share, so one quantity reads the same wherever it is printed.

A package of its own (like `pricing`), importing neither `uxlab` nor `analysis`: both print
with it. Each function is one way of printing, named for what it prints; money has its own
rule in `pricing.money.format_money`.
"""

from __future__ import annotations

import math
import numbers


def level(x: float) -> str:
    """A factor's level as a study file gives it: `200`, `0.5`, `1e+06` (an integer value
    without a decimal point, anything else in its shortest form)."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def seconds(s: float) -> str:
    """`12.3 s`: a length of time in seconds, one decimal."""
    return f"{s:.1f} s"


def ms(value: float | None, grouped: bool = False) -> str:
    """`12.3 ms`, one decimal (`1,234.5 ms` when `grouped`); `-` when unknown."""
    if value is None:
        return "-"
    return f"{value:,.1f} ms" if grouped else f"{value:.1f} ms"


def ms_cell(value: float | None) -> str:
    """`12.3`: milliseconds in a column whose header names the unit, one decimal; `-` when
    unknown or not finite."""
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:.1f}"


def ms_figure(value: float | None, decimals: int = 0) -> str:
    """`1,234` / `12.3`: milliseconds in a table of recordings, whole and grouped, with
    `decimals` below 100 when asked; `-` when unknown (None or NaN)."""
    if value is None or value != value:
        return "-"
    if decimals and abs(value) < 100:
        return f"{value:.{decimals}f}"
    return f"{value:,.0f}"


def ms_whole(value: float) -> str:
    """`1,234 ms`: whole milliseconds, grouped; `-` for NaN."""
    return "-" if value != value else f"{value:,.0f} ms"


def grouped(value: float | None, decimals: int = 2) -> str:
    """`1,234.57`: a figure with thousands grouped and `decimals` places; `-` when unknown."""
    return "-" if value is None else f"{value:,.{decimals}f}"


def spec_number(x: float) -> str:
    """A number in a spec string (`30`, `0.5`, `1e+06`): six significant digits, the
    shortest form, read back to the same value for any number a spec holds."""
    return f"{x:.6g}"


def condition_value(value: object) -> str:
    """A condition's value in a label (`itl_ms=30`, `ttft_ms=1e+03`): a number in its
    shortest `g` form, anything else as its text."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Real):  # numpy's numbers too
        return f"{float(value):g}"
    return str(value)


def duration(value_ms: float, unbounded: str = "beyond the longest time observed") -> str:
    """A duration for prose: `850 ms`, `1.9 s`, `12 s`; `unbounded` when it is not finite."""
    if not math.isfinite(value_ms):
        return unbounded
    if round(value_ms) < 1000:
        return f"{value_ms:.0f} ms"
    return f"{value_ms / 1000:.1f} s" if value_ms < 10000 else f"{value_ms / 1000:.0f} s"


def share_interval(share: float, low: float, high: float) -> str:
    """`62% [48%, 75%]`: a share with its interval, in whole percent."""
    return f"{share:.0%} [{low:.0%}, {high:.0%}]"


def table_cell(value: object, above: str = "inf", below: str = "-inf") -> str:
    """A table cell: `yes`/`no`, an integer as it is, `1,234` from 100 up, `12.35` from 1,
    `0.123` below 1 (three significant digits), `–` for NaN, `above`/`below` for an infinity,
    and anything else as its text (`None`: empty)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            if math.isnan(value):
                return "–"
            return above if value > 0 else below
        if abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:.3g}" if abs(value) < 1 else f"{value:.2f}"
    return "" if value is None else str(value)
