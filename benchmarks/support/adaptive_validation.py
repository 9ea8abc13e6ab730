"""Validation of the adaptive procedures by simulation, against constant stimuli.

For each procedure and trial budget, `validate` runs many simulated observers (each with
its own threshold, log-uniform over the middle of the range, and a width from a small set)
and counts how often the estimate lands within ±15% of that observer's truth at the point
the procedure targets: the 50% point for QUEST+, interleaved staircases and constant
stimuli (7 log-spaced levels, trials spread evenly, maximum-likelihood fit by
`analysis.psychometric`), and P(too slow) = 1 - 0.5**(1/n) for a 1-up/n-down staircase.
`trials_needed` is the smallest budget at which that share reaches 90%. Staircases run
without their reversal stop rule here (the estimate uses every reversal after the first two).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from psychometric_function import psi, threshold_ms_at_psi
from uxlab.study.adaptive import AdaptiveSpec, make_procedure, staircase_target

METHODS = ("quest", "staircase-2down", "staircase-3down", "interleaved", "constant")
LOW_MS, HIGH_MS = 100.0, 5000.0
GUESS = LAPSE = 0.02
TOLERANCE = 0.15


@dataclass(frozen=True)
class TrueObserver:
    threshold_ms: float
    width_log: float

    def p(self, x_ms: float) -> float:
        return float(psi(x_ms, math.log(self.threshold_ms), self.width_log, GUESS, LAPSE))

    def at(self, p_slow: float) -> float:
        """The latency where P(too slow) (with guess and lapse) equals `p_slow`."""
        return threshold_ms_at_psi(p_slow, self.threshold_ms, self.width_log, GUESS, LAPSE)


def draw_observers(n: int, seed: int) -> list[TrueObserver]:
    """Thresholds log-uniform in 300..2000 ms, widths 1.0, 1.6 or 2.2 (ln ms)."""
    rng = np.random.default_rng(seed)
    m = np.exp(rng.uniform(math.log(300), math.log(2000), n))
    w = rng.choice([1.0, 1.6, 2.2], n)
    return [TrueObserver(float(a), float(b)) for a, b in zip(m, w, strict=True)]


def run_method(
    method: str, obs: TrueObserver, budgets: list[int], seed: int
) -> dict[int, tuple[float, float]]:
    """{budget: (estimate ms, true value ms at the method's target)} for one observer run.

    An adaptive run is one sequence of max(budgets) trials, read at every budget.
    """
    rng = np.random.default_rng(seed)
    if method == "constant":
        return {b: (_constant(obs, b, rng), obs.threshold_ms) for b in budgets}
    proc_name, down = method, 2
    if method.startswith("staircase"):
        proc_name, down = "staircase", int(method.split("-")[1][0])
    # no reversal stop rule here: the table shows what each procedure reaches given trials
    spec = AdaptiveSpec(proc_name, LOW_MS, HIGH_MS, down=down, max_reversals=10**6)
    proc = make_procedure(spec, seed)
    out = {}
    for n in range(1, max(budgets) + 1):
        x = proc.next_level()
        proc.update(x, bool(rng.random() < obs.p(x)))
        if n in budgets:
            est = proc.estimate()
            truth = obs.threshold_ms if est.target == 0.5 else obs.at(staircase_target(down))
            out[n] = (est.threshold_ms, truth)
    return out


def _constant(obs: TrueObserver, budget: int, rng: np.random.Generator) -> float:
    from analysis.psychometric import PsychometricFitter

    levels = np.exp(np.linspace(math.log(LOW_MS), math.log(HIGH_MS), 7))
    n = np.full(7, budget // 7) + (np.arange(7) < budget % 7)
    k = rng.binomial(n, [obs.p(x) for x in levels])
    try:
        fit = PsychometricFitter(direction="rising").fit(levels, k, n, n_boot=0)
        est = fit.threshold(0.5)
    except ValueError:
        return math.nan
    return float(est) if np.isfinite(est) else math.nan


def shares_within(
    method: str, budgets: list[int], observers: list[TrueObserver], seed: int
) -> dict[int, float]:
    """{budget: share of observers whose estimate is within ±15% of their truth}."""
    hits = dict.fromkeys(budgets, 0)
    for i, obs in enumerate(observers):
        for b, (est, truth) in run_method(method, obs, budgets, seed * 100_003 + i).items():
            hits[b] += bool(np.isfinite(est) and abs(est / truth - 1) <= TOLERANCE)
    return {b: hits[b] / len(observers) for b in budgets}


def trials_needed(shares: dict[int, float], goal: float = 0.9) -> int | None:
    """The smallest budget whose share reaches `goal` (None if none does)."""
    return next((b for b in sorted(shares) if shares[b] >= goal), None)
