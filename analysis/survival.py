"""Abandonment as survival data: Kaplan-Meier curves and accelerated-failure-time (AFT) models.

The clock starts when the prompt is sent. Giving up is the event (`t_abandon_ms`); a trial
that reached the end of its stream is right-censored at `scheduled_end_ms`, and one that hit
the study's trial timeout at the timeout (the schedule and the study fix both, so the
censoring is administrative and non-informative). Trials with
outcome `error` or `interrupted` carry no information about patience and are left out.
Time spent answering mid-chain questions is not waiting: when the table has `paused_ms`
(the time a chain was held for them), it is taken off both the give-up and the censoring
time, so the durations are waiting time (tables without the column are used as they are).

Models (lifelines does the fitting):

* Kaplan-Meier per condition with pointwise 95% bands (Greenwood, exponential form).
* AFT: log T = x'b + sigma * eps with eps standard minimum-Gumbel (Weibull), normal
  (log-normal) or logistic (log-logistic); the family with the lowest AIC is kept. Latency
  factors enter as log2(level), so exp(b) is the *time ratio per doubling* of the factor
  (> 1: people wait longer). lifelines has no frailty or clustered errors for AFT models, so
  the covariance here is the cluster-robust sandwich H^-1 (sum_c s_c s_c') H^-1 * G/(G-1) with
  the per-trial scores s summed within participant (computed in closed form below).
* The time by which a share q has given up in a condition, t_q = exp(x'b + sigma z_q) with
  S0(z_q) = 1 - q, and its CI by the delta method on log t_q.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

from analysis.aft_families import log_s0, quick_start, score_g, z_for_share
from analysis.fitter import Fitter, check_alpha, requires_fit
from number_text import condition_value

if TYPE_CHECKING:
    from lifelines import KaplanMeierFitter
    from matplotlib.axes import Axes

FAMILIES = ("weibull", "lognormal", "loglogistic")
SEPARATED_VAR = 100.0
"""A factor's model variance (log time per unit of the factor, squared) past which the
data separate it: a standard error of 10, a time ratio's 95% interval wider than a factor
of 10^17. What identified and separated fits measure: docs/explanation/statistics.md."""
CENSORED_OUTCOMES = ("completed", "timed_out")


def survival_data(
    trials: pd.DataFrame, factors: list[str], timeout_ms: float | None = None
) -> pd.DataFrame:
    """One row per analysable trial: `duration_ms`, `event` (1 = gave up), participant,
    factors, and `paused_ms` (answering time taken off the duration; 0 without the column).

    A `timed_out` trial was watched only until the study's trial timeout: it is censored at
    `timeout_ms` (when given and earlier than the stream's end), else at `shown_last_ms`
    (the last chunk seen before the timeout), never at the end of a stream nobody watched.

    Needs `outcome`, `t_abandon_ms` and `scheduled_end_ms` (or `shown_last_ms` as a fallback
    censoring time). The duration is waiting time: either time minus `paused_ms` when the
    table has it. Rows without a positive duration are dropped.
    """
    for col in ("outcome", "t_abandon_ms"):
        if col not in trials.columns:
            raise KeyError(col)
    df = trials[trials["outcome"].isin(("abandoned", *CENSORED_OUTCOMES))]
    end = df["scheduled_end_ms"] if "scheduled_end_ms" in df.columns else None
    if end is None or end.isna().all():
        end = df.get("shown_last_ms", pd.Series(np.nan, index=df.index))
    elif "shown_last_ms" in df.columns:
        end = end.fillna(df["shown_last_ms"])
    timed_out = (df["outcome"] == "timed_out").to_numpy()
    if timed_out.any():
        end = end.astype(float).copy()
        if timeout_ms is not None and np.isfinite(timeout_ms):
            end[timed_out] = np.fmin(end[timed_out].to_numpy(), float(timeout_ms))
        elif "shown_last_ms" in df.columns:
            end[timed_out] = df.loc[timed_out, "shown_last_ms"].astype(float)
    event = (df["outcome"] == "abandoned").astype(int)
    paused = pd.Series(0.0, index=df.index)
    if "paused_ms" in df.columns:  # mid-chain questions held the chain: not waiting time
        paused = pd.to_numeric(df["paused_ms"], errors="coerce").fillna(0.0)
    duration = np.where(event == 1, df["t_abandon_ms"], end).astype(float) - paused.to_numpy()
    out = pd.DataFrame({"duration_ms": duration, "event": event.to_numpy()}, index=df.index)
    out["participant"] = df["participant"].astype(str)
    out["paused_ms"] = paused.to_numpy()
    for f in factors:
        out[f] = pd.to_numeric(df[f], errors="coerce")
    out = out[np.isfinite(out["duration_ms"]) & (out["duration_ms"] > 0)]
    return out.dropna(subset=factors).reset_index(drop=True)


def condition_label(values: dict[str, float]) -> str:
    """`ttft_ms=800, itl_ms=30` for a dict of factor levels."""
    return ", ".join(f"{k}={condition_value(v)}" for k, v in values.items()) or "all trials"


def kaplan_meier(
    sdata: pd.DataFrame, by: list[str], alpha: float = 0.05
) -> dict[str, KaplanMeierFitter]:
    """A fitted lifelines `KaplanMeierFitter` per condition (keyed by its label)."""
    from lifelines import KaplanMeierFitter

    fits: dict[str, KaplanMeierFitter] = {}
    groups = sdata.groupby(by) if by else [((), sdata)]
    for key, part in groups:
        key = key if isinstance(key, tuple) else (key,)
        label = condition_label(dict(zip(by, key, strict=True)))
        kmf = KaplanMeierFitter(alpha=alpha, label=label)
        kmf.fit(part["duration_ms"], part["event"])
        fits[label] = kmf
    return fits


def km_time_to_share(kmf: KaplanMeierFitter, share: float) -> tuple[float, float, float]:
    """(estimate, ci_low, ci_high) of the time by which `share` gave up; inf if never."""
    target = 1.0 - share
    sf = kmf.survival_function_.iloc[:, 0]
    ci = kmf.confidence_interval_survival_function_
    lower, upper = ci.iloc[:, 0], ci.iloc[:, 1]

    def first_below(curve: pd.Series) -> float:
        hit = curve.index[curve.to_numpy() <= target]
        return float(hit[0]) if len(hit) else float("inf")

    return first_below(sf), first_below(lower), first_below(upper)


def km_table(
    fits: dict[str, KaplanMeierFitter], shares: Sequence[float] = (0.1, 0.5)
) -> pd.DataFrame:
    """Per condition: trials, abandonments, and the KM time by which each share gave up."""
    rows = []
    for label, kmf in fits.items():
        row = {
            "condition": label,
            "n_trials": int(kmf.event_table["at_risk"].iloc[0]),
            "n_abandoned": int(kmf.event_table["observed"].sum()),
        }
        for q in shares:
            est, lo, hi = km_time_to_share(kmf, q)
            row[f"t{int(q * 100)}_ms"], row[f"t{int(q * 100)}_low"] = est, lo
            row[f"t{int(q * 100)}_high"] = hi
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass
class CovariateSpec:
    """How a factor enters the AFT model: log2(level) for latencies, the level itself otherwise."""

    factor: str
    transform: str  # "log2" | "linear"

    @property
    def column(self) -> str:
        return f"log2_{self.factor}" if self.transform == "log2" else self.factor

    def apply(self, values: npt.ArrayLike) -> np.ndarray:
        values = np.asarray(values, dtype=float)
        return cast(np.ndarray, np.log2(values) if self.transform == "log2" else values)

    @property
    def per(self) -> str:
        return "per doubling" if self.transform == "log2" else "per unit"


def covariate_specs(sdata: pd.DataFrame, factors: list[str]) -> list[CovariateSpec]:
    """Factors that vary, as log2 when all levels are positive and span at least a factor of 2."""
    specs = []
    for f in factors:
        levels = sdata[f].dropna().unique()
        if len(levels) < 2:
            continue
        positive = (levels > 0).all()
        spans = positive and levels.max() / levels.min() >= 2
        specs.append(CovariateSpec(f, "log2" if spans else "linear"))
    return specs


@dataclass
class AbandonmentAFTFitter(Fitter):
    """AFT model of patience with latency factors as covariates, family chosen by AIC.

    Parameters
    ----------
    families : candidate families, among "weibull", "lognormal", "loglogistic".
    alpha : 1 - confidence level of every interval.

    Fitted attributes: `family_`, `aic_` (DataFrame family, AIC, log_likelihood), `coef_`
    (Series over covariates and "Intercept", log-time scale), `log_sigma_`, `cov_` (cluster-
    robust covariance over [coef..., log_sigma]), `time_ratios_` (DataFrame), `n_trials_`,
    `n_events_`, `n_clusters_`, `clustered_` (False: `cov_` is the model's own), `separated_`
    (the factors the data separate: no finite estimate, the model's own huge variance kept).
    """

    families: tuple[str, ...] = FAMILIES
    alpha: float = 0.05
    min_clusters: int = 2
    """Below this many participants `cov_` is the model's own (trials treated as
    independent; `clustered_` False): a sandwich from few clusters is too small."""
    specs_: list[CovariateSpec] = field(default_factory=list)
    _fitted_attribute = "cov_"

    def __post_init__(self) -> None:
        check_alpha(self.alpha, type(self).__name__)

    def fit(
        self, sdata: pd.DataFrame, factors: list[str], cluster: str = "participant"
    ) -> AbandonmentAFTFitter:
        """Fit each family to `survival_data(...)` rows; keep the lowest AIC."""
        from lifelines import LogLogisticAFTFitter, LogNormalAFTFitter, WeibullAFTFitter

        classes = {
            "weibull": quick_start(WeibullAFTFitter, "weibull"),
            "lognormal": quick_start(LogNormalAFTFitter, "lognormal"),
            "loglogistic": quick_start(LogLogisticAFTFitter, "loglogistic"),
        }
        if int(sdata["event"].sum()) < 3:
            raise ValueError("fewer than 3 abandonments: no AFT model can be fitted")
        self.specs_ = covariate_specs(sdata, factors)
        design = pd.DataFrame({s.column: s.apply(sdata[s.factor]) for s in self.specs_})
        design["duration_s"] = sdata["duration_ms"].to_numpy() / 1000.0
        design["event"] = sdata["event"].to_numpy()
        rows, fitted = [], {}
        for fam in self.families:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    model = classes[fam]().fit(design, "duration_s", "event")
                except Exception as exc:  # a family that fails to converge is skipped
                    rows.append({"family": fam, "AIC": np.nan, "log_likelihood": np.nan})
                    del exc
                    continue
            fitted[fam] = model
            rows.append({"family": fam, "AIC": model.AIC_, "log_likelihood": model.log_likelihood_})
        self.aic_ = pd.DataFrame(rows).sort_values("AIC").reset_index(drop=True)
        if not fitted:
            raise ValueError("no AFT family converged")
        self.family_ = str(self.aic_.dropna().iloc[0]["family"])
        model = fitted[self.family_]
        primary, ancillary = model._primary_parameter_name, model._ancillary_parameter_name
        names = [s.column for s in self.specs_] + ["Intercept"]
        coef = model.params_.loc[primary].reindex(names).to_numpy(dtype=float)
        anc = float(model.params_.loc[(ancillary, "Intercept")])
        sign = 1.0 if self.family_ == "lognormal" else -1.0  # weibull/loglogistic: log(1/sigma)
        log_sigma = sign * anc
        # Reorder lifelines' inverse Hessian to [coef..., log_sigma] and change its sign for s.
        order = [(primary, n) for n in names] + [(ancillary, "Intercept")]
        h_inv = model.variance_matrix_.loc[order, order].to_numpy()
        jac = np.eye(len(order))
        jac[-1, -1] = sign
        h_inv = jac @ h_inv @ jac.T
        covariates = design[[s.column for s in self.specs_]].to_numpy()
        x = np.column_stack([covariates, np.ones(len(design))])
        y = np.log(design["duration_s"].to_numpy())
        sigma = np.exp(log_sigma)
        z = (y - x @ coef) / sigma
        g = score_g(self.family_, z, design["event"].to_numpy())
        scores = np.column_stack([-(x / sigma) * g[:, None], -z * g - design["event"].to_numpy()])
        clusters = sdata[cluster].to_numpy()
        summed = pd.DataFrame(scores).groupby(clusters).sum().to_numpy()
        n_clusters = summed.shape[0]
        meat = summed.T @ summed * (n_clusters / max(n_clusters - 1, 1))
        self.clustered_ = n_clusters >= max(self.min_clusters, 2)
        # A factor the data separate (every give-up at its extreme levels) has no finite
        # estimate: the optimiser stops somewhere along a flat ridge, where the model's own
        # variance is huge or not positive, and a sandwich built there is noise (finite or
        # not, depending on where it stopped). Such a fit keeps the model's own covariance,
        # whose huge variance says what the data say: no bound.
        model_var = np.diag(h_inv)[: len(self.specs_)]
        with np.errstate(invalid="ignore"):
            usable = np.isfinite(model_var) & (model_var > 0) & (model_var < SEPARATED_VAR)
        self.separated_ = [s.factor for s, ok in zip(self.specs_, usable, strict=True) if not ok]
        if self.separated_:
            self.clustered_ = False
        self.cov_ = h_inv @ meat @ h_inv if self.clustered_ else h_inv
        self.cov_model_ = h_inv
        self.coef_ = pd.Series(coef, index=names)
        self.coef_["Intercept"] += np.log(1000.0)  # back to ms
        self.log_sigma_ = log_sigma
        self.scores_ = scores
        self.n_trials_, self.n_events_ = len(design), int(design["event"].sum())
        self.n_clusters_ = n_clusters
        self.max_followup_ms_ = float(sdata["duration_ms"].max())
        self.time_ratios_ = self._time_ratios()
        return self

    @property
    def params_vector_(self) -> np.ndarray:
        return cast(np.ndarray, np.r_[self.coef_.to_numpy(), self.log_sigma_])

    def _time_ratios(self) -> pd.DataFrame:
        zc = self.normal_quantile()
        rows = []
        for i, spec in enumerate(self.specs_):
            # a separated fit (every give-up at one level) has a huge or negative variance:
            # its interval is then [0, inf] or NaN, said as such, not a RuntimeWarning
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                b, se = self.coef_.iloc[i], np.sqrt(self.cov_[i, i])
                rows.append(
                    {
                        "factor": spec.factor,
                        "per": spec.per,
                        "time_ratio": np.exp(b),
                        "ci_low": np.exp(b - zc * se),
                        "ci_high": np.exp(b + zc * se),
                        "p": 2 * stats.norm.sf(abs(b / se)),
                    }
                )
        return pd.DataFrame(rows, columns=["factor", "per", "time_ratio", "ci_low", "ci_high", "p"])

    def _design_row(self, levels: dict[str, float]) -> np.ndarray:
        return cast(
            np.ndarray, np.r_[[float(s.apply([levels[s.factor]])[0]) for s in self.specs_], 1.0]
        )

    @requires_fit
    def time_to_share(self, levels: dict[str, float], share: float) -> tuple[float, float, float]:
        """(estimate, ci_low, ci_high) in ms of the time by which `share` of trials gave up."""
        x = self._design_row(levels)
        sigma = np.exp(self.log_sigma_)
        zq = z_for_share(self.family_, share)
        log_t = x @ self.coef_.to_numpy() + sigma * zq
        grad = np.r_[x, sigma * zq]
        se = float(np.sqrt(grad @ self.cov_ @ grad))
        zc = self.normal_quantile()
        with np.errstate(over="ignore"):  # a bound beyond ~1e308 ms is inf: unbounded
            return (
                float(np.exp(log_t)),
                float(np.exp(log_t - zc * se)),
                float(np.exp(log_t + zc * se)),
            )

    @requires_fit
    def abandon_probability(
        self, levels: pd.DataFrame, t_ms: np.ndarray, n_draws: int = 0, seed: int = 0
    ) -> np.ndarray:
        """P(gave up by `t_ms`) per row of `levels`; with `n_draws`, a [n_draws, rows] array
        drawn from the robust sampling distribution of the parameters."""
        x = np.column_stack(
            [s.apply(levels[s.factor].to_numpy()) for s in self.specs_] + [np.ones(len(levels))]
        )
        log_t = np.log(np.asarray(t_ms, dtype=float))
        theta = self.params_vector_[None, :]
        if n_draws:
            rng = np.random.default_rng(seed)
            theta = rng.multivariate_normal(self.params_vector_, self.cov_, size=n_draws)
        mu = theta[:, :-1] @ x.T
        z = (log_t[None, :] - mu) / np.exp(theta[:, -1:])
        prob = -np.expm1(log_s0(self.family_, z))
        return cast(np.ndarray, prob if n_draws else prob[0])

    def _summary_table(self) -> pd.DataFrame:
        """Coefficients on the log-time scale with robust SEs and time ratios."""
        se = np.sqrt(np.diag(self.cov_))
        zc = self.normal_quantile()
        names = [*self.coef_.index, "log_sigma"]
        est = self.params_vector_
        return pd.DataFrame(
            {
                "coef": est,
                "se_cluster": se,
                "ci_low": est - zc * se,
                "ci_high": est + zc * se,
                "exp_coef": np.exp(est),
            },
            index=pd.Index(names, name="param"),
        )

    def _summary_header(self, decimals: int) -> list[str]:
        return [
            f"<AbandonmentAFTFitter: {self.family_} (lowest AIC), {self.n_trials_} trials, "
            f"{self.n_events_} abandonments, {self.n_clusters_} participants "
            f"({'cluster-robust' if self.clustered_ else 'model'} SE)>",
            self.aic_.to_string(index=False),
            "",
        ]

    @requires_fit
    def plot(self, ax: Axes | None = None, levels: list[dict[str, float]] | None = None) -> Axes:
        """Predicted share still waiting over time for each condition in `levels`."""
        import matplotlib.pyplot as plt

        ax = ax or plt.gca()
        t_ms = np.linspace(1, self.max_followup_ms_, 200)
        for lv in levels or []:
            frame = pd.DataFrame([lv] * len(t_ms))
            ax.plot(t_ms, 1 - self.abandon_probability(frame, t_ms), label=condition_label(lv))
        ax.set_xlabel("time since send (ms)")
        ax.set_ylabel("share still waiting")
        return ax
