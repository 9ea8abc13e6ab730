"""A newcomer who types the docs' commands word for word never writes into the project's
own tracked folders (`replays/`, `studies/`, `tests/`...): every `-o/--out` in README and
the docs names a new folder, or one under the ignored `results/`."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = re.compile(r"uxlab [a-z-]+\b[^\n`]*?(?:\s-o|\s--out)[ =](\S+)")


def tracked_folders() -> set[str]:
    files = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    return {f.split("/", 1)[0] for f in files if "/" in f}


def test_no_documented_output_lands_in_a_tracked_folder():
    tracked = tracked_folders()
    assert {"replays", "studies", "tests"} <= tracked
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    found = []
    for page in pages:
        text = page.read_text(encoding="utf-8").replace("\\\n", " ")  # joined continuations
        for out in OUT.findall(text):
            found.append(out)
            top = out.strip("'\"").lstrip("./").split("/", 1)[0]
            assert top not in tracked, f"{page.relative_to(REPO)}: -o {out} writes into {top}/"
    assert len(found) > 20  # the pattern does find the docs' outputs
