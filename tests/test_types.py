"""The whole product type-checks: `mypy` with the `[tool.mypy]` config in pyproject.toml.

Every package the wheel ships is checked with `strict = true`; what it imports from
third-party libraries without type information is read as untyped (the overrides). An
error prints as `file:line: error: ... [code]`. The cache is the project's `.mypy_cache`
(what `uv run mypy` uses too).
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MYPY = Path(sys.executable).with_name("mypy")


def test_the_whole_product_is_checked_strictly() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    mypy = config["tool"]["mypy"]
    shipped = set(config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"])
    checked = set(mypy.get("packages", [])) | set(mypy.get("modules", []))
    assert mypy.get("strict") is True
    assert not shipped - checked, (
        f"shipped but left out of [tool.mypy]: {sorted(shipped - checked)}"
    )


def test_the_product_type_checks() -> None:
    result = subprocess.run(
        [str(MYPY), "--cache-dir", str(REPO / ".mypy_cache")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
