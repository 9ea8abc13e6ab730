"""One output option across commands: every command that writes takes `-o/--out`; the old
`--output` of `shape` and `invite` still works and says so; the hint at exit names the file
to open (`report.html`), not a folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from uxlab.cli import build_parser, subparsers_of

REPO = Path(__file__).resolve().parents[1]
WRITERS = {"import", "shape", "record", "export", "report", "plan", "invite", "demo"}


def test_every_command_that_writes_takes_o_and_out_and_nothing_else():
    outs = {}
    for parser in subparsers_of(build_parser()):
        for action in parser._actions:
            names = set(action.option_strings)
            if names & {"-o", "--out", "--output"} and action.help != "==SUPPRESS==":
                outs[parser.prog.split()[-1]] = (sorted(names), action.dest)
    assert set(outs) == WRITERS
    assert all(v == (["--out", "-o"], "out") for v in outs.values()), outs


def test_the_old_output_spelling_still_works_and_says_so(tmp_path):
    out = tmp_path / "shaped"
    done = subprocess.run(
        [sys.executable, "-m", "uxlab", "shape", "replays/chat", "--output", str(out),
         "--ttft", "800"],
        cwd=REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "note: --output is now -o/--out" in done.stderr
    assert len(list(out.glob("*.jsonl"))) == len(list((REPO / "replays/chat").glob("*.jsonl")))
    missing = subprocess.run(
        [sys.executable, "-m", "uxlab", "shape", "replays/chat"],
        cwd=REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert missing.returncode == 2 and "-o/--out is required" in missing.stderr
    assert "--output" not in missing.stderr  # the old spelling is not advertised
