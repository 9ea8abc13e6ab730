"""The strict core type-checks: `mypy` with the `[tool.mypy]` config in pyproject.toml.

The core (streams, shaping, the player, chains, the session and the small modules they
need) is checked with `strict = true`; what it imports from elsewhere is read for its types
but not reported. An error prints as `file:line: error: ... [code]`. The cache is the
project's `.mypy_cache` (what `uv run mypy` uses too): a few seconds cold, about one warm.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MYPY = Path(sys.executable).with_name("mypy")

CORE = {
    "uxlab.streams",
    "uxlab.shaping",
    "uxlab.player",
    "uxlab.kinds",
    "uxlab.session",
    "uxlab.clock",
    "uxlab.errors",
    "uxlab.fidelity",
    "uxlab.outcomes",
    "uxlab.reading",
    "uxlab.timing_check",
    "uxlab.tui",
    "uxlab.host",
    "uxlab.simulate",
    "uxlab",
    "uxlab.__main__",
    "uxlab.command_hint",
    "uxlab.environment",
    "uxlab.machine",
    "uxlab.trial_tables",
    "uxlab.wrapping",
    "uxlab.study",
    "uxlab.plan",
    "uxlab.cli",
    "analysis.trial_table",
    "analysis.exclusions",
    "analysis.score",
    "analysis.chains",
    "analysis.report",
    "number_text",
}
"""Modules and packages that must stay in the strict list (more may join)."""


def test_the_core_is_checked_strictly() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    checked = set(config.get("packages", [])) | set(config.get("modules", []))
    assert config.get("strict") is True
    assert not CORE - checked, f"left out of [tool.mypy]: {sorted(CORE - checked)}"


def test_the_core_type_checks() -> None:
    result = subprocess.run(
        [str(MYPY), "--cache-dir", str(REPO / ".mypy_cache")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
