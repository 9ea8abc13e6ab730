"""The proportional-odds model of a rating on log2 latency, participant-clustered
(see `analysis.ratings`)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy import stats

from analysis.fitter import Fitter, check_alpha, requires_fit

if TYPE_CHECKING:
    from matplotlib.axes import Axes


@dataclass
class OrdinalLatencyFitter(Fitter):
    """Proportional-odds (ordinal logit) model of a rating on log2 of a latency factor.

    Fitted attributes: `slope_` (log-odds per doubling), `slope_ci_` (low, high; participant-
    clustered), `cutpoints_` (c_1..c_{K-1} on the log2 scale), `levels_` (rating values),
    `n_trials_`, `n_clusters_`, `clustered_`, `result_` (the statsmodels result).
    With fewer than `min_clusters` participants the covariance is the model's own (trials
    treated as independent: `clustered_` is False); a clustered covariance needs at least
    2 clusters and is too small with few (see `analysis.report.support`).
    """

    alpha: float = 0.05
    min_clusters: int = 2
    _fitted_attribute = "result_"

    def __post_init__(self) -> None:
        check_alpha(self.alpha, type(self).__name__)

    def fit(
        self, trials: pd.DataFrame, rating: str, stimulus: str, cluster: str = "participant"
    ) -> OrdinalLatencyFitter:
        """Fit on rows with a rating and a positive stimulus level."""
        from statsmodels.miscmodels.ordinal_model import OrderedModel

        df = trials.dropna(subset=[rating, stimulus])
        df = df[df[stimulus] > 0]
        levels = np.sort(df[rating].unique())
        if len(levels) < 3:
            raise ValueError(f"{rating}: fewer than 3 distinct ratings, no ordinal model")
        endog = pd.Series(pd.Categorical(df[rating], categories=levels, ordered=True), name=rating)
        exog = pd.DataFrame({f"log2_{stimulus}": np.log2(df[stimulus].to_numpy(dtype=float))})
        groups = pd.factorize(df[cluster])[0]
        n_params = len(levels)  # the slope and the cut points
        if len(df) <= n_params:
            raise ValueError(
                f"{rating}: {len(df)} ratings are too few for the ordinal model (it needs "
                f"more rows than its {n_params} parameters)"
            )
        n_clusters = int(groups.max() + 1) if len(groups) else 0
        self.clustered_ = n_clusters >= max(self.min_clusters, 2)
        cov = {"cov_type": "cluster", "cov_kwds": {"groups": groups}}
        model = OrderedModel(endog, exog, distr="logit")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = model.fit(
                method="bfgs",
                disp=False,
                maxiter=500,
                **(cov if self.clustered_ else {"cov_type": "nonrobust"}),
            )
        self.result_ = result
        self.stimulus_ = stimulus
        self.levels_ = levels
        self.slope_ = float(result.params.iloc[0])
        ci = result.conf_int(alpha=self.alpha)
        self.slope_ci_ = (float(ci.iloc[0, 0]), float(ci.iloc[0, 1]))
        self.slope_se_ = float(result.bse.iloc[0])
        self.cutpoints_ = model.transform_threshold_params(result.params.to_numpy())[1:-1]
        self.n_trials_, self.n_clusters_ = len(df), n_clusters
        return self

    @requires_fit
    def latency_at_half(self, acceptable_at: float) -> float:
        """Latency (ms) where P(rating >= acceptable_at) = 0.5 under the ordinal model."""
        below = int(np.searchsorted(self.levels_, acceptable_at)) - 1
        if below < 0 or self.slope_ == 0:
            return float("nan")
        return float(2 ** (self.cutpoints_[below] / self.slope_))

    @requires_fit
    def predict_proba(self, stimulus_ms: np.ndarray) -> np.ndarray:
        """[n, K] probability of each rating at each latency."""
        x = np.log2(np.asarray(stimulus_ms, dtype=float))[:, None]
        cum = stats.logistic.cdf(self.cutpoints_[None, :] - self.slope_ * x)
        cum = np.hstack([np.zeros((len(x), 1)), cum, np.ones((len(x), 1))])
        return np.diff(cum, axis=1)

    def _summary_table(self) -> pd.DataFrame:
        """Slope per doubling (with its CI) and cut-points, on the log2 latency scale."""
        rows = [
            {
                "param": f"slope per doubling of {self.stimulus_}",
                "estimate": self.slope_,
                "ci_low": self.slope_ci_[0],
                "ci_high": self.slope_ci_[1],
            }
        ]
        for lv, c in zip(self.levels_[:-1], self.cutpoints_, strict=True):
            rows.append({"param": f"cut {lv:g}|{lv + 1:g}", "estimate": c})
        return pd.DataFrame(rows)

    def _summary_header(self, decimals: int) -> list[str]:
        covariance = "participant-clustered" if self.clustered_ else "model (trials independent)"
        return [
            f"<OrdinalLatencyFitter: proportional odds on log2 {self.stimulus_}>",
            f"  ratings = {self.n_trials_}, participants = {self.n_clusters_}, "
            f"{covariance} covariance",
        ]

    @requires_fit
    def plot(self, ax: Axes | None = None) -> Axes:
        """Expected rating against latency (log axis)."""
        import matplotlib.pyplot as plt

        ax = ax or plt.gca()
        x = np.geomspace(50, 20000, 200)
        ax.plot(x, self.predict_proba(x) @ self.levels_, color="black", label="ordinal model")
        ax.set_xscale("log")
        return ax
