"""`uxlab plan STUDY`: how many participants and repeats, by simulating whole studies.

Simulates `--sims` studies in every cell of a participants x repeats grid (the study's own
design, adaptive procedures included, with observers of a known truth), analyses each with
the report's pooled-threshold code, and writes `plan.csv` (one row per cell), `plan.png`
(contours) and `plan.md` into `--out`, printing the table and the cheapest cell
(participant-minutes) that meets every `--target`. See `uxlab.plan`.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from uxlab.plan.grid import (
    DEFAULT_N_PARTICIPANTS,
    DEFAULT_N_REPEATS,
    DEFAULT_PARTICIPANTS,
    DEFAULT_POWER,
    DEFAULT_REFERENCE,
    DEFAULT_REPEATS,
)

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


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "plan",
        help="how many participants and repeats: power contours by simulation",
        description="Simulate whole studies over a grid of participants x repeats (the "
        "study's real design, observers with a known truth), analyse each like `uxlab "
        "report`, and write the expected 95% CI width of each threshold, coverage, power "
        "and the cheapest cell meeting the target (plan.csv, plan.png, plan.md).",
    )
    p.add_argument("study", type=Path, help="study file (TOML)")
    p.add_argument(
        "--participants",
        default=DEFAULT_PARTICIPANTS,
        metavar="LOW:HIGH[:COUNT]",
        help=f"participants axis (default {DEFAULT_PARTICIPANTS}, {DEFAULT_N_PARTICIPANTS} "
        "log-spaced values; or a list 8,16,32)",
    )
    p.add_argument(
        "--repeats",
        default=DEFAULT_REPEATS,
        metavar="LOW:HIGH[:COUNT]",
        help=f"the study's [design] repeats axis (default {DEFAULT_REPEATS}, "
        f"{DEFAULT_N_REPEATS} values)",
    )
    truth = p.add_mutually_exclusive_group()
    truth.add_argument(
        "--truth",
        metavar="NAME=VALUE,...",
        help="the simulated population: threshold (ms), width and between_sd (ln ms), "
        "lapse, guess, attention_lapse, patience (ms); default: the simulator's defaults",
    )
    truth.add_argument(
        "--truth-from",
        type=Path,
        metavar="PILOT",
        help="estimate the truth (with its uncertainty) from a pilot: its database, export "
        "folder or trial-table CSV",
    )
    p.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="TARGET",
        help='"ci_width<=200ms" (mean width; ci_width@0.75<=300ms for another level), '
        '"ci_width_median<=200ms" (median), "ci_width<=200ms@80%%" (assurance: at least 80%% '
        'of studies give an interval at most 200 ms wide) or "exclude=800ms" / '
        '"exclude=<reference figure id>"; repeat for several (all must hold)',
    )
    p.add_argument(
        "--power",
        type=float,
        default=DEFAULT_POWER,
        help=f"share of studies an exclude target needs (default {DEFAULT_POWER})",
    )
    p.add_argument(
        "--reference",
        default=None,
        metavar="FIGURE",
        help=f"what the power column tests for exclusion: ms or a figure id (default "
        f"{DEFAULT_REFERENCE} for a TTFT study, else the first figure compared with the "
        "study's stimulus; an exclude target takes its place)",
    )
    p.add_argument("--sims", type=int, default=200, help="studies per cell (default 200)")
    p.add_argument(
        "--n-boot",
        type=int,
        default=200,
        help="parametric-bootstrap datasets of each simulated study's pooled counts, the "
        "floor of its participant jackknife-t interval (default 200; the report uses 1000)",
    )
    p.add_argument("--seed", type=int, default=0, help="simulation seed (default 0)")
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: cores)")
    p.add_argument("-o", "--out", type=Path, default=None, help="default results/plan/<study id>")
    p.add_argument("--no-figure", action="store_true", help="skip plan.png")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from uxlab.cli import CliError
    from uxlab.plan.design import PlanError

    if args.sims < 10 or args.n_boot < 50:
        raise CliError("--sims must be at least 10 and --n-boot at least 50")
    if not 0 < args.power < 1:
        raise CliError(f"--power {args.power}: a share between 0 and 1 (e.g. 0.8)")
    try:
        return _run(args)
    except PlanError as exc:
        raise CliError(str(exc)) from None


def _run(args: argparse.Namespace) -> int:
    from uxlab.plan.design import stimulus_factor
    from uxlab.plan.grid import default_reference, parse_range, parse_target, reference_from
    from uxlab.study import load_study

    study = load_study(args.study)
    targets = [parse_target(t, args.power) for t in args.target]
    excludes = [t for t in targets if t.kind == "exclude"]
    if excludes:
        reference = excludes[0].reference
    elif args.reference is not None:
        reference = reference_from(args.reference)
    else:
        reference = default_reference(stimulus_factor(study))
    participants = parse_range(args.participants, DEFAULT_N_PARTICIPANTS, "--participants")
    repeats = parse_range(args.repeats, DEFAULT_N_REPEATS, "--repeats")
    if participants[0] < 2:
        from uxlab.plan.design import PlanError

        raise PlanError(
            f"--participants {args.participants}: at least 2 (the interval resamples people)"
        )
    truths, truth_text = _truths(args, study, stimulus_factor(study))
    out = args.out or Path("results/plan") / study.id
    plan = make_plan(
        study,
        participants,
        repeats,
        truths,
        sims=args.sims,
        n_boot=args.n_boot,
        seed=args.seed,
        jobs=args.jobs,
        quiet=args.quiet,
    )
    text = render_plan(plan, study, reference, targets, truth_text)
    print(text)
    paths = write_plan(plan, study, reference, targets, truth_text, out, figure=not args.no_figure)
    print("\nwrote " + ", ".join(str(p) for p in paths))
    return 0


def _truths(args: argparse.Namespace, study: Any, stimulus: str) -> tuple[tuple, str]:
    from uxlab.simulate import parse_truth

    if args.truth_from is None:
        truth = parse_truth(args.truth)
        return (truth,), (
            f"truth: threshold {truth.threshold_ms:g} ms, width {truth.width_log:g} ln ms, "
            f"between-participant SD {truth.between_sd_log:g} ln ms, lapse {truth.lapse:g}, "
            f"guess {truth.guess:g}, attention lapse {truth.attention_lapse:g}, patience "
            f"{truth.patience_scale_ms:g} ms"
            + (
                ""
                if stimulus == "ttft_ms"
                else f", ITL threshold {truth.itl_threshold_ms:g} ms and width "
                f"{truth.itl_width_log:g} ln ms (joined by probability summation when the "
                "study varies the streaming)"
            )
            + ("" if args.truth else " (the simulator's defaults)")
        )
    pilot = pilot_truth(args.truth_from, study, seed=args.seed)
    return tuple(pilot.draws), pilot.describe()


def pilot_truth(path: Path, study: Any, seed: int = 0):
    """The truth estimated from a pilot's trial table (its practice and attention-check
    trials and excluded participants left out as the report would, pilot sessions kept)."""
    from analysis.exclusions import ExclusionRules, apply_exclusions
    from uxlab.cli.report_cmd import _load
    from uxlab.plan.design import stimulus_factor
    from uxlab.plan.truth import truth_from_pilot

    table = _load(path)
    kept = apply_exclusions(table.trials, ExclusionRules(drop_pilot=False)).kept
    q = study.judgement_question
    return truth_from_pilot(kept, stimulus_factor(study), f"q_{q.id}", seed=seed, source=str(path))


def make_plan(
    study: Any,
    participants: list[int],
    repeats: list[int],
    truths: tuple,
    *,
    sims: int,
    n_boot: int,
    seed: int = 0,
    jobs: int | None = None,
    quiet: bool = False,
):
    """Run the plan's simulations (progress on stderr unless quiet)."""
    from uxlab.plan.engine import PlanSpec, progress_line, run_plan

    spec = PlanSpec(
        study.path.resolve(),
        tuple(participants),
        tuple(repeats),
        tuple(truths),
        n_sims=sims,
        n_boot=n_boot,
        seed=seed,
    )
    n_cells = len(participants) * len(repeats)
    if not quiet:
        print(
            f"planning {study.path.name}: {len(participants)} x {len(repeats)} cells, {sims} "
            f"simulated studies each ...",
            file=sys.stderr,
            flush=True,
        )

    def show(done: int, total: int, seconds: float) -> None:
        progress_line(done, total, seconds, n_cells)

    return run_plan(spec, jobs=jobs, progress=None if quiet else show)


