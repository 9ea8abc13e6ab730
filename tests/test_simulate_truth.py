"""`uxlab simulate --truth`: the population `uxlab plan --truth` takes, through one parser.

The end-to-end tests run the literal CLI (`uxlab simulate` then `uxlab report`) and check
that the report's pooled 50% threshold and its interval are those of
`benchmarks.support.realised.realised_thresholds`, the path benchmarks/plan_validation.py takes for
its realised side (it skips the report's other parts to save time).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from benchmarks.support.realised import ci_at, realised_thresholds
from uxlab.cli import main
from uxlab.simulate import PopulationTruth, TruthError, parse_truth
from uxlab.store.export import export_db

ROOT = Path(__file__).resolve().parents[1]
TRUTH = "threshold=1200,width=1.0,between_sd=0.5,lapse=0.06,guess=0.05"


def test_parse_truth_sets_the_named_fields_and_keeps_the_rest():
    t = parse_truth("threshold=1200ms,width=1.2,between_sd=0.4,lapse=0.05")
    assert (t.threshold_ms, t.width_log, t.between_sd_log, t.lapse) == (1200, 1.2, 0.4, 0.05)
    assert t.guess == PopulationTruth().guess and parse_truth(None) == PopulationTruth()


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("speed=3", "'speed=3': expected NAME=VALUE with NAME one of threshold, width"),
        ("threshold=", "'threshold=': expected NAME=VALUE"),
        ("threshold=x", "'threshold=x': 'x' is not a number"),
        ("threshold=800,lapse=0.7", "lapse=0.7: must be in [0, 0.5)"),
        ("between_sd=-0.1", "between_sd=-0.1: must be >= 0"),
        ("width=0", "width=0: must be > 0"),
        ("width=inf", "width=inf: must be a finite number"),
        ("attention_lapse=1.5", "attention_lapse=1.5: must be in [0, 1]"),
        ("itl_threshold=-5", "itl_threshold=-5: must be > 0"),
        ("threshold=800,threshold=900", "threshold is given twice"),
    ],
)
def test_parse_truth_names_the_item_at_fault(text, why):
    with pytest.raises(TruthError) as err:
        parse_truth(text)
    assert why in str(err.value) and "\n" not in str(err.value)


def test_bad_truth_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    study = str(ROOT / "studies" / "ttft-threshold.toml")
    assert main(["simulate", study, "-n", "1", "--db", str(db), "--truth", "lapse=0.7"]) == 2
    err = capsys.readouterr().err
    assert err == "uxlab simulate: --truth lapse=0.7: must be in [0, 0.5)\n"
    with pytest.raises(SystemExit) as out:  # argparse: the two ways to say the threshold
        main(["simulate", study, "--db", str(db), "--truth", "width=1", "--threshold-ms", "900"])
    assert out.value.code == 2
    assert "--threshold-ms: not allowed with argument --truth" in capsys.readouterr().err
    assert not db.exists()


def _fewer_repeats(study: str, repeats: int, tmp_path: Path) -> Path:
    """A copy of a shipped study with `[design] repeats` lowered (its corpus found as before)."""
    text = (ROOT / "studies" / study).read_text()
    corpus = f'corpus = "{(ROOT / "replays" / "chat").as_posix()}"'
    lines = [
        corpus if line.startswith("corpus = ") else line
        for line in text.splitlines()
        if not line.startswith("repeats = ")
    ]
    at = lines.index("[design]") + 1
    path = tmp_path / study
    path.write_text("\n".join([*lines[:at], f"repeats = {repeats}", *lines[at:]]) + "\n")
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    ("study_file", "repeats"), [("ttft-threshold.toml", 1), ("ttft-quest.toml", 5)]
)
def test_simulate_and_report_give_the_realised_path_s_interval(tmp_path, study_file, repeats):
    # One seed for the cohort (`simulate --seed`) and the report's bootstrap (`report
    # --seed`): realised_thresholds(seed=S) uses S for both.
    study, seed, n_boot = _fewer_repeats(study_file, repeats, tmp_path), 3, 60
    db, out = tmp_path / "s.sqlite", tmp_path / "report"
    argv = ["simulate", str(study), "-n", "5", "--seed", str(seed), "--truth", TRUTH]
    assert main([*argv, "--db", str(db)]) == 0
    assert main(["report", str(db), "--seed", str(seed), "--n-boot", str(n_boot),
                 "-o", str(out), "-q"]) == 0  # fmt: skip
    with open(out / "thresholds.csv", newline="") as fh:
        every = list(csv.DictReader(fh))
    rows = [
        r
        for r in every
        if (r["measure"], r["group"], r["condition"], r["level"], r["estimand"])
        == ("psychometric", "pooled", "all", "0.5", "population")
    ]
    assert len(rows) == 1
    truth = parse_truth(TRUTH)
    realised = ci_at(realised_thresholds(study, 5, repeats, truth, seed=seed, n_boot=n_boot))
    if "quest" in study_file:  # an adaptive design: the report withholds the model's point
        assert rows[0]["estimate"] == "" and "withheld" in rows[0]["withheld"]
        # and prints the median of the sessions' own estimates: the realised path's figure
        own = [float(r["estimate"]) for r in every if r["measure"] == "adaptive"]
        assert len(own) == 5 and realised[0] == pytest.approx(np.median(own), rel=1e-5)
        assert np.isnan(realised[1:]).all()  # 5 people: under the interval's minimum of 8
    else:
        cli = np.array([float(rows[0][k]) for k in ("estimate", "ci_low", "ci_high")])
        assert np.all(np.isfinite(cli)) and cli[1] < cli[0] < cli[2]
        assert cli == pytest.approx(realised, rel=1e-5)  # the CSV keeps 3 decimals
    # each session stores the truth it was simulated under, for the report's comparison
    export_db(db, tmp_path / "export")
    with open(tmp_path / "export" / "sessions.csv", newline="") as fh:
        sessions = list(csv.DictReader(fh))
    assert len(sessions) == 5
    for s in sessions:
        stored = {k: float(s[f"env_simulated_truth_population_{k}"]) for k in
                  ("threshold_ms", "width_log", "between_sd_log", "lapse", "guess")}  # fmt: skip
        assert stored == {"threshold_ms": 1200, "width_log": 1.0, "between_sd_log": 0.5,
                          "lapse": 0.06, "guess": 0.05}  # fmt: skip
