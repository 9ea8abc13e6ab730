"""The threshold report end to end: files, thresholds.csv shape, rising and falling judgements,
`uxlab report` on a CSV, an export folder and a real uxlab study database."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from analysis_fixtures import simulate_trial_table, write_export_folder
from helpers.shared import built_once

from analysis.report import ReportOptions, analyse, write_report
from analysis.trial_table import load_trial_table
from uxlab.cli import main

COLUMNS = ["measure", "stimulus", "group", "level", "estimate", "ci_low", "ci_high", "n_trials"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return built_once(tmp_path_factory, "report", _report)


def _report(root):
    # 9 participants, one failing its attention checks: 8 analysed, the minimum for population
    # intervals (analysis.report.support)
    folder = write_export_folder(root / "export", simulate_trial_table(n_participants=9, reps=3))
    data = analyse(load_trial_table(folder), ReportOptions(n_boot=200, seed=0))
    return data, write_report(data, root / "out")


def test_writes_self_contained_html_markdown_and_figures(report):
    _, paths = report
    html = paths["html"].read_text(encoding="utf-8")
    assert "<h2>Summary</h2>" in html and "@media print" in html
    assert not re.search(r'src="(?!data:image/png;base64,)', html)  # nothing fetched
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    assert len(images) >= 5
    assert all(base64.b64decode(img)[:8] == b"\x89PNG\r\n\x1a\n" for img in images)
    md = paths["markdown"].read_text(encoding="utf-8")
    linked = re.findall(r"\]\((figures/[^)]+\.png)\)", md)
    assert len(linked) == len(images)
    assert all((paths["markdown"].parent / f).is_file() for f in linked)
    for section in ("The study", "Sample and exclusions", "Abandonment", "Ratings: q_quality"):
        assert f"## {section}" in md
    assert "P-008" in md  # the participant failing attention checks is listed with its reason
    per_person = md.split("Per participant: 50% threshold")[1].split("\n")[0]
    assert "read them as roughly 90% intervals, not 95%" in per_person  # as measured


def test_thresholds_csv_columns_and_rows(report):
    _, paths = report
    table = pd.read_csv(paths["thresholds"], dtype={"group": str})
    assert list(table.columns[: len(COLUMNS)]) == COLUMNS
    assert set(table["measure"]) == {"psychometric", "psychometric_ratio", "abandonment", "rating"}
    ratio = table[table.measure == "psychometric_ratio"].iloc[0]  # indicator 1 vs 0, paired
    assert ratio.condition == "indicator=1 vs indicator=0" and ratio.level == 0.5
    assert ratio.ci_low < ratio.estimate < ratio.ci_high and ratio.n_participants == 8
    pooled = table[
        (table.measure == "psychometric") & (table.group == "pooled") & (table.condition == "all")
    ]
    assert pooled["level"].tolist() == [0.25, 0.5, 0.75]
    mid = pooled[pooled.level == 0.5].iloc[0]
    assert mid.ci_low < mid.estimate < mid.ci_high and pd.isna(mid.withheld)
    # 3 answers a level and condition: some of the 8 people switch between two tested levels
    # (over all their answers or within a condition), one in eight or more, so the tails are
    # withheld, each row saying why
    tails = pooled[pooled.level != 0.5]
    assert tails[["estimate", "ci_low", "ci_high"]].isna().all().all()
    assert tails["withheld"].str.match(r"[1-8] of 8 participants switch between two").all()
    md = paths["markdown"].read_text(encoding="utf-8")  # and why so many, in so thin a design
    assert "answers a person gives a tested level, people who are not steeper" in md
    people = table[(table.measure == "psychometric") & (table.group.str.startswith("P-"))]
    assert people["group"].nunique() == 8  # P-008 was excluded
    assert set(table.loc[table.measure == "abandonment", "level"]) == {0.1, 0.5}
    assert (table["n_trials"] > 0).all()
    truth_ms = 1000.0  # the simulated population threshold
    assert mid.ci_low * 0.8 < truth_ms < mid.ci_high * 1.25


def test_rising_judgement_too_slow(tmp_path):
    trials = simulate_trial_table(n_participants=6, reps=3, seed=4)
    trials["q_too_slow"] = 1 - trials["q_acceptable"]
    path = tmp_path / "lab.csv"
    trials.drop(columns=["q_acceptable"]).to_csv(path, index=False)
    options = ReportOptions(judgement="q_too_slow", n_boot=100, per_participant=False)
    data = analyse(load_trial_table(path), options)
    assert data.psychometric.pooled.direction_ == "rising"
    falling = analyse(
        load_trial_table(write_export_folder(tmp_path / "f", trials)),
        ReportOptions(judgement="q_acceptable", n_boot=100, per_participant=False),
    )
    rising_mid = data.psychometric.pooled.threshold(0.5)
    assert rising_mid == pytest.approx(falling.psychometric.pooled.threshold(0.5), rel=1e-3)


@pytest.mark.slow
def test_cli_on_csv_prints_thresholds(tmp_path, capsys):
    path = tmp_path / "trials.csv"
    simulate_trial_table(n_participants=9, reps=2, seed=3).to_csv(path, index=False)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, ttft_ms in (("quick", 150.0), ("slow", 5000.0)):
        lines = [
            {
                "type": "header",
                "format": "uxlab.replay/1",
                "id": name,
                "source": {"kind": "import", "vendor": name, "model": "m"},
            },
            {"type": "chunk", "t_ms": ttft_ms, "channel": "content", "text": "Hi"},
            {"type": "chunk", "t_ms": ttft_ms + 30, "channel": "content", "text": " there"},
            {"type": "end", "t_ms": ttft_ms + 60, "finish_reason": "stop"},
        ]
        (corpus / f"{name}.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    argv = [
        "report",
        str(path),
        "-o",
        str(tmp_path / "r"),
        "--n-boot",
        "100",
        "--stimulus",
        "ttft_ms",
        "--judgement",
        "q_acceptable",
        "-q",
        "--score",
        str(corpus),
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert re.search(r"psychometric +50% threshold +\d+ ms +\[\d+, \d+\]", out)
    assert (tmp_path / "r" / "report.html").is_file()
    score = pd.read_csv(tmp_path / "r" / "score.csv").set_index("source")
    assert score.loc["slow/m", "share_past_threshold"] == 1.0
    assert score.loc["quick/m", "share_past_threshold"] == 0.0
    assert score.loc["slow/m", "p_abandon"] > score.loc["quick/m", "p_abandon"]


def test_cli_errors_name_file_row_and_column(tmp_path, capsys):
    trials = simulate_trial_table(n_participants=3, reps=1, seed=3)
    trials.loc[6, "outcome"] = "bored"
    path = tmp_path / "bad.csv"
    trials.to_csv(path, index=False)
    assert main(["report", str(path), "-o", str(tmp_path / "r"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "bad.csv row 7 column 'outcome': 'bored' is not one of" in err
    good = tmp_path / "good.csv"
    trials.assign(outcome="completed").to_csv(good, index=False)
    assert main(["report", str(good), "--stimulus", "nope", "-q"]) == 2
    assert "column 'nope': no such column" in capsys.readouterr().err


def _run_simulated_study(db: Path, n_participants: int = 6) -> None:
    """Participants with a known 1 s threshold through the real study spec and store."""
    from uxlab.store.store import Store
    from uxlab.study.loading import load_study

    study = load_study(Path(__file__).parents[1] / "studies" / "ttft-threshold.toml")
    store = Store.open(db)
    store.studies.register(study)
    rng = np.random.default_rng(11)
    try:
        for p in range(n_participants):
            session = store.sessions.start_or_resume(
                study, f"P-SIM{p}", seed=p, environment={}, simulated=True
            )
            store.sessions.set_state(session, "consented")
            store.sessions.set_state(session, "running")
            for trial in session.trials:
                store.trials.begin(session, trial.index)
                ttft = float(trial.levels.get("ttft_ms", 800.0))
                p_yes = 1 / (1 + np.exp((np.log(ttft) - np.log(1000.0)) / 0.3))
                if trial.attention is not None:
                    answers = {trial.attention.question: (trial.attention.answer, 900.0)}
                else:
                    speed = int(np.clip(round(5 - np.log2(ttft / 200) + rng.normal()), 1, 5))
                    answers = {
                        "acceptable": ("yes" if rng.random() < p_yes else "no", 800.0),
                        "speed": (str(speed), 700.0),
                    }
                patience = 9000 * rng.weibull(1.5)
                end_ms = ttft + 3000
                timings = {
                    "scheduled_end_ms": end_ms,
                    "shown_first_ms": ttft,
                    "shown_last_ms": end_ms,
                    "t_abandon_ms": None,
                }
                outcome = "completed"
                if patience < end_ms and trial.attention is None:
                    outcome, timings["t_abandon_ms"] = "abandoned", patience
                    timings["shown_last_ms"] = None
                store.trials.commit(session, trial.index, outcome, timings, answers)
            store.sessions.set_state(session, "completed")
    finally:
        store.close()


@pytest.mark.slow
def test_cli_on_a_uxlab_study_database(tmp_path, capsys):
    db = tmp_path / "ttft.sqlite"
    _run_simulated_study(db, n_participants=4)
    out_dir = tmp_path / "rep"
    argv = ["report", str(db), "-o", str(out_dir), "--n-boot", "100", "--no-participant-fits"]
    assert main([*argv, "-q"]) == 0
    printed = capsys.readouterr().out
    assert "stimulus ttft_ms" in printed
    table = pd.read_csv(out_dir / "thresholds.csv")
    mid = table[
        (table.measure == "psychometric") & (table.group == "pooled") & (table.level == 0.5)
    ].iloc[0]
    assert 600 < mid.estimate < 1600
    md = (out_dir / "report.md").read_text(encoding="utf-8")
    assert "ttft.sqlite" in md and "ttft-threshold" in md


def test_analysis_imports_neither_uxlab_nor_textual():
    import subprocess
    import sys

    code = (
        "import sys; import analysis.report, analysis.score, analysis.survival, "
        "analysis.ratings, analysis.exclusions, analysis.trial_table, "
        "analysis.report.build, analysis.report.render; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('uxlab', 'textual')); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
