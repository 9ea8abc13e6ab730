"""`uxlab report` on simulated data: said to be simulated, every estimate beside the truth
stored with the sessions (report, terminal, thresholds.csv), and mixed real + simulated
data as a warning with the count of each kind."""

from __future__ import annotations

import csv
import json
import math
import shutil
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

import psychometric_function as pf
from analysis.report.truth_part import (
    SessionKinds,
    StoredTruth,
    TruthPart,
    covers,
    row_truth,
    session_kinds,
    truth_part,
)
from uxlab.cli import main

ROOT = Path(__file__).resolve().parents[1]
TRUTH = "threshold=900,width=1.0,between_sd=0.3,lapse=0.04,guess=0.03"


@pytest.fixture(scope="module")
def simulated_db(tmp_path_factory) -> Path:
    """8 simulated people on the quickstart study (15 main trials each), with a known truth."""
    db = tmp_path_factory.mktemp("sim") / "quick.sqlite"
    study = str(ROOT / "studies" / "quickstart.toml")
    assert main(["simulate", study, "-n", "8", "--db", str(db), "--truth", TRUTH]) == 0
    return db


def _stored(db: Path) -> dict[str, dict]:
    """participant -> the simulated_truth stored in that session's environment."""
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT participant, environment FROM sessions").fetchall()
    return {pid: json.loads(env).get("simulated_truth") for pid, env in rows}


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
def test_report_of_a_simulated_database_compares_every_estimate_with_the_truth(
    simulated_db, tmp_path, capsys
):
    out = tmp_path / "report"
    assert main(["report", str(simulated_db), "-o", str(out), "--n-boot", "30", "-q"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("SIMULATED PARTICIPANTS, NOT PEOPLE: all 8 participant(s)")
    assert (
        "'acceptable?' 50%" in printed
        and "per participant (each participant's own curve" in printed
    )

    md = (out / "report.md").read_text(encoding="utf-8").splitlines()
    assert md[0].endswith("(simulated participants)")
    assert md[2].startswith("> SIMULATED PARTICIPANTS, NOT PEOPLE")  # before any section
    text = "\n".join(md)
    for row in ("| threshold_ms | 900 |", "| width_log | 1.00 |", "| between_sd_log | 0.3 |"):
        assert row in text
    assert "| lapse | 0.04 |" in text and "| guess | 0.03 |" in text
    assert "## Simulated truth" in text and "Against the simulated truth:" in text
    # 8 people are enough for the pooled tails, but the quickstart's design is too thin:
    # the sample-support table says which rule withheld them, not "supported"
    assert "| enough participants; withheld here (5 answers a person a level" in text

    stored = _stored(simulated_db)
    truth = next(iter(stored.values()))
    rows = _rows(out / "thresholds.csv")
    pooled = [r for r in rows if r["measure"] == "psychometric" and r["group"] == "pooled"]
    assert len(pooled) == 3
    for r in pooled:  # the population's pooled point, as stored, and whether the CI holds it
        true_ms = truth["pooled_thresholds_ms"]["ttft_ms"][str(float(r["level"]))]
        assert float(r["true_value"]) == pytest.approx(true_ms, rel=1e-5)
        if r["withheld"]:  # the quickstart: 5 answers a person a level, too few for the tails
            assert r["level"] != "0.5" and r["estimate"] == r["covers_truth"] == ""
            assert r["withheld"].startswith("5 answers a person a level")
            continue
        inside = float(r["ci_low"]) <= float(r["true_value"]) <= float(r["ci_high"])
        assert r["covers_truth"] == str(inside)
        assert r["simulated_participants"] == r["n_participants"] == "8"
    own = [r for r in rows if r["estimand"] == "this participant"]
    assert {r["group"] for r in own} == set(stored)
    for r in own:  # each person's own point on their own curve
        person = stored[r["group"]]["participant"]["threshold_ms"]
        expected = pf.threshold_ms(float(r["level"]), person, 1.0)
        assert float(r["true_value"]) == pytest.approx(expected, rel=1e-5)
        assert r["simulated_participants"] == "1"
        if r["level"] == "0.5":  # the 25 / 75% points are withheld (measured biased)
            assert r["covers_truth"] in ("True", "False")
        else:
            assert r["estimate"] == "" and r["withheld"]  # why: biased, or separated
    rating = [r for r in rows if r["measure"] == "rating"]
    assert rating and all(r["true_value"] for r in rating)
    for r in (r for r in rows if r["measure"] == "abandonment"):  # no truth stored for these
        assert r["true_value"] == "" and r["covers_truth"] == ""


def test_one_simulated_person_gets_no_pooled_interval_and_the_report_says_so(tmp_path, capsys):
    # Below the population minimum no pooled interval is printed: the truth section says
    # so, not "0 of 0 pooled 95% intervals cover the true value".
    db = tmp_path / "one.sqlite"
    study = str(ROOT / "studies" / "quickstart.toml")
    assert main(["simulate", study, "-n", "1", "--db", str(db), "--truth", TRUTH]) == 0
    out = tmp_path / "report"
    assert main(["report", str(db), "-o", str(out), "--n-boot", "30", "-q"]) == 0
    capsys.readouterr()
    text = (out / "report.md").read_text(encoding="utf-8")
    truth = text.split("## Simulated truth", 1)[1].split("\n## ", 1)[0]
    assert "0 of 0" not in truth
    assert "No pooled 95% interval is printed for these data" in truth
    assert "| no interval |" in truth  # each estimate still stands beside its truth


def _mixed_copy(db: Path, tmp_path: Path) -> Path:
    """The simulated database with two sessions made real (flag off, no stored truth)."""
    mixed = tmp_path / "mixed.sqlite"
    shutil.copy(db, mixed)
    with sqlite3.connect(mixed) as con:
        con.execute(
            "UPDATE sessions SET simulated = 0, environment = '{}' "
            "WHERE participant IN ('SIM-s0-001', 'SIM-s0-002')"
        )
    return mixed


@pytest.mark.slow
def test_mixed_real_and_simulated_sessions_warn_with_the_counts(simulated_db, tmp_path, capsys):
    mixed = _mixed_copy(simulated_db, tmp_path)
    base = ["report", str(mixed), "--n-boot", "20", "-q", "--no-participant-fits"]
    assert main([*base, "-o", str(tmp_path / "real")]) == 0
    err = capsys.readouterr().err
    assert "WARNING: MIXED DATA. 2 real and 6 simulated participant(s) in the data" in err
    assert "every figure below is from the 2 real participant(s) only" in err
    md = (tmp_path / "real" / "report.md").read_text(encoding="utf-8")
    assert "WARNING: MIXED DATA. 2 real and 6 simulated" in md.splitlines()[2]
    assert "- MIXED DATA (real and simulated sessions): 2 real and 6 simulated" in md
    rows = _rows(tmp_path / "real" / "thresholds.csv")
    assert rows and {r["simulated_participants"] for r in rows} == {"0"}
    assert {r["true_value"] for r in rows} == {""} and {r["covers_truth"] for r in rows} == {""}

    assert main([*base, "-o", str(tmp_path / "both"), "--keep-simulated"]) == 0
    assert "2 real and 6 simulated analysed together" in capsys.readouterr().err
    md = (tmp_path / "both" / "report.md").read_text(encoding="utf-8").splitlines()
    assert md[0].endswith("(MIXED: real and simulated participants)")
    assert "neither a study of people nor a check against a truth" in md[2]
    pooled = [r for r in _rows(tmp_path / "both" / "thresholds.csv") if r["group"] == "pooled"]
    assert pooled and all(r["simulated_participants"] == "6" for r in pooled)
    assert all(r["true_value"] == "" for r in pooled)  # no truth for a mix


def test_real_data_have_no_banner_and_empty_truth_columns():
    trials = pd.DataFrame({"participant": ["a", "a", "b"], "simulated": [0, 0, 0]})
    kinds = session_kinds(trials, trials)
    assert (kinds.kind, kinds.banner()) == ("real", None)
    foreign = session_kinds(trials.drop(columns="simulated"), trials)  # another lab's table
    assert foreign.kind == "real" and foreign.real_in == 2
    row = {"measure": "psychometric", "group": "pooled", "level": 0.5, "condition": "all"}
    assert math.isnan(row_truth(TruthPart(kinds), {**row, "stimulus": "ttft_ms"}, None))


def test_session_kinds_count_each_kind_in_the_data_and_analysed():
    trials = pd.DataFrame(
        {"participant": ["r1", "r2", "s1", "s2", "s3"], "simulated": [0, 0, 1, 1, 1]}
    )
    kinds = session_kinds(trials, trials[trials["simulated"] == 0])
    assert (kinds.kind, kinds.analysed_kind) == ("mixed", "real")
    assert kinds.counts() == (
        "2 real and 3 simulated participant(s) in the data; only the 2 real analysed"
    )
    assert kinds.banner().startswith("WARNING: MIXED DATA.")


STORED = StoredTruth(
    population={"threshold_ms": 800.0, "width_log": 1.6, "guess": 0.02, "lapse": 0.05},
    pooled_ms={"ttft_ms": {0.25: 500.0, 0.5: 800.0, 0.75: 1250.0}},
    rating_ms={"speed": {0.5: 560.0}},
    own_threshold_ms={"SIM-1": 640.0, "SIM-2": 640.0},
    own_adaptive_ms={"SIM-2": 610.0},
)
PART = TruthPart(SessionKinds(simulated_in=1, simulated_kept=1), STORED)


def _row(**kw):
    base = {"measure": "psychometric", "stimulus": "ttft_ms", "group": "pooled", "level": 0.5}
    return {**base, "condition": "all", "estimand": "population", **kw}


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (_row(level=0.25), 500.0),  # the population's pooled point, as stored
        (_row(estimand="median-person", level=0.75), pf.threshold_ms(0.75, 800.0, 1.6)),
        (
            _row(group="SIM-1", estimand="this participant", level=0.25),
            pf.threshold_ms(0.25, 640.0, 1.6),
        ),
        (  # stored before the give-up point was: P(too slow), guess and lapse included
            _row(measure="adaptive", group="SIM-1", estimand="this session", level=0.6),
            pf.threshold_ms_at_psi(0.6, 640.0, 1.6, 0.02, 0.05),
        ),
        (  # stored since: "too slow" or a give-up, which the procedure counts as too slow
            _row(measure="adaptive", group="SIM-2", estimand="this session", level=0.5),
            610.0,
        ),
        (_row(measure="rating"), 560.0),
        (_row(measure="abandonment", level=0.1), math.nan),  # no truth stored
        (_row(condition="indicator=1"), math.nan),  # a curve per condition: none stored
        (_row(stimulus="itl_ms"), math.nan),  # not the cue the truth is about
        # the rating truth is the TTFT cue's too: a rating curve on ITL has none (it was
        # compared with it: "0 of 3 cover" on every itl-smoothness.toml pilot)
        (_row(measure="rating", stimulus="itl_ms"), math.nan),
    ],
)
def test_each_row_gets_the_truth_of_what_it_estimates(row, expected):
    got = row_truth(PART, row, "speed")
    assert (math.isnan(got) and math.isnan(expected)) or got == pytest.approx(expected)


