"""The report at every sample size: 1, 2 and 3 participants (one excluded) through the real
simulate -> export -> report path, what a small sample can support, extrapolated and
degenerate flags, failures of one part, simulated sessions and session facts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from analysis_fixtures import Truth, simulate_trial_table, write_export_folder

from analysis.ratings import OrdinalLatencyFitter, rating_summary
from analysis.report import ReportOptions, analyse, write_report
from analysis.report.support import estimate_flags
from analysis.trial_table import load_trial_table
from number_text import duration
from uxlab.cli import main

QUICKSTART = Path(__file__).parents[1] / "studies" / "quickstart.toml"


def _simulated_export(tmp: Path, n: int, exclude_last: bool) -> Path:
    """`uxlab simulate` + `uxlab export` of the quickstart; the last participant fails every
    attention check when asked (edited in the exported trials.csv, as a lapse would be)."""
    db = tmp / "quick.sqlite"
    assert main(["simulate", str(QUICKSTART), "-n", str(n), "--db", str(db), "--seed", "3"]) == 0
    folder = tmp / "export"
    assert main(["export", str(db), "-o", str(folder)]) == 0
    if exclude_last:
        trials = pd.read_csv(folder / "trials.csv", dtype={"participant": str})
        last = sorted(trials["participant"].unique())[-1]
        checks = (trials["participant"] == last) & (trials["attention_check"] == 1)
        assert checks.any()
        trials.loc[checks, "attention_ok"] = 0
        trials.to_csv(folder / "trials.csv", index=False)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 2, 3])
def test_one_two_three_participants_one_excluded_write_a_report(tmp_path, capsys, n):
    folder = _simulated_export(tmp_path, n, exclude_last=True)
    capsys.readouterr()
    out = tmp_path / "report"
    argv = ["report", str(folder), "-o", str(out), "--n-boot", "60", "-q"]
    rc = main(argv)
    printed = capsys.readouterr()
    assert "Traceback" not in printed.err + printed.out
    if n == 1:  # nothing left: each rule that excluded, what it took, the option to change it
        assert rc == 1  # done in part: no threshold, which a script must not take for success
        assert "every trial was excluded" in printed.err
        assert "attention checks 0% passed" in printed.err
        assert "1 participant(s) (SIM-s3-001)" in printed.err
        assert "--min-attention SHARE" in printed.err
        md = (out / "report.md").read_text(encoding="utf-8")  # and a report that says so
        assert md.split("\n## ")[1].startswith("What this sample can support")
        assert "Every trial was excluded" in md and "--min-attention SHARE" in md
        # the crash of the issue: one participant, clustered ordinal model
        assert main([*argv, "--min-attention", "0"]) == 0
        printed = capsys.readouterr()
        assert "Traceback" not in printed.err
    else:
        assert rc == 0, printed.err
    md = (out / "report.md").read_text(encoding="utf-8")
    assert md.split("\n## ")[1].startswith("What this sample can support")
    assert "(simulated participants)" in md.splitlines()[0]
    assert "runs from 8 participants" in md
    refs = md[md.index("**Reference comparison**") :]
    assert "| below |" not in refs and "| above |" not in refs and "| inside |" not in refs
    assert "not enough data (N = " in refs
    # the summary counts every figure of the table, those this study did not measure too
    table = [line for line in refs.split("\n\n")[1].splitlines() if line.startswith("|")]
    n_figures = len(table) - 2  # below the header and its rule
    summary = md[md.index("## Summary") : md.index("**Reference comparison**")]
    assert f"Of {n_figures} published figures, none could be placed" in summary
    if n > 1:
        assert "SIM-s3-00" in md and "attention checks 0% passed" in md
        assert "change with --min-attention SHARE" in md


def test_two_participants_flag_extrapolations_and_give_no_verdict(tmp_path):
    """Thresholds around 3 s tested at 0.2-0.8 s: the pooled 50% point is an extrapolation."""
    trials = simulate_trial_table(
        n_participants=2,
        ttft_levels=(200, 300, 500, 800),
        reps=4,
        seed=2,
        truth=Truth(threshold_ms=3000.0),
        failing_participant=False,
    )
    folder = write_export_folder(tmp_path / "export", trials)
    data = analyse(load_trial_table(folder), ReportOptions(n_boot=60))
    paths = write_report(data, tmp_path / "out")
    table = pd.read_csv(paths["thresholds"], dtype={"group": str})
    pooled = table[
        (table.measure == "psychometric") & (table.group == "pooled") & (table.condition == "all")
    ]
    assert pooled.set_index("level").loc[0.5, "extrapolated"]
    assert pooled["ci_low"].isna().all()  # no population interval with 2 people
    abandonment = table[table.measure == "abandonment"]  # trials treated as independent
    assert not abandonment.empty and (abandonment.estimand == "these participants").all()
    assert set(data.references["verdict"]) & {"inside", "below", "above"} == set()
    md = paths["markdown"].read_text(encoding="utf-8")
    summary = md[md.index("## Summary") : md.index("## The study")]
    assert "outside the tested levels" in summary and "not a finding" in summary
    assert "the pooled 50% threshold is" not in summary
    assert "| extrapolated" in md


def test_a_cohort_above_the_minimum_still_gets_verdicts(tmp_path):
    trials = simulate_trial_table(n_participants=15, reps=2, seed=8)  # the last one fails
    data = analyse(
        load_trial_table(write_export_folder(tmp_path / "e", trials)),
        ReportOptions(n_boot=100, per_participant=False),
    )
    n = data.n_participants
    assert 8 <= n <= 14
    verdicts = set(data.references["verdict"])
    assert verdicts & {"inside", "overlaps", "below", "above"}
    judged = data.references[
        data.references["verdict"].isin(["inside", "overlaps", "below", "above"])
    ]
    assert (judged["n_participants"] == n).all()
    # only the MOS interval, which reaches 0.93 coverage from 16 participants, is skipped
    assert [line.split(":")[0] for line in data.skipped] == [
        "MOS intervals (participant jackknife-t)"
    ]
    table = pd.read_csv(write_report(data, tmp_path / "out")["thresholds"], dtype={"group": str})
    abandonment = table[table.measure == "abandonment"]  # participant-clustered intervals
    assert not abandonment.empty and (abandonment.estimand == "population").all()


@pytest.mark.slow
def test_a_failing_part_is_named_and_the_rest_is_written(tmp_path, capsys, monkeypatch):
    import analysis.report.build as build

    def broken(data):
        raise RuntimeError("survival exploded\nsecond line")

    monkeypatch.setattr(build, "abandonment_part", broken)
    path = tmp_path / "t.csv"
    simulate_trial_table(n_participants=4, reps=1, seed=1).to_csv(path, index=False)
    rc = main(["report", str(path), "-o", str(tmp_path / "r"), "--n-boot", "40", "-q"])
    err = capsys.readouterr().err
    assert rc == 1
    assert "part failed: abandonment: RuntimeError: survival exploded" in err
    assert "second line" not in err and "Traceback" not in err
    md = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert "abandonment: RuntimeError: survival exploded" in md
    assert "## Psychometric thresholds" in md and "## Ratings" in md


@pytest.mark.slow
def test_real_and_simulated_sessions(tmp_path):
    trials = simulate_trial_table(n_participants=6, reps=1, seed=4, failing_participant=False)
    trials.loc[trials["participant"].isin(["P-000", "P-001"]), "simulated"] = 0
    folder = write_export_folder(tmp_path / "e", trials)
    from analysis.exclusions import ExclusionRules

    lenient = ExclusionRules(min_attention_accuracy=0.0)
    options = ReportOptions(n_boot=40, per_participant=False, rules=lenient)
    data = analyse(load_trial_table(folder), options)
    assert set(data.kept["participant"]) == {"P-000", "P-001"}
    assert data.exclusions.simulated == "excluded"
    md = write_report(data, tmp_path / "o")["markdown"].read_text(encoding="utf-8")
    assert "are left out (use --keep-simulated" in md
    assert "simulated" not in md.splitlines()[0].lower()
    rules = ExclusionRules(min_attention_accuracy=0.0, keep_simulated=True)
    keep = ReportOptions(n_boot=40, per_participant=False, rules=rules)
    assert analyse(load_trial_table(folder), keep).n_participants == 6


@pytest.mark.slow
def test_session_facts_from_sessions_runs_and_resize_events(tmp_path):
    trials = simulate_trial_table(n_participants=2, reps=1, seed=4, failing_participant=False)
    trials.loc[3, "outcome"] = "interrupted"
    trials["rerun_of"] = np.nan
    trials.loc[int((trials["session_id"] == "S-000").sum()) - 1, "rerun_of"] = 3  # its re-run
    folder = write_export_folder(tmp_path / "e", trials)
    sessions = pd.read_csv(folder / "sessions.csv")
    sessions["resumed_count"] = [1, 0]
    sessions["env_timing_warnings"] = ["running inside tmux: it repaints", ""]
    sessions.to_csv(folder / "sessions.csv", index=False)
    runs = pd.DataFrame(
        {
            "session_id": ["S-000", "S-000", "S-001"],
            "participant": ["P-000", "P-000", "P-001"],
            "run": [0, 1, 0],
            "kind": ["start", "resume", "start"],
            "env_columns": [100, 90, 80],
            "env_rows": [30, 28, 24],
        }
    )
    runs.to_csv(folder / "runs.csv", index=False)
    events = pd.DataFrame(
        {
            "session_id": ["S-000", "S-000", "S-001", "S-001"],
            "trial_index": [2, 2, 0, -1],
            "t_ms": [10.0, 20.0, 5.0, 0.0],
            "kind": ["chunk", "resize", "send", "terminal"],
            "data": [
                "{}",
                json.dumps({"cols": 120, "rows": 40}),
                "{}",
                json.dumps({"cols": 60, "rows": 20, "resumed": False}),
            ],
        }
    )
    events.to_csv(folder / "events.csv", index=False)
    data = analyse(load_trial_table(folder), ReportOptions(n_boot=20, per_participant=False))
    facts = data.sessions.set_index("participant")
    assert facts.loc["P-000", "runs"] == "2"
    assert facts.loc["P-000", "terminal at start"] == "100x30"
    assert facts.loc["P-000", "resizes"] == "120x40"
    assert facts.loc["P-000", "interrupted trials"] == 1
    assert facts.loc["P-000", "re-run at the end"] == 1
    assert "tmux" in facts.loc["P-000", "timing warnings"]
    assert facts.loc["P-001", "resizes"] == "none"
    assert facts.loc["P-001", "terminal at start"] == "60x20"  # the `terminal` event wins
    md = write_report(data, tmp_path / "o")["markdown"].read_text(encoding="utf-8")
    assert "## Sessions" in md and "1 analysed session(s) were resumed" in md


def test_session_facts_tolerate_a_bare_csv(tmp_path):
    path = tmp_path / "t.csv"
    simulate_trial_table(n_participants=2, reps=1, seed=4).to_csv(path, index=False)
    data = analyse(load_trial_table(path), ReportOptions(n_boot=20, per_participant=False))
    assert data.sessions is None


def test_the_reports_mos_interval_leaves_out_participants_and_stays_on_the_scale():
    rng = np.random.default_rng(0)
    people = np.repeat([f"p{i}" for i in range(16)], 6)
    ratings = np.where(rng.random(people.size) < 0.9, 5, 4)  # near the top of 1-5
    frame = pd.DataFrame({"participant": people, "ttft_ms": 200.0, "q": ratings})
    jack = rating_summary(
        frame, "q", ["ttft_ms"], 5, interval="jackknife", min_participants=16
    ).iloc[0]
    assert jack.ci_low < jack.mos < jack.ci_high <= 5.0
    fewer = frame[frame.participant.isin([f"p{i}" for i in range(8)])]
    withheld = rating_summary(
        fewer, "q", ["ttft_ms"], 5, interval="jackknife", min_participants=16
    ).iloc[0]
    assert np.isnan(withheld.ci_low) and np.isnan(withheld.ci_high)


def test_mos_interval_resamples_participants_and_stays_on_the_scale():
    rng = np.random.default_rng(0)
    people = np.repeat([f"p{i}" for i in range(10)], 6)
    ratings = np.where(rng.random(people.size) < 0.9, 5, 4)  # near the top of 1-5
    frame = pd.DataFrame({"participant": people, "ttft_ms": 200.0, "q": ratings})
    t = rating_summary(frame, "q", ["ttft_ms"], 5).iloc[0]
    boot = rating_summary(
        frame, "q", ["ttft_ms"], 5, interval="participants", min_participants=8
    ).iloc[0]
    assert boot.ci_high <= 5.0 and boot.ci_low >= 4.0 and boot.ci_low < boot.mos
    withheld = rating_summary(
        frame[frame.participant.isin(["p0", "p1"])],
        "q",
        ["ttft_ms"],
        5,
        interval="participants",
        min_participants=8,
    ).iloc[0]
    assert np.isnan(withheld.ci_low) and not np.isnan(t.ci_low)


def test_ordinal_model_with_one_participant_is_not_clustered():
    trials = simulate_trial_table(n_participants=1, reps=3, seed=2, failing_participant=False)
    fit = OrdinalLatencyFitter().fit(trials, "q_quality", "ttft_ms")  # no ZeroDivisionError
    assert not fit.clustered_ and fit.n_clusters_ == 1 and np.isfinite(fit.slope_ci_).all()


def test_estimate_flags():
    assert estimate_flags(900, 700, 1100, 200, 3000) == (False, "")
    assert estimate_flags(4000, 3000, 5000, 200, 3000).extrapolated
    assert "bound equals" in estimate_flags(806, 806, 806).degenerate
    assert "under 1%" in estimate_flags(1000, 998, 1003).degenerate


@pytest.mark.slow
def test_coverage_of_the_participant_bootstrap_grows_with_participants():
    """Small version of benchmarks/cluster_bootstrap_coverage.py."""
    from benchmarks.support.cluster_coverage import coverage_table, study_design

    design = study_design(Path(__file__).parents[1] / "studies" / "ttft-threshold.toml")
    table = coverage_table((2, 16), 40, design, n_boot=200, seed=1)
    at = table[table.level == 0.5].set_index("n_participants")["coverage"]
    assert at[2] < 0.9  # below the nominal 0.95 with two people
    assert at[16] > 0.8


def test_a_participant_running_the_other_way_is_flagged(tmp_path):
    trials = simulate_trial_table(n_participants=3, reps=3, seed=6, failing_participant=False)
    odd = trials["participant"] == "P-000"
    trials.loc[odd, "q_acceptable"] = 1 - trials.loc[odd, "q_acceptable"]
    data = analyse(
        load_trial_table(write_export_folder(tmp_path / "e", trials)), ReportOptions(n_boot=60)
    )
    from analysis.report.psychometric_blocks import participant_table

    flags = participant_table(data).set_index("participant")["flags"]
    assert "direction opposite to the pooled curve (rising)" in flags["P-000"]
    assert "direction opposite" not in flags["P-001"]


@pytest.mark.slow
@pytest.mark.parametrize("case", ["all_yes", "all_abandoned"])
def test_data_a_study_can_produce_is_a_note_not_a_failure(tmp_path, case):
    n = 1 if case == "all_yes" else 2
    trials = simulate_trial_table(n_participants=n, reps=2, seed=1, failing_participant=False)
    if case == "all_yes":
        trials["q_acceptable"] = 1
    else:  # every trial given up: no answers at all
        trials["outcome"], trials["t_abandon_ms"] = "abandoned", 500.0
        trials["q_acceptable"], trials["q_quality"] = np.nan, np.nan
    folder = write_export_folder(tmp_path / "e", trials)
    data = analyse(load_trial_table(folder), ReportOptions(n_boot=40))
    write_report(data, tmp_path / "o")
    assert data.failed_parts == []
    if case == "all_abandoned":
        assert any("No psychometric thresholds" in note for note in data.notes)
        assert any("No ratings" in note for note in data.notes)


def test_summary_never_quotes_an_extrapolated_abandonment_time(tmp_path):
    """Patient people (Weibull scale 60 s) and streams of at most ~10 s: the AFT time by
    which 10% gave up lies beyond every wait observed; the summary says what was observed."""
    from analysis.report.summary import plain_summary
    from number_text import duration as ms

    trials = simulate_trial_table(
        n_participants=9, reps=2, seed=5, truth=Truth(patience_scale_ms=60000.0)
    )
    data = analyse(
        load_trial_table(write_export_folder(tmp_path / "e", trials)),
        ReportOptions(n_boot=40, per_participant=False),
    )
    times = data.survival.times
    ten = times[times["share"] == 0.1]
    assert ten["extrapolated"].any()
    sentence = next(s for s in plain_summary(data) if s.startswith("Abandonment:"))
    for r in ten[ten["extrapolated"]].itertuples():
        assert f" {ms(r.estimate)} " not in sentence
    assert "extrapolated" in sentence


def test_mos_interval_by_participants_never_leaves_the_scale():
    """Small version of the MOS table of benchmarks/cluster_bootstrap_coverage.py."""
    from benchmarks.support.cluster_coverage import mos_coverage_table, study_design, true_mos
    from uxlab.simulate.observers import PopulationTruth

    truth = PopulationTruth()
    assert 4.5 < true_mos(100, truth) <= 5 and 1 <= true_mos(5000, truth) < 2
    design = study_design(Path(__file__).parents[1] / "studies" / "ttft-threshold.toml")
    table = mos_coverage_table((3,), 10, design, n_boot=100, seed=2).set_index("interval")
    assert table.loc["participants", "share_off_scale"] == 0
    assert table.loc["jackknife", "share_off_scale"] == 0  # the report's: cut to the scale
    assert table.loc["t", "share_off_scale"] > 0  # a t-interval from 3 people leaves 1-5


def test_a_database_without_trials_names_the_database(tmp_path, capsys):
    from uxlab.store.store import Store
    from uxlab.study.loading import load_study

    db = tmp_path / "new.sqlite"
    study = load_study(QUICKSTART)
    store = Store.open(db)
    store.studies.register(study)
    store.sessions.start_or_resume(study, "P-1", seed=1, environment={}, simulated=False)
    store.close()
    assert main(["report", str(db), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{db} (its trials): the table has no trial rows" in err
    assert "uxlab-report-" not in err and "Traceback" not in err


@pytest.mark.parametrize("n", [1, 2])
def test_the_printed_threshold_below_the_minimum_says_whose_it_is(tmp_path, capsys, n):
    """Below 4 participants the console line does not label the figure `(population)`."""
    trials = simulate_trial_table(n_participants=n, reps=3, seed=4, failing_participant=False)
    path = tmp_path / "t.csv"
    trials.to_csv(path, index=False)
    assert main(["report", str(path), "-o", str(tmp_path / "r"), "--n-boot", "40", "-q"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "50% threshold" in x)
    assert "(population)" not in line and "no population interval below 4 participants" in line
    who = "this participant's trials" if n == 1 else "these 2 participants' trials"
    assert who in line
    assert f"from {n} participant{'' if n == 1 else 's'};" in out


@pytest.mark.parametrize("n", [2, 5])
def test_the_support_section_says_a_population_fit_from_4_participants(tmp_path, n):
    """From 4 participants the pooled fit is not described as 'not a population'."""
    trials = simulate_trial_table(n_participants=n, reps=2, seed=5, failing_participant=False)
    data = analyse(
        load_trial_table(write_export_folder(tmp_path / "e", trials)),
        ReportOptions(n_boot=40, per_participant=False),
    )
    md = write_report(data, tmp_path / "r")["markdown"].read_text(encoding="utf-8")
    support = md[: md.index("## Summary")]
    assert ("they describe these people, not a population" in support) == (n < 4)
    assert ("the pooled fit estimates the population curve" in support) == (n >= 4)
    assert "adaptive estimates" not in support  # a fixed design: no such median, no row


@pytest.mark.parametrize("n", [2, 5])
def test_a_withheld_pooled_tail_says_why_in_thresholds_csv(tmp_path, n):
    """Below 8 participants the pooled 25% / 75% rows are blank in thresholds.csv, and their
    `withheld` says why (it was empty: a blank row with no reason); below 4 too, where they
    were printed as these people's although the same points are withheld from 4 to 7 for
    their measured bias."""
    trials = simulate_trial_table(n_participants=n, reps=3, seed=4, failing_participant=False)
    data = analyse(
        load_trial_table(write_export_folder(tmp_path / "e", trials)),
        ReportOptions(n_boot=40, per_participant=False),
    )
    table = data.thresholds
    pooled = table[(table.measure == "psychometric") & (table.group == "pooled")]
    pooled = pooled[pooled.condition == "all"].set_index("level")
    assert np.isfinite(pooled.loc[0.5, "estimate"])  # printed
    assert pooled.loc[0.5, "withheld"] == ""
    for tail in (0.25, 0.75):
        assert np.isnan(pooled.loc[tail, "estimate"])
        assert pooled.loc[tail, "withheld"] == (
            f"{data.n_participants} participants: the 25% / 75% points need 8 (measured biased)"
        )


def test_one_participant_gets_one_threshold_not_two(tmp_path):
    """With one participant the pooled curve is that person's: the same fit as their own row
    (it was a cumulative normal beside their logistic, 866 against 658 ms for the same 41
    trials), with the person's interval and without the 25% / 75% points the person's row
    withholds."""
    trials = simulate_trial_table(n_participants=1, reps=3, seed=4, failing_participant=False)
    data = analyse(
        load_trial_table(write_export_folder(tmp_path / "e", trials)), ReportOptions(n_boot=60)
    )
    table = data.thresholds
    rows = table[(table.measure == "psychometric") & (table.condition == "all")]
    pooled = rows[rows.group == "pooled"].set_index("level")
    (pid,) = set(rows.group) - {"pooled"}
    person = rows[rows.group == pid].set_index("level")
    assert pooled.loc[0.5, "estimate"] == person.loc[0.5, "estimate"]
    assert np.isnan(pooled.loc[0.5, "ci_low"])  # no population interval
    own = data.psychometric.pooled.thresholds_.set_index("level").loc[0.5]
    assert (own.ci_low, own.ci_high) == (person.loc[0.5, "ci_low"], person.loc[0.5, "ci_high"])
    for tail in (0.25, 0.75):
        assert np.isnan(pooled.loc[tail, "estimate"])
        assert pooled.loc[tail, "withheld"] == (
            "1 participant: the 25% / 75% points need 8 (measured biased)"
        )
    md = write_report(data, tmp_path / "r")["markdown"].read_text(encoding="utf-8")
    assert "the pooled row and the participant's row are one fit" in md
    summary = md[md.index("## Summary") : md.index("## The study")]  # with its own interval
    low, high = person.loc[0.5, "ci_low"], person.loc[0.5, "ci_high"]
    assert f"95% CI {duration(low)} to {duration(high)} from this participant's own trials" in (
        summary
    )
    assert "with one participant the curve is that person's own, and a person's own 25%" in md


def test_a_steep_pooled_curve_below_four_people_claims_no_interval(tmp_path):
    """Two steep people: the summary said "no interval with 2 participant(s)" and then "the
    interval spans the gap"."""
    trials = simulate_trial_table(
        n_participants=2,
        reps=4,
        seed=6,
        truth=Truth(threshold_ms=1100.0, threshold_sd_log=0.0, slope_log=0.03, lapse=0.08),
        failing_participant=False,
    )
    data = analyse(
        load_trial_table(write_export_folder(tmp_path / "e", trials)),
        ReportOptions(n_boot=40, per_participant=False),
    )
    md = write_report(data, tmp_path / "r")["markdown"].read_text(encoding="utf-8")
    summary = md[md.index("## Summary") : md.index("## The study")]
    assert "no interval with 2 participant(s)" in summary
    assert "this point is the fit's place in the gap between 800 ms and 1.6 s" in summary
    assert "the interval spans the gap" not in summary
