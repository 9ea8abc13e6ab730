"""Psychometric thresholds for binary latency judgements, with bootstrap uncertainty.

The model, for a stimulus x in ms (fitted on u = ln x)::

    psi(x) = guess + (1 - guess - lapse) * F(ln x; m, w)

F is a logistic, Gumbel or normal CDF with F(m) = 0.5 and ``w`` the distance (in ln ms)
from F = 0.1 to F = 0.9 (see `analysis.sigmoids`). F always rises with latency.

* Rising question ("too slow?"): P(yes) = psi. P(yes) tends to ``guess`` at short
  latency and to ``1 - lapse`` at long latency.
* Falling question ("acceptable?"): P(yes) = 1 - psi, i.e. the model is fitted to the
  "no" answers. P(yes) tends to ``1 - guess`` at short latency and to ``lapse`` at long
  latency: ``guess`` is the share of "not acceptable" even when the response is instant,
  ``lapse`` the share of "acceptable" however long the wait.

In both cases the threshold at level p is the stimulus where F crosses p, so thresholds at
0.25 < 0.5 < 0.75 always increase with latency; for a falling question ``threshold_(0.25)``
is the latency by which a quarter of the (lapse-free) way from "acceptable" to "not
acceptable" has been made. ``guess`` and ``lapse`` are free in [0, 0.1] unless fixed.

Fitting: maximum likelihood (binomial, or beta-binomial with overdispersion eta, where each
block's probability is Beta-distributed around psi with concentration 1/eta^2 - 1), started
from a grid of starting points and refined by a box-constrained Levenberg-Marquardt
(`analysis.batch_mle`). Confidence intervals come from a parametric bootstrap whose B
datasets are refitted all at once in numpy, warm-started at the MLE; percentile (the
default) or BCa intervals (jackknife acceleration over trials, or over blocks for the
beta-binomial). Percentile is the default because it held its coverage across our recovery
grid, while BCa under-covered (down to ~0.80) for steep observers whose threshold
bootstrap distribution is lumpy (see benchmarks/psychometric_recovery.py). By default a
second bootstrap from the MLE with a shallower width (its 84th bootstrap percentile) widens
each interval to the union of both (a one-point version of Wichmann & Hill's 2001b
sensitivity analysis): the bootstrap from the MLE alone under-covered (0.88-0.93) because
small samples overestimate slopes. Both bootstraps draw their datasets from the same
uniforms (inverse-CDF sampling), so a sensitivity dataset is often one the main bootstrap
already fitted, or close to one, and its refit starts there; identical datasets are fitted
once (`batch_mle.refit`).
Width penalty: every fit adds a half-Gaussian log-prior on ln w below the smallest level
spacing (SD 0.5 in ln w; `batch_mle.Layout.width_penalty`), so separated data have a finite
width and the bootstrap drawn from it is not one repeated step (an interval of zero width).
Goodness of fit: the deviance against its bootstrap distribution. Bounds that keep the MLE
finite: m within half the tested log range beyond either end; w from a quarter of the
smallest level spacing (at least 1/100 of the range) to 4 times the range.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special, stats

from analysis.batch_mle import BOOT_TOLERANCES, Layout, maximise, refit
from analysis.bootstrap import bca_interval, jackknife_acceleration, percentile_interval
from analysis.sigmoids import get_sigmoid

DEFAULT_LEVELS = (0.25, 0.5, 0.75)
NUISANCE_BOUNDS = (0.0, 0.1)  # guess and lapse when free
RHO_MAX = 0.5  # eta <= ~0.71
WIDTH_MIN_GAPS = 0.25  # w (F 0.1 -> 0.9) is at least this many smallest level spacings
WIDTH_FLOOR_GAPS = 1.0  # the width penalty starts below this many smallest level spacings
WIDTH_FLOOR_SD = 0.5  # ... and grows as a half-Gaussian of this SD in log w
THRESHOLD_COLUMNS = ["level", "estimate", "ci_low", "ci_high", "n_trials"]
MAIN_TOLERANCES = {"tol": 1e-9, "decrement_tol": 1e-6}
DEVIANCE_TIE = 1e-6  # deviances closer than this are equal (optimiser precision)


class PsychometricInputError(ValueError):
    """Data a psychometric fit cannot use: says which field, which row, and what is needed."""


# -- input checks and aggregation -----------------------------------------------------------


def _as_float_array(values, field: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float).ravel()
    except (TypeError, ValueError) as exc:
        raise PsychometricInputError(f"{field}: expected numbers ({exc})") from None
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise PsychometricInputError(
            f"{field}: row {bad[0]} is {arr[bad[0]]:g}; every value must be a finite number "
            f"({bad.size} row(s) are not)"
        )
    return arr


def check_counts(x, n_yes, n_total, *, field: str = "stimulus"):
    """Validate per-level counts; return (x_ms, k, n) as float arrays."""
    x_ms = _as_float_array(x, field)
    k = _as_float_array(n_yes, "n_yes")
    n = _as_float_array(n_total, "n_total")
    if not (x_ms.size == k.size == n.size):
        raise PsychometricInputError(
            f"{field}, n_yes and n_total must have one value per level; got "
            f"{x_ms.size}, {k.size} and {n.size}"
        )
    for name, arr in (("n_yes", k), ("n_total", n)):
        bad = np.flatnonzero((arr < 0) | (arr != np.round(arr)))
        if bad.size:
            raise PsychometricInputError(
                f"{name}: row {bad[0]} is {arr[bad[0]]:g}; counts must be whole numbers >= 0"
            )
    bad = np.flatnonzero(k > n)
    if bad.size:
        raise PsychometricInputError(
            f"n_yes: row {bad[0]} has {k[bad[0]]:g} yes of {n[bad[0]]:g} trials; n_yes must "
            "not exceed n_total"
        )
    bad = np.flatnonzero(x_ms <= 0)
    if bad.size:
        raise PsychometricInputError(
            f"{field}: row {bad[0]} is {x_ms[bad[0]]:g}; the stimulus is fitted on a log scale "
            "and must be a latency > 0 (ms)"
        )
    keep = n > 0
    if np.unique(x_ms[keep]).size < 2:
        raise PsychometricInputError(
            f"{field}: a psychometric fit needs trials at 2 or more different levels; "
            f"got {np.unique(x_ms[keep]).size}"
        )
    return x_ms[keep], k[keep], n[keep]


def aggregate_trials(stimulus, response, *, field: str = "stimulus", response_field="response"):
    """One row per trial -> (levels_ms, n_yes, n_total) per distinct stimulus value."""
    x = _as_float_array(stimulus, field)
    r = _as_float_array(response, response_field)
    if x.size != r.size:
        raise PsychometricInputError(
            f"{field} and {response_field} must have one value per trial; got {x.size} and {r.size}"
        )
    bad = np.flatnonzero((r != 0) & (r != 1))
    if bad.size:
        raise PsychometricInputError(
            f"{response_field}: row {bad[0]} is {r[bad[0]]:g}; a binary judgement must be 0 "
            "(no) or 1 (yes)"
        )
    levels, inverse = np.unique(x, return_inverse=True)
    n_total = np.bincount(inverse, minlength=levels.size).astype(float)
    n_yes = np.bincount(inverse, weights=r, minlength=levels.size)
    return levels, n_yes, n_total


def _sorted_keys(values) -> list[str]:
    """Group or condition labels as strings, in numeric order when they are all numbers."""
    keys = [str(v) for v in values]
    try:
        return sorted(keys, key=float)
    except ValueError:
        return sorted(keys)


def _column(df: pd.DataFrame, name: str) -> pd.Series:
    if name not in df.columns:
        raise PsychometricInputError(
            f"column {name!r} not found; the table has {', '.join(map(str, df.columns))}"
        )
    return df[name]


# -- the shared engine ------------------------------------------------------------------------


@dataclass
class _Spec:
    sigmoid: str
    guess: float | None
    lapse: float | None
    beta_binomial: bool
    share_guess: bool = False
    share_lapse: bool = True
    width_penalty: bool = True


def _build_layout(spec: _Spec, u: np.ndarray, cond: np.ndarray, n_cond: int) -> Layout:
    """Parameter positions and bounds for n_cond conditions (see batch_mle.Layout)."""
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
    )


def _grid_starts(layout: Layout, n_cond: int) -> np.ndarray:
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
    return np.clip(starts, layout.lo, layout.hi)


def _best_of(
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


def _deviance(psi: np.ndarray, k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Binomial deviance against the saturated model, per dataset (rows of [B, L])."""
    psi = np.clip(psi, 1e-12, 1 - 1e-12)
    return 2.0 * np.sum(
        special.xlogy(k, k / (n * psi)) + special.xlogy(n - k, (n - k) / (n * (1.0 - psi))),
        axis=-1,
    )


