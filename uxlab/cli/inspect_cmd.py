"""`uxlab inspect PATH [--json] [--truncated] [--as PEER] [--prices FILE]`: timing metrics
(and, with a price sheet, costs) of replay files.

For a file or a folder (searched recursively for `*.jsonl`): a compact table, one row per
recording, then a pooled summary and a legend naming each definition; with `--json`, one JSON
object per recording per line (all times in ms; the definitions are those of
`uxlab.streams.metrics`). Bad files are listed on stderr while the good ones are inspected,
and the exit status is then 1 (done in part); 2 when no file could be inspected. `--as` and
AIPerf run folders are handled by `uxlab.streams.inspect_as`; `--prices` adds each recording's
cost and a summary per source and per agent task (`uxlab.streams.costs`, shown by
`uxlab.streams.inspect_costs`).
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
from pathlib import Path

from uxlab.cli.options import add_price_arguments
from uxlab.numpy_start import import_numpy_without_blas_threads


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help="timing metrics (TTFT, ITL, stalls, e2e) of replay files or folders",
        description="Show timing metrics of replay files: a table with a pooled summary, "
        "or one JSON object per recording with --json.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="a replay file or a folder")
    parser.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per recording per line (keys: id, n_chunks, n_tokens, n_tool_calls, "
        "ttft_ms, ttfo_ms, ttft_first_event_ms, ttst_ms, second_token_gap_ms, e2e_ms, "
        "itl_ms{mean,p50,p90,p99,max,cv,lag1}, tpot_ms, stalls{over_250,over_1000,longest_ms}, "
        "chars_per_s, finish_reason, error, timing: recorded|synthetic|none, ...; with "
        "--prices also cost, unpriced, usage, price, estimated, then summary records: "
        "cost_per_source, chain_task, tasks_per_stack)",
    )
    parser.add_argument(
        "--truncated",
        action="store_true",
        help="accept files without an end event (truncated streams)",
    )
    parser.add_argument(
        "--include-synthetic",
        action="store_true",
        help="count the made-up gaps of imports that kept only TTFT and the end (llmperf, "
        "guidellm; timing: synthetic) in ITL and stalls (default: left out)",
    )
    parser.add_argument(
        "--as",
        dest="as_peer",
        choices=("aiperf", "vllm", "guidellm"),
        metavar="PEER",
        help="the figures under a peer's own names and definitions: aiperf, vllm or "
        "guidellm (with --json: one record per recording, then the summary). On an AIPerf "
        "run folder, AIPerf's own summary table is checked against them",
    )
    add_price_arguments(parser)
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="processes reading the files (default: one per core for 64 files or more)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # No cyclic garbage collection while a short command builds its rows (the loaders pause
    # it already): ~80 collections of objects that all live to the end, 0.02 s for 6,000 files.
    collecting = gc.isenabled()
    gc.disable()
    try:
        code = _inspect(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`uxlab inspect ... | head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        if collecting:
            gc.enable()
    return code


def _inspect(args: argparse.Namespace) -> int:
    import_numpy_without_blas_threads()
    from uxlab.cli import CliError
    from uxlab.cli.options import price_choice
    from uxlab.streams.aiperf_run import is_aiperf_run
    from uxlab.streams.inspect_load import inspect_paths
    from uxlab.streams.inspect_output import write_inspection

    choice = price_choice(args, "inspect")
    if args.as_peer is not None or any(is_aiperf_run(Path(p)) for p in args.paths):
        from uxlab.streams.inspect_as import inspect_as

        if choice is not None:
            raise CliError("--prices shows uxlab's own view: leave out --as (or the AIPerf run)")
        return inspect_as(
            args.paths, args.as_peer, as_json=args.json, allow_truncated=args.truncated,
            include_synthetic=args.include_synthetic, out=sys.stdout, err=sys.stderr,
            width=shutil.get_terminal_size((80, 24)).columns,
        )  # fmt: skip
    found = inspect_paths(
        args.paths,
        allow_truncated=args.truncated,
        jobs=args.jobs,
        include_synthetic=args.include_synthetic,
        with_billing=choice is not None,
    )
    paths, errors = found.paths, found.errors
    if errors:
        print(f"uxlab inspect: {len(errors)} bad replay file(s):", file=sys.stderr)
        for err in errors:
            print(f"  {err}", file=sys.stderr)
    if not paths:
        if not errors:
            where = ", ".join(args.paths)
            print(f"uxlab inspect: no replay files (*.jsonl) in {where}", file=sys.stderr)
        return 2  # nothing to inspect: an input error
    costs = None
    if choice is not None:
        from uxlab.streams.costs import price_inspection

        costs = price_inspection(found, choice, args.paths, args.estimate_usage)
    write_inspection(
        found, costs, as_json=args.json, out=sys.stdout,
        width=shutil.get_terminal_size((80, 24)).columns,
    )  # fmt: skip
    return 1 if errors else 0
