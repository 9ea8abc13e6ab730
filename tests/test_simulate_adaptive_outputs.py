"""Adaptive studies end to end: what `uxlab study check` says, what the export holds per
session, and what the report makes of it (simulated QUEST+ participants with a known truth).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest
from helpers.shared import built_once

from uxlab.cli import main
from uxlab.simulate import simulate_cohort
from uxlab.store import Store
from uxlab.store.export import export_db
from uxlab.study import load_study

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


@pytest.fixture(scope="module")
def quest_export(tmp_path_factory):
    """Six simulated QUEST+ participants, exported."""
    return built_once(tmp_path_factory, "quest-outputs", _quest_export)


def _quest_export(tmp):
    study = load_study(QUEST)
    with Store.open(tmp / "quest.sqlite", durable=False) as store:
        done = simulate_cohort(study, store, 6, seed=5)
    export_db(tmp / "quest.sqlite", tmp / "export")
    return tmp, done


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
def test_sessions_csv_has_each_sessions_adaptive_estimate_without_json(quest_export):
    tmp, done = quest_export
    rows = {r["session_id"]: r for r in _csv(tmp / "export" / "sessions.csv")}
    assert len(rows) == 6
    for s in done:
        track = s.adaptive["tracks"]["all"]
        row = rows[s.session_id]
        assert float(row["adaptive_ttft_ms_estimate"]) == pytest.approx(track["threshold_ms"])
        assert float(row["adaptive_ttft_ms_ci_low"]) < float(row["adaptive_ttft_ms_estimate"])
        assert float(row["adaptive_ttft_ms_ci_high"]) > float(row["adaptive_ttft_ms_estimate"])
        assert row["adaptive_ttft_ms_procedure"] == "quest"
        assert row["adaptive_ttft_ms_n_trials"] == "40" and row["adaptive_ttft_ms_target"] == "0.5"
        assert row["adaptive_ttft_ms_reversals"] == ""  # QUEST+ has none
        assert not any(v.startswith(("[", "{")) for v in row.values())
    posteriors = json.loads((tmp / "export" / "adaptive_posteriors.json").read_text())
    assert set(posteriors) == set(rows)
    post = posteriors[done[0].session_id]["tracks"]["all"]["posterior"]
    m_w = np.asarray(post["m_w"])
    assert m_w.shape == (len(post["m_log"]), len(post["w_log"]))
    assert m_w.sum() == pytest.approx(1.0, abs=1e-5)


def test_staircase_tracks_get_their_own_columns_and_reversal_counts(tmp_path):
    study = load_study(_two_track_staircase(tmp_path))
    with Store.open(tmp_path / "st.sqlite", durable=False) as store:
        (done,) = simulate_cohort(study, store, 1, seed=2)
    written = export_db(tmp_path / "st.sqlite", tmp_path / "export")
    (row,) = _csv(written["sessions"])
    for level in (20, 60):
        track = done.adaptive["tracks"][f"itl_ms={level}"]
        prefix = f"adaptive_ttft_ms_at_itl_ms_{level}_"
        assert row[prefix + "procedure"] == "staircase"
        assert int(row[prefix + "reversals"]) == len(track["reversals_ms"])
        assert int(row[prefix + "n_trials"]) == track["n_trials"] == 12
        assert float(row[prefix + "target"]) == pytest.approx(1 - 0.5 ** (1 / 3))
    assert "adaptive_posteriors" in written


@pytest.mark.slow
def test_report_shows_each_participants_adaptive_estimate_and_the_median(quest_export):
    from analysis.report import ReportOptions, analyse, write_report
    from analysis.report.adaptive_part import adaptive_estimates
    from analysis.trial_table import load_trial_table

    tmp, _ = quest_export
    table = load_trial_table(tmp / "export")
    data = analyse(table, ReportOptions(n_boot=60, seed=1, per_participant=False))
    paths = write_report(data, tmp / "report")
    sessions = {r["participant"]: r for r in _csv(tmp / "export" / "sessions.csv")}
    rows = data.thresholds[data.thresholds["measure"] == "adaptive"]
    assert sorted(rows["group"]) == sorted(sessions)
    for r in rows.itertuples():
        assert r.estimate == pytest.approx(float(sessions[r.group]["adaptive_ttft_ms_estimate"]))
        assert (r.stimulus, r.level, r.n_trials, r.condition) == ("ttft_ms", 0.5, 40, "all")
    median = float(np.median(rows["estimate"]))
    md = paths["markdown"].read_text(encoding="utf-8")
    assert "## Adaptive estimates" in md
    # 6 participants are too few for an interval from resampling them (analysis.report.support)
    assert f"Median across 6 participants: {median:,.0f} ms (no interval" in md
    assert "| SIM-s5-001 | QUEST+ | 0.5 |" in md
    # what the sample supports, on this design: the pooled points are withheld whatever N
    support = md[: md.index("## Summary")]
    pooled_row = next(x for x in support.splitlines() if x.startswith("| population thresholds"))
    assert "enough participants; withheld on this adaptive design (quest" in pooled_row
    median_row = next(x for x in support.splitlines() if "adaptive estimates" in x)
    assert "NOT supported with 6" in median_row
    csv_rows = _csv(paths["thresholds"])
    assert sum(r["measure"] == "adaptive" for r in csv_rows) == 6
    assert "Adaptive estimates" in paths["html"].read_text(encoding="utf-8")
    assert adaptive_estimates(table.sessions.drop(columns="adaptive_ttft_ms_estimate")) is None


@pytest.mark.slow
def test_report_without_adaptive_columns_has_no_adaptive_section(quest_export):
    from analysis.report import ReportOptions, analyse
    from analysis.trial_table import load_trial_table

    tmp, _ = quest_export
    table = load_trial_table(tmp / "export")
    table.sessions = table.sessions[[c for c in table.sessions if not c.startswith("adaptive_")]]
    data = analyse(table, ReportOptions(n_boot=60, seed=1, per_participant=False))
    assert data.adaptive is None
    assert "adaptive" not in set(data.thresholds["measure"])
