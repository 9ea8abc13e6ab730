"""The package layers hold: `lint-imports` checks the contracts in pyproject.toml.

Layers (cli on top, the streams and leaf modules at the bottom), only `uxlab.tui` imports
textual, `analysis` never imports `uxlab`, only the CLI, planning and the trial-table reader
import `analysis`, no import cycles between sibling packages. A break prints the import
chain that breaks it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}  # the packages under `root` are checked
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_import_contracts_are_kept() -> None:
    result = _lint_imports(REPO)
    report = result.stdout.partition("Broken contracts")[2] or result.stdout
    assert result.returncode == 0, report + result.stderr


def test_a_domain_module_importing_the_tui_breaks_the_layers(tmp_path) -> None:
    for name in ("uxlab", "analysis", "trial_table_spec", "psychometric_function"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    with (tmp_path / "uxlab" / "store" / "lease.py").open("a") as fh:
        fh.write("\nfrom uxlab.tui import study_app  # noqa\n")
    result = _lint_imports(tmp_path)
    assert result.returncode == 1
    assert "uxlab.store is not allowed to import uxlab.tui" in result.stdout
    assert "uxlab.store.lease -> uxlab.tui.study_app" in result.stdout
