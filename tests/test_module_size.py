"""No product module passes 600 lines: a longer one holds more than one idea, and is split
by idea (as `analysis.ratings` is into its summaries, its ordinal model and its acceptable
threshold). The shipped packages are read from pyproject.toml, so a new one is held too."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_LINES = 600


def shipped_packages() -> list[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    packages: list[str] = config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    return packages


def long_modules(root: Path, packages: list[str]) -> dict[str, int]:
    """Modules of `packages` under `root` longer than MAX_LINES, with their line counts."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            n_lines = len(path.read_text(encoding="utf-8").splitlines())
            if n_lines > MAX_LINES:
                found[path.relative_to(root).as_posix()] = n_lines
    return found


def test_no_product_module_passes_600_lines() -> None:
    packages = shipped_packages()
    assert {"uxlab", "analysis"} <= set(packages)
    assert long_modules(REPO, packages) == {}, "split these by idea"


def test_a_module_one_line_too_long_is_named(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "sub" / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "pkg" / "short.py").write_text("x = 1\n" * MAX_LINES)
    assert long_modules(tmp_path, ["pkg"]) == {"pkg/sub/long.py": MAX_LINES + 1}