def _deviance_p(boot_deviance: np.ndarray, deviance: float) -> float:
    """Share of bootstrap deviances at least as large as the observed one (NaN-free).

    Equal within the optimiser's precision counts as at least as large: a steep dataset
    fitted perfectly has a deviance of ~0 that its bootstrap copies share, and which side
    of it rounding puts them must not decide the p-value.
    """
    dev = boot_deviance[np.isfinite(boot_deviance)]
    if not dev.size:
        return float("nan")
    return float(np.mean(dev >= deviance - DEVIANCE_TIE))


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


def _jackknife_sets(k: np.ndarray, n: np.ndarray, unit: str):
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


def _threshold_logs(layout: Layout, theta: np.ndarray, levels: Sequence[float], c: int = 0):
    """[B, len(levels)] log thresholds of condition c for parameter rows theta [B, P]."""
    rp_idx, fixed = layout.idx[c], layout.fixed[c]
    m = theta[:, rp_idx[0]] if rp_idx[0] >= 0 else np.full(len(theta), fixed[0])
    w = np.exp(theta[:, rp_idx[1]] if rp_idx[1] >= 0 else np.full(len(theta), fixed[1]))
    lv = np.asarray(levels, dtype=float)
    return layout.sigmoid.inverse(lv[None, :], m[:, None], w[:, None])


@dataclass
class _FitResult:
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


