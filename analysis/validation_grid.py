"""The validation grid's cells and runner (see benchmarks/validation_grid.py): per-person fits
of simulated observers in the hard cases (steep or shallow, threshold on or between tested
levels, few or many trials), scored for coverage, bias and degenerate intervals."""

from __future__ import annotations

import itertools

import numpy as np

from analysis.psychometric_recovery import Cell, recovery_cell

N_LEVELS, SPAN = 7, 16.0
BETWEEN = SPAN ** (1.0 / (2 * (N_LEVELS - 1)))  # half a level step: threshold between levels
WIDTHS_LOG = (0.25, 0.5, 1.0, 2.0)
TRIALS_PER_LEVEL = (5, 10, 20, 40)
PLACES = {"on a level": 1.0, "between levels": BETWEEN}


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


def run_grid(cells, n_sims: int, n_boot: int, seed: int) -> list[dict]:
    """One row per cell: place, width, trials per level, coverage, bias, width ratio, s."""
    rows = []
    for i, (place, cell) in enumerate(cells):
        res = recovery_cell(cell, n_sims, seed=seed + i, n_boot=n_boot)
        ratio = np.median(res.ci_high_ms / np.maximum(res.ci_low_ms, 1e-9))
        rows.append(
            {
                "place": place,
                "width": cell.width_log,
                "n": cell.n_per_level,
                "coverage": res.coverage,
                "rel_bias": res.rel_bias,
                "ratio": float(ratio),
                "degenerate": float(np.mean(res.ci_high_ms / res.ci_low_ms < 1.01)),
                "s": res.seconds_per_dataset,
            }
        )
    return rows
