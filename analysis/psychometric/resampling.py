"""Bootstraps around a maximum-likelihood fit: the parametric bootstrap, the sensitivity
bootstrap from a shallower model, the jackknife for BCa, and the intervals they give."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from analysis.batch_mle import BOOT_TOLERANCES, Layout, Tolerances, maximise, refit
from analysis.psychometric.ml_fit import binomial_deviance
from analysis.psychometric.profile_width import shallowest_supported

MAIN_TOLERANCES: Tolerances = {"tol": 1e-9, "decrement_tol": 1e-6}


def _simulate(layout: Layout, theta: np.ndarray, n: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Datasets of counts from the model at theta, one per row of uniforms [B, L]: each
    count is the (beta-)binomial quantile of its uniform (inverse-CDF sampling).

    Drawing two models' datasets from the same uniforms couples them: the main and the
    sensitivity bootstrap (`_sensitivity_bootstrap`) then differ only where the models
    do, so a sensitivity dataset is often one already fitted, or close to one.
    """
    psi = np.clip(layout.psi(theta[None, :])[0], 0.0, 1.0)
    n_int = n.astype(np.int64)
    counts = np.arange(int(n_int.max()) + 1)
    if layout.beta_binomial:
        rho = layout.row_params(theta[None, :])[0, :, 4]
    if layout.beta_binomial and np.any(rho > 1e-9):
        conc = 1.0 / np.maximum(rho, 1e-9) - 1.0
        a, b = np.maximum(psi * conc, 1e-9), np.maximum((1 - psi) * conc, 1e-9)
        cdf = stats.betabinom.cdf(counts[None, :], n_int[:, None], a[:, None], b[:, None])
    else:
        cdf = stats.binom.cdf(counts[None, :], n_int[:, None], psi[:, None])
    k = np.empty(uniforms.shape)
    for row in range(n_int.size):
        table = cdf[row, : n_int[row] + 1]
        k[:, row] = np.minimum(np.searchsorted(table, uniforms[:, row]), n_int[row])
    return k


