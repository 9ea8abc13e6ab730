"""Running `uxlab` in the test process: the exit status whether `main` returns or argparse
exits, with what it printed."""

from __future__ import annotations

from uxlab.cli import main


def exits(argv: list, capsys) -> tuple[int, str, str]:
    """`main(argv)` whether it returns or argparse exits; (status, stdout, stderr)."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return int(code or 0), out, err