def render_plan(plan: Any, study: Any, reference: Any, targets: list, truth_text: str) -> str:
    """The printed plan: what was simulated, the table, the recommendation."""
    from uxlab.plan.summarise import cell_table, recommend

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
        "random-intercept model, participant jackknife-t 95% interval, as the report "
        "computes it on an adaptive design (and withholds there: measured, it missed the "
        "coverage goal for people steeper than the procedure's steps)"
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
        )
    from uxlab.plan.summarise import report_minimum

    few = table[table["no_interval_share"] >= 0.5]
    if len(few):
        lines.append(
            f"note: {len(few)} cell(s) show no width ('nan'): with fewer than "
            f"{report_minimum()} participants (after exclusions) `uxlab report` gives no "
            "population interval, because there its measured coverage is too low"
        )
    low_cover = table[table["coverage_50"] < 0.9]
    if len(low_cover):
        lines.append(
            f"note: in {len(low_cover)} cell(s) the 95% interval held the true 50% threshold "
            f"in under 90% of studies (fewest participants: "
            f"{int(low_cover['participants'].min())}); there the interval is too narrow and "
            "its width flatters the design"
        )
    heavy = heavy_tail_note(table, targets)
    if heavy:
        lines.append(heavy)
    lines.append(f"simulated in {plan.seconds:.0f} s with {plan.jobs} process(es)")
    return "\n".join(lines)


def assurance_line(assured: list, n_sims: int) -> str:
    """What the printed assurance columns hold and their Monte-Carlo error."""
    from uxlab.plan.summarise import share_se

    need = sorted({t.assurance for t in assured})
    return (
        "assurance: share of all "
        f"{n_sims} studies per cell whose 95% interval at the level is at most the target "
        "width (a study with no interval fails); Monte-Carlo SE sqrt(p (1 - p) / sims): "
        + ", ".join(f"{share_se(a, n_sims):.3f} at {a:.0%}" for a in need)
        + " (per cell: plan.csv's assurance_se columns)"
    )


def assurance_at(best: Any, target: Any) -> str:
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


def heavy_tail_note(table: Any, targets: list) -> str | None:
    """A note naming the cells whose mean width is over `HEAVY_TAIL_RATIO` times its
    median (at 50% and each ci_width target's level), or None."""
    from uxlab.plan.summarise import HEAVY_TAIL_RATIO, heavy_tailed_cells

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


def printed_table(table: Any, targets: list | None = None) -> str:
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
    return shown.to_string(index=False, formatters=fmt)


def write_plan(
    plan: Any,
    study: Any,
    reference: Any,
    targets: list,
    truth_text: str,
    out: Path,
    *,
    figure: bool = True,
) -> list[Path]:
    """plan.csv, plan.md and (unless `figure` is False) plan.png in `out`."""
    from uxlab.plan.summarise import cell_table, recommend

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
            )
        )
    return paths
