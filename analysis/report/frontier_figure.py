"""The speed-cost frontier: predicted satisfied share against cost per completed task.

One point per source with the 95% interval of its satisfied share (from the fits); the
sources on the Pareto front (`analysis.costs.pareto_front`) are filled and joined by the
front's staircase, the others hollow. Better is up and to the left.
"""

from __future__ import annotations

import math

import pandas as pd

from analysis.report.figure_png import agg_pyplot, png_bytes


def frontier_png(table: pd.DataFrame, currency: str, example: bool = False) -> bytes:
    """The figure as PNG bytes; `table` is `analysis.costs.cost_table` (rows with both a
    finite cost per completed task and a satisfied share are drawn)."""
    plt = agg_pyplot()
    from matplotlib.ticker import FuncFormatter, NullFormatter

    rows = table[
        table["cost_per_completed_task"].apply(_finite) & table["p_satisfied"].apply(_finite)
    ].sort_values("cost_per_completed_task")
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    costs = rows["cost_per_completed_task"].to_numpy(dtype=float)
    right_half = costs.min() + 0.6 * (costs.max() - costs.min()) if len(costs) > 1 else math.inf
    for i, r in enumerate(rows.itertuples()):
        low = r.p_satisfied - r.p_satisfied_ci_low
        high = r.p_satisfied_ci_high - r.p_satisfied
        front = bool(r.on_front)
        ax.errorbar(
            r.cost_per_completed_task,
            r.p_satisfied,
            yerr=[[max(low, 0.0)], [max(high, 0.0)]],
            fmt="o",
            color="#1f5fa6" if front else "#777777",
            mfc="#1f5fa6" if front else "white",
            ms=7,
            capsize=3,
            zorder=3,
        )
        on_right = r.cost_per_completed_task > right_half  # labels stay inside the axes
        below = i % 2 == 1 and r.p_satisfied >= 0.1  # neighbours' labels alternate
        ax.annotate(
            r.source,
            (r.cost_per_completed_task, r.p_satisfied),
            textcoords="offset points",
            xytext=(-7 if on_right else 7, -13 if below else 6),
            ha="right" if on_right else "left",
            fontsize=8,
        )
    front_rows = rows[rows["on_front"]]
    if len(front_rows) > 1:
        ax.step(
            front_rows["cost_per_completed_task"],
            front_rows["p_satisfied"],
            where="post",
            color="#1f5fa6",
            linestyle="--",
            linewidth=1,
            zorder=2,
        )  # the caption says what the staircase is: a legend box would hide points
    if len(costs) and costs.min() > 0 and costs.max() / costs.min() > 10:
        ax.set_xscale("log")
    if len(costs):
        span = costs.max() - costs.min() or costs.max() or 1.0
        if ax.get_xscale() == "linear":
            ax.set_xlim(max(0.0, costs.min() - 0.25 * span), costs.max() + 0.45 * span)
        else:
            ax.set_xlim(costs.min() / 1.6, costs.max() * 2.2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(-0.04, 1.06)
    what = "EXAMPLE prices" if example else "prices"
    ax.set_xlabel(f"cost per completed task ({currency}, {what}; failed attempts included)")
    ax.set_ylabel("predicted share satisfied\n(within the threshold, not abandoned)")
    ax.set_title("Speed and cost: better is up and to the left")
    ax.grid(True, alpha=0.3)
    return png_bytes(fig)


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)