def _run_engine(
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
) -> _FitResult:
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
        boot_dev = _deviance(layout.psi(boot_theta), k_boot, n)
        failed = int(np.sum(bad))
        boot_theta[bad] = np.nan
        boot_dev[bad] = np.nan
    sens_theta = np.empty((0, layout.n_params))
    if n_boot > 0 and sensitivity:
        known = (k_boot, boot_theta, boot_ll)
        sens_theta = _sensitivity_bootstrap(layout, theta, known, n, uniforms)
    jack_theta = np.empty((0, layout.n_params))
    weights = np.empty(0)
    if need_jackknife:
        k_sets, n_sets, weights = _jackknife_sets(k, n, jackknife_unit)
        jack_theta, _, _ = maximise(
            layout, np.tile(theta, (len(k_sets), 1)), k_sets, n_sets, **BOOT_TOLERANCES
        )
    return _FitResult(
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


def _sensitivity_bootstrap(layout, theta, known, n, uniforms) -> np.ndarray:
    """Refits of B datasets drawn from the MLE made shallower: every condition's w set to the
    84th percentile of its bootstrap distribution (one SD up).

    Wichmann & Hill (2001b) showed that a parametric bootstrap from the MLE alone gives
    intervals that are too narrow when the fitted slope is steeper than the truth (small
    samples overestimate slopes); they bootstrap again from parameter sets around the MLE
    and keep the widest interval. This is the one-sided, one-point version of that.
    known = (k_boot, boot_theta, boot_ll) of the main bootstrap: a dataset drawn again
    takes its fit from there.
    """
    boot_theta = known[1]
    shallow = theta.copy()
    for pos in {int(p) for p in layout.idx[:, 1] if p >= 0}:
        column = boot_theta[:, pos]
        if np.any(np.isfinite(column)):
            shallow[pos] = max(theta[pos], float(np.nanquantile(column, 0.84)))
    k_sens = _simulate(layout, shallow, n, uniforms)
    # each refit starts from the main bootstrap's fit of its coupled dataset
    starts = np.where(np.isfinite(boot_theta).all(axis=1)[:, None], boot_theta, theta)
    sens_theta, sens_ll, _ = refit(layout, starts, k_sens, n, known=known, **BOOT_TOLERANCES)
    sens_theta[~np.isfinite(sens_ll)] = np.nan
    return sens_theta


def _widest(low, high, sens_samples, alpha: float):
    """Union of an interval with the percentile interval of the sensitivity bootstrap."""
    if sens_samples.shape[0] == 0:
        return low, high
    s_low, s_high = percentile_interval(sens_samples, alpha)
    return np.fmin(low, s_low), np.fmax(high, s_high)


def _intervals(samples, estimate, jack, weights, method: str, alpha: float):
    if method == "percentile" or samples.shape[0] == 0:
        if samples.shape[0] == 0:
            nan = np.full(np.size(estimate), np.nan)
            return nan, nan
        return percentile_interval(samples, alpha)
    if method != "bca":
        raise ValueError(f"ci_method {method!r} is not known; use 'bca' or 'percentile'")
    return bca_interval(samples, estimate, jackknife_acceleration(jack, weights), alpha)


def _report_progress(progress, done: int, total: int, label: str = "") -> None:
    if callable(progress):
        progress(done, total)
    elif progress:
        print(f"\rpsychometric fits {done}/{total} {label}", end="", file=sys.stderr)
        if done == total:
            print(file=sys.stderr)


def _ms_axis(ax, levels_ms) -> None:
    """Log x axis labelled in plain ms at the tested levels (no 10^k minor-tick clutter)."""
    from matplotlib.ticker import FixedLocator, NullFormatter

    ax.set_xscale("log")
    ticks = np.unique(np.asarray(levels_ms, dtype=float))
    if ticks.size > 9:
        ticks = ticks[:: int(np.ceil(ticks.size / 9))]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.set_xticklabels([f"{t:,.0f}" for t in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())


# -- the single-condition fitter ------------------------------------------------------------


class PsychometricFitter:
    """Fit psi(x) = guess + (1 - guess - lapse) F(ln x; m, w) to binary judgements.

    Parameters
    ----------
    sigmoid: "logistic", "gumbel" (= Weibull on ms) or "normal".
    guess, lapse: None to estimate in [0, 0.1]; a float to fix.
    likelihood: "binomial" or "beta-binomial" (overdispersion eta estimated).
    direction: "rising" (P(yes) grows with latency), "falling", or "auto" (the direction
        with the higher likelihood).
    alpha: 1 - confidence level of the intervals.
    levels: the levels of F at which `thresholds_` is reported.

    Fitted attributes (after `fit`): params_, direction_, loglik_, deviance_, deviance_p_,
    thresholds_, summary, x_ms_, n_yes_, n_total_, boot_params_ (DataFrame, one row per
    bootstrap fit), n_boot_failed_.
    """

    def __init__(
        self,
        sigmoid: str = "logistic",
        guess: float | None = None,
        lapse: float | None = None,
        likelihood: str = "binomial",
        direction: str = "auto",
        alpha: float = 0.05,
        levels: Sequence[float] = DEFAULT_LEVELS,
    ):
        get_sigmoid(sigmoid)
        if likelihood not in ("binomial", "beta-binomial"):
            raise ValueError(f"likelihood {likelihood!r}: use 'binomial' or 'beta-binomial'")
        if direction not in ("auto", "rising", "falling"):
            raise ValueError(f"direction {direction!r}: use 'auto', 'rising' or 'falling'")
        for name, value in (("guess", guess), ("lapse", lapse)):
            if value is not None and not 0.0 <= value < 0.5:
                raise ValueError(f"{name}={value}: a fixed {name} must be in [0, 0.5)")
        self.sigmoid = sigmoid
        self.guess = guess
        self.lapse = lapse
        self.likelihood = likelihood
        self.direction = direction
        self.alpha = alpha
        self.levels = tuple(levels)

    # fitting --------------------------------------------------------------------------------

    def fit(
        self,
        x,
        n_yes,
        n_total,
        *,
        n_boot: int = 1000,
        seed: int = 0,
        ci_method: str = "percentile",
        sensitivity: bool = True,
        progress: bool | Callable[[int, int], None] = False,
    ) -> PsychometricFitter:
        """Fit counts per level: x (ms, > 0), n_yes and n_total per level. Returns self.

        n_boot parametric bootstrap datasets give the intervals (0: point estimates only);
        with ``sensitivity`` a second bootstrap from a shallower model widens them where
        needed (see `_sensitivity_bootstrap`); ci_method is "percentile" or "bca".
        """
        x_ms, k_yes, n = check_counts(x, n_yes, n_total)
        order = np.argsort(x_ms, kind="stable")
        x_ms, k_yes, n = x_ms[order], k_yes[order], n[order]
        spec = _Spec(self.sigmoid, self.guess, self.lapse, self.likelihood == "beta-binomial")
        u = np.log(x_ms)
        layout = _build_layout(spec, u, np.zeros(u.size, dtype=int), 1)
        starts = _grid_starts(layout, 1)
        directions = ["rising", "falling"] if self.direction == "auto" else [self.direction]
        counts = {"rising": k_yes, "falling": n - k_yes}
        best = _best_of(layout, starts, [counts[d] for d in directions], n)
        fits = dict(zip(directions, best, strict=True))
        direction = max(directions, key=lambda d: fits[d][1])
        unit = "blocks" if spec.beta_binomial else "trials"
        result = _run_engine(
            layout,
            counts[direction],
            n,
            fits[direction],
            n_boot=n_boot,
            seed=seed,
            need_jackknife=ci_method == "bca" and n_boot > 0,
            jackknife_unit=unit,
            sensitivity=sensitivity,
        )
        _report_progress(progress, 1, 1)
        self.x_ms_, self.n_yes_, self.n_total_ = x_ms, k_yes, n
        self.direction_ = direction
        self.n_boot_ = n_boot
        self.seed_ = seed
        self.ci_method_ = ci_method
        self._result = result
        self._store(result)
        return self

    def fit_trials(self, stimulus, response, **fit_kwargs) -> PsychometricFitter:
        """Fit one row per trial: stimulus (ms) and response (1 = yes, 0 = no)."""
        levels, n_yes, n_total = aggregate_trials(stimulus, response)
        return self.fit(levels, n_yes, n_total, **fit_kwargs)

    def _store(self, result: _FitResult) -> None:
        layout, theta = result.layout, result.theta
        self.loglik_ = result.loglik
        psi = layout.psi(theta[None, :])
        self.deviance_ = float(_deviance(psi, result.k, result.n)[0])
        self.deviance_p_ = _deviance_p(result.boot_deviance, self.deviance_)
        self.n_boot_failed_ = result.n_boot_failed
        self.n_boot_unconverged_ = result.n_boot_unconverged
        self.params_ = self._param_dict(theta[None, :])
        self.boot_params_ = pd.DataFrame(
            {key: val for key, val in self._param_dict(result.boot_theta, arrays=True).items()}
        )
        self.thresholds_ = self._threshold_table(self.levels)

    def _param_dict(self, theta: np.ndarray, arrays: bool = False) -> dict:
        layout = self._result.layout if hasattr(self, "_result") else None
        rp_idx, fixed = layout.idx[0], layout.fixed[0]

        def get(j):
            return theta[:, rp_idx[j]] if rp_idx[j] >= 0 else np.full(len(theta), fixed[j])

        out = {"m": get(0), "w": np.exp(get(1)), "guess": get(2), "lapse": get(3)}
        if layout.beta_binomial:
            out["eta"] = np.sqrt(get(4))
        return out if arrays else {key: float(val[0]) for key, val in out.items()}

    def _threshold_samples(self, levels: Sequence[float]):
        r = self._result
        est = _threshold_logs(r.layout, r.theta[None, :], levels)[0]
        boot = _threshold_logs(r.layout, r.boot_theta, levels)
        jack = _threshold_logs(r.layout, r.jack_theta, levels)
        return est, boot, jack

    def _threshold_table(self, levels: Sequence[float]) -> pd.DataFrame:
        est, boot, jack = self._threshold_samples(levels)
        low, high = _intervals(
            boot, est, jack, self._result.jack_weights, self.ci_method_, self.alpha
        )
        sens = _threshold_logs(self._result.layout, self._result.sens_theta, levels)
        low, high = _widest(low, high, sens, self.alpha)
        return pd.DataFrame(
            {
                "level": list(levels),
                "estimate": np.exp(est),
                "ci_low": np.exp(low),
                "ci_high": np.exp(high),
                "n_trials": int(self.n_total_.sum()),
            }
        )

    # results --------------------------------------------------------------------------------

    def _check_fitted(self) -> None:
        if not hasattr(self, "_result"):
            raise RuntimeError("call fit(...) or fit_trials(...) first")

    def threshold_(self, level: float = 0.5) -> float:
        """Stimulus (ms) where F crosses `level`."""
        self._check_fitted()
        return float(np.exp(self._threshold_samples([level])[0][0]))

    def threshold_ci_(self, level: float = 0.5) -> tuple[float, float]:
        """Bootstrap (1 - alpha) interval (ms) of threshold_(level)."""
        self._check_fitted()
        row = self._threshold_table([level]).iloc[0]
        return float(row.ci_low), float(row.ci_high)

    def threshold_samples_(self, level: float = 0.5) -> np.ndarray:
        """The bootstrap distribution (ms) of threshold_(level); NaN where a fit failed."""
        self._check_fitted()
        return np.exp(self._threshold_samples([level])[1][:, 0])

    def predict(self, x) -> np.ndarray:
        """Probability of "yes" at stimulus x (ms)."""
        self._check_fitted()
        r = self._result
        u = np.log(np.asarray(x, dtype=float))
        layout = Layout(
            r.layout.sigmoid,
            u.ravel(),
            np.zeros(u.size, dtype=int),
            r.layout.idx,
            r.layout.fixed,
            r.layout.lo,
            r.layout.hi,
            r.layout.beta_binomial,
        )
        psi = layout.psi(r.theta[None, :])[0].reshape(u.shape)
        return psi if self.direction_ == "rising" else 1.0 - psi

    @property
    def summary(self) -> pd.DataFrame:
        """Tidy table: one row per parameter and threshold, estimate, se, CI."""
        self._check_fitted()
        r = self._result
        rows = []
        boot = self._param_dict(r.boot_theta, arrays=True)
        jack = self._param_dict(r.jack_theta, arrays=True) if len(r.jack_theta) else None
        sens = self._param_dict(r.sens_theta, arrays=True)
        for name, value in self.params_.items():
            samples = boot[name][:, None]
            jk = jack[name][:, None] if jack is not None else np.empty((0, 1))
            low, high = _intervals(
                samples, np.array([value]), jk, r.jack_weights, self.ci_method_, self.alpha
            )
            low, high = _widest(low, high, sens[name][:, None], self.alpha)
            se = float(np.nanstd(samples)) if len(samples) else float("nan")
            unit = {"m": "ln ms", "w": "ln ms (F 0.1->0.9)"}.get(name, "probability")
            rows.append((name, value, se, low[0], high[0], unit))
        for row in self.thresholds_.itertuples():
            se = float(np.nanstd(self.threshold_samples_(row.level)))
            rows.append(
                (f"threshold_{row.level:g}", row.estimate, se, row.ci_low, row.ci_high, "ms")
            )
        table = pd.DataFrame(rows, columns=["param", "estimate", "se", "ci_low", "ci_high", "unit"])
        return table.set_index("param")

    def print_summary(self, decimals: int = 3) -> None:
        """Print the model, fit statistics and the summary table."""
        self._check_fitted()
        lines = [
            f"<PsychometricFitter: {self.sigmoid}, {self.likelihood}, {self.direction_}>",
            f"  levels = {self.x_ms_.size}, trials = {int(self.n_total_.sum())}",
            f"  log-likelihood = {self.loglik_:.{decimals}f}",
            f"  deviance = {self.deviance_:.{decimals}f} (bootstrap p = {self.deviance_p_:.3f})",
            f"  bootstrap: B = {self.n_boot_}, seed = {self.seed_}, {self.ci_method_} "
            f"{100 * (1 - self.alpha):g}% intervals, failed fits = {self.n_boot_failed_}, "
            f"stopped short = {self.n_boot_unconverged_}",
            "",
        ]
        with pd.option_context(
            "display.float_format", lambda v: f"{v:.{decimals}f}", "display.width", 120
        ):
            lines.append(self.summary.to_string())
        print("\n".join(lines))

    def plot(self, ax=None, *, level: float = 0.5, label: str | None = None):
        """Data with 95% Clopper-Pearson intervals, the fitted curve and threshold with CI."""
        self._check_fitted()
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 4))
        p_obs = self.n_yes_ / self.n_total_
        lo_ci = np.nan_to_num(stats.beta.ppf(0.025, self.n_yes_, self.n_total_ - self.n_yes_ + 1))
        hi_ci = stats.beta.ppf(0.975, self.n_yes_ + 1, self.n_total_ - self.n_yes_)
        hi_ci = np.where(np.isnan(hi_ci), 1.0, hi_ci)
        (line,) = ax.plot([], [])
        color = line.get_color()
        ax.errorbar(
            self.x_ms_,
            p_obs,
            yerr=[p_obs - lo_ci, hi_ci - p_obs],
            fmt="o",
            color=color,
            capsize=3,
            label=label or "data (95% CI)",
        )
        span = np.log(self.x_ms_[-1] / self.x_ms_[0])
        grid = np.exp(
            np.linspace(
                np.log(self.x_ms_[0]) - 0.15 * span, np.log(self.x_ms_[-1]) + 0.15 * span, 300
            )
        )
        ax.plot(grid, self.predict(grid), color=color, label="fit")
        t_ms = self.threshold_(level)
        low, high = self.threshold_ci_(level)
        y_t = float(self.predict([t_ms])[0])
        ax.errorbar(
            [t_ms],
            [y_t],
            xerr=[[max(t_ms - low, 0.0)], [max(high - t_ms, 0.0)]],  # NaN/odd CIs: no bar
            fmt="s",
            color="black",
            capsize=4,
            label=f"{level:g} threshold {t_ms:.0f} ms [{low:.0f}, {high:.0f}]",
        )
        _ms_axis(ax, self.x_ms_)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("stimulus (ms)")
        ax.set_ylabel("P(yes)")
        ax.legend(fontsize="small")
        return ax


