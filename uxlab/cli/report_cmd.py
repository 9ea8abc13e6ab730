"""`uxlab report DATA [-o DIR]`: the threshold report from a study database or a trial table.

DATA is a uxlab study database (SQLite; exported here to the trial table first, read-only
apart from what the exporter records), an export folder (CSV or Parquet), or a trial-table
CSV or Parquet file from any lab. Writes `report.html`, `report.md` + `figures/*.png` and
`thresholds.csv` (spreadsheet-safe cells unless `--raw-cells`) into DIR. Simulated
data (`uxlab simulate`) is said to be so first and compared with the truth stored with it;
real and simulated sessions mixed give a warning with the count of each kind. A part of
the report that fails is named on stderr with its error in one line, the rest is still
written, and the exit status is `EXIT_PART_FAILED`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from uxlab.cli.hints import command
from uxlab.cli.inspect_costs import add_price_arguments, price_choice
from uxlab.cli.places import output_for
from uxlab.cli.raw_cells import add_raw_cells_argument
from uxlab.errors import UxlabError
from uxlab.store.dialect import database_arg

EXIT_PART_FAILED = 1


class ReportError(UxlabError):
    """Bad input to `uxlab report` (the message names file, row and column)."""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "report",
        help="fit impatience thresholds and write the threshold report",
        description="Fit psychometric thresholds, abandonment survival models and rating "
        "models to a study's trials, compare them with the published figures, and write "
        "report.html, report.md (+ figures/) and thresholds.csv. Parts that need several "
        "participants run from 8 (below, the report says which and why); a part that fails "
        "is named on stderr, the rest is written, and the exit status is 1.",
    )
    p.add_argument(
        "data",
        type=database_arg,
        help="study database (a file or a postgresql:// URL), export folder (CSV or Parquet), "
        "or trial-table CSV or Parquet file",
    )
    p.add_argument(
        "-o",
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="output folder (default: NAME-report/ beside a file DATA, as "
        "results/quickstart.sqlite -> results/quickstart-report/; report/ inside a folder DATA)",
    )
    _add_column_arguments(p)
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap samples (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of every bootstrap (default 0)")
    p.add_argument(
        "--score",
        metavar="CORPUS",
        type=Path,
        help="score a folder of recordings with the fitted models",
    )
    add_price_arguments(p)
    _add_exclusion_arguments(p)
    p.add_argument(
        "--no-participant-fits", action="store_true", help="skip per-participant psychometric fits"
    )
    p.add_argument("--title", help="report title")
    p.add_argument(
        "--more-participants",
        type=int,
        metavar="K",
        help="also say what CI width K more participants would likely give (by simulation)",
    )
    add_raw_cells_argument(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=run)


def _add_column_arguments(p: argparse.ArgumentParser) -> None:
    """What to analyse: the stimulus, judgement and rating columns, the factors, the estimand."""
    p.add_argument(
        "--stimulus",
        metavar="COLUMN",
        help="the latency factor (default: ttft_ms or the first factor in ms with 3+ levels)",
    )
    p.add_argument(
        "--judgement",
        metavar="COLUMN",
        help="binary question, 1 = yes (default: the study's yes/no question)",
    )
    p.add_argument(
        "--rating", metavar="COLUMN", help="rating question (default: the study's likert question)"
    )
    p.add_argument(
        "--participant",
        metavar="COLUMN",
        help="the column that names the participant (default: participant)",
    )
    p.add_argument(
        "--yes",
        metavar="VALUE[,VALUE]",
        help="the judgement's values that mean yes, e.g. j or y,yes (others mean no; "
        "empty cells are unanswered)",
    )
    p.add_argument(
        "--stimulus-unit",
        choices=("s", "ms"),
        help="unit of the stimulus column (default: ms if its name ends _ms, seconds if it "
        "ends _s or all values are under 30, said in a note)",
    )
    p.add_argument(
        "--measure",
        choices=("ttft", "itl", "e2e"),
        help="what the stimulus column is, so it is compared with the matching published "
        "figures (the column is analysed as <measure>_ms)",
    )
    p.add_argument(
        "--factor",
        metavar="COLUMN",
        action="append",
        default=[],
        help="a design factor besides the stimulus (repeatable); without it and without "
        "study.json another lab's table has the stimulus as its only factor",
    )
    p.add_argument(
        "--acceptable-at",
        type=float,
        metavar="N",
        help="ratings >= N count as acceptable (default: from study.json, else the scale midpoint)",
    )
    p.add_argument(
        "--estimand",
        choices=("population", "median-person"),
        default="population",
        help="what the pooled psychometric figures estimate: the population curve's point "
        "(all trials pooled; default) or the median participant's own point (median of "
        "per-person fits); the other is written too, under its own group",
    )
    p.add_argument(
        "--judgement-kind",
        choices=("immediacy", "acceptability", "smoothness"),
        help="what the yes/no question judges, so it meets only published figures of that "
        "kind (default: from the question's words, e.g. 'acceptable' -> acceptability)",
    )


def _add_exclusion_arguments(p: argparse.ArgumentParser) -> None:
    """Which trials and sessions are analysed (the exclusion rules)."""
    p.add_argument("--keep-practice", action="store_true", help="analyse practice trials too")
    p.add_argument("--keep-pilot", action="store_true", help="analyse pilot sessions too")
    p.add_argument(
        "--keep-simulated",
        action="store_true",
        help="analyse simulated sessions together with real ones (by default they are left "
        "out when both are present; a database of simulated sessions only is analysed as such)",
    )
    p.add_argument("--drop-simulated", action="store_true", help="leave simulated sessions out")
    p.add_argument(
        "--keep-flagged",
        action="store_true",
        help="analyse trials shown outside the study's timing tolerance too (fidelity_flag)",
    )
    p.add_argument(
        "--min-attention",
        type=float,
        default=0.75,
        metavar="SHARE",
        help="exclude participants passing fewer attention checks (default 0.75)",
    )
    p.add_argument(
        "--min-completion",
        type=float,
        default=0.5,
        metavar="SHARE",
        help="exclude participants completing fewer main trials (default 0.5)",
    )


ACCEPTS = (
    "uxlab report reads a study database (.sqlite), a `uxlab export` folder (with trials.csv "
    "or trials.parquet), a trial-table CSV (a header row with a 'participant' column) or a "
    "trial-table Parquet file"
)


def check_input(data: Path | str, participant_column: str | None = None) -> None:
    """Refuse, in one line, DATA that is not one of the inputs the report reads (`ACCEPTS`)."""
    if isinstance(data, str):  # a PostgreSQL URL: the exporter says what is wrong with it
        return
    what = _not_a_trial_table(data, participant_column or "participant")
    if what is not None:
        raise ReportError(f"{data}: {what}; {ACCEPTS}")


def _not_a_trial_table(data: Path, participant_column: str = "participant") -> str | None:
    """What DATA is instead of a trial table, or None when it may be one."""
    if not data.exists():
        return "no such file or folder"
    if data.is_dir():
        if (data / "trials.csv").is_file() or (data / "trials.parquet").is_file():
            return None
        if next(data.glob("*.jsonl"), None) or next(data.glob("*/*.jsonl"), None):
            return f"a folder of replay files, without trials.csv (see {command('inspect', data)})"
        return "a folder without trials.csv or trials.parquet"
    if _is_sqlite(data) or data.suffix in (".gz", ".bz2", ".xz", ".zip", ".zst"):
        return None  # a compressed CSV is read (and checked) by the loader
    from analysis.parquet_table import is_parquet_file

    if is_parquet_file(data):
        return None  # read (and checked, naming the file) by the loader
    try:
        with open(data, "rb") as fh:
            head = fh.read(64 * 1024)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if data.suffix == ".jsonl" or head.lstrip().startswith(b"{"):
        return f"a replay file or JSON, not a trial table (see {command('inspect', data)})"
    if data.suffix == ".toml":
        return f"a study file; run it ({command('run', data)}), then report on its database"
    try:
        first_line = head.decode("utf-8-sig").splitlines()[0] if head.strip() else ""
    except UnicodeDecodeError:
        return "not a text file"
    import csv

    header = next(csv.reader([first_line]), [])
    if participant_column not in [h.strip() for h in header]:
        return (
            f"not a trial table: its first line is not a header with a {participant_column!r} "
            "column (--participant COLUMN names another)"
        )
    return None


def _is_sqlite(path: Path) -> bool:
    from uxlab.store.open_checks import is_sqlite_file

    return is_sqlite_file(path)


def _column_map(args: argparse.Namespace):
    """The other-lab column options as an `analysis.foreign_table.ColumnMap`."""
    from analysis.foreign_table import ColumnMap

    yes = tuple(v.strip() for v in (args.yes or "").split(",") if v.strip())
    if args.yes is not None and not yes:
        raise ReportError("--yes: expected one or more values, e.g. --yes j or --yes y,yes")
    return ColumnMap(
        participant=args.participant,
        stimulus=args.stimulus,
        stimulus_unit=args.stimulus_unit,
        measure=args.measure,
        judgement=args.judgement,
        yes=yes,
        rating=args.rating,
        factors=tuple(args.factor),
    )


def _load(path: Path | str, columns=None):
    """The trial table; a uxlab database goes through the store's exporter first."""
    from analysis.trial_table import load_trial_table

    if isinstance(path, str):  # a PostgreSQL study database (`--db postgresql://...`)
        return _load_exported(path, columns)
    if not path.exists():
        raise ReportError(f"{path}: no such file or folder")
    if _is_sqlite(path) and not _has_trials_table(path):
        return _load_exported(path, columns)
    return load_trial_table(path, columns)


