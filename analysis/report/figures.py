"""The report's figures, drawn with matplotlib (Agg) and returned as PNG bytes.

Every axis names its quantity and unit; latency axes are logarithmic because waiting-time
judgements are roughly logarithmic (Weber-Fechner). An interval end these data do not bound
(`interval_bounds.unbounded_ends`: past 10x the highest tested level, under a tenth of the
lowest, or infinite) is not drawn out to its computed number, which would squash the plot
into a corner: its bar runs to the axis edge and ends in a triangle there (`OPEN_END_NOTE`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from analysis.reference import unbounded_sides
from analysis.report.blocks import ci_ends
from analysis.report.figure_png import agg_pyplot, inked_png_bytes, png_bytes
from analysis.report.interval_bounds import UNBOUNDED_FACTOR, fitted_range_ms, unbounded_ends

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from analysis.psychometric import PsychometricFitter
    from analysis.report.data import ConditionFit, PsychometricPart, RatingPart, SurvivalPart

OPEN_END_NOTE = (
    "A triangle at the axis edge marks an interval end these data do not bound (its computed "
    f"end lies past {UNBOUNDED_FACTOR:g}x the highest tested level, or wait observed, or under "
    "a tenth of the lowest, or is infinite): the bar runs to the edge, not to that number "
    "(thresholds.csv keeps it)."
)
"""The sentence a caption adds when its figure draws such an end (`open_end_caption`)."""

_EDGE_PAD = 1.4
"""How far past the bounded content (tested levels, estimates, bounded ends) the log axis
runs, as a factor: room for the triangles."""


def _ms_axis(ax: Axes, label: str, axis: str = "x", minor: bool = True) -> None:
    """A log axis in ms with plain labels at 1-2-5 steps and no minor labels (and no minor
    ticks at all with `minor=False`, which keeps small multiples quick to draw)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator

    target = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    target.set_minor_formatter(NullFormatter())
    if not minor:
        target.set_minor_locator(NullLocator())
    (ax.set_xlabel if axis == "x" else ax.set_ylabel)(label)


def clopper_pearson(
    k: ArrayLike, n: ArrayLike, alpha: float = 0.05
) -> tuple[np.ndarray, np.ndarray]:
    """Exact binomial (Clopper-Pearson) interval of k successes in n trials."""
    from scipy import stats

    k_, n_ = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    lo = np.where(k_ > 0, stats.beta.ppf(alpha / 2, k_, n_ - k_ + 1), 0.0)
    hi = np.where(k_ < n_, stats.beta.ppf(1 - alpha / 2, k_ + 1, n_ - k_), 1.0)
    return lo, hi


def open_sides(low: float, high: float, tested: tuple[float, float] | None) -> tuple[bool, bool]:
    """(lower end not bounded, upper end not bounded) by `interval_bounds.unbounded_ends`
    given the `tested` levels; an infinite upper end is never bounded."""
    return unbounded_sides(high, unbounded_ends(low, high, *tested) if tested is not None else "")


def open_end_caption(*intervals: tuple[float, float, tuple[float, float] | None]) -> str:
    """` ` + `OPEN_END_NOTE` when any (low, high, tested) interval has an end these data do
    not bound (the figure draws it to the axis edge), else ""."""
    return f" {OPEN_END_NOTE}" if any(any(open_sides(*i)) for i in intervals) else ""


class _Bar(NamedTuple):
    """An interval as drawn: ends clipped to the axis edges where not bounded."""

    low: float
    high: float
    open_low: bool
    open_high: bool


def _axis_edges(values: Iterable[float]) -> tuple[float, float]:
    """Log-axis limits around the finite positive `values`, padded by `_EDGE_PAD`."""
    v = np.asarray([x for x in values if np.isfinite(x) and x > 0], dtype=float)
    if v.size == 0:
        return 1.0, 10.0
    return float(v.min()) / _EDGE_PAD, float(v.max()) * _EDGE_PAD


