"""Amounts of money as the outputs print them: three significant digits, never rounded to 0."""

from __future__ import annotations

import math


def format_money(amount: float | None, estimated: bool = False) -> str:
    """`0.000412`, `0.0123`, `1.23`, `1,234.50`; `-` when unknown; `~` before an estimate.

    Small amounts keep three significant digits (a request's cost is often a fraction of a
    cent, and 0.00 would read as free)."""
    if amount is None or amount != amount:
        return "-"
    if amount == 0:
        text = "0"
    elif math.isinf(amount):
        text = "inf"
    else:
        decimals = max(2, 2 - math.floor(math.log10(abs(amount))))
        text = f"{amount:,.{decimals}f}"
    return ("~" if estimated else "") + text
