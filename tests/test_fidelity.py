"""Per-trial playback fidelity (`uxlab.fidelity`): the columns, the tolerance, the flag, the
re-run, the export and the report's exclusion, end to end on the injected clock."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from helpers.studies import tiny_study

from analysis.exclusions import FIDELITY_REASON, ExclusionRules, apply_exclusions
from analysis.report.fidelity_part import fidelity_table
from analysis.trial_table import load_trial_table
from uxlab.clock import VirtualClock
from uxlab.fidelity import (
    FIDELITY_COLUMNS,
    Tolerance,
    default_max_late_p99_ms,
    outside_tolerance,
    quantile,
    trial_fidelity,
)
from uxlab.machine import CpuTimes, cpu_times, machine_state, steal_share
from uxlab.player import ChunkTiming, HeadlessSink
from uxlab.session import StudySession
from uxlab.store import Store, export_db
from uxlab.study import load_study
from uxlab.study.loading import StudyError


def chunk(i: int, scheduled: float, handed: float, flushed: float | None = None) -> ChunkTiming:
    return ChunkTiming(i, scheduled, handed, flushed_ms=flushed, n_chars=3)


def test_quantile_interpolates_like_numpy():
    assert quantile([4.0, 1.0, 3.0, 2.0], 0.5) == 2.5
    assert quantile([1.0, 2.0, 3.0, 4.0, 5.0], 0.99) == pytest.approx(4.96)
    assert quantile([7.0], 0.99) == 7.0


def test_fidelity_from_painted_chunks_counts_lateness_sharing_and_drift():
    records = [
        chunk(0, 100.0, 100.5, 102.0),  # shown 2 ms late
        chunk(1, 110.0, 110.5, 112.0),
        chunk(2, 120.0, 121.0, 125.0),  # 5 ms late, in the same frame as the next
        chunk(3, 130.0, 124.0, 125.0),  # impossible hand-off aside, shown 5 ms early
        ChunkTiming(4, 135.0, 135.0, flushed_ms=140.0, n_chars=0),  # no text: not counted
    ]
    f = trial_fidelity(records)
    assert f["n_chunks"] == 4
    assert f["late_shown_max_ms"] == 5.0
    assert f["late_shown_p50_ms"] == 2.0
    assert f["late_handed_max_ms"] == 1.0
    assert f["frame_shared_share"] == pytest.approx(1 / 3, abs=1e-4)
    assert f["drift_ms"] == (125.0 - 102.0) - (130.0 - 100.0)
    assert f["fidelity_flag"] is None and f["load_1m"] is None
    assert list(f) == FIDELITY_COLUMNS


def test_without_paint_times_shown_lateness_stays_empty_and_drift_uses_hand_off():
    f = trial_fidelity([chunk(0, 0.0, 1.0), chunk(1, 10.0, 13.0), chunk(2, 20.0, 21.0)])
    assert f["late_shown_p99_ms"] is None and f["frame_shared_share"] is None
    assert f["late_handed_max_ms"] == 3.0
    assert f["drift_ms"] == 0.0
    # the stored events (dicts) give the same columns as the live records
    as_dicts = [{"scheduled_ms": 0.0, "handed_ms": 1.0, "n_chars": 2}]
    assert trial_fidelity(as_dicts)["late_handed_p50_ms"] == 1.0


def test_drift_compares_the_last_quarter_of_the_stream_with_the_first():
    late = [0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]  # a stream slipping 3 ms as it plays
    f = trial_fidelity([chunk(i, 10.0 * i, 10.0 * i + x) for i, x in enumerate(late)])
    assert f["drift_ms"] == 3.0 and f["late_handed_p50_ms"] == 1.5


def test_tolerance_prefers_shown_lateness_and_says_why():
    tol = Tolerance(8.0, max_frame_shared_share=0.1)
    assert outside_tolerance({"late_shown_p99_ms": 7.9, "late_handed_p99_ms": 50.0}, tol) == []
    (why,) = outside_tolerance({"late_shown_p99_ms": None, "late_handed_p99_ms": 9.0}, tol)
    assert "handed lateness p99 9.0 ms > 8 ms" in why
    assert outside_tolerance({"frame_shared_share": 0.25}, tol) == [
        "25% of chunks shared a frame > 10%"
    ]
    assert default_max_late_p99_ms(10.0) == 8.0  # the floor
    assert default_max_late_p99_ms(40.0) == 20.0  # half the shortest gap
    assert default_max_late_p99_ms(None) == 20.0


def test_machine_state_reads_steal_and_survives_a_missing_proc(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 1 2 3\n")
    times = cpu_times(stat)
    assert times == CpuTimes(steal=40, total=1000)
    assert steal_share(CpuTimes(0, 500), times) == pytest.approx(0.08)
    assert cpu_times(tmp_path / "missing") is None
    stat.write_text("cpu  1 2 3 4\n")  # an old kernel without the steal field
    assert cpu_times(stat) is None
    state = machine_state(tmp_path / "missing")
    assert state["steal_share_since_boot"] is None and state["cpus"] >= 1


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ("max_late_p99_ms = -1", "[timing].max_late_p99_ms"),
        ("max_frame_shared_share = 1.5", "[timing].max_frame_shared_share"),
        ('requeue_flagged = "yes"', "[timing].requeue_flagged"),
        ("max_requeued = -2", "[timing].max_requeued"),
        ("max_late_p99 = 5", "[timing].max_late_p99"),
    ],
)
def test_study_check_names_a_bad_timing_setting(tmp_path, body, key):
    path = tiny_study(tmp_path)
    path.write_text(path.read_text() + f"\n[timing]\n{body}\n")
    with pytest.raises(StudyError) as err:
        load_study(path)
    assert key in str(err.value)


def timed_study(tmp_path: Path, settings: str) -> Path:
    path = tiny_study(tmp_path, attention=False, break_every=100)
    path.write_text(path.read_text() + f"\n[timing]\n{settings}\n")
    return path


async def play_next(ss: StudySession) -> int:
    trial = ss.next_trial()
    assert trial is not None
    run = ss.begin(trial)
    run.send()
    await run.play(HeadlessSink(ss.clock))
    for q in run.questions:
        run.answer(q.id, {"yesno": "yes", "likert": 4}.get(q.type, "x"), 800.0)
    ss.commit(run)
    return trial.index


async def test_a_late_trial_is_flagged_rerun_exported_and_excluded_with_its_reason(tmp_path):
    """Done means (issue 20): on the injected clock."""
    late = {"ms": 0.0}
    clock = VirtualClock(1000.0, lateness_ms=lambda n, t: late["ms"])
    study = load_study(timed_study(tmp_path, "max_late_p99_ms = 5\nrequeue_flagged = true"))
    db = tmp_path / "results.sqlite"
    store = Store.open(db)
    ss = StudySession.open(study, store, "P-FID01", clock=clock)
    ss.load_fn = lambda: 1.5
    ss.accept_consent()
    ss.start_running()
    n_planned = len(ss.trials)
    await play_next(ss)  # the practice trial, on time
    late["ms"] = 12.0  # every wake-up of the next trial is 12 ms late
    flagged = await play_next(ss)
    late["ms"] = 0.0
    assert ss.flagged == [flagged] and ss.fidelity_requeued == [flagged]
    assert len(ss.trials) == n_planned + 1
    rerun = ss.trials[-1]
    assert ss.session.reruns[rerun.index] == (flagged, "fidelity")
    assert rerun.seed == ss.trials[flagged].seed
    while ss.next_trial() is not None:
        await play_next(ss)
    assert ss.flagged == [flagged]  # the re-run was on time
    assert "1 of" in ss.fidelity_note() and "1 re-run" in ss.fidelity_note()
    ss.finish({"comments": ("", 100.0)})
    store.close()

    from uxlab.store.verify import verify_db

    checked = verify_db(db, study.path)  # the re-run is rebuilt as the trial it repeats
    assert checked.ok, [m.line() for m in checked.mismatches]
    assert checked.n_trials == checked.n_event_trials == n_planned + 1  # late, not changed

    out = tmp_path / "export"
    export_db(db, out)
    with open(out / "trials.csv", newline="") as fh:
        rows = {int(r["trial_index"]): r for r in csv.DictReader(fh)}
    assert len(rows) == n_planned + 1
    bad = rows[flagged]
    assert bad["fidelity_flag"] == "1" and float(bad["late_handed_p99_ms"]) == 12.0
    assert int(bad["n_chunks"]) > 1 and bad["load_1m"] == "1.5"
    assert bad["late_shown_p99_ms"] == ""  # nothing was painted: not claimed
    assert bad["rerun_as"] == str(n_planned) and bad["rerun_reason"] == "fidelity"
    again = rows[n_planned]
    assert again["rerun_of"] == str(flagged) and again["fidelity_flag"] == "0"
    assert again["condition_id"] == bad["condition_id"]

    table = load_trial_table(out)
    assert "late_handed_p99_ms" not in table.factors and "n_chunks" not in table.factors
    result = apply_exclusions(table.trials)
    line = result.log[result.log["reason"] == FIDELITY_REASON]
    assert line["n_trials"].tolist() == [1]
    kept = set(result.kept["trial_index"].astype(int))
    assert flagged not in kept and n_planned in kept
    kept_all = apply_exclusions(table.trials, ExclusionRules(drop_fidelity_flagged=False))
    assert flagged in set(kept_all.kept["trial_index"].astype(int))
    summary = fidelity_table(table.trials)
    assert summary is not None and summary["flagged"].tolist() == [f"1 of {n_planned + 1}"]


async def test_without_requeue_a_flagged_trial_is_only_marked(tmp_path):
    late = {"ms": 0.0}
    clock = VirtualClock(0.0, lateness_ms=lambda n, t: late["ms"])
    study = load_study(timed_study(tmp_path, "max_late_p99_ms = 5"))
    with Store.open(tmp_path / "r.sqlite") as store:
        ss = StudySession.open(study, store, "P-FID02", clock=clock)
        ss.accept_consent()
        ss.start_running()
        n = len(ss.trials)
        late["ms"] = 6.0
        flagged = await play_next(ss)
        assert ss.flagged == [flagged] and ss.fidelity_requeued == [] and len(ss.trials) == n


def test_the_derived_tolerance_comes_from_the_shortest_gap(tmp_path):
    study = load_study(tiny_study(tmp_path, itl=40))
    with Store.open(tmp_path / "r.sqlite") as store:
        ss = StudySession.open(study, store, "P-FID03", clock=VirtualClock())
        tol = ss.tolerance
        assert tol.derived and tol.max_late_p99_ms == pytest.approx(20.0, abs=2.0)
        assert "derived" in tol.describe()


def test_a_trial_stored_before_fidelity_columns_gets_them_from_its_chunk_events(tmp_path):
    study = load_study(tiny_study(tmp_path))
    db = tmp_path / "old.sqlite"
    with Store.open(db) as store:
        s = store.sessions.start_or_resume(study, "P-OLD01")
        store.trials.begin(s, 0)
        events = [
            {"kind": "chunk", "t_ms": 103.0, "scheduled_ms": 100.0, "handed_ms": 100.5,
             "queued_ms": 102.0, "flushed_ms": 103.0, "n_chars": 4},
            {"kind": "chunk", "t_ms": 113.0, "scheduled_ms": 110.0, "handed_ms": 110.2,
             "queued_ms": 112.0, "flushed_ms": 113.0, "n_chars": 2},
        ]  # fmt: skip
        store.trials.commit(s, 0, "completed", {"shown_first_ms": 103.0}, {}, events)
    export_db(db, tmp_path / "out")
    with open(tmp_path / "out" / "trials.csv", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["n_chunks"] == "2" and float(row["late_shown_max_ms"]) == 3.0
    assert row["frame_shared_share"] == "0.0"
    assert row["fidelity_flag"] == "" and row["load_1m"] == ""  # not known then: not guessed


@pytest.mark.slow
def test_the_report_has_a_fidelity_section_and_drops_flagged_trials_unless_asked(tmp_path):
    from analysis_fixtures import simulate_trial_table, write_export_folder

    from analysis.report import ReportOptions, analyse, write_report

    trials = simulate_trial_table(n_participants=6, reps=2)
    rng = range(len(trials))
    trials["n_chunks"] = 40
    trials["late_handed_p50_ms"] = 0.01
    trials["late_handed_p99_ms"] = [30.0 if i % 10 == 0 else 1.0 for i in rng]
    trials["load_1m"] = 0.5
    trials["fidelity_flag"] = [1 if i % 10 == 0 else 0 for i in rng]
    folder = write_export_folder(tmp_path / "export", trials)
    table = load_trial_table(folder)
    assert "late_handed_p99_ms" not in table.factors
    options = ReportOptions(n_boot=20, seed=0, per_participant=False)
    data = analyse(table, options)
    log = data.exclusions.log
    assert FIDELITY_REASON in set(log["reason"])
    assert data.fidelity is not None and data.fidelity.excluded
    md = write_report(data, tmp_path / "out")["markdown"].read_text(encoding="utf-8")
    assert "## Playback fidelity" in md
    # each flagged trial's fate as the exclusions table counts it: some flagged trials were
    # practice trials or the excluded participant's, left out by those rules first
    by_rule = int(log.loc[log["reason"] == FIDELITY_REASON, "n_trials"].sum())
    flagged = int((trials["fidelity_flag"] == 1).sum())
    assert f"{flagged} of {len(trials)} judged trials" in md
    assert f"{by_rule} left out for it (see the exclusions above)" in md
    assert f"{flagged - by_rule} already left out by another rule" in md
    kept = analyse(
        table,
        ReportOptions(
            n_boot=20,
            seed=0,
            per_participant=False,
            rules=ExclusionRules(drop_fidelity_flagged=False),
        ),
    )
    assert FIDELITY_REASON not in set(kept.exclusions.log["reason"])
    assert len(kept.kept) > len(data.kept)


def test_report_command_offers_keep_flagged():
    from uxlab.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["report", "data.csv", "--keep-flagged"]).keep_flagged is True
    assert parser.parse_args(["report", "data.csv"]).keep_flagged is False


@pytest.mark.slow
async def test_the_study_app_stores_shown_lateness_from_its_frames(tmp_path):
    """Through the real app (headless): the paint probe's frame times reach the columns."""
    import json
    import sqlite3

    from helpers.pilot import do_trial, wait_for, wait_screen

    from uxlab.tui.flow_screens import ConsentScreen, InstructionsScreen, ParticipantScreen
    from uxlab.tui.study_app import StudyApp
    from uxlab.tui.trial_screen import TrialScreen

    study = load_study(tiny_study(tmp_path, levels="20, 40", attention=False))
    store = Store.open(tmp_path / "results.sqlite")
    app = StudyApp(study, store, suggested_id="P-FIDAP")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, ParticipantScreen)
        await pilot.press("enter")
        await wait_screen(pilot, ConsentScreen)
        await pilot.press("a")
        await wait_screen(pilot, InstructionsScreen)
        await pilot.press("enter")
        await wait_screen(pilot, TrialScreen)
        assert await do_trial(pilot) == "completed"
        await wait_for(pilot, lambda: app.session.committed == [0])
        await pilot.press("ctrl+q", "ctrl+q")
    store.close()
    with sqlite3.connect(tmp_path / "results.sqlite") as conn:
        (timings,) = conn.execute("SELECT timings FROM trials WHERE trial_index = 0").fetchone()
    t = json.loads(timings)
    assert t["n_chunks"] > 1 and t["fidelity_flag"] in (0, 1)
    assert t["late_shown_p50_ms"] is not None  # queued frames (headless: no terminal)
    assert t["late_shown_max_ms"] >= t["late_shown_p50_ms"] and t["frame_shared_share"] >= 0