def _bars(
    intervals: list[tuple[float, float, float]],
    sides: list[tuple[bool, bool]],
    also: Iterable[float] = (),
) -> tuple[list[_Bar], tuple[float, float]]:
    """(drawn bars, axis edges) of (estimate, low, high) intervals whose (lower, upper) ends
    `sides` says are not bounded: the edges hold the estimates, the bounded ends and `also`
    (the tested levels, other content); an end not bounded is drawn to the edge."""
    content = list(also)
    for (est, lo, hi), (open_lo, open_hi) in zip(intervals, sides, strict=True):
        content += [est] + ([] if open_lo else [lo]) + ([] if open_hi else [hi])
    edges = _axis_edges(content)
    bars = [
        _Bar(edges[0] if o_lo else lo, edges[1] if o_hi else hi, o_lo, o_hi)
        for (_, lo, hi), (o_lo, o_hi) in zip(intervals, sides, strict=True)
    ]
    return bars, edges


def _open_markers(
    ax: Axes,
    bars: list[_Bar],
    ys: Iterable[float],
    edges: tuple[float, float],
    color: str = "black",
    size: float = 5,
) -> bool:
    """Triangles at the axis edges where a bar's end is not bounded; True if any drawn."""
    drawn = False
    for bar, y in zip(bars, ys, strict=True):
        for is_open, x, marker in ((bar.open_low, edges[0], "<"), (bar.open_high, edges[1], ">")):
            if is_open:
                ax.plot([x], [y], marker=marker, color=color, ms=size, clip_on=False, zorder=5)
                drawn = True
    return drawn


def _open_legend_entry(ax: Axes) -> None:
    ax.plot([], [], ">", color="black", ms=5, label="no bound from these data (axis edge)")


def _xerr(estimates: ArrayLike, bars: list[_Bar]) -> list[np.ndarray]:
    est = np.asarray(estimates, dtype=float)
    lo = np.array([b.low for b in bars], dtype=float)
    hi = np.array([b.high for b in bars], dtype=float)
    return [np.clip(est - lo, 0, None), np.clip(hi - est, 0, None)]


class _Threshold(NamedTuple):
    key: str
    estimate: float
    ci_low: float
    ci_high: float


def _mid_threshold(fitter: PsychometricFitter | ConditionFit, key: str = "") -> _Threshold:
    """The 50% threshold with its CI from the fitted table (no refitting)."""
    row = fitter.thresholds_.set_index("level").loc[0.5]
    return _Threshold(key, float(row.estimate), float(row.ci_low), float(row.ci_high))


def pooled_drawn_threshold(part: PsychometricPart) -> tuple[_Threshold, str]:
    """The 50% point the pooled figure draws and what its interval is: the population
    curve's with the interval the report prints for it (also beside the median person's),
    else the pooled fit's own (one participant: theirs; below 4 people: trials resampled)."""
    table = part.other if part.estimand == "median-person" else part.population
    if table is not None and not part.one_person and 0.5 in set(table["level"]):
        row = table.set_index("level").loc[0.5]
        if np.isfinite(row.estimate) and np.isfinite(row.ci_low):
            mid = _Threshold("", float(row.estimate), float(row.ci_low), float(row.ci_high))
            return mid, "participant jackknife-t"
    own = "the participant's own" if part.one_person else "parametric bootstrap"
    return _mid_threshold(part.pooled), own


