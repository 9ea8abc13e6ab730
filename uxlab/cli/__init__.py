"""The `uxlab` command: parses arguments and hands each subcommand to its module.

Each subcommand lives in `uxlab/cli/<name>_cmd.py` with two functions:
`register(subparsers)` adds its parser, `run(args) -> int` checks the arguments and calls
the package that does the work. Options several commands take are declared once
(`uxlab.cli.options`, `places.add_out_option`, `profile_options`). Building the parsers
imports no heavy library (they are imported inside `run`), so `uxlab --version`, `--help`
and `inspect` start without scipy, pandas, textual or matplotlib
(`tests/test_cli_imports.py`).

Exit statuses, the same for every command (README, "Exit statuses"):

- 0: done.
- 1: done in part: some inputs were bad and were skipped or listed (`inspect`, `import`,
  `shape`, `replay`), a part of the report failed, `verify` found a mismatch, `record` had
  failed requests, `run` ended before the end of the study.
- 2: an input or usage error, said in one line (a mistyped option, a missing or bad file,
  an invalid study); nothing was done.
- 3: an internal error (a bug in uxlab): one line, `--debug` shows the traceback.
- 130: stopped with Ctrl+C.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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
    "withdraw": "withdraw_cmd",
    "report": "report_cmd",
    "record": "record_cmd",
    "serve": "serve_cmd",
    "simulate": "simulate_cmd",
    "plan": "plan_cmd",
    "invite": "invite_cmd",
    "host": "host_cmd",
    "demo": "demo_cmd",
    "completion": "completion_cmd",
}

EXIT_OK = 0
EXIT_PARTIAL = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130

EPILOG = (
    "exit status: 0 done, 1 done in part (some inputs bad, a report part failed, a mismatch), "
    "2 input or usage error, 3 internal error (--debug shows the traceback), 130 Ctrl+C"
)


class CliError(UxlabError):
    """An error to show the user as one line, with exit status 2."""


class Parser(argparse.ArgumentParser):
    """An argument parser that suggests the closest option, subcommand or choice."""

    def _check_value(self, action: argparse.Action, value: object) -> None:
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError:
            if action.choices is None or not isinstance(value, str):
                raise
            choices = [str(c) for c in action.choices]
            close = difflib.get_close_matches(value, choices, n=1)
            guess = f"; did you mean {close[0]!r}?" if close else ""
            raise argparse.ArgumentError(
                action, f"invalid choice: {value!r}{guess} (choose from {', '.join(choices)})"
            ) from None

    def unrecognized(self, extras: list[str]) -> None:
        """Exit with this parser's usage, naming `extras` and the options they resemble."""
        from uxlab.cli.hints import command

        options = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
        guesses = []
        for word in extras:
            if not word.startswith("-"):
                continue
            name = word.split("=", 1)[0]
            close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
            if close:
                guesses.append((name, close[0]))
        msg = f"unrecognized arguments: {' '.join(extras)}"
        if len(guesses) == 1:
            msg += f"; did you mean {guesses[0][1]}?"
        elif guesses:
            msg += "; did you mean " + ", ".join(f"{g} (for {w})" for w, g in guesses) + "?"
        self.error(f"{msg} (see {command(*self.prog.split()[1:], '--help')})")


class _Version(argparse.Action):
    """`--version`: the installed distribution's version, looked up only when asked."""

    def __init__(
        self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any
    ) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            text = version("uxlab")
        except PackageNotFoundError:  # run from a source tree that was never installed
            text = "unknown (not installed)"
        print(f"uxlab {text}")
        parser.exit()


