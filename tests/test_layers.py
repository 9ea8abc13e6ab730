"""The package layers hold: `lint-imports` checks the contracts in pyproject.toml.

Layers (cli on top, the streams and leaf modules at the bottom), only `uxlab.tui` imports
textual, `analysis` never imports `uxlab`, only the CLI and planning import `analysis`, no
import cycles between sibling packages. A break prints the import chain that breaks it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint_imports), "--no-cache"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = result.stdout.partition("Broken contracts")[2] or result.stdout
    assert result.returncode == 0, report + result.stderr
