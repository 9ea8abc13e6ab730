"""Other labs' tables (PsychoPy- and jsPsych-style CSVs) analysed end to end by `uxlab report`.

The fixtures are made by tests/data/other_labs/make_other_lab_tables.py with each tool's
conventions: loop counters, key names for answers, seconds, instruction rows without a
stimulus, JSON cells. The simulated population's 50% point is 1,400 ms.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from uxlab.cli import main

DATA = Path(__file__).parent / "data" / "other_labs"
PSYCHOPY = [
    "report",
    str(DATA / "psychopy_latency.csv"),
    "--stimulus",
    "delay_s",
    "--judgement",
    "key_resp.keys",
    "--yes",
    "j",
    "--rating",
    "slider.response",
    "--measure",
    "ttft",
    "--judgement-kind",
    "acceptability",
]
JSPSYCH = [
    "report",
    str(DATA / "jspsych_latency.csv"),
    "--participant",
    "subject",
    "--stimulus",
    "delay",
    "--stimulus-unit",
    "ms",
    "--judgement",
    "response",
    "--yes",
    "y",
    "--measure",
    "ttft",
]


def _run(argv, out: Path, capsys) -> tuple[pd.DataFrame, str]:
    assert main([*argv, "-o", str(out), "--n-boot", "100", "-q"]) == 0
    printed = capsys.readouterr().out
    return pd.read_csv(out / "thresholds.csv"), printed


@pytest.mark.slow
@pytest.mark.parametrize("argv", [PSYCHOPY, JSPSYCH], ids=["psychopy", "jspsych"])
def test_other_lab_table_gives_a_report_with_no_undeclared_factor(argv, tmp_path, capsys):
    thresholds, printed = _run(argv, tmp_path / "r", capsys)
    # instruction / thanks rows are dropped with a count, not analysed as trials
    assert "240 trials from 8 participants; stimulus ttft_ms" in printed
    assert "row(s) without a value in the stimulus column" in printed
    # the only factor is the stimulus: no loop counter, key, rt or rating became one
    assert "note: Design factors: ttft_ms (from the stimulus only" in printed
    assert set(thresholds["condition"]) == {"all"}
    assert set(thresholds["stimulus"]) == {"ttft_ms"}
    pooled = thresholds[(thresholds.group == "pooled") & (thresholds.measure == "psychometric")]
    mid = pooled.set_index("level").loc[0.5]
    assert 1000 < mid.estimate < 2000  # simulated population: 1,400 ms
    assert mid.ci_low < 1400 < mid.ci_high and mid.ci_high / mid.ci_low > 1.1
    report = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    for bookkeeping in ("thisN", "key_resp.rt", "trial_index", "time_elapsed", "rt="):
        assert bookkeeping not in report


@pytest.mark.slow
def test_psychopy_seconds_keys_and_rating_are_said(tmp_path, capsys):
    thresholds, printed = _run(PSYCHOPY, tmp_path / "r", capsys)
    assert "16 row(s) without a value in the stimulus column 'delay_s'" in printed
    assert "read as seconds, converted to ms (its name ends _s)" in printed
    assert "'j' means yes (1); 'f' means no (0)" in printed
    assert "rating" in set(thresholds["measure"])  # an unprefixed rating column is used
    assert thresholds["estimate"].min() > 100  # seconds were not read as ms


def test_psychopy_keys_without_yes_name_the_option_and_the_file_row(tmp_path, capsys):
    argv = [a for a in PSYCHOPY if a not in ("--yes", "j")]
    assert main([*argv, "-o", str(tmp_path / "r"), "--n-boot", "20", "-q"]) == 1
    err = capsys.readouterr().err
    # data row 5 of the file (the instructions row 1 was dropped, the row number was kept)
    assert "row 5 column 'key_resp.keys': 'j' is not 0/1" in err and "--yes VALUE" in err


@pytest.mark.slow
def test_a_stimulus_without_a_measure_says_it_is_not_compared(tmp_path, capsys):
    argv = [a for a in JSPSYCH if a not in ("--measure", "ttft")]
    _, printed = _run(argv, tmp_path / "r", capsys)
    assert "stimulus 'delay' is not a measure the published figures name" in printed
    assert "--measure ttft|itl|e2e" in printed


def test_an_unknown_factor_column_is_an_input_error(tmp_path, capsys):
    argv = [*JSPSYCH, "--factor", "colour", "-o", str(tmp_path / "r"), "-q"]
    assert main(argv) == 2
    assert "column 'colour': no such column (--factor colour" in capsys.readouterr().err
