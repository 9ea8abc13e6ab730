"""The `uxlab` command: parses arguments and hands each subcommand to its module.

Each subcommand lives in `uxlab/cli/<name>.py` with two functions: `register(subparsers)`
adds its parser, `run(args) -> int` does the work by calling the packages (imports of
heavy packages happen inside `run`, so `uxlab --help` stays fast).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from uxlab.errors import UxlabError

# Subcommand name -> module under uxlab.cli. Order is the order of `uxlab --help`.
COMMANDS: dict[str, str] = {
    "inspect": "inspect_cmd",
    "import": "import_cmd",
    "shape": "shape_cmd",
    "replay": "replay_cmd",
    "study": "study_cmd",
    "run": "run_cmd",
    "check-timing": "check_timing_cmd",
    "export": "export_cmd",
    "verify": "verify_cmd",
    "report": "report_cmd",
    "record": "record_cmd",
    "serve": "serve_cmd",
    "simulate": "simulate_cmd",
    "plan": "plan_cmd",
    "invite": "invite_cmd",
    "host": "host_cmd",
    "demo": "demo_cmd",
}


class CliError(UxlabError):
    """An error to show the user as one line, with exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="uxlab",
        description="Perceived-latency UX testing: record, shape and play LLM streams; "
        "run studies; fit impatience thresholds.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMANDS.values():
        try:
            module = importlib.import_module(f"uxlab.cli.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"uxlab.cli.{module_name}":
                continue  # not built yet
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (UxlabError, FileNotFoundError) as exc:
        print(f"uxlab {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