def psychometric_pooled(
    part: PsychometricPart, stimulus: str, tested: tuple[float, float] | None = None
) -> bytes:
    """Pooled data with binomial CIs, fitted curve and 50% threshold with CI (judged against
    the `tested` levels, by default those of the pooled fit); per condition too."""
    plt = agg_pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    part.pooled.plot(ax=ax, label="all trials (95% CI)", show_threshold=False)
    for label, fit in part.per_condition.items():
        grid = np.geomspace(*fit.x_range_ms, 200)
        ax.plot(grid, fit.predict(grid), lw=1, ls="--", label=f"fit, {label}")
    tested = tested or fitted_range_ms(part.pooled)
    (_, t, lo, hi), _ = pooled_drawn_threshold(part)
    bracket = pooled_bracket(part)
    if bracket is not None:  # separated answers: the gap, not a point
        ax.axvspan(*bracket, color="tab:orange", alpha=0.2, label=f"switch: {_bracket(bracket)}")
    elif np.isfinite(t) and part.procedure is None:  # adaptive: no point
        drawn = [*ax.get_xlim(), *tested]  # the curves and data drawn so far
        bars, edges = _bars([(t, lo, hi)], [open_sides(lo, hi, tested)], also=drawn)
        y = float(part.pooled.predict([t])[0])
        lower, upper = ci_ends(lo, hi, tested)
        ax.errorbar(
            [t],
            [y],
            xerr=_xerr([t], bars),
            fmt="s",
            color="black",
            capsize=4,
            label=f"50% threshold {t:,.0f} ms [{lower}, {upper}]",
        )
        if _open_markers(ax, bars, [y], edges):
            ax.set_xlim(*edges)
    _ms_axis(ax, f"{stimulus} (ms, log scale)")
    ax.set_ylabel(f"P(yes)   [yes = {part.yes_means}]")
    ax.set_title(f"Pooled psychometric function: {part.column} against {stimulus}")
    ax.legend(fontsize=7.5, loc="best")
    ax.grid(alpha=0.3, which="both")
    return png_bytes(fig)


def pooled_bracket(part: PsychometricPart) -> tuple[float, float] | None:
    """The tested levels bracketing the pooled switch when everyone's answers separate
    there (`PsychometricPart.withheld` a pooled `LatencySeparation`), else None."""
    sep = part.withheld
    if sep is None or isinstance(sep, str) or sep.people:
        return None
    low, high = sep.bracket_ms()
    return (low, high) if np.isfinite(low) and np.isfinite(high) else None


def pooled_mark(part: PsychometricPart) -> str | None:
    """What `threshold_distribution` draws for the pooled 50% point: `band` (its interval; an
    infinite upper end runs to the edge), `bracket` (the pooled switch's gap), `line` (a
    point without an interval) or None (withheld: nothing)."""
    pop = part.population.set_index("level").loc[0.5]
    if np.isfinite(pop.ci_low) and (np.isfinite(pop.ci_high) or np.isposinf(pop.ci_high)):
        return "band"
    if pooled_bracket(part) is not None:
        return "bracket"
    return "line" if np.isfinite(pop.estimate) else None


POOLED_MARK_CAPTIONS: dict[str | None, str] = {
    "band": "band: pooled estimate with its CI over participants (jackknife-t).",
    "bracket": "band: the gap where every answer switches (pooled answers separate).",
    "line": "line: the pooled estimate (no interval with these participants).",
    None: "no pooled estimate drawn: it is withheld (see the estimator above).",
}
"""The per-participant figure's caption for each `pooled_mark`."""


def pooled_mark_caption(part: PsychometricPart) -> str:
    """What `threshold_distribution` draws for the pooled 50% point, in the caption's words."""
    return POOLED_MARK_CAPTIONS[pooled_mark(part)]


def _gap_words(low: float, high: float) -> str:
    """A person's bracket in a few words: `650-1,000 ms`, `above 2,500 ms` (every answer
    acceptable: no upper end), `below 250 ms`."""
    if np.isfinite(low) and np.isfinite(high):
        return f"{low:,.0f}-{high:,.0f} ms"
    return f"above {low:,.0f} ms" if np.isfinite(low) else f"below {high:,.0f} ms"


def _bracket(bracket: tuple[float, float]) -> str:
    return f"between {bracket[0]:,.0f} and {bracket[1]:,.0f} ms (a bracket, not an estimate)"


