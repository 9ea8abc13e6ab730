"""Invitation codes are secrets: every `$ uxlab invite ... -o FILE` command in the docs
writes FILE inside a folder that .gitignore lists, so a reader following the guide never
commits the codes with the study."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
INVITE_OUTPUT = re.compile(r"^\$ (?:uv run )?uxlab invite [^\n]*?(?:-o|--output) (\S+)", re.M)


def test_every_documented_invitation_file_is_in_an_ignored_folder():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    outputs = {
        m.group(1) for page in pages for m in INVITE_OUTPUT.finditer(page.read_text("utf-8"))
    }
    assert outputs, "the guides show `uxlab invite -o FILE`"
    ignored = {line.strip() for line in (ROOT / ".gitignore").read_text("utf-8").splitlines()} & {
        "results/"
    }
    assert ignored == {"results/"}, ".gitignore keeps results/ out of git"
    outside = {o for o in outputs if not o.startswith("results/")}
    assert not outside, f"invitation files outside results/ (not ignored by git): {outside}"
