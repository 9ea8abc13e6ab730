"""`uxlab simulate STUDY --participants N [--db PATH] [--seed S] [--truth ...] [--through-ui]`.

Simulated participants (observers with a known threshold, see `uxlab/simulate/`) go
through the same session controller, trial list and store as people in `uxlab run`, on a
virtual clock; their sessions are marked simulated and hold the truth in their environment
(`simulated_truth`), so `uxlab report` can be checked against it. `--truth` takes the
population as `uxlab plan --truth` does (one parser: `uxlab.simulate.parse_truth`), so a
study can be simulated under the truth it was planned for. With `--through-ui` they
press the keys of the real terminal runner instead (`uxlab/tui/simulated_run.py`), on the
real clock, optionally sped up by `--time-scale`.
"""

from __future__ import annotations

import argparse

from uxlab.cli.hints import after_database
from uxlab.cli.options import add_db_option, add_seed_option, db_name


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "simulate",
        help="run a study with simulated participants (known thresholds)",
        description="Take N simulated participants through a study on a virtual clock: the "
        "same trial lists, store and export as real sessions, marked simulated, with the "
        "simulated truth stored in each session's environment.",
    )
    p.add_argument("study", metavar="STUDY.toml", help="the study file")
    p.add_argument("--participants", "-n", type=int, default=10, metavar="N", help="default 10")
    add_db_option(p)
    add_seed_option(p, "simulation seed (default 0)")
    truth = p.add_mutually_exclusive_group()
    truth.add_argument(
        "--truth",
        metavar="NAME=VALUE,...",
        help="the simulated population, as uxlab plan --truth takes it: threshold (ms), "
        "width and between_sd (ln ms), lapse, guess, attention_lapse, patience (ms), "
        "itl_threshold (ms), itl_width (ln ms); e.g. threshold=1200,width=1.0,between_sd=0.5; "
        "the rest keep the simulator's defaults (not with --threshold-ms)",
    )
    truth.add_argument(
        "--threshold-ms",
        type=float,
        metavar="MS",
        help="population 50%% TTFT threshold of the observers (default 800); the same as "
        "--truth threshold=MS (not with --truth)",
    )
    p.add_argument(
        "--chain-k",
        type=float,
        metavar="K",
        help="agent chains: n calls at per-call TTFT x feel like x * n**K "
        "(1 = latency multiplies, the default; 0 = per-call only)",
    )
    p.add_argument(
        "--durable", action="store_true", help="fsync every commit as a real session does (slower)"
    )
    p.add_argument(
        "--through-ui",
        action="store_true",
        help="drive the real terminal runner (uxlab run's app, headless) with the observers' "
        "key presses on the real clock, instead of the session controller on a virtual clock",
    )
    p.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        metavar="X",
        help="with --through-ui: run the study's times X times faster (default 1; 10 plays a "
        "5 s wait in 0.5 s and stores it as 5,000 ms)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import math

    from uxlab.cli import CliError
    from uxlab.simulate import refuse_unsimulatable, simulate_cohort, truth_from_options
    from uxlab.store import Store, default_db_path
    from uxlab.study import load_study

    if args.participants < 1:
        raise CliError(f"--participants {args.participants}: need at least 1")
    if args.seed < 0:
        raise CliError(f"--seed {args.seed}: must be a whole number >= 0")
    truth = truth_from_options(args.truth, args.threshold_ms, args.chain_k)
    if not (args.time_scale > 0 and math.isfinite(args.time_scale)):
        raise CliError(f"--time-scale {args.time_scale:g}: must be a number > 0 (e.g. 10)")
    if args.time_scale != 1.0 and not args.through_ui:
        raise CliError("--time-scale only applies with --through-ui (the virtual clock is instant)")
    study = load_study(args.study)
    refuse_unsimulatable(study)
    db = args.db if args.db is not None else default_db_path(study)
    if args.through_ui:
        from uxlab.tui.simulated_run import simulate_cohort_through_ui

        print(f"through the terminal runner (headless, 80x24), times x{args.time_scale:g} faster")
        through = simulate_cohort_through_ui(
            study, db, args.participants, seed=args.seed, truth=truth,
            time_scale=args.time_scale, durable=args.durable,
        )  # fmt: skip
        n_trials = sum(s.n_trials for s in through)
        print(
            f"simulated {len(through)} participant(s) through the runner, {n_trials} trials in "
            f"{sum(s.seconds for s in through):.1f} s into {db_name(db)}"
        )
        print("\n".join(after_database(db)))
        return 0
    with Store.open(db, durable=args.durable) as store:
        done = simulate_cohort(
            study, store, args.participants, seed=args.seed, truth=truth,
            progress=lambda s: print(
                f"  {s.participant}: already completed by an earlier run, kept "
                f"({s.n_trials} trials)" if s.kept else
                f"  {s.participant}: {s.n_trials} trials, {s.n_abandoned} abandoned "
                f"({s.seconds:.2f} s{', resumed' if s.resumed else ''})"
            ),
        )  # fmt: skip
    kept = [s for s in done if s.kept]
    ran = [s for s in done if not s.kept]
    n_trials = sum(s.n_trials for s in ran)
    seconds = sum(s.seconds for s in ran)
    per = f" ({seconds / len(ran):.2f} s per session)" if ran else ""
    print(
        f"simulated {len(ran)} participant(s), {n_trials} trials in {seconds:.1f} s{per} "
        f"into {db_name(db)}"
        + (f"; {len(kept)} already complete from an earlier run, kept" if kept else "")
    )
    print("\n".join(after_database(db)))
    return 0