def psychometric_grid(
    fits: dict[str, PsychometricFitter],
    stimulus: str,
    max_panels: int = 36,
    brackets: dict[str, tuple[float, float]] | None = None,
) -> bytes:
    """Small multiples: one panel per participant with data, fit and 50% threshold CI; a
    participant in `brackets` (id -> (low, high) ms: answers that separate there) gets the
    gap shaded and no threshold."""
    return inked_png_bytes(psychometric_grid_figure(fits, stimulus, max_panels, brackets))


def psychometric_grid_figure(
    fits: dict[str, PsychometricFitter],
    stimulus: str,
    max_panels: int = 36,
    brackets: dict[str, tuple[float, float]] | None = None,
) -> Figure:
    """The figure of `psychometric_grid` (matplotlib), before it is written as a PNG."""
    brackets = brackets or {}
    plt = agg_pyplot()
    keys = list(fits)[:max_panels]
    cols = min(6, len(keys))
    rows = math.ceil(len(keys) / cols)
    fig: Figure
    fig, axes = plt.subplots(
        rows, cols, figsize=(2.0 * cols, 1.75 * rows + 0.4), sharex=True, sharey=True
    )
    axes = np.atleast_1d(axes).ravel()
    mids = {key: _mid_threshold(fits[key]) for key in keys}
    ranges = [fitted_range_ms(fits[key]) for key in keys]
    bars, edges = _bars(
        [m[1:] for m in mids.values()],
        [open_sides(m.ci_low, m.ci_high, r) for m, r in zip(mids.values(), ranges, strict=True)],
        also=[x for r in ranges for x in r],
    )
    any_open = False
    for ax, key, bar in zip(axes, keys, bars, strict=False):
        f = fits[key]
        p = f.n_yes_ / f.n_total_
        lo_p, hi_p = clopper_pearson(f.n_yes_, f.n_total_)
        ax.errorbar(
            f.x_ms_,
            p,
            yerr=[p - lo_p, hi_p - p],
            fmt="o",
            ms=3,
            lw=0.6,
            color="tab:blue",
            alpha=0.8,
        )
        grid = np.geomspace(f.x_ms_[0], f.x_ms_[-1], 100)
        ax.plot(grid, f.predict(grid), color="tab:blue", lw=1)
        if key in brackets:  # the switch lies in a gap: no point, no interval
            low, high = brackets[key]
            if np.isfinite(low) and np.isfinite(high):
                ax.axvspan(low, high, color="tab:orange", alpha=0.25)
            # two lines: on one, the next panel's title ran into it
            kind = " (separated)" if np.isfinite(low) and np.isfinite(high) else ""
            ax.set_title(f"{key}\n{_gap_words(low, high)}{kind}", fontsize=8)
        else:
            t = mids[key].estimate
            y = float(f.predict([t])[0])
            xerr = _xerr([t], [bar])
            ax.errorbar([t], [y], xerr=xerr, fmt="s", ms=3, color="black", capsize=2, lw=1)
            any_open |= _open_markers(ax, [bar], [y], edges, size=4)
            ax.set_title(f"{key}: {t:.0f} ms", fontsize=8)
        _ms_axis(ax, "", minor=False)
        ax.set_ylim(-0.05, 1.05)
        ax.tick_params(labelsize=7)
        ax.tick_params(axis="x", labelrotation=45)
    for ax in axes[len(keys) :]:
        ax.set_visible(False)
    if any_open:  # shared x: one decade-bounded axis for all panels
        axes[0].set_xlim(*edges)
    fig.supxlabel(f"{stimulus} (ms, log scale)", fontsize=9)
    fig.supylabel("P(yes)", fontsize=9)
    height_in = 1.75 * rows + 0.4
    fig.subplots_adjust(
        # room in inches for "P(yes)" and the tick labels: a fixed share of a two-panel
        # figure (4 in wide) put the label on the ticks
        left=0.6 / (2.0 * cols),
        right=1 - 0.3 / (2.0 * cols),  # the last x tick label, turned 45 degrees, stays on
        bottom=0.62 / height_in,
        top=1 - (0.4 if brackets else 0.25) / height_in,  # a bracket's title has two lines
        hspace=0.45,
        wspace=0.12,
    )
    return fig