def _load_exported(db: Path | str, columns=None):
    """A uxlab study database's trial table, through the store's exporter."""
    from analysis.trial_table import TrialTableError, file_sha256, load_trial_table
    from uxlab.store.dialect import database_stem, db_name
    from uxlab.store.export import export_db

    name = db_name(db)
    with tempfile.TemporaryDirectory(prefix="uxlab-report-") as tmp:
        export_db(db, tmp)
        try:
            table = load_trial_table(tmp, columns)
        except TrialTableError as exc:  # name the database, not the temporary export
            message = str(exc).replace(str(Path(tmp) / "trials.csv"), f"{name} (its trials)")
            raise ReportError(message.replace(tmp, str(name))) from exc
        # a PostgreSQL database is no file: the digest is of the trial table exported from it,
        # and the report names the database as `postgresql:<database name>`
        digest = file_sha256(db if isinstance(db, Path) else Path(tmp) / "trials.csv")
    source = db if isinstance(db, Path) else Path(f"postgresql:{database_stem(db)}")
    table.source, table.source_sha256 = source, digest
    return table


def _has_trials_table(path: Path) -> bool:
    """True for a SQLite file holding the exported trial table (not a uxlab study database)."""
    import sqlite3
    from contextlib import closing

    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as con:
            cols = [r[1] for r in con.execute("PRAGMA table_info(trials)")]
    except sqlite3.DatabaseError:
        return False  # damaged: the store's exporter says so in one line
    return "participant" in cols and "outcome" in cols and "levels" not in cols


