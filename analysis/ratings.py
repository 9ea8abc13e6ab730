"""Ratings: MOS with CI, SOS, %GoB / %PoW per condition, and a proportional-odds model.

* MOS = mean opinion score per condition, with a t-interval over the condition's ratings;
  SOS = their standard deviation (Hossfeld et al. 2016, "QoE beyond the MOS").
* %GoB (good or better) = share of ratings above the scale midpoint, %PoW (poor or worse) =
  share below it: on a 5-point ACR scale, 4-5 and 1-2.
* Ordinal model: P(rating <= j) = logistic(c_j - b * log2(latency)), statsmodels
  `OrderedModel`, errors clustered by participant (it has no random effects). b is the change
  in log-odds of a better rating per doubling of the latency (negative: worse when slower).
* The acceptable-rating threshold: ratings at or above the study's "acceptable" point become
  1, the rest 0, and the psychometric engine fits the latency where P(acceptable) = 0.5.
  Guess and lapse are fixed at 0 here (`RATING_FIT`): a rating has no chance floor, and with
  free asymptotes the 50% point of F is not where the probability itself is 0.5 (with a
  long-latency floor not yet reached, a free lapse moves it by 20% in simulation).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

# Psychometric-engine settings for the acceptable-rating threshold (see the module docstring).
RATING_FIT = {"direction": "auto", "guess": 0.0, "lapse": 0.0}


def scale_midpoint(scale_size: int) -> float:
    """(n + 1) / 2: 3 on a 5-point scale."""
    return (scale_size + 1) / 2


def rating_summary(
    trials: pd.DataFrame, rating: str, by: list[str], scale_size: int, alpha: float = 0.05
) -> pd.DataFrame:
    """Per condition: n, MOS, its CI, SOS, %GoB, %PoW (ratings on 1..scale_size)."""
    df = trials.dropna(subset=[rating])
    mid = scale_midpoint(scale_size)
    groups = df.groupby(by) if by else [((), df)]
    rows = []
    for key, part in groups:
        key = key if isinstance(key, tuple) else (key,)
        r = part[rating].to_numpy(dtype=float)
        n = len(r)
        mos = r.mean()
        sos = r.std(ddof=1) if n > 1 else np.nan
        half = stats.t.ppf(1 - alpha / 2, n - 1) * sos / np.sqrt(n) if n > 1 else np.nan
        row = dict(zip(by, key, strict=True))
        row.update(
            {
                "n": n,
                "n_participants": part["participant"].nunique(),
                "mos": mos,
                "ci_low": mos - half,
                "ci_high": mos + half,
                "sos": sos,
                "pct_gob": 100 * np.mean(r > mid),
                "pct_pow": 100 * np.mean(r < mid),
            }
        )
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass
class OrdinalLatencyFitter:
    """Proportional-odds (ordinal logit) model of a rating on log2 of a latency factor.

    Fitted attributes: `slope_` (log-odds per doubling), `slope_ci_` (low, high; participant-
    clustered), `cutpoints_` (c_1..c_{K-1} on the log2 scale), `levels_` (rating values),
    `n_trials_`, `n_clusters_`, `result_` (the statsmodels result).
    """

    alpha: float = 0.05

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
        model = OrderedModel(endog, exog, distr="logit")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = model.fit(
                method="bfgs",
                disp=False,
                maxiter=500,
                cov_type="cluster",
                cov_kwds={"groups": groups},
            )
        self.result_ = result
        self.stimulus_ = stimulus
        self.levels_ = levels
        self.slope_ = float(result.params.iloc[0])
        ci = result.conf_int(alpha=self.alpha)
        self.slope_ci_ = (float(ci.iloc[0, 0]), float(ci.iloc[0, 1]))
        self.slope_se_ = float(result.bse.iloc[0])
        self.cutpoints_ = model.transform_threshold_params(result.params.to_numpy())[1:-1]
        self.n_trials_, self.n_clusters_ = len(df), int(groups.max() + 1)
        return self

    def latency_at_half(self, acceptable_at: float) -> float:
        """Latency (ms) where P(rating >= acceptable_at) = 0.5 under the ordinal model."""
        below = int(np.searchsorted(self.levels_, acceptable_at)) - 1
        if below < 0 or self.slope_ == 0:
            return float("nan")
        return float(2 ** (self.cutpoints_[below] / self.slope_))

    def predict_proba(self, stimulus_ms: np.ndarray) -> np.ndarray:
        """[n, K] probability of each rating at each latency."""
        x = np.log2(np.asarray(stimulus_ms, dtype=float))[:, None]
        cum = stats.logistic.cdf(self.cutpoints_[None, :] - self.slope_ * x)
        cum = np.hstack([np.zeros((len(x), 1)), cum, np.ones((len(x), 1))])
        return np.diff(cum, axis=1)

    @property
    def summary(self) -> pd.DataFrame:
        """Slope per doubling and cut-points."""
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

    def print_summary(self) -> None:
        """Print the slope and cut-points."""
        print(self.summary.to_string(index=False))

    def plot(self, ax=None):
        """Expected rating against latency (log axis)."""
        import matplotlib.pyplot as plt

        ax = ax or plt.gca()
        x = np.geomspace(50, 20000, 200)
        ax.plot(x, self.predict_proba(x) @ self.levels_, color="black", label="ordinal model")
        ax.set_xscale("log")
        return ax


def acceptable_binary(ratings: pd.Series, acceptable_at: float) -> pd.Series:
    """1 where the rating is at or above the acceptable point, 0 below, NaN where unrated."""
    out = (ratings >= acceptable_at).astype(float)
    return out.where(ratings.notna())


def acceptability_threshold(
    trials: pd.DataFrame,
    rating: str,
    stimulus: str,
    acceptable_at: float,
    n_boot: int = 1000,
    seed: int = 0,
    progress: bool = False,
):
    """Fit the psychometric engine to "rating >= acceptable_at" against `stimulus`."""
    from analysis.psychometric import PsychometricFitter

    df = trials.dropna(subset=[rating, stimulus])
    y = acceptable_binary(df[rating], acceptable_at).to_numpy(dtype=int)
    fitter = PsychometricFitter(**RATING_FIT)
    return fitter.fit_trials(
        df[stimulus].to_numpy(dtype=float), y, n_boot=n_boot, seed=seed, progress=progress
    )
