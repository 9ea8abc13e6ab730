"""The validation grid's per-person cells and runner (see benchmarks/validation_grid.py): fits
of simulated observers in the hard cases (steep or shallow, threshold on or between tested
levels, few or many trials), scored at the 25 / 50 / 75% points for coverage, bias and
degenerate intervals."""

from __future__ import annotations

import itertools
import time

import numpy as np

from analysis.psychometric import PsychometricFitter
from benchmarks.support.psychometric_recovery import Cell, simulate_cell
from benchmarks.support.simulate_observers import true_threshold_ms

N_LEVELS, SPAN = 7, 16.0
BETWEEN = SPAN ** (1.0 / (2 * (N_LEVELS - 1)))  # half a level step: threshold between levels
WIDTHS_LOG = (0.25, 0.5, 1.0, 2.0)
TRIALS_PER_LEVEL = (5, 10, 20, 40)
PLACES = {"on a level": 1.0, "between levels": BETWEEN}
LEVELS = (0.25, 0.5, 0.75)


def grid_cells(widths=WIDTHS_LOG, trials=TRIALS_PER_LEVEL, places=PLACES) -> list[tuple]:
    """(place, Cell) for every combination."""
    out = []
    for (place, offset), width, n in itertools.product(places.items(), widths, trials):
        cell = Cell(
            threshold_ms=800.0,
            width_log=width,
            guess=0.02,
            lapse=0.02,
            n_per_level=n,
            n_levels=N_LEVELS,
            span=SPAN,
            centre_offset=offset,
        )
        out.append((place, cell))
    return out


def score_cell(
    cell: Cell, n_sims: int, n_boot: int, seed: int, *, sensitivity: bool = True
) -> dict[float, dict]:
    """Per level (25 / 50 / 75%): coverage, relative bias, median CI high / low, share of
    intervals under 1% wide, seconds per dataset; every fit as the report's."""
    truth = {
        lv: true_threshold_ms(lv, cell.threshold_ms, cell.width_log, cell.sigmoid) for lv in LEVELS
    }
    est, low, high = (np.empty((n_sims, len(LEVELS))) for _ in range(3))
    t0 = time.perf_counter()
    for i, ss in enumerate(np.random.SeedSequence(seed).spawn(n_sims)):
        sim_seed, boot_seed = ss.generate_state(2)
        x, k, n = simulate_cell(cell, int(sim_seed))
        fit = PsychometricFitter(levels=LEVELS).fit(
            x, k, n, n_boot=n_boot, seed=int(boot_seed), sensitivity=sensitivity
        )
        t = fit.thresholds_.set_index("level")
        est[i] = [t.loc[lv, "estimate"] for lv in LEVELS]
        low[i] = [t.loc[lv, "ci_low"] for lv in LEVELS]
        high[i] = [t.loc[lv, "ci_high"] for lv in LEVELS]
    seconds = (time.perf_counter() - t0) / n_sims
    out = {}
    for j, lv in enumerate(LEVELS):
        out[lv] = {
            "coverage": float(np.mean((low[:, j] <= truth[lv]) & (truth[lv] <= high[:, j]))),
            "rel_bias": float(np.mean(est[:, j]) / truth[lv] - 1.0),
            "ratio": float(np.median(high[:, j] / np.maximum(low[:, j], 1e-9))),
            "degenerate": float(np.mean(high[:, j] / low[:, j] < 1.01)),
            "s": seconds,
        }
    return out


def run_grid(cells, n_sims: int, n_boot: int, seed: int, *, sensitivity: bool = True) -> list[dict]:
    """One row per cell and level: place, width, trials per level, level, coverage, bias,
    width ratio, share degenerate, s per dataset."""
    rows = []
    for i, (place, cell) in enumerate(cells):
        scored = score_cell(cell, n_sims, n_boot, seed + i, sensitivity=sensitivity)
        for lv, r in scored.items():
            rows.append(
                {"place": place, "width": cell.width_log, "n": cell.n_per_level, "level": lv, **r}
            )
    return rows