def run(args: argparse.Namespace) -> int:
    from analysis.chains import ChainDataError
    from analysis.psychometric import PsychometricInputError
    from analysis.reference import ReferenceFileError
    from analysis.report import analyse, write_report
    from analysis.report.cost_part import console_lines as cost_console_lines
    from analysis.score import ScoreError
    from analysis.trial_table import TrialTableError

    _check_args(args)
    out = args.out or output_for(args.data, "report")
    options = _report_options(args)
    options.prices = price_choice(args, "report")
    options.estimate_usage = args.estimate_usage
    try:
        table = _load(args.data, _column_map(args))
        data = analyse(table, options)
        paths = write_report(data, out, raw_cells=args.raw_cells)
    except (
        TrialTableError,
        ScoreError,
        PsychometricInputError,
        ChainDataError,
        ReferenceFileError,
    ) as exc:  # the analysis package's input errors: one clean line each
        raise ReportError(str(exc)) from exc
    _print_kinds(data)
    if data.nothing_left:  # the report says so; the message names each rule and option
        print(f"uxlab report: {data.table.source}: {data.nothing_left}", file=sys.stderr)
    _print_summary(data)
    _print_truth(data)
    for line in cost_console_lines(data):
        print(line)
    if args.more_participants:
        print(_more_participants(data, args.more_participants, args.seed))
    _print_notes(data)
    for key in ("html", "markdown", "thresholds", "score", "costs"):
        if key in paths:
            print(f"wrote {paths[key]}")
    sys.stdout.flush()
    for part, error in data.failed_parts:
        print(f"uxlab report: part failed: {part}: {error}", file=sys.stderr)
    return EXIT_PART_FAILED if data.failed_parts else 0