def test_with_two_cues_no_stored_value_is_the_pooled_curves_truth():
    two = StoredTruth(
        STORED.population, {**STORED.pooled_ms, "median_gap_ms": {0.5: 70.0}}, STORED.rating_ms
    )
    part = TruthPart(PART.kinds, two)
    assert math.isnan(row_truth(part, _row(), None))
    assert math.isnan(row_truth(part, _row(measure="rating"), "speed"))  # judged on both


def test_covers_needs_a_truth_and_an_interval():
    assert covers(800.0, 700.0, 900.0) is True and covers(950.0, 700.0, 900.0) is False
    assert covers(800.0, math.nan, math.nan) is None and covers(math.nan, 1.0, 2.0) is None


def test_sessions_simulated_under_several_truths_are_not_compared():
    trials = pd.DataFrame({"participant": ["s1", "s2"], "simulated": [1, 1]})
    sessions = pd.DataFrame(
        {
            "participant": ["s1", "s2"],
            "env_simulated_truth_population_threshold_ms": [800.0, 1200.0],
            "env_simulated_truth_pooled_thresholds_ms_ttft_ms_0.5": [800.0, 1200.0],
        }
    )
    data = SimpleNamespace(table=SimpleNamespace(trials=trials, sessions=sessions), kept=trials)
    part = truth_part(data)
    assert part.truth is None and "2 different truths" in part.no_truth
    one = truth_part(
        SimpleNamespace(table=SimpleNamespace(trials=trials, sessions=sessions[:1]), kept=trials)
    )
    assert one.truth is not None and one.truth.pooled_ms == {"ttft_ms": {0.5: 800.0}}