def threshold_distribution(
    part: PsychometricPart, stimulus: str, tested: tuple[float, float] | None = None
) -> bytes:
    """Per-participant 50% thresholds with CIs (each judged against the levels that person
    saw), sorted, and the pooled estimate with its CI (against the `tested` levels, by
    default those of the pooled fit)."""
    plt = agg_pyplot()
    rows = []
    brackets = []  # people whose answers separate: their gap, drawn without a point
    for key, f in part.per_participant.items():
        sep = part.person_separation.get(key)
        if sep is not None:
            brackets.append((key, *sep.bracket_ms()))
            continue
        rows.append((_mid_threshold(f, key), fitted_range_ms(f)))
    rows.sort(key=lambda r: r[0].estimate)
    height = min(0.16 * (len(rows) + len(brackets)) + 1.2, 12)
    fig, ax = plt.subplots(figsize=(7, height))
    y = np.arange(len(rows))
    est = [r.estimate for r, _ in rows]
    pop = part.population.set_index("level").loc[0.5]
    tested = tested or fitted_range_ms(part.pooled)
    # a one-sided bracket (no switch within the levels) runs to the figure's edge
    edge_low, edge_high = tested[0] / 1.25, tested[1] * 1.25
    brackets = [
        (key, low if np.isfinite(low) else edge_low, high if np.isfinite(high) else edge_high)
        for key, low, high in brackets
    ]
    brackets.sort(key=lambda b: b[1])
    for i, (_, low, high) in enumerate(brackets):
        at = len(rows) + i
        ax.hlines(at, low, high, color="tab:gray", lw=2, label=None if i else "separated: gap")
    names = [r.key for r, _ in rows] + [b[0] for b in brackets]
    mark = pooled_mark(part)
    intervals = [(r.estimate, r.ci_low, r.ci_high, rng) for r, rng in rows]
    if mark == "band":
        intervals.append((pop.estimate, pop.ci_low, pop.ci_high, tested))
    bars, edges = _bars(
        [i[:3] for i in intervals],
        [open_sides(*i[1:]) for i in intervals],
        also=[pop.estimate, *tested],
    )
    if rows:
        ax.errorbar(
            est,
            y,
            xerr=_xerr(est, bars[: len(rows)]),
            fmt="o",
            ms=3,
            lw=0.8,
            color="tab:blue",
            label="participant (95% CI)",
        )
    else:  # everyone bracketed: show the tested levels around the brackets
        ax.set_xlim(tested[0] / 1.25, tested[1] * 1.25)
    any_open = _open_markers(ax, bars[: len(rows)], y, edges, color="tab:blue", size=4)
    if mark == "band":  # the population interval (an infinite end drawn to the edge)
        band = bars[-1]
        lower, upper = ci_ends(pop.ci_low, pop.ci_high, tested)
        ax.axvspan(
            band.low,
            band.high,
            color="tab:orange",
            alpha=0.25,
            label=f"pooled {pop.estimate:,.0f} ms [{lower}, {upper}]",
        )
        ax.axvline(pop.estimate, color="tab:orange")
        any_open |= _open_markers(ax, [band], [len(rows) - 0.5], edges, color="tab:orange")
    elif (bracket := pooled_bracket(part)) is not None:
        ax.axvspan(*bracket, color="tab:orange", alpha=0.2, label="pooled switch")
    elif mark == "line":  # too few participants for a population interval
        ax.axvline(pop.estimate, color="tab:orange", label=f"pooled {pop.estimate:.0f} ms")
    if len(names) <= 40:
        ax.set_yticks(np.arange(len(names)), names, fontsize=7)
    else:
        ax.set_yticks([])
        ax.set_ylabel(f"{len(names)} participants, sorted")
    _ms_axis(ax, f"50% threshold on {stimulus} (ms, log scale)")
    if any_open:
        _open_legend_entry(ax)
        ax.set_xlim(*edges)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3, axis="x", which="both")
    ax.set_title("Thresholds per participant")
    return png_bytes(fig)