# -- several fits ---------------------------------------------------------------------------


def fit_by_group(
    df: pd.DataFrame,
    stimulus: str,
    response: str,
    group: str,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    ci_method: str = "percentile",
    sensitivity: bool = True,
    progress: bool | Callable[[int, int], None] = False,
    **fitter_kwargs,
) -> dict[str, PsychometricFitter]:
    """One fitted PsychometricFitter per value of `group` (e.g. per participant).

    Groups are fitted in sorted order with seeds derived from `seed` and the group's
    position, so results do not depend on row order.
    """
    x_col, r_col, g_col = _column(df, stimulus), _column(df, response), _column(df, group)
    keys = _sorted_keys(g_col.astype(str).unique())
    seeds = np.random.SeedSequence(seed).spawn(len(keys))
    fits: dict[str, PsychometricFitter] = {}
    for i, key in enumerate(keys):
        rows = g_col.astype(str) == key
        try:
            levels, n_yes, n_total = aggregate_trials(
                x_col[rows], r_col[rows], field=stimulus, response_field=response
            )
            fitter = PsychometricFitter(**fitter_kwargs)
            fits[key] = fitter.fit(
                levels,
                n_yes,
                n_total,
                n_boot=n_boot,
                seed=int(seeds[i].generate_state(1)[0]),
                ci_method=ci_method,
                sensitivity=sensitivity,
            )
        except PsychometricInputError as exc:
            raise PsychometricInputError(f"{group}={key}: {exc}") from None
        _report_progress(progress, i + 1, len(keys), str(key))
    return fits


