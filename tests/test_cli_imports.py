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


def test_a_command_loads_no_other_commands_options():
    """`uxlab inspect` builds its own parser only: no other command's module is imported
    (`record` alone brings the live client's names for its choices)."""
    code = (
        "import contextlib, io, sys\n"
        "from uxlab.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main(['inspect', {str(REPLAY)!r}])\n"
        "print(code, sorted(m for m in sys.modules if m.startswith('uxlab.cli.')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    code, loaded = done.stdout.split(" ", 1)
    assert code == "0", done.stderr[-2000:]
    assert "'uxlab.cli.inspect_cmd'" in loaded
    others = [f"'uxlab.cli.{module}'" for name, module in COMMANDS.items() if name != "inspect"]
    assert not [m for m in others if m in loaded], loaded


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


def test_export_imports_no_heavy_library(tmp_path, capsys):
    """The store loads every trial kind, and with them shaping and the live client: scipy
    (the shaping's draws) and httpx (a live trial's request) come only when a trial is
    shaped or asks a model, so `export` starts without them (`verify`, which shapes every
    trial again, imports scipy when it does)."""
    from uxlab.cli import main

    db = tmp_path / "study.sqlite"
    study = ROOT / "studies" / "quickstart.toml"
    assert main(["simulate", str(study), "-n", "1", "--db", str(db)]) == 0
    capsys.readouterr()
    packages, done = imported("-m", "uxlab", "export", str(db), "-o", str(tmp_path / "export"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "uxlab" in packages and (tmp_path / "export" / "trials.csv").is_file()
    heavy = packages & {*HEAVY, "httpx"}
    assert not heavy, f"uxlab export imported {heavy}"


def test_a_heavy_library_would_be_seen():
    """The listing can fail the check: drawing a shaped gap brings scipy and shows it."""
    code = "from uxlab.shaping import Dist; Dist.make('gamma', mean=30.0, cv=0.5).median()"
    packages, done = imported("-c", code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "scipy" in packages
