"""Validation: the fitter recovers known thresholds with honest 95% intervals.

~100 simulated datasets from a spread of true observers (thresholds 200-2000 ms, several
widths, lapse 0-5%, 10-40 trials per level, rising and falling), each fitted with a
B = 1000 parametric bootstrap. The full grid is benchmarks/psychometric_recovery.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers.shared import built_once

from benchmarks.support.psychometric_recovery import Cell, recovery_cell

CELLS = [
    Cell(threshold_ms=200, width_log=1.0, lapse=0.0, n_per_level=20),
    Cell(threshold_ms=800, width_log=0.7, lapse=0.02, guess=0.02, n_per_level=20),
    Cell(threshold_ms=2000, width_log=1.5, lapse=0.05, n_per_level=40),
    Cell(threshold_ms=500, width_log=1.0, guess=0.02, n_per_level=10),
    Cell(threshold_ms=1200, width_log=1.0, lapse=0.02, n_per_level=20, direction="falling"),
]
SIMS_PER_CELL = 20


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return built_once(
        tmp_path_factory,
        "psychometric-recovery",
        lambda _: [
            recovery_cell(cell, SIMS_PER_CELL, seed=i, n_boot=1000) for i, cell in enumerate(CELLS)
        ],
    )


@pytest.mark.slow
def test_95_percent_intervals_cover_the_true_threshold_about_95_percent_of_the_time(results):
    assert sum(r.n_sims for r in results) == len(CELLS) * SIMS_PER_CELL == 100
    hits = sum(r.coverage * r.n_sims for r in results)
    coverage = hits / (len(CELLS) * SIMS_PER_CELL)
    assert 0.90 <= coverage <= 0.99, f"coverage {coverage:.3f}"
    # no single cell is badly off either (20 datasets: 15/20 would be a real problem)
    assert min(r.coverage for r in results) >= 0.8


@pytest.mark.slow
def test_threshold_estimates_are_nearly_unbiased(results):
    for r in results:
        # bias well inside the sampling error of 20 datasets, and under 5% of the truth
        assert abs(r.rel_bias) < 0.05, (r.cell, r.rel_bias)
        assert r.rmse_ms / r.cell.threshold_ms < 0.2, (r.cell, r.rmse_ms)
    pooled_rel = np.mean([r.rel_bias for r in results])
    assert abs(pooled_rel) < 0.02


@pytest.mark.slow
def test_intervals_shrink_with_more_trials():
    few = recovery_cell(Cell(800, 1.0, n_per_level=10), 8, seed=50, n_boot=300)
    many = recovery_cell(Cell(800, 1.0, n_per_level=40), 8, seed=50, n_boot=300)
    assert many.mean_ci_width_ms < 0.75 * few.mean_ci_width_ms