def tidy_thresholds(
    fits: Mapping[str, PsychometricFitter], *, stimulus: str, measure: str = "psychometric"
) -> pd.DataFrame:
    """Rows for thresholds.csv: measure, stimulus, group, level, estimate, ci_low, ci_high,
    n_trials."""
    frames = []
    for key, fitter in fits.items():
        t = fitter.thresholds_.copy()
        t.insert(0, "group", key)
        frames.append(t)
    out = pd.concat(frames, ignore_index=True)
    out.insert(0, "stimulus", stimulus)
    out.insert(0, "measure", measure)
    return out[["measure", "stimulus", "group", *THRESHOLD_COLUMNS]]


def population_threshold(
    df: pd.DataFrame,
    stimulus: str,
    response: str,
    participant: str,
    n_boot: int = 1000,
    seed: int = 0,
    *,
    levels: Sequence[float] = DEFAULT_LEVELS,
    alpha: float = 0.05,
    **fitter_kwargs,
) -> pd.DataFrame:
    """Pooled thresholds with intervals from resampling participants (a cluster bootstrap).

    The estimate is the pooled fit of all trials; each bootstrap replicate draws
    participants with replacement, pools their counts and refits (all replicates at once),
    so the interval carries between-participant variation. Percentile intervals, each end
    at least as far out as the parametric bootstrap's of the pooled counts (trials
    independent): when every participant's answers separate at the same gap, every
    resampled pool separates there too and the cluster bootstrap alone has zero width.
    Columns: level, estimate, ci_low, ci_high, n_trials, n_participants.
    """
    x_col, r_col, p_col = _column(df, stimulus), _column(df, response), _column(df, participant)
    levels_ms, n_yes, n_total = aggregate_trials(
        x_col, r_col, field=stimulus, response_field=response
    )
    pooled = PsychometricFitter(levels=levels, alpha=alpha, **fitter_kwargs).fit(
        levels_ms, n_yes, n_total, n_boot=n_boot, seed=seed + 1, sensitivity=False
    )
    keys, p_inv = np.unique(p_col.astype(str).to_numpy(), return_inverse=True)
    x_inv = np.searchsorted(levels_ms, _as_float_array(x_col, stimulus))
    r = _as_float_array(r_col, response)
    per_k = np.zeros((keys.size, levels_ms.size))
    per_n = np.zeros((keys.size, levels_ms.size))
    np.add.at(per_k, (p_inv, x_inv), r)
    np.add.at(per_n, (p_inv, x_inv), 1.0)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, keys.size, size=(n_boot, keys.size))
    weights = np.zeros((n_boot, keys.size))
    np.add.at(weights, (np.repeat(np.arange(n_boot), keys.size), draws.ravel()), 1.0)
    k_boot, n_boot_tot = weights @ per_k, weights @ per_n
    res = pooled._result
    k_rise = k_boot if pooled.direction_ == "rising" else n_boot_tot - k_boot
    theta, ll, _ = maximise(
        res.layout, np.tile(res.theta, (n_boot, 1)), k_rise, n_boot_tot, **BOOT_TOLERANCES
    )
    theta[~np.isfinite(ll)] = np.nan
    est = _threshold_logs(res.layout, res.theta[None, :], levels)[0]
    boot = _threshold_logs(res.layout, theta, levels)
    low, high = percentile_interval(boot, alpha)
    if n_boot > 0:
        p_low, p_high = _intervals(
            pooled._threshold_samples(levels)[1], est, None, None, "percentile", alpha
        )
        low, high = np.fmin(low, p_low), np.fmax(high, p_high)
    return pd.DataFrame(
        {
            "level": list(levels),
            "estimate": np.exp(est),
            "ci_low": np.exp(low),
            "ci_high": np.exp(high),
            "n_trials": int(n_total.sum()),
            "n_participants": int(keys.size),
        }
    )


