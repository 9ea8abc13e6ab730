"""`uxlab demo` and `uxlab simulate` as a user runs them: output, files, and the truth check."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from uxlab.cli import main

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_demo_writes_the_report_and_recovers_the_truth(tmp_path, capsys):
    out = tmp_path / "demo"
    # 10 people (one fails the attention checks): at least 8 for population intervals
    assert main(["demo", "-o", str(out), "--participants", "10", "--n-boot", "100"]) == 0
    text = capsys.readouterr().out
    assert (out / "report" / "report.html").is_file()
    assert (out / "report" / "thresholds.csv").is_file()
    assert (out / "export" / "trials.csv").is_file()
    assert f"report: {out / 'report' / 'report.html'}" in text
    rows = {}
    for line in text.splitlines():
        m = re.match(r"(.+?%)\s+(\d+)\s+(\d+)\s+\[(\d+), (\d+)\]\s+(yes|NO)$", line)
        if m:
            rows[m.group(1).strip()] = m.groups()[1:]
    assert {  # the report's comparison (analysis.report.truth_part), as uxlab report prints it
        "'acceptable?' 25%",
        "'acceptable?' 50%",
        "'acceptable?' 75%",
        "rating acceptable 50%",
    } <= set(rows)
    # the median person's points withheld (as measured: biased with a skewed spread)
    assert re.search(r"'acceptable\?' \(median-person\) 50%\s+800\s+–\s+withheld\s+–", text)
    true_ms, _est, low, high, inside = rows["'acceptable?' 50%"]
    assert true_ms == "800" and int(low) <= 800 <= int(high) and inside == "yes"
    assert re.search(r"done in \d+\.\d s", text)
    # what the demo's summary says after "SIMULATED data": never a finding about people
    md = (out / "report" / "report.md").read_text(encoding="utf-8")
    summary = md[md.index("SIMULATED data") :].split("\n## ", 1)[0]
    assert " people " not in summary and "people's" not in summary.split("\n", 1)[1]
    assert "per participant (each participant's own curve" in text


@pytest.mark.slow
def test_simulate_command_stores_simulated_sessions(tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    study = str(REPO / "studies" / "ttft-quest.toml")
    assert main(["simulate", study, "-n", "2", "--db", str(db), "--seed", "5"]) == 0
    text = capsys.readouterr().out
    assert "SIM-s5-001: 44 trials" in text and "simulated 2 participant(s)" in text
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT simulated, state, adaptive IS NOT NULL FROM sessions").fetchall()
    assert rows == [(1, "completed", 1), (1, "completed", 1)]
    # the same ids again (a rerun, e.g. after a kill): kept as they are, nothing overwritten
    assert main(["simulate", study, "-n", "1", "--db", str(db), "--seed", "5"]) == 0
    assert "SIM-s5-001: already completed by an earlier run, kept" in capsys.readouterr().out
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT COUNT(*) FROM sessions").fetchone() == (2,)


def test_simulate_rejects_bad_arguments(tmp_path, capsys):
    study = str(REPO / "studies" / "ttft-threshold.toml")
    assert main(["simulate", study, "-n", "0", "--db", str(tmp_path / "x.sqlite")]) == 2
    assert "--participants 0: need at least 1" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_on_the_quest_study_checks_each_sessions_own_estimate(tmp_path, capsys):
    study = str(REPO / "studies" / "ttft-quest.toml")
    # 8 people: the minimum for the interval of the median
    argv = ["demo", "--study", study, "-o", str(tmp_path), "-n", "8", "--n-boot", "50"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    m = re.search(r"QUEST\+ median 50%\s+(\d+)\s+(\d+)\s+\[(\d+), (\d+)\]\s+(yes|NO)", text)
    # the truth: the median person's point where "too slow" or a give-up (which QUEST+
    # counts as too slow) reaches 50%, below the 800 ms where "too slow" alone does
    assert m is not None and 720 < int(m.group(1)) < 800
    low, high = int(m.group(3)), int(m.group(4))
    assert low <= int(m.group(2)) <= high
    hits = re.search(
        r"per participant \(each session's own procedure[^)]*\): (\d+) of (\d+) true "
        "thresholds inside",
        text,
    )
    assert hits is not None and int(hits.group(2)) >= 7  # 95% intervals, 8 people
    assert int(hits.group(1)) >= int(hits.group(2)) - 1
    assert re.search(r"median of their true values \d+ ms, of their estimates", text)