def _check_args(args: argparse.Namespace) -> None:
    """The options' values, and the input, before anything is read."""
    for name in ("min_attention", "min_completion"):
        if not 0 <= getattr(args, name) <= 1:
            raise ReportError(f"--{name.replace('_', '-')}: expected a share in [0, 1]")
    if args.n_boot < 0:
        raise ReportError("--n-boot: expected 0 or more")
    check_input(args.data, args.participant)
    if args.score is not None and not args.score.exists():
        raise ReportError(f"--score {args.score}: no such file or folder (a folder of recordings)")
    if args.prices is not None and args.score is None:
        raise ReportError("--prices prices the recordings of --score CORPUS: name the corpus")


def _report_options(args: argparse.Namespace):  # -> analysis.report.ReportOptions
    """The report's options (and its exclusion rules) from the command line."""
    from analysis.exclusions import ExclusionRules
    from analysis.report import ReportOptions

    rules = ExclusionRules(
        drop_practice=not args.keep_practice,
        drop_pilot=not args.keep_pilot,
        drop_simulated=args.drop_simulated,
        drop_fidelity_flagged=not args.keep_flagged,
        keep_simulated=args.keep_simulated,
        min_attention_accuracy=args.min_attention,
        min_completion=args.min_completion,
    )
    return ReportOptions(
        stimulus=args.stimulus,
        judgement=args.judgement,
        rating=args.rating,
        acceptable_at=args.acceptable_at,
        n_boot=args.n_boot,
        seed=args.seed,
        rules=rules,
        per_participant=not args.no_participant_fits,
        progress=not args.quiet,
        score_corpus=args.score,
        title=args.title,
        estimand=args.estimand,
        judgement_kind=args.judgement_kind,
    )


def _print_kinds(data) -> None:  # data: analysis.report.ReportData
    """First, what the data are: simulated participants (stdout), or a warning on stderr
    with the count of each kind when simulated and real sessions are mixed."""
    part = data.truth
    banner = part.kinds.banner() if part is not None else None
    if banner is None:
        return
    if part.kinds.kind == "mixed":
        print(f"uxlab report: {banner}", file=sys.stderr, flush=True)
    else:
        print(banner.replace("`", ""))


def _print_truth(data) -> None:  # data: analysis.report.ReportData
    """Simulated data: every pooled estimate beside the truth it was drawn from."""
    from analysis.report.truth_part import comparison_text

    text = comparison_text(data)
    if text:
        print(text)


def _print_summary(data) -> None:  # data: analysis.report.ReportData
    """The trials, the pooled 50% thresholds and the abandonment time ratios."""
    t = data.thresholds
    n_people = data.kept["participant"].nunique()
    print(
        f"{len(data.kept)} trials from {n_people} participant{'' if n_people == 1 else 's'}; "
        f"stimulus {data.stimulus}"
    )
    for measure in ("psychometric", "rating"):
        row = t[
            (t.measure == measure)
            & (t.group == "pooled")
            & (t.condition == "all")
            & (t.level == 0.5)
        ]
        if len(row):
            r = row.iloc[0]
            if r.estimate != r.estimate:  # NaN, e.g. ratings that separate by latency
                why = "no estimate from these data: see the report"
                print(f"  {measure:<13} 50% threshold     none  ({why})")
                continue
            what = f" ({r.estimand})" if isinstance(r.get("estimand"), str) else ""
            if r.ci_low == r.ci_low:  # not NaN
                interval = _threshold_interval(r, data.tested_range)
            else:  # below the minimum the figure describes these people, not a population
                interval, what = _no_interval(data.n_participants), ""
            marks = ", extrapolated" if bool(r.get("extrapolated", False)) else ""
            print(f"  {measure:<13} 50% threshold {r.estimate:8.0f} ms  {interval}{marks}{what}")
    if data.survival is not None and data.survival.aft is not None:
        for r in data.survival.aft.time_ratios_.itertuples():
            bounded_below = r.ci_low > 0 and r.ci_high == r.ci_high  # False for NaN too
            interval = (
                f"[{r.ci_low:.2f}, {_upper(r.ci_high, '.2f')}]"
                if bounded_below
                else "(no finite interval: the give-ups do not pin it down)"
            )
            if bounded_below and not getattr(data.survival.aft, "clustered_", True):
                interval += " (trials treated as independent: describes these participants)"
            print(
                f"  abandonment   time ratio {r.per} of {r.factor}: {r.time_ratio:.2f} {interval}"
            )


