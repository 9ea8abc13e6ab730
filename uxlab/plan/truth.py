"""The truth a plan simulates, estimated from a pilot.

A truth given on the command line (`--truth threshold=800,width=1.6,...`) is parsed by
`uxlab.simulate.parse_truth`, the same parser as `uxlab simulate --truth`.

`truth_from_pilot(table, stimulus, judgement)` estimates the population from a pilot's
trial table with `analysis.psychometric`: one fit per participant (threshold m_i and the bootstrap
SE of m_i) and one pooled fit of everyone's trials. Threshold: exp(mean m_i); between-
participant SD: sqrt(var(m_i) - mean SE(m_i)^2) (the spread of the estimates less their
own noise, at least 0); guess and lapse: the pooled fit's; width: the pooled curve's width
less the spread between people (a logistic's SD is 0.413 w, and the pooled curve's
variance is about that squared plus the between-participant variance), but never below
the mean of the per-participant widths (which small samples make too steep; using them
alone made a 1.6 ln ms truth come out near 0.7). Their uncertainty is a bootstrap over
participants: each simulated study of the plan draws its own truth from these resampled
values, so a power figure includes what the pilot does not know. Patience and the other
observer values stay at their defaults.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from psychometric_function import LOGISTIC_SD_PER_WIDTH
from uxlab.plan.design import PlanError
from uxlab.simulate.observers import PopulationTruth

if TYPE_CHECKING:
    import pandas as pd

MIN_PILOT_PARTICIPANTS = 3


@dataclass(frozen=True)
class PilotTruth:
    """The pilot's estimate (`point`), its bootstrap draws and what it rests on."""

    point: PopulationTruth
    draws: list[PopulationTruth]
    n_participants: int
    n_trials: int
    source: str

    def describe(self) -> str:
        """One paragraph: the values with their 95% intervals over the draws."""

        def ci(values: list[float], fmt: str) -> str:
            lo, hi = np.quantile(values, [0.025, 0.975])
            return f"[{fmt.format(lo)}, {fmt.format(hi)}]"

        d, p = self.draws, self.point
        return (
            f"truth from pilot {self.source} ({self.n_participants} participants, "
            f"{self.n_trials} answered trials): threshold {p.threshold_ms:.0f} ms "
            f"{ci([t.threshold_ms for t in d], '{:.0f}')}, width {p.width_log:.2f} ln ms "
            f"{ci([t.width_log for t in d], '{:.2f}')}, between-participant SD "
            f"{p.between_sd_log:.2f} ln ms {ci([t.between_sd_log for t in d], '{:.2f}')}, "
            f"lapse {p.lapse:.3f} {ci([t.lapse for t in d], '{:.3f}')}, guess {p.guess:.3f} "
            f"(95% intervals from resampling the pilot's participants; each simulated study "
            f"draws one)"
        )


def truth_from_pilot(
    trials: pd.DataFrame,
    stimulus: str,
    judgement: str,
    *,
    n_draws: int = 200,
    seed: int = 0,
    source: str = "",
    person_boot: int = 200,
) -> PilotTruth:
    """Population values and their uncertainty from a pilot (see the module docstring).

    `trials` is the pilot's trial table (a DataFrame after the report's exclusions);
    `judgement` its yes/no column (q_<id>, "yes"/"no" or 1/0); `person_boot` the bootstrap
    datasets of each person's fit (the SE of their threshold, taken out of the spread).
    """
    from analysis.psychometric import PsychometricFitter
    from analysis.trial_table import binary_column

    for col in (stimulus, judgement, "participant"):
        if col not in trials.columns:
            raise PlanError(f"pilot {source}: no column {col!r} in its trial table")
    y = binary_column(trials, judgement, source)
    df = trials.assign(_y=y).dropna(subset=["_y", stimulus])
    levels = np.sort(df[stimulus].astype(float).unique())
    falls = yes_falls(df, stimulus)
    rows, counts = [], []
    for _pid, sub in df.groupby("participant"):
        if sub[stimulus].nunique() < 3:
            continue
        try:
            fit = PsychometricFitter(direction="falling" if falls else "rising")
            fit.fit_trials(
                sub[stimulus].to_numpy(float), sub["_y"].to_numpy(float), n_boot=person_boot
            )
        except ValueError:
            continue
        boot_m = np.log(fit.threshold_samples(0.5))
        p = fit.params_
        se = float(np.nanstd(boot_m)) if np.isfinite(boot_m).any() else 0.0
        rows.append((p["m"], math.log(p["w"]), se))
        at = np.searchsorted(levels, sub[stimulus].to_numpy(float))
        counts.append(
            (
                np.bincount(at, weights=sub["_y"].to_numpy(float), minlength=levels.size),
                np.bincount(at, minlength=levels.size).astype(float),
            )
        )
    if len(rows) < MIN_PILOT_PARTICIPANTS:
        raise PlanError(
            f"pilot {source}: {len(rows)} participant(s) could be fitted (3 or more levels of "
            f"{stimulus} each); the between-participant spread needs at least "
            f"{MIN_PILOT_PARTICIPANTS} (until then plan with an assumed spread: uxlab plan "
            f"STUDY --truth between_sd=...)"
        )
    est = np.array(rows)
    k_yes = np.array([c[0] for c in counts])
    n_all = np.array([c[1] for c in counts])
    direction = "falling" if falls else "rising"

    def population(pick: np.ndarray) -> PopulationTruth:
        return _population(est[pick], levels, k_yes[pick].sum(0), n_all[pick].sum(0), direction)

    point = population(np.arange(len(est)))
    rng = np.random.default_rng(seed)
    draws = [population(rng.integers(0, len(est), len(est))) for _ in range(n_draws)]
    return PilotTruth(point, draws, len(rows), len(df), source)


def yes_falls(df: pd.DataFrame, stimulus: str) -> bool:
    """Whether "yes" gets rarer with the stimulus (an "acceptable?" question)."""
    lo = df[df[stimulus] <= df[stimulus].median()]["_y"].mean()
    hi = df[df[stimulus] > df[stimulus].median()]["_y"].mean()
    return bool(hi < lo)


def _population(
    est: np.ndarray, levels: np.ndarray, k_yes: np.ndarray, n: np.ndarray, direction: str
) -> PopulationTruth:
    """Population values from per-participant (m, ln w, SE of m) rows and the pooled counts
    of the same participants (see the module docstring)."""
    from analysis.psychometric import PsychometricFitter

    m, lnw, se = est.T
    spread = float(np.var(m, ddof=1)) - float(np.mean(se**2)) if len(m) > 1 else 0.0
    between = math.sqrt(max(spread, 0.0))
    keep = n > 0
    pooled = PsychometricFitter(direction=direction).fit(
        levels[keep], k_yes[keep], n[keep], n_boot=0
    )
    w_pooled = float(pooled.params_["w"])
    own = (w_pooled**2 - (between / LOGISTIC_SD_PER_WIDTH) ** 2) if w_pooled > 0 else 0.0
    width = max(math.sqrt(max(own, 0.0)), float(math.exp(np.mean(lnw))))
    return dataclasses.replace(
        PopulationTruth(),
        threshold_ms=float(math.exp(np.mean(m))),
        width_log=width,
        guess=float(pooled.params_["guess"]),
        lapse=float(pooled.params_["lapse"]),
        between_sd_log=between,
    )
