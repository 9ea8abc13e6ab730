"""Agent chains: end-to-end impatience by chain length and per-call TTFT, and whether
latency multiplies.

The question ("a five-step agent at poor latency feels five times worse than a chat") is
put as a model for the probability of a "too slow" judgement of a chain with ``n`` model
calls, each with time to first token ``x`` ms::

    P(too slow) = F(b0 + b1 ln x + b2 ln n)        F logistic (guess = lapse = 0)

The threshold on per-call TTFT at length n is then ``T(n) = T1 * n ** -k`` with
``k = b2 / b1`` and ``T1 = exp(-b0 / b1)``. Two special cases are compared with the free
model by likelihood and AIC:

* (a) end-to-end: judgements depend on the waiting summed over the chain, ``x * n``
  (k = 1: the per-call threshold falls as 1/steps, "latency multiplies");
* (b) per-call: judgements depend on each call's TTFT only (k = 0: the threshold does not
  depend on the length).

The CI of k is a percentile bootstrap over participants (their trials resampled together),
so it holds when participants differ. Per-length thresholds (the table and the plot) come
from `analysis.psychometric.PsychometricFitter`, one fit per chain length.

Input is the trial table (contract 2) with a per-call TTFT column (``call_ttft_ms``), a
chain-length column (``n_steps``) and a yes/no question; practice rows are dropped. Trials
given up without an answer are left out of the judgement fits by default: giving up depends
on the whole time waited, whatever drives the judgements, so counting it as "too slow"
(``abandon_as_yes=True``) pulls k towards 1 even when judgements are per-call (in our
simulations, k = 0.57 [0.23, 0.92] for a per-call truth with 19% of trials given up). The
share given up per cell is in the `impatience_table`. This module does not import uxlab.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, cast

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats

from analysis.psychometric import PsychometricFitter

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MODELS = ("free k", "end-to-end (k = 1)", "per-call (k = 0)")


class ChainDataError(ValueError):
    """Trial data the chain analysis cannot use: names the column and what is needed."""


# -- preparing the data -------------------------------------------------------------------------
def chain_judgements(
    trials: pd.DataFrame,
    *,
    stimulus: str = "call_ttft_ms",
    steps: str = "n_steps",
    response: str = "q_too_slow",
    participant: str = "participant",
    direction: str = "rising",
    abandon_as_yes: bool = False,
) -> pd.DataFrame:
    """One row per usable trial: participant, x_ms, n_steps, slow (1 = judged too slow)."""
    for col in (stimulus, steps):
        if col not in trials.columns:
            raise ChainDataError(f"column {col!r} is missing: the chain analysis needs it")
    if response not in trials.columns:
        raise ChainDataError(
            f"column {response!r} is missing: name the yes/no question with response=..."
        )
    if direction not in ("rising", "falling"):
        raise ChainDataError(f"direction {direction!r}: use 'rising' (too slow?) or 'falling'")
    df = trials
    if "practice" in df.columns:
        df = df[pd.to_numeric(df["practice"], errors="coerce").fillna(0) == 0]
    answer = pd.to_numeric(df[response], errors="coerce")
    slow = answer if direction == "rising" else 1.0 - answer
    if abandon_as_yes and "outcome" in df.columns:
        slow = slow.where(~(slow.isna() & (df["outcome"] == "abandoned")), 1.0)
    out = pd.DataFrame(
        {
            "participant": df[participant].astype(str) if participant in df.columns else "all",
            "x_ms": pd.to_numeric(df[stimulus], errors="coerce"),
            "n_steps": pd.to_numeric(df[steps], errors="coerce"),
            "slow": slow,
        }
    ).dropna()
    if out.empty:
        raise ChainDataError(f"no trial has {stimulus}, {steps} and an answer to {response}")
    if (out["x_ms"] <= 0).any() or (out["n_steps"] < 1).any():
        raise ChainDataError(f"{stimulus} must be > 0 ms and {steps} at least 1")
    if not out["slow"].isin([0, 1]).all():
        raise ChainDataError(f"{response} must be 0/1 (yes = 1)")
    return out


# -- the multiplication model -------------------------------------------------------------------
def _irls(design: np.ndarray, k: np.ndarray, n: np.ndarray, iters: int = 50) -> np.ndarray:
    """Binomial logistic MLE on aggregated cells (a tiny ridge keeps separation finite)."""
    beta = np.zeros(design.shape[1])
    ridge = 1e-6 * np.eye(design.shape[1])
    for _ in range(iters):
        eta = np.clip(design @ beta, -30, 30)
        p = 1.0 / (1.0 + np.exp(-eta))
        w = n * p * (1.0 - p)
        grad = design.T @ (k - n * p) - ridge @ beta
        info = design.T @ (design * w[:, None]) + ridge
        step = np.linalg.solve(info, grad)
        beta = beta + step
        if np.max(np.abs(step)) < 1e-10:
            break
    return beta


def _loglik(design: np.ndarray, beta: np.ndarray, k: np.ndarray, n: np.ndarray) -> float:
    eta = np.clip(design @ beta, -30, 30)
    log_p = -np.logaddexp(0.0, -eta)
    log_q = -np.logaddexp(0.0, eta)
    return float(np.sum(k * log_p + (n - k) * log_q))


def _designs(u: np.ndarray, v: np.ndarray) -> dict[str, np.ndarray]:
    one = np.ones_like(u)
    return {
        MODELS[0]: np.column_stack([one, u, v]),
        MODELS[1]: np.column_stack([one, u + v]),
        MODELS[2]: np.column_stack([one, u]),
    }


@dataclass
class MultiplicationFit:
    """The fitted exponent k in threshold ∝ steps^-k, its CI and the model comparison."""

    k_: float
    k_ci_: tuple[float, float]
    threshold_1_ms_: float
    models_: pd.DataFrame
    """model, k, threshold_1_ms (at one step), loglik, n_params, aic, delta_aic, lr_p (the
    likelihood-ratio test of a special case against the free model)."""
    boot_k_: np.ndarray
    n_trials_: int
    n_participants_: int
    alpha: float = 0.05

    def threshold_ms(self, n_steps: ArrayLike, model: str = MODELS[0]) -> np.ndarray:
        """The threshold on per-call TTFT at each chain length under one of `MODELS`."""
        row = self.models_.set_index("model").loc[model]
        return cast(
            np.ndarray, row["threshold_1_ms"] * np.asarray(n_steps, dtype=float) ** (-row["k"])
        )

    @property
    def preferred_(self) -> str:
        """The model with the lowest AIC."""
        return str(self.models_.loc[self.models_["aic"].idxmin(), "model"])

    def verdict(self) -> str:
        """'multiplies', 'per-call', 'in between' or 'inconclusive' from the CI of k."""
        lo, hi = self.k_ci_
        has_one, has_zero = lo <= 1.0 <= hi, lo <= 0.0 <= hi
        if has_one and not has_zero:
            return "multiplies"
        if has_zero and not has_one:
            return "per-call"
        if has_zero and has_one:
            return "inconclusive"
        return (
            "in between"
            if 0.0 < self.k_ < 1.0
            else ("more than multiplies" if self.k_ > 1 else "falls with length")
        )


def fit_multiplication(
    judgements: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05
) -> MultiplicationFit:
    """Fit the free-k, end-to-end and per-call models to `chain_judgements` rows."""
    cells = (
        judgements.groupby(["participant", "x_ms", "n_steps"])["slow"]
        .agg(["sum", "count"])
        .reset_index()
    )
    keys = cells[["x_ms", "n_steps"]].drop_duplicates().sort_values(["n_steps", "x_ms"])
    keys = keys.reset_index(drop=True)
    u, v = np.log(keys["x_ms"].to_numpy()), np.log(keys["n_steps"].to_numpy())
    people = sorted(cells["participant"].unique())
    cell_index = {
        (x, n): i for i, (x, n) in enumerate(zip(keys["x_ms"], keys["n_steps"], strict=True))
    }
    k_pc = np.zeros((len(people), len(keys)))
    n_pc = np.zeros((len(people), len(keys)))
    pos = {p: i for i, p in enumerate(people)}
    for row in cells.itertuples(index=False):
        c = cell_index[(row.x_ms, row.n_steps)]
        k_pc[pos[row.participant], c] += row.sum
        n_pc[pos[row.participant], c] += row.count
    k_c, n_c = k_pc.sum(0), n_pc.sum(0)
    designs = _designs(u, v)
    rows = []
    betas = {}
    for name, design in designs.items():
        beta = _irls(design, k_c, n_c)
        betas[name] = beta
        ll = _loglik(design, beta, k_c, n_c)
        k_value = beta[2] / beta[1] if name == MODELS[0] else (1.0 if name == MODELS[1] else 0.0)
        rows.append(
            {
                "model": name,
                "k": k_value,
                "threshold_1_ms": float(np.exp(-beta[0] / beta[1])),
                "loglik": ll,
                "n_params": design.shape[1],
            }
        )
    models = pd.DataFrame(rows)
    models["aic"] = 2 * models["n_params"] - 2 * models["loglik"]
    models["delta_aic"] = models["aic"] - models["aic"].min()
    free_ll = models.loc[0, "loglik"]
    lr = 2.0 * (free_ll - models["loglik"])
    models["lr_p"] = np.where(models.index == 0, np.nan, stats.chi2.sf(lr.clip(lower=0), df=1))
    beta = betas[MODELS[0]]
    k_hat = float(beta[2] / beta[1])
    t1_ms = float(np.exp(-beta[0] / beta[1]))
    rng = np.random.default_rng(seed)
    boot = np.empty(n_boot)
    for b in range(n_boot):
        w = np.bincount(rng.integers(0, len(people), len(people)), minlength=len(people))
        kb, nb = w @ k_pc, w @ n_pc
        keep = nb > 0
        bb = _irls(designs[MODELS[0]][keep], kb[keep], nb[keep])
        boot[b] = bb[2] / bb[1] if bb[1] != 0 else np.nan
    boot = boot[np.isfinite(boot)]
    lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2]) if boot.size else (np.nan, np.nan)
    return MultiplicationFit(
        k_=k_hat,
        k_ci_=(float(lo), float(hi)),
        threshold_1_ms_=t1_ms,
        models_=models,
        boot_k_=boot,
        n_trials_=int(n_c.sum()),
        n_participants_=len(people),
        alpha=alpha,
    )


# -- per-length thresholds and the descriptive table --------------------------------------------
def thresholds_by_length(
    judgements: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0, **fitter_kwargs: Any
) -> pd.DataFrame:
    """The 50% threshold on per-call TTFT at each chain length, with its bootstrap CI."""
    fitter_kwargs = {"direction": "rising", **fitter_kwargs}
    seeds = np.random.SeedSequence(seed).spawn(judgements["n_steps"].nunique())
    rows = []
    for i, (n_steps, group) in enumerate(judgements.groupby("n_steps", sort=True)):
        fit = PsychometricFitter(**fitter_kwargs).fit_trials(
            group["x_ms"].to_numpy(),
            group["slow"].to_numpy(),
            n_boot=n_boot,
            seed=int(seeds[i].generate_state(1)[0]),
        )
        lo, hi = fit.threshold_ci(0.5)
        rows.append(
            {
                "n_steps": int(n_steps),
                "threshold_ms": fit.threshold(0.5),
                "ci_low": lo,
                "ci_high": hi,
                "n_trials": len(group),
            }
        )
    return pd.DataFrame(rows)


def impatience_table(
    trials: pd.DataFrame,
    judgements: pd.DataFrame,
    *,
    stimulus: str = "call_ttft_ms",
    steps: str = "n_steps",
) -> pd.DataFrame:
    """Per (chain length, per-call TTFT): trials, share judged too slow, share abandoned and
    the median end-to-end time (when the table has ``outcome`` / ``e2e_ms``)."""
    out = (
        judgements.groupby(["n_steps", "x_ms"])["slow"]
        .agg(n_trials="count", p_too_slow="mean")
        .reset_index()
        .rename(columns={"n_steps": steps, "x_ms": stimulus})
    )
    df = trials
    if "practice" in df.columns:
        df = df[pd.to_numeric(df["practice"], errors="coerce").fillna(0) == 0]
    extra = {}
    if "outcome" in df.columns:
        extra["p_abandoned"] = (df["outcome"] == "abandoned").astype(float)
    if "e2e_ms" in df.columns:
        extra["median_e2e_ms"] = pd.to_numeric(df["e2e_ms"], errors="coerce")
    if extra:
        agg = pd.DataFrame(extra).assign(
            **{steps: pd.to_numeric(df[steps]), stimulus: pd.to_numeric(df[stimulus])}
        )
        spec = {name: ("mean" if name == "p_abandoned" else "median") for name in extra}
        out = out.merge(agg.groupby([steps, stimulus]).agg(spec).reset_index(), how="left")
    return out


class ChainSection(TypedDict):
    """What `chain_section` returns (its docstring says what each holds)."""

    title: str
    table: pd.DataFrame
    cells: pd.DataFrame
    models: pd.DataFrame
    k: float
    k_ci: tuple[float, float]
    verdict: str
    fit: MultiplicationFit
    figure: Figure
    answer: str


# -- the figure, the answer, the report section -------------------------------------------------
def plot_chain_thresholds(
    table: pd.DataFrame, fit: MultiplicationFit, ax: Axes | None = None
) -> Figure:
    """Thresholds on per-call TTFT by chain length (log-log) with the three models."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    else:
        root = ax.get_figure(root=True)
        assert root is not None, "an Axes to draw on belongs to a figure"
        fig = root
    n = table["n_steps"].to_numpy(dtype=float)
    est = table["threshold_ms"].to_numpy()
    err = np.vstack([est - table["ci_low"].to_numpy(), table["ci_high"].to_numpy() - est])
    ax.errorbar(
        n,
        est,
        yerr=np.clip(err, 0, None),
        fmt="o",
        color="black",
        capsize=3,
        label="threshold per length (95% CI)",
    )
    grid = np.geomspace(max(n.min() * 0.8, 0.8), n.max() * 1.25, 50)
    ax.plot(
        grid,
        fit.threshold_ms(grid),
        color="tab:blue",
        label=f"fitted: k = {fit.k_:.2f} [{fit.k_ci_[0]:.2f}, {fit.k_ci_[1]:.2f}]",
    )
    ax.plot(
        grid,
        fit.threshold_ms(grid, MODELS[1]),
        "--",
        color="tab:red",
        label="k = 1 (latency multiplies)",
    )
    ax.plot(
        grid,
        fit.threshold_ms(grid, MODELS[2]),
        ":",
        color="tab:green",
        label="k = 0 (per-call only)",
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xticks(n)
    ax.set_xticklabels([f"{int(v)}" for v in n])
    ax.xaxis.set_minor_formatter(NullFormatter())
    # labels at 1-2-5 steps only, as the report's other latency axes: every minor tick's
    # label ran into its neighbours (900 over 1,000)
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:,.0f}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("model calls in the chain (n_steps)")
    ax.set_ylabel("50% threshold on per-call TTFT (ms)")
    ax.set_title("Does latency multiply along a chain?")
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig


