"""The plan's contour figure: CI width and power over participants x repeats (matplotlib,
imported only here and only when a figure is written)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def _surface(table: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    wide = table.pivot(index="repeats", columns="participants", values=column)
    return wide.columns.to_numpy(float), wide.index.to_numpy(float), wide.to_numpy(float)


def write_figure(
    table: pd.DataFrame,
    path: Path,
    *,
    title: str,
    reference_label: str,
    best: pd.Series | None = None,
    figure_50: str = "the 50% threshold",
) -> Path:
    """Two panels: expected 95% CI width of the 50% figure (`figure_50`: the threshold, or
    on an adaptive design the median of the sessions' own estimates) and power, each with
    contour lines over participants (x) and repeats (y), log axes; the recommended cell
    is starred."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), constrained_layout=True)
    panels = (
        ("ci_width_50_ms", f"expected 95% CI width of {figure_50} (ms)", None),
        ("power", f"power: CI excludes {reference_label}", [0.5, 0.8, 0.9, 0.95]),
    )
    for ax, (column, label, lines) in zip(axes, panels, strict=True):
        x, y, z = _surface(table, column)
        if x.size >= 2 and y.size >= 2 and np.isfinite(z).sum() >= 4:
            filled = ax.contourf(
                x, y, z, levels=12, cmap="viridis_r" if lines is None else "viridis"
            )
            fig.colorbar(filled, ax=ax)
            drawn = ax.contour(x, y, z, levels=lines or 6, colors="white", linewidths=0.8)
            ax.clabel(drawn, fmt="%.2f" if lines else "%.0f", fontsize=8)
        xx, yy = np.meshgrid(x, y)
        ax.plot(xx.ravel(), yy.ravel(), ".", color="black", ms=3, label="simulated cell")
        if best is not None:
            star = {"color": "red", "ms": 14, "clip_on": False}
            ax.plot([best["participants"]], [best["repeats"]], "*", **star,
                    label="cheapest cell meeting the target")  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(x, [f"{v:g}" for v in x])
        ax.set_yticks(y, [f"{v:g}" for v in y])
        ax.minorticks_off()
        ax.set_xlabel("participants")
        ax.set_ylabel("repeats (per level and block)")
        ax.set_title(label, fontsize=10)
    axes[0].legend(fontsize=7, loc="upper right")
    fig.suptitle(title, fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
