"""Where commands write by default: one rule for every command.

- What is made from a study file goes under `results/` in the current folder, named after
  the study's id: its database `results/<study id>.sqlite` (`run`, `simulate`, `host`,
  `invite`) and its plan `results/plan/<study id>/` (`plan`).
- What is made from a file goes beside it, named after it: `results/quickstart.sqlite`
  gives `results/quickstart-export/` and `results/quickstart-report/`; `lab.csv` gives
  `lab-report/`. A PostgreSQL database (`postgresql://.../lab`) gives `results/lab-export/`.
- What is made from a folder goes inside it: `uxlab report out/` writes `out/report/`, and
  `uxlab demo -o results/demo` writes `results/demo/export/` and `results/demo/report/`.
- Commands that write recordings (`import`, `shape`, `record`) have no default: `-o` names
  the corpus.

Every command that writes names its output with one option, `-o/--out` (`add_out_option`);
`--output`, the old spelling of `shape` and `invite`, is still accepted with a note.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


class _OldOutputSpelling(argparse.Action):
    """`--output`: stored as `-o/--out`, with a note on stderr (the old spelling)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        print(
            f"{parser.prog}: note: --output is now -o/--out (the same option in every command); "
            "--output still works",
            file=sys.stderr,
        )
        setattr(namespace, self.dest, values)


def add_out_option(
    parser: argparse.ArgumentParser,
    help: str,
    *,
    metavar: str = "OUT",
    type: Callable[[str], Any] | None = None,
    required: bool = False,
    old_spelling: bool = False,
    default: Any = None,
) -> None:
    """Add `-o/--out` (stored as `out`, `default` when not given); with `old_spelling`, also
    a hidden `--output`."""
    where: Any = parser
    if old_spelling and required:  # one of the two is required; the error names -o/--out
        where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "-o", "--out", dest="out", metavar=metavar, type=type, help=help,
        required=required and not old_spelling, default=default,
    )  # fmt: skip
    if old_spelling:
        where.add_argument(
            "--output", dest="out", metavar=metavar, type=type, help=argparse.SUPPRESS,
            action=_OldOutputSpelling,
        )  # fmt: skip


def output_for(source: str | Path, what: str) -> Path:
    """The default output folder of `what` ("export", "report") made from `source`."""
    from uxlab.store.dialect import database_stem, is_postgres

    if is_postgres(source):  # a shared PostgreSQL database: results/<database name>-<what>
        return Path("results") / f"{database_stem(str(source))}-{what}"
    source = Path(source)
    if source.is_dir():
        return source / what
    return source.with_name(f"{source.stem}-{what}")
