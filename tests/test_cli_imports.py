"""Each command imports only what it uses: `uxlab --version`, `--help`, a subcommand's
`--help` and `inspect` on a bundled replay start without scipy, pandas, textual or
matplotlib (`-X importtime` lists every module a process imports, as it imports it).
How long `uxlab --version` takes: docs/performance.md."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from uxlab.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("scipy", "pandas", "textual", "matplotlib")
REPLAY = ROOT / "replays" / "chat" / "chat-clarifying.jsonl"


def imported(*argv: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """The top-level packages `python -X importtime ARGV` imports, and how it ended."""
    cmd = [sys.executable, "-X", "importtime", *argv]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)
    names = [
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    ]
    return {name.split(".")[0] for name in names}, done


@pytest.mark.parametrize(
    "args",
    [("--version",), ("--help",), ("inspect", "--help"), ("inspect", str(REPLAY))],
    ids=["version", "help", "inspect-help", "inspect"],
)
def test_quick_commands_import_no_heavy_library(args):
    packages, done = imported("-m", "uxlab", *args)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "uxlab" in packages  # the listing is real: it names what did load
    assert packages.isdisjoint(HEAVY), f"uxlab {' '.join(args)} imported {packages & set(HEAVY)}"
    if args == ("inspect", str(REPLAY)):
        assert "chat-clarifying" in done.stdout  # it did inspect the replay


def test_every_subcommand_parser_is_built_without_heavy_libraries():
    """`uxlab --help` builds every subcommand's parser; a heavy import in any `register`
    (or at the top of a command's module) would show here."""
    code = (
        "import sys\n"
        "from uxlab.cli import build_parser\n"
        "build_parser()\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", done.stdout
    assert len(COMMANDS) >= 19  # every command was registered, not skipped


def test_a_heavy_library_would_be_seen():
    """The listing can fail the check: importing the shaping distributions, as the
    start-up did before, brings scipy and shows it."""
    packages, done = imported("-c", "import uxlab.shaping.distributions")
    assert done.returncode == 0 and "scipy" in packages
