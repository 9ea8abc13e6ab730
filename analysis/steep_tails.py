"""The 25% / 75% intervals of a curve steeper than the tested levels can show.

When a person's answers change between two tested levels with no (or one) partial level
in between, the data say the curve is at least as steep as the level spacing, not how much
steeper. The width penalty (`analysis.batch_mle.Layout.width_penalty`) then sets the
fitted width at about the spacing, so the fitted 25% / 75% points sit about half a spacing
from the 50% point whatever the truth; a steeper person's true points lie closer to it.
Measured (benchmarks/validation_grid.py, w = 0.25 ln ms on 7 levels spaced 0.46 ln ms):
the 25% / 75% intervals covered only 0.67-0.92, while the 50% point kept 0.94-0.99.
`widen_steep_tails` says what the data support instead: at or below the width floor, the
interval of a point below 50% reaches up to the 50% point's estimate, above 50% down to
it (the true point lies between the fitted one and the middle).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from analysis.batch_mle import Layout


def widen_steep_tails(
    layout: Layout,
    theta: np.ndarray,
    levels: Sequence[float],
    low: np.ndarray,
    high: np.ndarray,
    condition: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) on ln ms, each level's interval stretched to the 50% point's estimate
    when the fitted width of `condition` is at or below the width penalty's floor."""
    if layout.width_floor is None:
        return low, high
    v_pos = layout.idx[condition, 1]
    if v_pos < 0 or theta[v_pos] > layout.width_floor[condition] + 1e-9:
        return low, high
    m_pos = layout.idx[condition, 0]
    middle = float(theta[m_pos]) if m_pos >= 0 else float(layout.fixed[condition, 0])
    low, high = np.array(low, dtype=float), np.array(high, dtype=float)
    for j, level in enumerate(levels):
        if level < 0.5:
            high[j] = np.fmax(high[j], middle)
        elif level > 0.5:
            low[j] = np.fmin(low[j], middle)
    return low, high
