"""The intervals of a curve steeper than the tested levels can show.

When answers change between two tested levels with no (or one) partial level in between,
the data say the curve is at least as steep as the level spacing, not how much steeper, nor
where in the gap it switches. The width penalty (`analysis.batch_mle.Layout.width_penalty`)
then sets the fitted width at about the spacing, so the fitted 25% / 75% points sit about
half a spacing from the 50% point whatever the truth, and a bootstrap drawn from that fit
only recombines the same separation: its interval narrows with every trial added while the
switch stays anywhere in the gap: such intervals under-covered per person and, pooled,
missed a switch inside the gap in every simulated study (measured in
docs/explanation/statistics.md, "A curve steeper than the levels", and validation.md).

`widen_steep_tails` says what the data support instead: at or below the width floor, every
level's interval reaches over the gap between the tested levels around the fitted 50% point
(`switch_gap`; the neighbours of a tested level when the fit sits on it), so no interval
claims to place the switch inside a gap no level tested.
"""

from __future__ import annotations

import numpy as np

from analysis.batch_mle import Layout


def at_width_floor(layout: Layout, theta: np.ndarray, condition: int = 0) -> bool:
    """Whether the fitted width of `condition` is at or below the width penalty's floor:
    a curve steeper than the level spacing can show."""
    if layout.width_floor is None:
        return False
    v_pos = layout.idx[condition, 1]
    return bool(v_pos >= 0 and theta[v_pos] <= layout.width_floor[condition] + 1e-9)


def switch_gap(
    layout: Layout, theta: np.ndarray, condition: int = 0, tested_u: np.ndarray | None = None
) -> tuple[float, float]:
    """(ln ms, ln ms): the tested levels of `condition` (`tested_u`, ln ms, when the layout
    holds levels without trials too) on either side of its fitted 50% point (the point
    itself where no level lies beyond it)."""
    m_pos = layout.idx[condition, 0]
    middle = float(theta[m_pos]) if m_pos >= 0 else float(layout.fixed[condition, 0])
    tested = np.unique(layout.u[layout.cond == condition] if tested_u is None else tested_u)
    below, above = tested[tested < middle - 1e-9], tested[tested > middle + 1e-9]
    return (
        float(below.max()) if below.size else middle,
        float(above.min()) if above.size else middle,
    )


def widen_steep_tails(
    layout: Layout,
    theta: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    condition: int = 0,
    tested_u: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) on ln ms, every level's interval stretched over the switch's gap
    (`switch_gap`) when the fitted width of `condition` is at or below the floor."""
    if not at_width_floor(layout, theta, condition):
        return low, high
    gap_low, gap_high = switch_gap(layout, theta, condition, tested_u)
    low, high = np.array(low, dtype=float), np.array(high, dtype=float)
    return np.fmin(low, gap_low), np.fmax(high, gap_high)


def steep_gap_ms(
    layout: Layout, theta: np.ndarray, condition: int = 0
) -> tuple[float, float] | None:
    """The tested levels (ms) around the switch of a curve steeper than they show (at the
    width floor), else None: the report prints such a threshold as the gap, not a point."""
    if not at_width_floor(layout, theta, condition):
        return None
    low, high = switch_gap(layout, theta, condition)
    return float(np.exp(low)), float(np.exp(high))