def kaplan_meier_curves(survival: SurvivalPart, stimulus: str) -> bytes:
    """Share still waiting against time since send, with 95% bands: one panel per level of
    the second factor (if any), one curve per level of the stimulus."""
    plt = agg_pyplot()
    panels: dict[str, list[tuple[str, Any]]] = {}  # lifelines' KaplanMeierFitter
    for label, kmf in survival.km.items():
        parts = label.split(", ")
        stim_part = next((p for p in parts if p.startswith(f"{stimulus}=")), label)
        rest = ", ".join(p for p in parts if p != stim_part) or "all trials"
        panels.setdefault(rest, []).append((stim_part, kmf))
    n_panels = len(panels)
    fig, axes = plt.subplots(
        1, n_panels, figsize=(min(5.2 * n_panels, 11), 4.0), sharey=True, squeeze=False
    )
    cmap = plt.get_cmap("viridis")
    for ax, (title, curves) in zip(axes[0], panels.items(), strict=True):
        for i, (label, kmf) in enumerate(curves):
            color = cmap(i / max(len(curves) - 1, 1))
            sf = kmf.survival_function_
            ci = kmf.confidence_interval_survival_function_
            t_s = sf.index.to_numpy() / 1000
            ax.step(t_s, sf.iloc[:, 0], where="post", color=color, lw=1.4, label=label)
            ax.fill_between(t_s, ci.iloc[:, 0], ci.iloc[:, 1], step="post", color=color, alpha=0.12)
        ax.set_xlabel("time since send (s)")
        ax.set_ylim(0, 1.02)
        ax.set_xlim(left=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower left")
        ax.set_title(title if n_panels > 1 else "Kaplan-Meier, 95% pointwise bands")
    axes[0][0].set_ylabel("share of trials still waiting")
    if n_panels > 1:
        fig.suptitle("Kaplan-Meier, 95% pointwise bands", fontsize=10)
    fig.tight_layout()  # every label on the canvas
    return inked_png_bytes(fig)


def ratings_plot(part: RatingPart, stimulus: str) -> bytes:
    """MOS with CI against the latency (per level of a second factor) and the ordinal fit."""
    plt = agg_pyplot()
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 3.9), gridspec_kw={"width_ratios": [3, 2]})
    table = part.table
    others = [c for c in table.columns if c not in _RATING_STATS and c != stimulus]
    groups = table.groupby(others) if others else [((), table)]
    for key, sub in groups:
        key = key if isinstance(key, tuple) else (key,)
        label = ", ".join(f"{k}={v:g}" for k, v in zip(others, key, strict=True)) or "MOS"
        sub = sub.sort_values(stimulus)
        ax.errorbar(
            sub[stimulus],
            sub["mos"],
            yerr=[
                (sub["mos"] - sub["ci_low"]).fillna(0.0),
                (sub["ci_high"] - sub["mos"]).fillna(0.0),
            ],
            fmt="o-",
            capsize=3,
            ms=4,
            label=label,
        )
    if part.ordinal is not None:
        x = np.geomspace(table[stimulus].min(), table[stimulus].max(), 200)
        ax.plot(
            x,
            part.ordinal.predict_proba(x) @ part.ordinal.levels_,
            color="black",
            lw=1,
            ls="--",
            label="ordinal model (expected rating)",
        )
    ax.axhline(part.acceptable_at, color="grey", lw=0.8, ls=":")
    ax.set_ylim(0.9, part.scale_size + 0.1)
    _ms_axis(ax, f"{stimulus} (ms, log scale)")
    ax.set_ylabel(f"{part.column} (1-{part.scale_size}), mean with 95% CI")
    ax.legend(fontsize=7.5)
    ax.grid(alpha=0.3, which="both")
    ax.set_title("Mean opinion score")
    pooled = table.groupby(stimulus)[["pct_gob", "pct_pow", "n"]].apply(
        lambda g: pd.Series(
            {
                "gob": np.average(g["pct_gob"], weights=g["n"]),
                "pow": np.average(g["pct_pow"], weights=g["n"]),
            }
        )
    )
    pos = np.arange(len(pooled))
    ax2.bar(pos - 0.2, pooled["gob"], width=0.4, color="tab:green", label="% good or better")
    ax2.bar(pos + 0.2, pooled["pow"], width=0.4, color="tab:red", label="% poor or worse")
    ax2.set_xticks(pos, [f"{v:g}" for v in pooled.index], fontsize=8)
    ax2.set_xlabel(f"{stimulus} (ms)")
    ax2.set_ylabel("% of ratings")
    ax2.set_ylim(0, 100)
    ax2.legend(fontsize=7.5)
    ax2.set_title("%GoB and %PoW")
    fig.tight_layout()  # every label on the canvas
    return inked_png_bytes(fig)