def _threshold_interval(r, tested: tuple[float, float]) -> str:
    """`[312, 1,869]`; an end thresholds.csv flags in `ci_unbounded` as not bounded, with the
    limit: `[312, no upper bound from these data (computed end above 50,000 ms = 10x the
    highest tested level)]`."""
    from analysis.report.blocks import NO_LOWER_BOUND, NO_UPPER_BOUND
    from analysis.report.interval_bounds import UNBOUNDED_FACTOR

    which = r.get("ci_unbounded", "")
    which = which if isinstance(which, str) else ""
    low = f"{r.ci_low:.0f}"
    high = _upper(r.ci_high, ".0f")
    if which in ("lower", "both"):
        low = (
            f"{NO_LOWER_BOUND} (computed end below {tested[0] / UNBOUNDED_FACTOR:,.0f} ms = "
            "a tenth of the lowest tested level)"
        )
    if which in ("upper", "both") and r.ci_high != float("inf"):
        high = (
            f"{NO_UPPER_BOUND} (computed end above {UNBOUNDED_FACTOR * tested[1]:,.0f} ms = "
            f"{UNBOUNDED_FACTOR:g}x the highest tested level)"
        )
    return f"[{low}, {high}]"


def _upper(high: float, spec: str) -> str:
    """An interval's upper bound as the report writes it: infinite means the data do not
    bound it."""
    return format(high, spec) if high != float("inf") else "no upper bound from these data"


def _print_notes(data) -> None:  # data: analysis.report.ReportData
    """The report's notes, the participants left out and the parts skipped."""
    from analysis.exclusions import FIDELITY_REASON, rule_summary

    for note in data.notes:
        print(f"note: {note}")
    for line in rule_summary(data.exclusions):
        # participants left out, and trials shown outside the timing tolerance: both change
        # what the figures above rest on (practice and attention-check trials never count)
        if "participant(s)" in line or line.startswith(FIDELITY_REASON):
            print(f"left out: {line}")
    for line in dict.fromkeys(data.skipped):
        print(f"skipped: {line}")


def _no_interval(n_participants: int) -> str:
    """What a pooled threshold without an interval is: `(these 2 participants' pooled
    trials; no population interval below 4 participants)`."""
    from analysis.report.support import MIN_POPULATION

    who = "this participant's" if n_participants == 1 else f"these {n_participants} participants'"
    if n_participants < MIN_POPULATION:
        return f"({who} trials; no population interval below {MIN_POPULATION} participants)"
    return f"({who} trials; no population interval could be computed)"


def _more_participants(data, add: int, seed: int) -> str:
    """`--more-participants K`: the CI width K more people would likely give (uxlab.plan)."""
    from uxlab.plan.design import PlanError
    from uxlab.plan.more_people import describe, width_with_more_people

    if add < 1:
        raise ReportError(f"--more-participants {add}: expected 1 or more")
    part = data.psychometric
    if part is None:
        return "note: --more-participants needs a yes/no judgement (no psychometric threshold)"
    row = part.population.set_index("level").loc[0.5]
    measured = float(row.ci_high - row.ci_low)
    try:
        result = width_with_more_people(data.kept, data.stimulus, part.column, add, seed=seed)
    except PlanError as exc:
        return f"note: --more-participants: {exc}"
    return describe(result, measured if measured == measured else None)
