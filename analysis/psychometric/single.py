"""`PsychometricFitter`: one psychometric function fitted to one set of counts."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

from analysis.batch_mle import Layout
from analysis.bootstrap import widen_to_percentile
from analysis.fitter import requires_fit
from analysis.psychometric.engine_fitter import EngineFitter
from analysis.psychometric.inputs import aggregate_trials, check_counts
from analysis.psychometric.ml_fit import (
    FitSpec,
    best_of,
    build_layout,
    grid_starts,
    threshold_logs,
)
from analysis.psychometric.resampling import FitResult, run_engine
from analysis.steep_tails import widen_steep_tails

if TYPE_CHECKING:
    from matplotlib.axes import Axes


ProgressArg = bool | Callable[[int, int], None]
"""True: print "fits done/total" to stderr; a callable: called with (done, total)."""


def report_progress(progress: ProgressArg, done: int, total: int, label: str = "") -> None:
    if callable(progress):
        progress(done, total)
    elif progress:
        print(f"\rpsychometric fits {done}/{total} {label}", end="", file=sys.stderr)
        if done == total:
            print(file=sys.stderr)


def levels_ms_axis(ax: Axes, levels_ms: npt.ArrayLike) -> None:
    """Log x axis labelled in plain ms at the tested levels (no 10^k minor-tick clutter)."""
    from matplotlib.ticker import FixedLocator, NullFormatter

    ax.set_xscale("log")
    ticks = np.unique(np.asarray(levels_ms, dtype=float))
    if ticks.size > 9:
        ticks = ticks[:: int(np.ceil(ticks.size / 9))]
    ax.xaxis.set_major_locator(FixedLocator(ticks.tolist()))
    ax.set_xticklabels([f"{t:,.0f}" for t in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())


class PsychometricFitter(EngineFitter):
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
    bias_reduction: maximise the likelihood times Jeffreys' prior (Firth 1993), in the fit
        and every bootstrap refit, instead of the likelihood: it removes the first-order
        small-sample bias of maximum likelihood (a too-steep curve, and so thresholds off
        the sampled point pulled towards it). Needs the logistic F and guess = lapse = 0.

    Fitted attributes (after `fit`): params_, direction_, loglik_, deviance_, deviance_p_,
    thresholds_, summary, x_ms_, n_yes_, n_total_, boot_params_ (DataFrame, one row per
    bootstrap fit), n_boot_failed_, n_boot_unconverged_, n_boot_, seed_, ci_method_,
    result_ (the fit on the engine's parameter layout: its `layout`, `theta`, counts `k` and
    `n`, bootstrap and jackknife draws; what the pooled, contrast and interval code build on).
    """

    # fitting --------------------------------------------------------------------------------

    def fit(
        self,
        x: npt.ArrayLike,
        n_yes: npt.ArrayLike,
        n_total: npt.ArrayLike,
        *,
        n_boot: int = 1000,
        seed: int = 0,
        ci_method: str = "percentile",
        sensitivity: bool = True,
        progress: ProgressArg = False,
    ) -> PsychometricFitter:
        """Fit counts per level: x (ms, > 0), n_yes and n_total per level. Returns self.

        n_boot parametric bootstrap datasets give the intervals (0: point estimates only);
        with ``sensitivity`` a second bootstrap from a shallower model widens them where
        needed (see `_sensitivity_bootstrap`); ci_method is "percentile" or "bca".
        """
        x_ms, k_yes, n = check_counts(x, n_yes, n_total)
        order = np.argsort(x_ms, kind="stable")
        x_ms, k_yes, n = x_ms[order], k_yes[order], n[order]
        spec = FitSpec(
            self.sigmoid,
            self.guess,
            self.lapse,
            self.likelihood == "beta-binomial",
            firth=self.bias_reduction,
        )
        u = np.log(x_ms)
        layout = build_layout(spec, u, np.zeros(u.size, dtype=int), 1)
        starts = grid_starts(layout, 1)
        directions = ["rising", "falling"] if self.direction == "auto" else [self.direction]
        counts = {"rising": k_yes, "falling": n - k_yes}
        best = best_of(layout, starts, [counts[d] for d in directions], n)
        fits = dict(zip(directions, best, strict=True))
        direction = max(directions, key=lambda d: fits[d][1])
        unit = "blocks" if spec.beta_binomial else "trials"
        result = run_engine(
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
        report_progress(progress, 1, 1)
        self.x_ms_, self.n_yes_, self.n_total_ = x_ms, k_yes, n
        self.direction_ = direction
        self._keep_engine_fit(result, n_boot, seed, ci_method)
        self._store(result)
        return self

    def fit_trials(
        self, stimulus: npt.ArrayLike, response: npt.ArrayLike, **fit_kwargs: Any
    ) -> PsychometricFitter:
        """Fit one row per trial: stimulus (ms) and response (1 = yes, 0 = no)."""
        levels, n_yes, n_total = aggregate_trials(stimulus, response)
        return self.fit(levels, n_yes, n_total, **fit_kwargs)

    def _store(self, result: FitResult) -> None:
        self.params_ = {
            key: float(val[0]) for key, val in self._param_arrays(result.theta[None, :]).items()
        }
        self.boot_params_ = pd.DataFrame(
            {key: val for key, val in self._param_arrays(result.boot_theta).items()}
        )
        self.thresholds_ = self._threshold_table(self.levels)

    def _param_arrays(self, theta: np.ndarray) -> dict[str, np.ndarray]:
        """m, w, guess, lapse (and eta) of every parameter row theta [B, P], each [B]."""
        layout = self.result_.layout
        rp_idx, fixed = layout.idx[0], layout.fixed[0]

        def get(j: int) -> np.ndarray:
            return theta[:, rp_idx[j]] if rp_idx[j] >= 0 else np.full(len(theta), fixed[j])

        out = {"m": get(0), "w": np.exp(get(1)), "guess": get(2), "lapse": get(3)}
        if layout.beta_binomial:
            out["eta"] = np.sqrt(get(4))
        return out

    @requires_fit
    def log_threshold_draws(
        self, levels: Sequence[float]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The thresholds at `levels` in ln ms: (estimate [K], bootstrap [B, K], jackknife
        [J, K]); NaN rows where a bootstrap fit failed, no jackknife rows unless `fit` ran
        with ci_method="bca". What intervals built on this fit (pooled, contrast) resample."""
        r = self.result_
        est = threshold_logs(r.layout, r.theta[None, :], levels)[0]
        boot = threshold_logs(r.layout, r.boot_theta, levels)
        jack = threshold_logs(r.layout, r.jack_theta, levels)
        return est, boot, jack

    def _threshold_table(self, levels: Sequence[float]) -> pd.DataFrame:
        est, low, high = self._threshold_logs_with_interval(levels)
        low, high = widen_steep_tails(self.result_.layout, self.result_.theta, low, high)
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

    @requires_fit
    def threshold(self, level: float = 0.5) -> float:
        """Stimulus (ms) where F crosses `level`."""
        return float(np.exp(self.log_threshold_draws([level])[0][0]))

    @requires_fit
    def threshold_ci(self, level: float = 0.5) -> tuple[float, float]:
        """Bootstrap (1 - alpha) interval (ms) of threshold(level)."""
        row = self._threshold_table([level]).iloc[0]
        return float(row.ci_low), float(row.ci_high)

    @requires_fit
    def threshold_samples(self, level: float = 0.5) -> np.ndarray:
        """The bootstrap distribution (ms) of threshold(level); NaN where a fit failed."""
        return cast(np.ndarray, np.exp(self.log_threshold_draws([level])[1][:, 0]))

    @requires_fit
    def predict(self, x: npt.ArrayLike) -> np.ndarray:
        """Probability of "yes" at stimulus x (ms)."""
        r = self.result_
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
        return cast(np.ndarray, psi if self.direction_ == "rising" else 1.0 - psi)

    def _summary_table(self) -> pd.DataFrame:
        """One row per parameter and threshold: estimate, se, CI, unit."""
        r = self.result_
        rows = []
        boot = self._param_arrays(r.boot_theta)
        jack = self._param_arrays(r.jack_theta) if len(r.jack_theta) else None
        sens = self._param_arrays(r.sens_theta)
        for name, value in self.params_.items():
            samples = boot[name][:, None]
            jk = jack[name][:, None] if jack is not None else np.empty((0, 1))
            low, high = self._interval(samples, np.array([value]), jk, r.jack_weights)
            low, high = widen_to_percentile(low, high, sens[name][:, None], self.alpha)
            se = float(np.nanstd(samples)) if len(samples) else float("nan")
            unit = {"m": "ln ms", "w": "ln ms (F 0.1->0.9)"}.get(name, "probability")
            rows.append((name, value, se, low[0], high[0], unit))
        for row in self.thresholds_.itertuples():
            se = float(np.nanstd(self.threshold_samples(row.level)))
            rows.append(
                (f"threshold_{row.level:g}", row.estimate, se, row.ci_low, row.ci_high, "ms")
            )
        table = pd.DataFrame(rows, columns=["param", "estimate", "se", "ci_low", "ci_high", "unit"])
        return table.set_index("param")

    def _summary_header(self, decimals: int) -> list[str]:
        return [
            f"<PsychometricFitter: {self.sigmoid}, {self.likelihood}, {self.direction_}>",
            f"  levels = {self.x_ms_.size}, trials = {int(self.n_total_.sum())}",
            f"  log-likelihood = {self.loglik_:.{decimals}f}",
            f"  deviance = {self.deviance_:.{decimals}f} (bootstrap p = {self.deviance_p_:.3f})",
            f"  bootstrap: {self._bootstrap_description()}, failed fits = "
            f"{self.n_boot_failed_}, stopped short = {self.n_boot_unconverged_}",
            "",
        ]

    @requires_fit
    def plot(
        self,
        ax: Axes | None = None,
        *,
        level: float = 0.5,
        label: str | None = None,
        show_threshold: bool = True,
    ) -> Axes:
        """Data with 95% Clopper-Pearson intervals, the fitted curve and (unless
        `show_threshold` is False: a caller drawing it its own way) threshold with CI."""
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
        if show_threshold:
            t_ms = self.threshold(level)
            low, high = self.threshold_ci(level)
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
        levels_ms_axis(ax, self.x_ms_)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("stimulus (ms)")
        ax.set_ylabel("P(yes)")
        ax.legend(fontsize="small")
        return ax
