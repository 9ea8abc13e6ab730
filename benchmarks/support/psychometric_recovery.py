"""Parameter recovery of the psychometric fitter on simulated observers with a known truth.

One *cell* is a true observer (threshold, width, guess, lapse, sigmoid, trials per level)
tested at 7 log-spaced levels; `recovery_cell` simulates `n_sims` datasets from it, fits
each with bootstrap intervals and reports bias, RMSE and CI coverage of the true 50%
threshold. Used by the validation test (a small grid) and `benchmarks/psychometric_recovery.py`
(the full grid).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np

from analysis.psychometric import PsychometricFitter
from benchmarks.support.simulate_observers import (
    log_spaced_levels,
    simulate_counts,
    true_threshold_ms,
)


@dataclass(frozen=True)
class Cell:
    """A true observer and how it is tested."""

    threshold_ms: float
    width_log: float
    lapse: float = 0.0
    guess: float = 0.0
    n_per_level: int = 20
    sigmoid: str = "logistic"
    direction: str = "rising"
    eta: float = 0.0
    n_levels: int = 7
    span: float = 16.0  # max level / min level; levels centred on the threshold
    centre_offset: float = 1.0  # levels centred on threshold_ms * centre_offset


@dataclass
class CellResult:
    """Recovery figures of one cell (thresholds in ms; bias and RMSE of the 50% point)."""

    cell: Cell
    n_sims: int
    bias_ms: float
    rel_bias: float
    rmse_ms: float
    coverage: float
    mean_ci_width_ms: float
    seconds_per_dataset: float
    estimates_ms: np.ndarray
    ci_low_ms: np.ndarray
    ci_high_ms: np.ndarray

    def row(self) -> dict:
        """A flat dict for printing."""
        out = asdict(self.cell)
        out.update(
            n_sims=self.n_sims,
            bias_ms=self.bias_ms,
            rel_bias=self.rel_bias,
            rmse_ms=self.rmse_ms,
            coverage=self.coverage,
            mean_ci_width_ms=self.mean_ci_width_ms,
            s_per_dataset=self.seconds_per_dataset,
        )
        return out


def cell_levels(cell: Cell) -> np.ndarray:
    """The stimulus levels (ms) a cell is tested at."""
    return log_spaced_levels(cell.threshold_ms * cell.centre_offset, cell.n_levels, cell.span)


def simulate_cell(
    cell: Cell, seed: int | np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One dataset of the cell's true observer at its levels: (levels_ms, n_yes, n_total)."""
    return simulate_counts(
        cell_levels(cell),
        cell.n_per_level,
        cell.threshold_ms,
        cell.width_log,
        guess=cell.guess,
        lapse=cell.lapse,
        eta=cell.eta,
        sigmoid=cell.sigmoid,
        direction=cell.direction,
        seed=seed,
    )


def recovery_cell(
    cell: Cell,
    n_sims: int,
    *,
    seed: int = 0,
    n_boot: int = 1000,
    ci_method: str = "percentile",
    sensitivity: bool = True,
    fitter_kwargs: dict | None = None,
) -> CellResult:
    """Simulate n_sims datasets of `cell`, fit each, and score the 50% threshold."""
    kwargs = {"sigmoid": cell.sigmoid, "direction": cell.direction}
    kwargs.update(fitter_kwargs or {})
    truth_ms = true_threshold_ms(0.5, cell.threshold_ms, cell.width_log, cell.sigmoid)
    seeds = np.random.SeedSequence(seed).spawn(n_sims)
    est, low, high = np.empty(n_sims), np.empty(n_sims), np.empty(n_sims)
    t0 = time.perf_counter()
    for i, ss in enumerate(seeds):
        sim_seed, boot_seed = ss.generate_state(2)
        x, k, n = simulate_cell(cell, int(sim_seed))
        fitter = PsychometricFitter(**kwargs).fit(
            x,
            k,
            n,
            n_boot=n_boot,
            seed=int(boot_seed),
            ci_method=ci_method,
            sensitivity=sensitivity,
        )
        est[i] = fitter.threshold(0.5)
        low[i], high[i] = fitter.threshold_ci(0.5)
    elapsed = time.perf_counter() - t0
    err = est - truth_ms
    return CellResult(
        cell=cell,
        n_sims=n_sims,
        bias_ms=float(np.mean(err)),
        rel_bias=float(np.mean(err) / truth_ms),
        rmse_ms=float(np.sqrt(np.mean(err**2))),
        coverage=float(np.mean((low <= truth_ms) & (truth_ms <= high))),
        mean_ci_width_ms=float(np.mean(high - low)),
        seconds_per_dataset=elapsed / n_sims,
        estimates_ms=est,
        ci_low_ms=low,
        ci_high_ms=high,
    )
