"""Adaptive studies end to end: what `uxlab study check` says, what the export holds per
session, and what the report makes of it (simulated QUEST+ participants with a known truth).
"""

from __future__ import annotations

import re
from pathlib import Path

from uxlab.cli import main

REPO = Path(__file__).resolve().parents[1]
QUEST = REPO / "studies" / "ttft-quest.toml"


def _two_track_staircase(tmp_path: Path) -> Path:
    text = QUEST.read_text(encoding="utf-8")
    text = text.replace(
        'corpus = "../replays/chat"', f'corpus = "{(REPO / "replays/chat").as_posix()}"'
    )
    text = text.replace("[factors.ttft_ms]", "[factors]\nitl_ms = [20, 60]\n\n[factors.ttft_ms]")
    text = text.replace('procedure = "quest"', 'procedure = "staircase"\ndown = 3')
    text = text.replace("repeats = 20", "repeats = 6")
    path = tmp_path / "two-track.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_study_check_says_the_factor_is_adaptive(capsys):
    assert main(["study", "check", str(QUEST)]) == 0
    out = capsys.readouterr().out
    assert "Factor   ttft_ms (adaptive): QUEST+ on 25 log levels 100-5000 ms" in out
    assert "Conditions (" not in out  # the two bounds are not conditions
    assert "Adaptive tracks (1): ttft_ms is chosen trial by trial" in out
    assert "adaptive: ttft_ms by QUEST+ from the 'acceptable' answers" in out
    assert "on the 40 main trials (1 track)" in out
    rows = [line.split() for line in out.splitlines() if re.match(r"\s+\d+\s+\d+\s+\w", line)]
    kinds = {r[2]: r[3] for r in rows}
    assert kinds["main"] == "ttft_ms=?" and kinds["practice"] in ("ttft_ms=100", "ttft_ms=5000")
    m = re.search(
        r"Estimated duration: ([\d.]+) min .*\n  with ttft_ms at 707 ms \(mid-range\); "
        r"([\d.]+) min if all at 100, ([\d.]+) at 5000",
        out,
    )
    assert m is not None
    mid, low, high = map(float, m.groups())
    assert low <= mid <= high and low < high
    assert all(len(line) <= 80 for line in out.splitlines()[1:])


def test_study_check_lists_one_track_per_other_level(tmp_path, capsys):
    assert main(["study", "check", str(_two_track_staircase(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "1-up/3-down staircase on 25 log levels 100-5000 ms" in out
    assert "Adaptive tracks (2)" in out and "on the 24 main trials (2 tracks of 12)" in out
    track_rows = [line.split() for line in out.splitlines() if "adaptive" in line.split()[-3:]]
    assert [r[1] for r in track_rows] == ["20", "60"]
    assert "itl_ms=60&ttft_ms=?" in out or "itl_ms=20&ttft_ms=?" in out