def plain_answer(fit: MultiplicationFit, table: pd.DataFrame) -> str:
    """One paragraph a non-statistician can read."""
    lo, hi = fit.k_ci_
    level = round(100 * (1 - fit.alpha))
    verdict = fit.verdict()
    lead = {
        "multiplies": "Yes, latency multiplies:",
        "per-call": "No, latency does not multiply:",
        "inconclusive": "The data cannot tell yet:",
        "in between": "Partly:",
        "more than multiplies": "More than multiplies:",
        "falls with length": "No:",
    }[verdict]
    body = {
        "multiplies": "the threshold on per-call TTFT falls roughly as 1/steps, so what "
        "participants judge is the waiting summed over the chain, not each call's wait.",
        "per-call": "the threshold on per-call TTFT stays about the same whatever the chain "
        "length, so participants judge each call's wait, not the total.",
        "inconclusive": "the interval for k includes both 0 (per-call only) and 1 (latency "
        "multiplies); more participants or a wider range of chain lengths are needed.",
        "in between": "the threshold on per-call TTFT falls with chain length, but more "
        "slowly than 1/steps: longer chains are judged more harshly, yet less than the summed "
        "waiting would predict.",
        "more than multiplies": "the threshold falls faster than 1/steps.",
        "falls with length": "longer chains are judged more leniently per call.",
    }[verdict]
    short, long_ = table.iloc[0], table.iloc[-1]
    return (
        f"{lead} {body} Fitting threshold ∝ steps^-k gives k = {fit.k_:.2f} "
        f"({level}% CI {lo:.2f} to {hi:.2f}; k = 1 means latency multiplies, k = 0 per-call "
        f"only). The 50% threshold on per-call TTFT is {short['threshold_ms']:.0f} ms at "
        f"{int(short['n_steps'])} step(s) and {long_['threshold_ms']:.0f} ms at "
        f"{int(long_['n_steps'])} steps. By AIC the best model is '{fit.preferred_}' "
        f"({fit.n_trials_} trials, {fit.n_participants_} participants)."
    )