def build_parser(only: str | None = None) -> Parser:
    """The `uxlab` parser with every subcommand, `--version` and `--debug`; with `only` (a
    command's name), that subcommand alone: a command's run loads no other's options."""
    parser = Parser(
        prog="uxlab",
        description="Perceived-latency UX testing: record, shape and play LLM streams; "
        "run studies; fit impatience thresholds.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action=_Version, help="print uxlab's version and exit")
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of an error (any command)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name, module_name in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(f"uxlab.cli.{module_name}").register(sub)
    for subparser in subparsers_of(parser):
        subparser.epilog = subparser.epilog or EPILOG
        subparser.add_argument(
            "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
        )
    return parser


def subparsers_of(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every parser under `parser` (subcommands and their subcommands)."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                found += [child, *subparsers_of(child)]
    return found


def _deepest_parser(parser: Parser, args: argparse.Namespace) -> Parser:
    """The parser of the (sub)subcommand that `args` came from, for its usage line."""
    current = parser
    while True:
        nested = [a for a in current._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, nested[0].dest, None) if nested else None
        if not nested or name not in nested[0].choices:
            return current
        current = nested[0].choices[name]


def main(argv: list[str] | None = None) -> int:
    """Run `uxlab ARGV`; returns the exit status (see the module docstring)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl+C while the commands' modules load: no traceback
        return EXIT_INTERRUPTED


def _command_named(argv: Sequence[str]) -> str | None:
    """The subcommand `argv` runs (its first word that is not an option, when it is one);
    None when the top-level help comes first (`uxlab --help inspect` lists every command)."""
    for word in argv:
        if word in ("-h", "--help"):
            return None
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def _main(argv: list[str] | None) -> int:
    completing = "_ARGCOMPLETE" in os.environ
    parser = build_parser(
        None if completing else _command_named(sys.argv[1:] if argv is None else argv)
    )
    if completing:  # a shell asks what can follow (`uxlab completion`)
        import argcomplete

        argcomplete.autocomplete(parser)  # prints the completions and exits
    args, extras = parser.parse_known_args(argv)
    if extras:
        _deepest_parser(parser, args).unrecognized(extras)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_INPUT
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:  # one line each; the traceback only on --debug
        if args.debug:
            traceback.print_exc()
        if _is_input_error(exc):
            print(f"uxlab {args.command}: {_one_line(exc)}", file=sys.stderr)
            return EXIT_INPUT
        how = "the traceback is above" if args.debug else "run with --debug for the traceback"
        what = _internal(exc) + _input_of(args)
        print(f"uxlab {args.command}: internal error: {what} ({how})", file=sys.stderr)
        return EXIT_INTERNAL


def _is_input_error(exc: BaseException) -> bool:
    """An error about the input or the environment the user can act on (exit status 2).

    uxlab's own errors (`UxlabError`), the operating system's (a missing file, a full disk),
    and the error classes of `analysis` and `pricing`: they subclass ValueError, since
    neither imports uxlab (`TrialTableError`, `PsychometricInputError`, `PriceSheetError`).
    """
    if isinstance(exc, UxlabError | OSError):
        return True
    cls = type(exc)
    return isinstance(exc, ValueError) and cls.__module__.split(".")[0] in STANDALONE_PACKAGES


STANDALONE_PACKAGES = ("analysis", "pricing")
"""Packages outside uxlab whose ValueErrors are input errors (exit status 2)."""


INPUT_ARGUMENTS = ("data", "db", "study", "file", "path", "paths", "input", "src", "corpus")
"""Names of the subcommands' input arguments, the first found named in an internal error."""


def _input_of(args: argparse.Namespace) -> str:
    """`, input FILE` for the command's input file or folder, or ""."""
    for name in INPUT_ARGUMENTS:
        value = getattr(args, name, None)
        if isinstance(value, list):
            value = " ".join(map(str, value)) if value else None
        if value:
            return f", input {value}"
    return ""


def _one_line(exc: BaseException) -> str:
    """A user-facing error as one line; an OSError as `FILE: what went wrong`."""
    if isinstance(exc, OSError) and not isinstance(exc, UxlabError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename is not None else ""
        return f"{where}{exc.strerror}"
    return str(exc)


def _internal(exc: BaseException) -> str:
    """`Type: message at file:line` of the innermost uxlab/analysis frame."""
    text = f"{type(exc).__name__}: {exc}".strip().rstrip(":")
    text = " ".join(text.split())
    root = Path(__file__).resolve().parents[2]
    ours = (root / "uxlab", root / "analysis")
    where = None
    for frame in traceback.extract_tb(exc.__traceback__):
        path = Path(frame.filename).resolve()
        if any(path.is_relative_to(package) for package in ours):
            where = f"{path.relative_to(root)}:{frame.lineno}"
    return f"{text} at {where}" if where else text


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
