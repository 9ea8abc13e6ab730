"""The shallowest curve a person's answers still support: the sensitivity bootstrap's model.

The sensitivity bootstrap (`resampling._sensitivity_bootstrap`) draws datasets from the fit
made shallower by "one SD" of its width. Taking that SD from the parametric bootstrap (its
84th percentile) conditions on the fit: a small sample whose answers happen to change
sharply is fitted as a near-step, every dataset drawn from the near-step changes sharply
too, their refits are steep again, and the 84th percentile stays at the step. With ~5
trials per level that is a quarter of people, and their intervals missed their own truth
too often (measured in docs/explanation/statistics.md, "One person's interval").

`shallowest_supported` asks the likelihood instead: the widest width whose profile
log-likelihood (m, guess and lapse refitted at that width, width penalty included) is within
`drop` of the maximum. ``drop = 0.5`` (a likelihood-ratio statistic of 1) is the one-sided
one-SD point, the likelihood's version of the 84th percentile; it does not depend on where
the fit happened to land, so a near-step fitted from a few answers gets a shallow model when
the answers cannot rule one out. The width is stepped up by `step` ln ms from the fit's;
the last step within `drop` is kept, with its refitted m, guess and lapse.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from analysis.batch_mle import BOOT_TOLERANCES, Layout, maximise

PROFILE_DROP = 0.5  # log-likelihood below the maximum: a likelihood-ratio statistic of 1
PROFILE_STEP = 0.1  # ln ms between the widths tried


def shallowest_supported(
    layout: Layout,
    theta: np.ndarray,
    k: np.ndarray,
    n: np.ndarray,
    *,
    drop: float = PROFILE_DROP,
    step: float = PROFILE_STEP,
) -> np.ndarray:
    """The parameters (like `theta`, the maximum-likelihood fit of counts k of n) at the
    widest width whose profile log-likelihood is within `drop` of the maximum. Only for a
    layout with one width (one condition); `theta` itself when no wider width qualifies."""
    if layout.idx.shape[0] != 1 or layout.idx[0, 1] < 0:
        raise ValueError("shallowest_supported needs a layout with one free width")
    v = int(layout.idx[0, 1])
    k_row, n_row = np.asarray(k, dtype=float)[None, :], np.asarray(n, dtype=float)
    ceiling = float(layout.loglik(theta[None, :], k_row, n_row)[0]) - drop
    best = np.array(theta, dtype=float)
    ln_w = float(theta[v])
    while ln_w < layout.hi[v] - 1e-12:
        ln_w = min(ln_w + step, float(layout.hi[v]))
        lo, hi = layout.lo.copy(), layout.hi.copy()
        lo[v] = hi[v] = ln_w  # the width pinned; m, guess and lapse refitted
        start = best.copy()
        start[v] = ln_w
        pinned = dataclasses.replace(layout, lo=lo, hi=hi)
        fitted, ll, _ = maximise(pinned, start[None, :], k_row, n_row, **BOOT_TOLERANCES)
        if not np.isfinite(ll[0]) or ll[0] < ceiling:
            break
        best = fitted[0]
    return best