_RATING_STATS = {"n", "n_participants", "mos", "ci_low", "ci_high", "sos", "pct_gob", "pct_pow"}


def forest_axis_label(figures: Iterable[str]) -> str:
    """The published-figures chart's axis: ms, ms per token (inter-token figures), or both."""
    per_token = [str(f).endswith("/token") for f in figures]
    if per_token and all(per_token):
        return "ms per token (log scale)"
    if any(per_token):
        return "ms; ms per token for the per-token figures (log scale)"
    return "ms (log scale)"


def reference_forest(refs: pd.DataFrame) -> bytes | None:
    """Each reference figure (point or range) against our estimate [CI] on a log-ms axis."""
    if refs is None or refs.empty or "estimate" not in refs:
        return None
    sub = refs.dropna(subset=["estimate"])
    if sub.empty:
        return None
    plt = agg_pyplot()
    fig, ax = plt.subplots(figsize=(8, 0.42 * len(sub) + 1.2))
    y = np.arange(len(sub))[::-1]
    flags = sub["ci_unbounded"] if "ci_unbounded" in sub else pd.Series("", index=sub.index)
    bars, edges = _bars(
        list(zip(sub["estimate"], sub["ci_low"], sub["ci_high"], strict=True)),
        [unbounded_sides(hi, w) for w, hi in zip(flags, sub["ci_high"], strict=True)],
        also=[*sub["figure_low_ms"], *sub["figure_high_ms"]],
    )
    for yi, r, bar in zip(y, sub.itertuples(), bars, strict=True):
        ax.plot([bar.low, bar.high], [yi, yi], color="tab:blue", lw=3, alpha=0.5)
        ax.plot(r.estimate, yi, "o", color="tab:blue", ms=5)
        lo, hi = r.figure_low_ms, r.figure_high_ms
        if lo == hi:
            ax.plot(lo, yi, "D", color="tab:red", ms=6)
        else:
            ax.plot([lo, hi], [yi, yi], color="tab:red", lw=6, alpha=0.6)
    ax.set_yticks(y, [_short(r) for r in sub["label"]], fontsize=7.5)
    _ms_axis(ax, forest_axis_label(sub.get("figure", [])))
    ax.plot([], [], "o-", color="tab:blue", label="our estimate [95% CI]")
    ax.plot([], [], "D", color="tab:red", label="published figure")
    any_open = _open_markers(ax, bars, y, edges, color="tab:blue")
    if any_open:
        _open_legend_entry(ax)
        ax.set_xlim(*edges)
    axes_height_in = ax.get_position().height * fig.get_figheight()
    ax.legend(  # below the tick labels and the axis label (about half an inch)
        fontsize=7.5,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.5 / axes_height_in),
        ncol=3 if any_open else 2,
        frameon=False,
    )
    ax.set_ylim(-0.7, len(sub) - 0.3)
    ax.grid(alpha=0.3, axis="x", which="both")
    ax.set_title("Published figures against our measured thresholds")
    return png_bytes(fig)


def _short(text: str, width: int = 48) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