# -- several conditions in one model --------------------------------------------------------


class MultiConditionFitter:
    """One psychometric function per condition, fitted jointly with shared nuisances.

    Each condition c has its own m_c and w_c (and guess_c unless shared); the lapse is one
    parameter for all conditions with ``share_lapse=True`` (lapses are attention slips, not
    a property of the condition), else one per condition. The direction is decided once on
    the pooled data. Same model, bounds and bootstrap as `PsychometricFitter`.

    Fitted attributes: conditions_, direction_, params_ (DataFrame, one row per condition),
    thresholds_ (condition, level, estimate, ci_low, ci_high, n_trials), loglik_,
    deviance_, deviance_p_, n_boot_failed_.
    """

    def __init__(
        self,
        sigmoid: str = "logistic",
        guess: float | None = None,
        lapse: float | None = None,
        likelihood: str = "binomial",
        direction: str = "auto",
        alpha: float = 0.05,
        levels: Sequence[float] = DEFAULT_LEVELS,
    ):
        self._template = PsychometricFitter(
            sigmoid, guess, lapse, likelihood, direction, alpha, levels
        )
        self.sigmoid, self.guess, self.lapse = sigmoid, guess, lapse
        self.likelihood, self.direction, self.alpha = likelihood, direction, alpha
        self.levels = tuple(levels)

    def fit(
        self,
        df: pd.DataFrame,
        stimulus: str,
        response: str,
        condition: str,
        *,
        share_lapse: bool = True,
        share_guess: bool = False,
        n_boot: int = 1000,
        seed: int = 0,
        ci_method: str = "percentile",
        sensitivity: bool = True,
    ) -> MultiConditionFitter:
        """Fit one row per trial of df, one curve per value of the `condition` column."""
        x_col, r_col = _column(df, stimulus), _column(df, response)
        c_col = _column(df, condition).astype(str)
        keys = _sorted_keys(c_col.unique())
        if len(keys) < 2:
            raise PsychometricInputError(
                f"{condition}: a multi-condition fit needs 2 or more conditions; got {keys}"
            )
        u_rows, c_rows, k_rows, n_rows = [], [], [], []
        singles = {}
        for c, key in enumerate(keys):
            rows = c_col == key
            try:
                lv, k, n = aggregate_trials(
                    x_col[rows], r_col[rows], field=stimulus, response_field=response
                )
                lv, k, n = check_counts(lv, k, n, field=stimulus)
            except PsychometricInputError as exc:
                raise PsychometricInputError(f"{condition}={key}: {exc}") from None
            u_rows.append(np.log(lv))
            c_rows.append(np.full(lv.size, c))
            k_rows.append(k)
            n_rows.append(n)
            singles[key] = (lv, k, n)
        u, cond = np.concatenate(u_rows), np.concatenate(c_rows)
        k_yes, n = np.concatenate(k_rows), np.concatenate(n_rows)
        pooled = PsychometricFitter(
            self.sigmoid, self.guess, self.lapse, "binomial", self.direction
        ).fit(*aggregate_trials(x_col, r_col, field=stimulus, response_field=response), n_boot=0)
        direction = pooled.direction_
        spec = _Spec(
            self.sigmoid,
            self.guess,
            self.lapse,
            self.likelihood == "beta-binomial",
            share_guess=share_guess,
            share_lapse=share_lapse,
        )
        layout = _build_layout(spec, u, cond, len(keys))
        start = 0.5 * (layout.lo + layout.hi)
        for c, key in enumerate(keys):
            single = PsychometricFitter(
                self.sigmoid, self.guess, self.lapse, "binomial", direction
            ).fit(*singles[key], n_boot=0)
            values = (
                single.params_["m"],
                np.log(single.params_["w"]),
                single.params_["guess"],
                single.params_["lapse"],
            )
            for j, value in enumerate(values):
                if layout.idx[c, j] >= 0:
                    start[layout.idx[c, j]] = value
        if spec.beta_binomial:
            start[layout.idx[0, 4]] = 0.01
        alt = start.copy()
        for pos in {int(p) for p in layout.idx[:, 2:4].ravel() if p >= 0}:
            alt[pos] = 0.02
        starts = np.clip(np.vstack([start, alt]), layout.lo, layout.hi)
        k = k_yes if direction == "rising" else n - k_yes
        result = _run_engine(
            layout,
            k,
            n,
            _best_of(layout, starts, [k], n)[0],
            n_boot=n_boot,
            seed=seed,
            need_jackknife=ci_method == "bca" and n_boot > 0,
            jackknife_unit="blocks" if spec.beta_binomial else "trials",
            sensitivity=sensitivity,
        )
        self.conditions_ = keys
        self.condition_column_ = condition
        self.direction_ = direction
        self.share_lapse_, self.share_guess_ = share_lapse, share_guess
        self.n_boot_, self.seed_, self.ci_method_ = n_boot, seed, ci_method
        self._result = result
        self._n_by_cond = {key: float(n[cond == c].sum()) for c, key in enumerate(keys)}
        self.loglik_ = result.loglik
        self.deviance_ = float(_deviance(layout.psi(result.theta[None, :]), k, n)[0])
        self.deviance_p_ = _deviance_p(result.boot_deviance, self.deviance_)
        self.n_boot_failed_ = result.n_boot_failed
        self._singles = singles
        self.params_ = self._params_table()
        self.thresholds_ = self._thresholds_table()
        return self

    def _params_table(self) -> pd.DataFrame:
        r = self._result
        rp = r.layout.row_params(r.theta[None, :])[0]
        rows = []
        for c, key in enumerate(self.conditions_):
            vals = rp[r.layout.cond == c][0]
            row = {
                "condition": key,
                "m": vals[0],
                "w": np.exp(vals[1]),
                "guess": vals[2],
                "lapse": vals[3],
            }
            if r.layout.beta_binomial:
                row["eta"] = float(np.sqrt(vals[4]))
            rows.append(row)
        return pd.DataFrame(rows).set_index("condition")

    def _thresholds_table(self) -> pd.DataFrame:
        r = self._result
        frames = []
        for c, key in enumerate(self.conditions_):
            est = _threshold_logs(r.layout, r.theta[None, :], self.levels, c)[0]
            boot = _threshold_logs(r.layout, r.boot_theta, self.levels, c)
            jack = _threshold_logs(r.layout, r.jack_theta, self.levels, c)
            low, high = _intervals(boot, est, jack, r.jack_weights, self.ci_method_, self.alpha)
            sens = _threshold_logs(r.layout, r.sens_theta, self.levels, c)
            low, high = _widest(low, high, sens, self.alpha)
            frames.append(
                pd.DataFrame(
                    {
                        "condition": key,
                        "level": list(self.levels),
                        "estimate": np.exp(est),
                        "ci_low": np.exp(low),
                        "ci_high": np.exp(high),
                        "n_trials": int(self._n_by_cond[key]),
                    }
                )
            )
        return pd.concat(frames, ignore_index=True)

    def predict(self, x, condition: str) -> np.ndarray:
        """Probability of "yes" at stimulus x (ms) in `condition`."""
        r = self._result
        c = self.conditions_.index(str(condition))
        u = np.log(np.asarray(x, dtype=float)).ravel()
        layout = Layout(
            r.layout.sigmoid,
            u,
            np.full(u.size, c),
            r.layout.idx,
            r.layout.fixed,
            r.layout.lo,
            r.layout.hi,
            r.layout.beta_binomial,
        )
        psi = layout.psi(r.theta[None, :])[0]
        return psi if self.direction_ == "rising" else 1.0 - psi

    @property
    def summary(self) -> pd.DataFrame:
        """Thresholds per condition and level, with the condition's parameters."""
        return self.thresholds_.merge(self.params_.reset_index(), on="condition")

    def print_summary(self, decimals: int = 3) -> None:
        """Print the model, fit statistics and the per-condition table."""
        lapse = "shared" if self.share_lapse_ else "per condition"
        print(
            f"<MultiConditionFitter: {self.sigmoid}, {self.likelihood}, {self.direction_}, "
            f"lapse {lapse}>"
        )
        print(
            f"  conditions = {len(self.conditions_)}, log-likelihood = {self.loglik_:.3f}, "
            f"deviance = {self.deviance_:.3f} (bootstrap p = {self.deviance_p_:.3f})"
        )
        with pd.option_context(
            "display.float_format", lambda v: f"{v:.{decimals}f}", "display.width", 140
        ):
            print(self.summary.to_string(index=False))

    def plot(self, ax=None, *, level: float = 0.5):
        """Data and fitted curve per condition, with each condition's threshold and CI."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 4))
        for key in self.conditions_:
            lv, k, n = self._singles[key]
            p_obs = k / n
            (line,) = ax.plot(lv, p_obs, "o", label=f"{key}")
            grid = np.exp(np.linspace(np.log(lv[0]), np.log(lv[-1]), 200))
            ax.plot(grid, self.predict(grid, key), color=line.get_color())
            row = self.thresholds_[
                (self.thresholds_.condition == key) & np.isclose(self.thresholds_.level, level)
            ]
            if len(row):
                t = row.iloc[0]
                y_t = float(self.predict([t.estimate], key)[0])
                ax.errorbar(
                    [t.estimate],
                    [y_t],
                    xerr=[[max(t.estimate - t.ci_low, 0.0)], [max(t.ci_high - t.estimate, 0.0)]],
                    fmt="s",
                    color=line.get_color(),
                    capsize=3,
                )
        _ms_axis(ax, np.concatenate([self._singles[key][0] for key in self.conditions_]))
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("stimulus (ms)")
        ax.set_ylabel("P(yes)")
        ax.legend(fontsize="small", title=self.condition_column_)
        return ax
