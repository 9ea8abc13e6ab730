"""The docs' sample outputs are what the commands print today on the bundled corpus.

A block of sample output is marked `<!-- sample-of: COMMAND -->` on the line before it. The
command runs from the project folder, as a reader runs it (80 columns), and every line of
the sample (`...` stands for lines left out) must be in its output, in the same order.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MARK = re.compile(r"^<!-- sample-of: (.+?) -->\s*$")


def _samples() -> list[tuple[str, str, list[str]]]:
    found = []
    for page in sorted((REPO / "docs").rglob("*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            mark = MARK.match(line)
            if mark and i + 1 < len(lines) and lines[i + 1].startswith("```"):
                end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
                where = f"{page.relative_to(REPO)}:{i + 1}"
                found.append((where, mark.group(1), lines[i + 2 : end]))
    return found


SAMPLES = _samples()


def test_the_pages_have_samples():
    assert len(SAMPLES) >= 2


@pytest.mark.parametrize("where,command,sample", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_sample_output_matches_the_command(where, command, sample):
    words = command.split()
    assert words[0] == "uxlab", f"{where}: a sample of a uxlab command"
    env = {**os.environ, "COLUMNS": "80"}
    proc = subprocess.run(
        [sys.executable, "-m", "uxlab", *words[1:]],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    at = 0
    for line in sample:
        if line.strip() == "...":
            continue
        assert line in out[at:], f"{where}: {line!r} is not in the output of {command!r} now"
        at = out.index(line, at) + 1