def _jackknife_sets(
    k: np.ndarray, n: np.ndarray, unit: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Leave-one-out datasets: one trial (yes or no) at a time, or one block (row) at a time.

    Returns (k_sets [J, L], n_sets [J, L], weights [J]); equal datasets are merged and
    weighted by how many trials they stand for.
    """
    n_rows = k.size
    if unit == "blocks":
        eye = np.eye(n_rows)
        return k - eye * k, n - eye * n, np.ones(n_rows)
    k_sets, n_sets, weights = [], [], []
    for i in range(n_rows):
        for took_yes, count in ((True, k[i]), (False, n[i] - k[i])):
            if count <= 0:
                continue
            kk, nn = k.copy(), n.copy()
            nn[i] -= 1
            if took_yes:
                kk[i] -= 1
            k_sets.append(kk)
            n_sets.append(nn)
            weights.append(count)
    return np.array(k_sets), np.array(n_sets), np.array(weights, dtype=float)


@dataclass
class FitResult:
    """What one engine run produces (kept by the fitters)."""

    layout: Layout
    k: np.ndarray  # counts of the rising response, per row
    n: np.ndarray
    theta: np.ndarray
    loglik: float
    boot_theta: np.ndarray  # [B, P], NaN rows where a bootstrap fit failed
    boot_deviance: np.ndarray
    jack_theta: np.ndarray
    jack_weights: np.ndarray
    n_boot_failed: int
    n_boot_unconverged: int
    sens_theta: np.ndarray  # [B, P] refits of data drawn from a shallower model, or empty


def run_engine(
    layout: Layout,
    k: np.ndarray,
    n: np.ndarray,
    fit: tuple[np.ndarray, float],
    *,
    n_boot: int,
    seed: int,
    need_jackknife: bool,
    jackknife_unit: str,
    sensitivity: bool = True,
) -> FitResult:
    """Bootstraps (and jackknife) around the fit (theta, loglik) of counts k of n."""
    theta, ll = fit
    rng = np.random.default_rng(seed)
    boot_theta = np.empty((0, layout.n_params))
    boot_dev = np.empty(0)
    failed = unconverged = 0
    if n_boot > 0:
        uniforms = rng.random((n_boot, n.size))
        k_boot = _simulate(layout, theta, n, uniforms)
        boot_theta, boot_ll, converged = refit(layout, theta, k_boot, n, **MAIN_TOLERANCES)
        # a fit that stopped short of the convergence test is still at least as good as its
        # warm start and, in practice, within ~1e-3 log-likelihood of the optimum: keep it
        # (dropping it would bias the distribution) but count it; drop only non-finite ones
        unconverged = int(np.sum(~converged))
        bad = ~np.isfinite(boot_ll) | ~np.all(np.isfinite(boot_theta), axis=1)
        boot_dev = binomial_deviance(layout.psi(boot_theta), k_boot, n)
        failed = int(np.sum(bad))
        boot_theta[bad] = np.nan
        boot_dev[bad] = np.nan
    sens_theta = np.empty((0, layout.n_params))
    if n_boot > 0 and sensitivity:
        known = (k_boot, boot_theta, boot_ll)
        sens_theta = _sensitivity_bootstrap(layout, theta, known, k, n, uniforms)
    jack_theta = np.empty((0, layout.n_params))
    weights = np.empty(0)
    if need_jackknife:
        k_sets, n_sets, weights = _jackknife_sets(k, n, jackknife_unit)
        jack_theta, _, _ = maximise(
            layout, np.tile(theta, (len(k_sets), 1)), k_sets, n_sets, **BOOT_TOLERANCES
        )
    return FitResult(
        layout,
        k,
        n,
        theta,
        ll,
        boot_theta,
        boot_dev,
        jack_theta,
        weights,
        failed,
        unconverged,
        sens_theta,
    )


def _sensitivity_bootstrap(
    layout: Layout,
    theta: np.ndarray,
    known: tuple[np.ndarray, np.ndarray, np.ndarray],
    k: np.ndarray,
    n: np.ndarray,
    uniforms: np.ndarray,
) -> np.ndarray:
    """Refits of B datasets drawn from the MLE made shallower: every condition's w set to the
    84th percentile of its bootstrap distribution (one SD up) or, with one condition, the
    shallowest fit the likelihood supports at one SD (`profile_width.shallowest_supported`:
    m, guess and lapse refitted there) when that is shallower still.

    Wichmann & Hill (2001b) showed that a parametric bootstrap from the MLE alone gives
    intervals that are too narrow when the fitted slope is steeper than the truth (small
    samples overestimate slopes); they bootstrap again from parameter sets around the MLE
    and keep the widest interval. This is the one-sided, one-point version of that. The
    84th bootstrap percentile alone conditions on the fit: a near-step fitted from a few
    answers bootstraps into near-steps, so its "one SD up" stays a step; the profile
    likelihood does not (see `analysis.psychometric.profile_width`).
    known = (k_boot, boot_theta, boot_ll) of the main bootstrap: a dataset drawn again
    takes its fit from there.
    """
    boot_theta = known[1]
    shallow = theta.copy()
    for pos in {int(p) for p in layout.idx[:, 1] if p >= 0}:
        column = boot_theta[:, pos]
        if np.any(np.isfinite(column)):
            shallow[pos] = max(theta[pos], float(np.nanquantile(column, 0.84)))
    if layout.idx.shape[0] == 1 and layout.idx[0, 1] >= 0:
        supported = shallowest_supported(layout, theta, k, n)
        if supported[layout.idx[0, 1]] > shallow[layout.idx[0, 1]]:
            shallow = supported
    k_sens = _simulate(layout, shallow, n, uniforms)
    # each refit starts from the main bootstrap's fit of its coupled dataset
    starts = np.where(np.isfinite(boot_theta).all(axis=1)[:, None], boot_theta, theta)
    sens_theta, sens_ll, _ = refit(layout, starts, k_sens, n, known=known, **BOOT_TOLERANCES)
    sens_theta[~np.isfinite(sens_ll)] = np.nan
    return sens_theta
