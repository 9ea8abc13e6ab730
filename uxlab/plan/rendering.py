"""What `uxlab plan` prints and writes: the plan as text (what was simulated, the table,
the recommendation and its notes), and plan.csv, plan.md and plan.png."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, cast

from uxlab.plan.engine import PlanResults
from uxlab.plan.grid import Reference, Target
from uxlab.plan.summarise import (
    HEAVY_TAIL_RATIO,
    cell_table,
    heavy_tailed_cells,
    recommend,
    report_minimum,
    share_se,
)
from uxlab.study.spec import Study

if TYPE_CHECKING:
    import pandas as pd

PRINTED = {
    "participants": "people",
    "repeats": "repeats",
    "minutes_each": "min each",
    "participant_minutes": "person-min",
    "ci_width_25_ms": "CI25 ms",
    "ci_width_50_ms": "CI50 ms",
    "ci_width_75_ms": "CI75 ms",
    "coverage_50": "cover50",
    "power": "power",
    "meets_target": "target",
}


COLUMNS_LINE = (
    "columns: min each, one session's minutes; person-min, people x min each; CI25/CI50/CI75 "
    "ms, the mean width of the 95% interval of the 25%, 50% and 75% thresholds over the "
    "studies that give one (plan.csv has the medians too; - where none does: the report "
    "withholds the 25% / 75% points below 8 people, below 6 answers a person gives each "
    "level, or when one in eight of the people switches between two levels); cover50, the "
    "share "
    "of those studies whose interval holds the true 50% threshold"
)
"""What each printed column holds (the table's headers are short)."""

ADAPTIVE_COLUMNS_LINE = (
    "columns: min each, one session's minutes; person-min, people x min each; CI50 ms, the "
    "mean width of the 95% interval of the median of the sessions' own estimates over the "
    "studies that give one (plan.csv has the medians too; - where none does: the report "
    "gives that interval from 8 people, and none after a 1-up/2-down staircase); CI25 / "
    "CI75: -, the report withholds the pooled points on an adaptive design; cover50, the "
    "share of those studies whose interval holds the median person's true point at the "
    "procedure's target"
)
"""The columns on an adaptive design (what the report prints there)."""


def adaptive_analysis_text(procedure: str) -> str:
    """How the plan analyses a study of an adaptive design: as the report, the median of
    the sessions' own estimates with the sign test's interval (or none, and why)."""
    from analysis.report.adaptive_part import MEDIAN_INTERVAL_WITHHELD

    text = (
        "the median of the sessions' own estimates with the sign test's 95% interval of a "
        "median, as the report prints it on an adaptive design; the pooled 25% / 50% / 75% "
        "points it withholds there (measured to miss the coverage goal)"
    )
    if procedure in MEDIAN_INTERVAL_WITHHELD:
        text += (
            f"; after this procedure the report gives the median no interval: "
            f"{MEDIAN_INTERVAL_WITHHELD[procedure]}"
        )
    return text


def render_plan(
    plan: PlanResults,
    study: Study,
    reference: Reference | None,
    targets: list[Target],
    truth_text: str,
) -> str:
    """The printed plan: what was simulated, the table, the recommendation."""
    table = cell_table(plan, reference, targets)
    best = recommend(table)
    spec = plan.spec
    design = plan.designs[spec.repeats[0]]
    kind = (
        f"adaptive ({design.adaptive.spec.procedure}) on {design.stimulus}"
        if design.adaptive is not None
        else f"constant stimuli, {len(design.conditions)} conditions"
    )
    analysis = (
        adaptive_analysis_text(design.adaptive.spec.procedure)
        if design.adaptive is not None
        else "pooled fit, 95% interval: participant jackknife-t, each end at least the "
        f"pooled counts' parametric bootstrap's ({spec.n_boot} datasets; the report uses 1000)"
    )
    lines = [
        f"plan for {study.path.name} ({study.id}): {kind}; {spec.n_sims} simulated studies "
        f"per cell, each analysed like `uxlab report` ({analysis})",
        truth_text,
        (
            f"power: share of studies whose 95% interval of the 50% threshold excludes "
            f"{reference.label}"
            if reference is not None
            else f"power: no reference figure is compared with {design.stimulus}; name one "
            "with --reference MS"
        )
        + f"; Monte-Carlo SE of a share up to {0.5 / spec.n_sims**0.5:.3f}; minutes from the "
        "study's own duration estimate",
        COLUMNS_LINE if design.adaptive is None else ADAPTIVE_COLUMNS_LINE,
        "",
        printed_table(table, targets),
        "",
    ]
    assured = [t for t in targets if t.statistic == "assurance"]
    if assured:
        lines[3:3] = [assurance_line(assured, spec.n_sims)]
    if not targets:
        lines.append("no --target given: no recommendation (e.g. --target 'ci_width<=200ms')")
    elif best is None:
        lines.append(
            "no cell meets " + " and ".join(t.text for t in targets) + ": widen the grid "
            "(--participants, --repeats) or relax the target"
        )
    else:
        lines.append(
            f"recommended: {int(best['participants'])} participants x repeats "
            f"{int(best['repeats'])} ({int(best['main_trials_each'])} main trials, "
            f"~{best['minutes_each']:.0f} min each; {best['participant_minutes']:.0f} "
            f"participant-minutes), the cheapest cell meeting "
            + " and ".join(t.text for t in targets)
            + f": CI width {best['ci_width_50_ms']:.0f} ms at 50%, power {best['power']:.2f}"
            + "".join(assurance_at(best, t) for t in assured)
            + (
                "; its report gives the 50% point only (the 25% / 75% points need 6 answers "
                "a person gives each level, 8 people, and under one in eight of them "
                "switching between two levels)"
                if design.adaptive is None
                and math.isnan(best["ci_width_25_ms"])
                and math.isnan(best["ci_width_75_ms"])
                else ""
            )
        )
    few = table[table["no_interval_share"] >= 0.5]
    if len(few) and design.adaptive is None:
        lines.append(
            f"note: {len(few)} cell(s) show no width ('-'): with fewer than "
            f"{report_minimum()} participants (after exclusions) `uxlab report` gives no "
            "population interval, because there its measured coverage is too low"
        )
    elif len(few):
        lines.append(
            f"note: {len(few)} cell(s) show no width ('-'): `uxlab report` gives the median "
            f"of the sessions' own estimates no interval with fewer than "
            f"{report_minimum('adaptive_median')} participants (after exclusions), the fewest it "
            "was measured with, nor after a 1-up/2-down staircase"
        )
    low_cover = table[table["coverage_50"] < 0.9]
    if len(low_cover):
        truth = (
            "the true 50% threshold"
            if design.adaptive is None
            else "the median person's true point (what the median of the sessions' own "
            "estimates estimates)"
        )
        lines.append(
            f"note: in {len(low_cover)} cell(s) the 95% interval held {truth} in under 90% of "
            f"studies (fewest participants: {int(low_cover['participants'].min())}); there "
            "the interval is too narrow and its width flatters the design"
        )
    heavy = heavy_tail_note(table, targets)
    if heavy:
        lines.append(heavy)
    lines.append(f"simulated in {plan.seconds:.0f} s with {plan.jobs} process(es)")
    return "\n".join(lines)


def assurance_line(assured: list[Target], n_sims: int) -> str:
    """What the printed assurance columns hold and their Monte-Carlo error."""
    need = sorted({t.assurance for t in assured if t.assurance is not None})
    return (
        "assurance: share of all "
        f"{n_sims} studies per cell whose 95% interval at the level is at most the target "
        "width (a study with no interval fails); Monte-Carlo SE sqrt(p (1 - p) / sims): "
        + ", ".join(f"{share_se(a, n_sims):.3f} at {a:.0%}" for a in need)
        + " (per cell: plan.csv's assurance_se columns)"
    )


def assurance_at(best: pd.Series, target: Target) -> str:
    """The recommended cell's assurance for one target, with its Monte-Carlo SE and a
    warning when it clears the share asked for by less than two SEs."""
    share = best[target.assurance_column]
    se = best[target.assurance_column.replace("assurance", "assurance_se", 1)]
    close = (
        f"; within 2 SE of {target.assurance:.0%}: more --sims would settle it"
        if share - target.assurance < 2 * se
        else ""
    )
    return f", assurance {share:.2f} (SE {se:.2f}{close}) for {target.text}"


def heavy_tail_note(table: pd.DataFrame, targets: list[Target]) -> str | None:
    """A note naming the cells whose mean width is over `HEAVY_TAIL_RATIO` times its
    median (at 50% and each ci_width target's level), or None."""
    levels = tuple(sorted({0.5} | {t.level for t in targets if t.kind == "ci_width"}))
    heavy = heavy_tailed_cells(table, levels)
    if heavy.empty:
        return None
    widths = [t.max_ms for t in targets if t.kind == "ci_width" and t.max_ms is not None]
    ms = f"{widths[0]:g}ms" if widths else "200ms"
    cells = ", ".join(
        f"{int(r.participants)}x{int(r.repeats)}" for r in heavy.itertuples(index=False)
    )
    return (
        f"note: in {len(heavy)} cell(s) (people x repeats: {cells}) the mean width of the 95% "
        f"interval (at {' or '.join(f'{level:.0%}' for level in levels)}) is over "
        f"{HEAVY_TAIL_RATIO:g} times the median: the mean is dominated by a few very wide "
        f"intervals and is not a stable figure; target the median (ci_width_median<={ms}) or "
        f"an assurance (ci_width<={ms}@80%) instead"
    )


def printed_table(table: pd.DataFrame, targets: list[Target] | None = None) -> str:
    """The table as printed: the columns of `PRINTED` (and, for median or assurance
    targets, their columns), rounded."""
    cols = [c for c in PRINTED if c in table.columns]
    names = dict(PRINTED)
    extra = {}
    for t in targets or []:
        if t.kind != "ci_width" or t.statistic == "mean":
            continue
        tag = f"{int(t.level * 100)}"
        if t.statistic == "median":
            extra[f"ci_width_{tag}_median_ms"] = f"CI{tag} med"
        else:
            extra[t.assurance_column] = f"P(CI{tag}<={t.max_ms:g})"
    at = cols.index("meets_target") if "meets_target" in cols else len(cols)
    cols[at:at] = [c for c in extra if c in table.columns and c not in cols]
    names.update(extra)
    shown = table[cols].rename(columns=names)
    fmt = {
        "CI25 ms": "{:.0f}".format,
        "CI50 ms": "{:.0f}".format,
        "CI75 ms": "{:.0f}".format,
        "cover50": "{:.2f}".format,
        "power": "{:.2f}".format,
        "min each": "{:.1f}".format,
        "person-min": "{:.0f}".format,
    }
    for column, name in extra.items():
        fmt[name] = ("{:.0f}" if column.endswith("_ms") else "{:.2f}").format
    if shown["target"].isna().all():
        shown = shown.drop(columns="target")
    else:
        shown["target"] = shown["target"].map({True: "yes", False: "-"})
    return cast(str, shown.to_string(index=False, formatters=fmt, na_rep="-"))


def write_plan(
    plan: PlanResults,
    study: Study,
    reference: Reference | None,
    targets: list[Target],
    truth_text: str,
    out: Path,
    *,
    figure: bool = True,
) -> list[Path]:
    """plan.csv, plan.md and (unless `figure` is False) plan.png in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    table = cell_table(plan, reference, targets)
    best = recommend(table)
    csv = out / "plan.csv"
    table.to_csv(csv, index=False)
    paths = [csv]
    md = out / "plan.md"
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    md.write_text(
        f"# Plan: {study.id}\n\nWritten {stamp} by `uxlab plan` (seed {plan.spec.seed}).\n\n"
        "```\n" + render_plan(plan, study, reference, targets, truth_text) + "\n```\n",
        encoding="utf-8",
    )
    paths.append(md)
    if figure:
        from uxlab.plan.figure import write_figure

        paths.append(
            write_figure(
                table,
                out / "plan.png",
                title=f"{study.id}: {plan.spec.n_sims} simulated studies per cell",
                reference_label=reference.label if reference is not None else "(none)",
                best=best,
                figure_50="the 50% threshold"
                if plan.designs[plan.spec.repeats[0]].adaptive is None
                else "the median adaptive estimate",
            )
        )
    return paths
