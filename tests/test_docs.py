"""The documentation site builds strictly, its CLI page matches the CLI, README lands a newcomer.

`mkdocs build --strict` fails on a broken link or anchor, a page missing from the nav, or a
mkdocstrings reference to a module that no longer exists; the site goes to a temporary
folder. The command-line page is generated from the parsers by a hook
(docs/hooks/cli_reference.py); here it is compared with what `uxlab <command> --help`
prints. README is the landing page: short, with the newcomer and test commands exactly as
CI runs them, and links that resolve. The trial-table reference names every column of
contract 2 as `trial_table_spec` lists them.
"""

from __future__ import annotations

import html
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import trial_table_spec
from uxlab.cli import COMMANDS, build_parser, main

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
NEWCOMER_COMMANDS = (
    "uv sync && uv run uxlab run studies/quickstart.toml",
    "uv sync && uv run uxlab demo",
    "uv sync --compile-bytecode && uv run pytest -q -n 4",
)


def page_text(path: Path) -> str:
    """The visible text of a built HTML page (tags removed, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


def cli_help(argv: list[str], capsys, monkeypatch) -> str:
    """What `uxlab ARGV --help` prints at the width the CLI page is generated at."""
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


def test_the_site_builds_strictly_and_its_cli_page_is_the_cli(tmp_path, capsys, monkeypatch):
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    problems = [line for line in built.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
    assert built.returncode == 0, "\n".join(problems) or built.stderr[-3000:]
    assert not problems, "\n".join(problems)

    cli_page = page_text(site / "reference" / "cli" / "index.html")
    for argv in [[], *([name] for name in COMMANDS), ["study", "check"]]:
        printed = cli_help(argv, capsys, monkeypatch)
        assert printed.strip() in cli_page, f"`uxlab {' '.join(argv)} --help` differs from cli.md"

    api = page_text(site / "reference" / "api" / "analysis" / "index.html")
    assert "load_trial_table" in api, "the analysis API page documents nothing"


def test_readme_is_a_short_landing_page_with_the_newcomer_commands():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250, "README is a landing page; move detail into docs/"
    fenced = re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    lines = {line.strip() for block in fenced for line in block.splitlines()}
    for command in NEWCOMER_COMMANDS:
        assert command in lines, f"README lost the command {command!r}"


def test_ci_runs_the_test_command_readme_gives():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert NEWCOMER_COMMANDS[-1] in ci.splitlines()


def test_readme_links_and_images_resolve():
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not re.match(r"^[a-z]+://", t)]
    assert "docs/images/trial-screen.svg" in local, "README shows the trial screen"
    missing = [t for t in local if not (REPO / t).exists()]
    assert not missing, f"README links to missing files: {missing}"


def test_the_trial_table_reference_lists_every_column_of_contract_2():
    page = (REPO / "docs" / "reference" / "trial-table.md").read_text(encoding="utf-8")
    section = page.split("## `trials.csv`", 1)[1].split("\n## ", 1)[0]
    documented = {
        name
        for row in section.splitlines()
        if row.startswith("| `")
        for name in re.findall(r"`([a-z0-9_]+)`", row.split("|")[1])
    }
    spec = set(trial_table_spec.names(trial_table_spec.COLUMNS))
    assert not spec - documented, f"trial-table.md does not describe {sorted(spec - documented)}"
    assert not documented - spec, f"trial-table.md describes unknown {sorted(documented - spec)}"


def test_the_readme_tour_is_commands_uxlab_accepts():
    text = README.read_text(encoding="utf-8")
    tour = text.split("## A tour", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    commands = [line.split("  #", 1)[0].strip() for line in tour.splitlines() if line.strip()]
    assert 5 <= len(commands) <= 12, "the tour is about ten lines"
    for command in commands:
        words = shlex.split(command)
        assert words[0] == "uxlab", command
        args, extras = build_parser().parse_known_args(words[1:])
        assert args.command and not extras, f"README's tour: uxlab does not take `{command}`"