def test_raising_the_priority_asks_for_the_niceness_and_names_a_refusal():
    from uxlab.machine import niceness, raise_priority

    asked: list[tuple[int, int, int]] = []
    current = niceness()
    assert current is not None and machine_state()["nice"] == current
    assert raise_priority(5, setpriority=lambda *a: asked.append(a)) == max(-20, current - 5)
    assert asked[0][2] == max(-20, current - 5)
    assert raise_priority(100, setpriority=lambda *a: None) == -20

    def refuse(*_):
        raise PermissionError("Operation not permitted")

    with pytest.raises(PermissionError):
        raise_priority(10, setpriority=refuse)
    with pytest.raises(ValueError):
        raise_priority(-1)


def test_fidelity_table_without_load_or_paint_is_quiet():
    """Simulated sessions store no load and no paint: the table says NaN without warnings."""
    import warnings

    import pandas as pd

    from analysis.report.fidelity_part import fidelity_table

    trials = pd.DataFrame(
        {
            "participant": ["SIM-1", "SIM-1"],
            "session_id": ["s1", "s1"],
            "n_chunks": [40, 38],
            "late_handed_p50_ms": [0.2, 0.3],
            "late_handed_p99_ms": [1.0, 1.2],
            "late_shown_p50_ms": [float("nan")] * 2,
            "load_1m": [float("nan")] * 2,
            "frame_shared_share": [float("nan")] * 2,
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = fidelity_table(trials)
    assert table is not None
    row = table.iloc[0]
    assert row["lateness measured at"] == "hand-off"
    assert row["p99 lateness, worst trial (ms)"] == 1.2
    assert pd.isna(row["load (1 min), median"])


def test_the_reports_console_summary_names_the_trials_left_out_for_fidelity(tmp_path, capsys):
    from analysis_fixtures import simulate_trial_table, write_export_folder

    from uxlab.cli import main

    trials = simulate_trial_table(n_participants=6, reps=2)
    trials["fidelity_flag"] = [1 if i % 10 == 0 else 0 for i in range(len(trials))]
    n_flagged = int(trials["fidelity_flag"].sum())
    folder = write_export_folder(tmp_path / "export", trials)
    args = ["report", str(folder), "-o", str(tmp_path / "r"), "--n-boot", "20"]
    assert main([*args, "--no-participant-fits"]) in (0, 1)
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("left out: playback outside"))
    n_left = int(re.search(r"(\d+) trial\(s\)", line).group(1))
    assert 0 < n_left <= n_flagged and "--keep-flagged" in line  # (some are practice trials)
    assert main([*args, "--no-participant-fits", "--keep-flagged"]) in (0, 1)
    assert "left out: playback outside" not in capsys.readouterr().out