def test_the_per_person_line_compares_medians_over_the_same_people_and_checks_brackets():
    """Two people with a point, two separated (a bracket, one holding the truth): the medians
    are over the two with a point, never every truth beside the few estimates."""
    from analysis.report.truth_part import own_estimates_line

    nan = math.nan
    group = pd.DataFrame(
        {
            "estimate": [500.0, 700.0, nan, nan],
            "ci_low": [400.0, 650.0, nan, nan],
            "ci_high": [600.0, 690.0, nan, nan],
            "true_value": [550.0, 800.0, 2000.0, 900.0],
            "bracket_low_ms": [nan, nan, 200.0, 200.0],
            "bracket_high_ms": [nan, nan, 1000.0, 1000.0],
        }
    )
    line = own_estimates_line(group)
    assert line.startswith("1 of 2 true thresholds inside their own 95% interval")
    assert "2 separated (a bracket, no point): the truth inside the bracket for 1 of 2" in line
    assert "over the 2 with a point estimate, median of their true values 675 ms" in line
    assert "of their estimates 600 ms" in line
    everyone = own_estimates_line(group.iloc[:2])
    assert "separated" not in everyone and "over all 2, median" in everyone
    only_brackets = own_estimates_line(group.iloc[2:])
    assert only_brackets == (
        "2 separated (a bracket, no point): the truth inside the bracket for 1 of 2"
    )  # no "0 of 0 inside their interval", no medians of nothing
    nothing = group.iloc[2:].assign(bracket_low_ms=nan, bracket_high_ms=nan)
    assert own_estimates_line(nothing) == "2 with neither a point nor a bracket"