def chain_section(
    trials_df: pd.DataFrame,
    *,
    stimulus: str = "call_ttft_ms",
    steps: str = "n_steps",
    response: str = "q_too_slow",
    participant: str = "participant",
    direction: str = "rising",
    abandon_as_yes: bool = False,
    n_boot: int = 1000,
    seed: int = 0,
) -> ChainSection:
    """Everything the report shows for a chain study.

    Returns a `ChainSection`: ``title``, ``table`` (threshold per chain length with CI and what each
    model predicts), ``cells`` (`impatience_table`), ``models`` (likelihood, AIC, LR test),
    ``k``, ``k_ci``, ``verdict``, ``fit`` (`MultiplicationFit`), ``figure`` (matplotlib) and
    ``answer`` (one plain-language paragraph).
    """
    judgements = chain_judgements(
        trials_df,
        stimulus=stimulus,
        steps=steps,
        response=response,
        participant=participant,
        direction=direction,
        abandon_as_yes=abandon_as_yes,
    )
    if judgements["n_steps"].nunique() < 2:
        raise ChainDataError(f"{steps} has one level only: the chain analysis needs two or more")
    fit = fit_multiplication(judgements, n_boot=n_boot, seed=seed)
    table = thresholds_by_length(judgements, n_boot=n_boot, seed=seed)
    table["fitted_ms"] = fit.threshold_ms(table["n_steps"])
    table["if_multiplies_ms"] = fit.threshold_ms(table["n_steps"], MODELS[1])
    table["if_per_call_ms"] = fit.threshold_ms(table["n_steps"], MODELS[2])
    return {
        "title": "Agent chains: does latency multiply?",
        "table": table,
        "cells": impatience_table(trials_df, judgements, stimulus=stimulus, steps=steps),
        "models": fit.models_,
        "k": fit.k_,
        "k_ci": fit.k_ci_,
        "verdict": fit.verdict(),
        "fit": fit,
        "figure": plot_chain_thresholds(table, fit),
        "answer": plain_answer(fit, table),
    }
