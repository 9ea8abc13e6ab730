"""`MultiConditionFitter`: one psychometric function per condition, fitted jointly."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from analysis.batch_mle import Layout
from analysis.fitter import requires_fit
from analysis.psychometric.engine_fitter import EngineFitter
from analysis.psychometric.inputs import (
    PsychometricInputError,
    aggregate_trials,
    check_counts,
    frame_column,
    sorted_keys,
)
from analysis.psychometric.ml_fit import (
    FitSpec,
    best_of,
    build_layout,
)
from analysis.psychometric.resampling import run_engine
from analysis.psychometric.single import PsychometricFitter, levels_ms_axis

if TYPE_CHECKING:
    from matplotlib.axes import Axes

Counts = tuple[np.ndarray, np.ndarray, np.ndarray]
"""(levels ms, yes counts, trial counts) per level, as `check_counts` returns them."""


class MultiConditionFitter(EngineFitter):
    """One psychometric function per condition, fitted jointly with shared nuisances.

    Each condition c has its own m_c and w_c (and guess_c unless shared); the lapse is one
    parameter for all conditions with ``share_lapse=True`` (lapses are attention slips, not
    a property of the condition), else one per condition. The direction is decided once on
    the pooled data. Same model, bounds and bootstrap as `PsychometricFitter`.

    Fitted attributes: conditions_, direction_, params_ (DataFrame, one row per condition),
    thresholds_ (condition, level, estimate, ci_low, ci_high, n_trials), loglik_,
    deviance_, deviance_p_, n_boot_failed_, n_boot_unconverged_, n_boot_, seed_, ci_method_,
    n_trials_by_condition_ (condition -> trials), result_ (the fit on the engine's parameter
    layout, as `PsychometricFitter.result_`).
    """

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
        x_col, r_col = frame_column(df, stimulus), frame_column(df, response)
        c_col = frame_column(df, condition).astype(str)
        keys = sorted_keys(c_col.unique())
        if len(keys) < 2:
            raise PsychometricInputError(
                f"{condition}: a multi-condition fit needs 2 or more conditions; got {keys}"
            )
        u, cond, k_yes, n, singles = _condition_counts(
            x_col, r_col, c_col, keys, stimulus, response, condition
        )
        pooled = PsychometricFitter(
            self.sigmoid, self.guess, self.lapse, "binomial", self.direction
        ).fit(*aggregate_trials(x_col, r_col, field=stimulus, response_field=response), n_boot=0)
        direction = pooled.direction_
        spec = FitSpec(
            self.sigmoid,
            self.guess,
            self.lapse,
            self.likelihood == "beta-binomial",
            share_guess=share_guess,
            share_lapse=share_lapse,
            firth=self.bias_reduction,  # one condition only: refused with more
        )
        layout = build_layout(spec, u, cond, len(keys))
        starts = self._starting_points(layout, spec, keys, singles, direction)
        k = k_yes if direction == "rising" else n - k_yes
        result = run_engine(
            layout,
            k,
            n,
            best_of(layout, starts, [k], n)[0],
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
        self._keep_engine_fit(result, n_boot, seed, ci_method)
        self.n_trials_by_condition_ = {key: float(n[cond == c].sum()) for c, key in enumerate(keys)}
        self._singles = singles
        self.params_ = self._params_table()
        self.thresholds_ = self._thresholds_table()
        return self

    def _starting_points(
        self,
        layout: Layout,
        spec: FitSpec,
        keys: list[str],
        singles: dict[str, Counts],
        direction: str,
    ) -> np.ndarray:
        """Two starting points for the joint fit: each condition's own single fit (the
        middle of the bounds where a parameter is shared), and the same with guess and
        lapse at 0.02."""
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
        return cast(np.ndarray, starts)

    def _params_table(self) -> pd.DataFrame:
        r = self.result_
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
        frames = []
        for c, key in enumerate(self.conditions_):
            est, low, high = self._threshold_logs_with_interval(self.levels, c)
            frames.append(
                pd.DataFrame(
                    {
                        "condition": key,
                        "level": list(self.levels),
                        "estimate": np.exp(est),
                        "ci_low": np.exp(low),
                        "ci_high": np.exp(high),
                        "n_trials": int(self.n_trials_by_condition_[key]),
                    }
                )
            )
        return pd.concat(frames, ignore_index=True)

    @requires_fit
    def predict(self, x: npt.ArrayLike, condition: str) -> np.ndarray:
        """Probability of "yes" at stimulus x (ms) in `condition`."""
        r = self.result_
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
        return cast(np.ndarray, psi if self.direction_ == "rising" else 1.0 - psi)

    _print_width = 140

    def _summary_table(self) -> pd.DataFrame:
        """Thresholds per condition and level, with the condition's parameters."""
        return self.thresholds_.merge(self.params_.reset_index(), on="condition")

    def _summary_header(self, decimals: int) -> list[str]:
        lapse = "shared" if self.share_lapse_ else "per condition"
        return [
            f"<MultiConditionFitter: {self.sigmoid}, {self.likelihood}, {self.direction_}, "
            f"lapse {lapse}>",
            f"  conditions = {len(self.conditions_)}, log-likelihood = "
            f"{self.loglik_:.{decimals}f}, deviance = {self.deviance_:.{decimals}f} "
            f"(bootstrap p = {self.deviance_p_:.3f})",
        ]

    @requires_fit
    def plot(self, ax: Axes | None = None, *, level: float = 0.5) -> Axes:
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
        levels_ms_axis(ax, np.concatenate([self._singles[key][0] for key in self.conditions_]))
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("stimulus (ms)")
        ax.set_ylabel("P(yes)")
        ax.legend(fontsize="small", title=self.condition_column_)
        return ax


def _condition_counts(
    x_col: pd.Series,
    r_col: pd.Series,
    c_col: pd.Series,
    keys: list[str],
    stimulus: str,
    response: str,
    condition: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Counts]]:
    """(log levels, condition index, yes counts, trial counts) stacked over conditions, and
    each condition's own (levels, yes, n); an input error names the condition."""
    u_rows, c_rows, k_rows, n_rows = [], [], [], []
    singles: dict[str, Counts] = {}
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
    return u, cond, k_yes, n, singles