def test_a_study_database_is_named_by_the_digest_of_its_trial_table(simulated_db, tmp_path):
    """Every export adds an audit row to the database file, so its file digest would differ
    between two reports of the same data: the report gives the exported trial table's,
    which `uxlab export` writes and records in the audit log."""
    import hashlib

    from uxlab.trial_tables import load_trial_table

    db = tmp_path / "copy.sqlite"
    shutil.copy(simulated_db, db)
    first, second = load_trial_table(db), load_trial_table(db)
    assert first.source_sha256 == second.source_sha256
    assert first.digest_of == "trial table (as exported)"
    assert main(["export", str(db), "-o", str(tmp_path / "export")]) == 0
    exported = hashlib.sha256((tmp_path / "export" / "trials.csv").read_bytes()).hexdigest()
    assert first.source_sha256 == exported
    with sqlite3.connect(db) as con:  # and the audit log holds it for each export
        audits = [json.loads(d)["files"]["trials"] for (d,) in con.execute(
            "SELECT detail FROM audit WHERE action = 'export'")]  # fmt: skip
    assert audits and set(audits) == {exported}


def test_the_adaptive_points_stored_with_the_sessions_are_the_adaptive_truths():
    from analysis.report.truth_part import median_person_at_psi

    trials = pd.DataFrame({"participant": ["s1", "s2"], "simulated": [1, 1]})
    sessions = pd.DataFrame(
        {
            "participant": ["s1", "s2"],
            "env_simulated_truth_population_threshold_ms": [800.0, 800.0],
            "env_simulated_truth_population_width_log": [1.6, 1.6],
            "env_simulated_truth_pooled_thresholds_ms_ttft_ms_0.5": [800.0, 800.0],
            "env_simulated_truth_adaptive_point_ms_ttft_ms": [777.0, 777.0],
            "env_simulated_truth_participant_adaptive_point_ms": [700.0, ""],
        }
    )
    data = SimpleNamespace(table=SimpleNamespace(trials=trials, sessions=sessions), kept=trials)
    part = truth_part(data)
    assert part.truth.adaptive_point_ms == {"ttft_ms": 777.0}
    assert part.truth.own_adaptive_ms == {"s1": 700.0}  # the empty one left out
    assert median_person_at_psi(part, "ttft_ms", 0.5) == 777.0
    row = _row(measure="adaptive", group="s1", estimand="this session")
    assert row_truth(part, row, None) == 700.0
    older = truth_part(  # simulated before the point was stored: P(too slow) alone
        SimpleNamespace(
            table=SimpleNamespace(trials=trials, sessions=sessions.iloc[:, :4]), kept=trials
        )
    )
    assert median_person_at_psi(older, "ttft_ms", 0.5) == pytest.approx(800.0)
