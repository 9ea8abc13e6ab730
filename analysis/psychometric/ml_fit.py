"""The model's parameter layout, starting grid and maximum-likelihood fit, with the deviance
and the thresholds that a parameter vector implies (see `analysis.batch_mle`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
from scipy import special

from analysis.batch_mle import Layout, maximise
from analysis.sigmoids import get_sigmoid

NUISANCE_BOUNDS = (0.0, 0.1)  # guess and lapse when free
RHO_MAX = 0.5  # eta <= ~0.71
WIDTH_MIN_GAPS = 0.25  # w (F 0.1 -> 0.9) is at least this many smallest level spacings
WIDTH_FLOOR_GAPS = 1.0  # the width penalty starts below this many smallest level spacings
WIDTH_FLOOR_SD = 0.5  # ... and grows as a half-Gaussian of this SD in log w
DEVIANCE_TIE = 1e-6  # deviances closer than this are equal (optimiser precision)


@dataclass
class FitSpec:
    sigmoid: str
    guess: float | None
    lapse: float | None
    beta_binomial: bool
    share_guess: bool = False
    share_lapse: bool = True
    width_penalty: bool = True
    firth: bool = False


def check_firth(spec: FitSpec, n_cond: int = 1) -> None:
    """Raise ValueError unless Firth's penalty (`Layout.firth_terms`) fits this model: the
    canonical logistic model's, so one condition, the logistic F, a binomial likelihood and
    guess = lapse = 0."""
    if (
        n_cond != 1
        or spec.sigmoid != "logistic"
        or spec.guess != 0.0
        or spec.lapse != 0.0
        or spec.beta_binomial
    ):
        raise ValueError(
            "bias reduction (Firth) needs one condition, sigmoid='logistic', "
            "likelihood='binomial' and guess=0, lapse=0 (its penalty is the canonical "
            "logistic model's)"
        )


def build_layout(spec: FitSpec, u: np.ndarray, cond: np.ndarray, n_cond: int) -> Layout:
    """Parameter positions and bounds for n_cond conditions (see batch_mle.Layout)."""
    if spec.firth:
        check_firth(spec, n_cond)
    idx = np.full((n_cond, 5), -1, dtype=int)
    fixed = np.zeros((n_cond, 5))
    lo: list[float] = []
    hi: list[float] = []
    floors = np.zeros(n_cond)

    def add(low: float, high: float) -> int:
        lo.append(low)
        hi.append(high)
        return len(lo) - 1

    for c in range(n_cond):
        uc = np.unique(u[cond == c])
        span = float(uc[-1] - uc[0])
        min_gap = float(np.min(np.diff(uc)))
        idx[c, 0] = add(uc[0] - span / 2.0, uc[-1] + span / 2.0)
        idx[c, 1] = add(np.log(max(WIDTH_MIN_GAPS * min_gap, span / 100.0)), np.log(4.0 * span))
        floors[c] = np.log(max(WIDTH_FLOOR_GAPS * min_gap, span / 100.0))
    for j, value, shared in ((2, spec.guess, spec.share_guess), (3, spec.lapse, spec.share_lapse)):
        if value is not None:
            fixed[:, j] = value
        elif shared:
            idx[:, j] = add(*NUISANCE_BOUNDS)
        else:
            for c in range(n_cond):
                idx[c, j] = add(*NUISANCE_BOUNDS)
    if spec.beta_binomial:
        idx[:, 4] = add(0.0, RHO_MAX)
    return Layout(
        sigmoid=get_sigmoid(spec.sigmoid),
        u=u,
        cond=cond,
        idx=idx,
        fixed=fixed,
        lo=np.array(lo),
        hi=np.array(hi),
        beta_binomial=spec.beta_binomial,
        width_floor=floors if spec.width_penalty else None,
        width_floor_sd=WIDTH_FLOOR_SD,
        firth=spec.firth,
    )


def grid_starts(layout: Layout, n_cond: int) -> np.ndarray:
    """A grid of starting points: m across the tested range, several widths, nuisances."""
    axes: list[np.ndarray] = []
    positions: list[int] = []
    for c in range(n_cond):
        m_pos, v_pos = layout.idx[c, 0], layout.idx[c, 1]
        uc = layout.u[layout.cond == c]
        span = float(uc.max() - uc.min())
        axes.append(np.linspace(uc.min(), uc.max(), 7))
        positions.append(m_pos)
        widths = np.log(span * np.array([0.1, 0.3, 0.7, 1.5]))
        axes.append(np.clip(widths, layout.lo[v_pos], layout.hi[v_pos]))
        positions.append(v_pos)
        if n_cond > 1:
            break  # multi-condition starts come from per-condition fits instead
    for pos in sorted({int(p) for p in layout.idx[:, 2:4].ravel() if p >= 0}):
        axes.append(np.array([0.005, 0.05]))
        positions.append(pos)
    if layout.beta_binomial:
        axes.append(np.array([0.01]))
        positions.append(int(layout.idx[0, 4]))
    mesh = np.meshgrid(*axes, indexing="ij")
    starts = np.tile(0.5 * (layout.lo + layout.hi), (mesh[0].size, 1))
    for pos, grid in zip(positions, mesh, strict=True):
        starts[:, pos] = grid.ravel()
    return cast(np.ndarray, np.clip(starts, layout.lo, layout.hi))


def best_of(
    layout: Layout, starts: np.ndarray, ks: Sequence[np.ndarray], n: np.ndarray, top: int = 6
) -> list[tuple[np.ndarray, float]]:
    """For each count vector of ks, maximise from the `top` best starting points (by
    likelihood) and keep the best fit: [(theta, loglik)], one per k. All in one batch."""
    rows, row_k = [], []
    for k in ks:
        ll0 = layout.loglik(starts, np.broadcast_to(k, (len(starts), k.size)), n)
        order = np.argsort(-np.nan_to_num(ll0, nan=-np.inf))[:top]
        rows.append(starts[order])
        row_k.append(np.broadcast_to(k, (order.size, k.size)))
    theta, ll, _ = maximise(layout, np.concatenate(rows), np.concatenate(row_k), n)
    fits, first = [], 0
    for block in rows:
        best = first + int(np.nanargmax(ll[first : first + len(block)]))
        fits.append((theta[best], float(ll[best])))
        first += len(block)
    return fits


def binomial_deviance(psi: np.ndarray, k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Binomial deviance against the saturated model, per dataset (rows of [B, L])."""
    psi = np.clip(psi, 1e-12, 1 - 1e-12)
    terms = special.xlogy(k, k / (n * psi)) + special.xlogy(n - k, (n - k) / (n * (1.0 - psi)))
    deviance: np.ndarray = 2.0 * np.sum(terms, axis=-1)
    return deviance


def deviance_p(boot_deviance: np.ndarray, deviance: float) -> float:
    """Share of bootstrap deviances at least as large as the observed one (NaN-free).

    Equal within the optimiser's precision counts as at least as large: a steep dataset
    fitted perfectly has a deviance of ~0 that its bootstrap copies share, and which side
    of it rounding puts them must not decide the p-value.
    """
    dev = boot_deviance[np.isfinite(boot_deviance)]
    if not dev.size:
        return float("nan")
    return float(np.mean(dev >= deviance - DEVIANCE_TIE))


def threshold_logs(
    layout: Layout, theta: np.ndarray, levels: Sequence[float], c: int = 0
) -> np.ndarray:
    """[B, len(levels)] log thresholds of condition c for parameter rows theta [B, P]."""
    rp_idx, fixed = layout.idx[c], layout.fixed[c]
    m = theta[:, rp_idx[0]] if rp_idx[0] >= 0 else np.full(len(theta), fixed[0])
    w = np.exp(theta[:, rp_idx[1]] if rp_idx[1] >= 0 else np.full(len(theta), fixed[1]))
    lv = np.asarray(levels, dtype=float)
    return layout.sigmoid.inverse(lv[None, :], m[:, None], w[:, None])
