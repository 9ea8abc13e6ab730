"""Simulated sessions on the virtual clock measure no lateness: the export leaves it empty
and the report's "Playback fidelity" says so, while a real session's measured lateness is
still exported and reported (a synthetic 0 is never reported as measured)."""

from __future__ import annotations

import csv
import sqlite3
from pathlib import Path

from helpers.studies import tiny_study

from analysis.exclusions import apply_exclusions
from analysis.report.data import ReportOptions
from analysis.report.fidelity_part import fidelity_blocks, fidelity_part, fidelity_table
from analysis.trial_table import load_trial_table
from uxlab.clock import VirtualClock
from uxlab.player import HeadlessSink
from uxlab.session import StudySession
from uxlab.simulate import simulate_session
from uxlab.store import Store, export_db
from uxlab.study import load_study

LATENESS = [
    "late_handed_p50_ms",
    "late_handed_p99_ms",
    "late_handed_max_ms",
    "late_shown_p50_ms",
    "drift_ms",
    "fidelity_flag",
]


def _rows(folder: Path) -> list[dict[str, str]]:
    with open(folder / "trials.csv", newline="") as fh:
        return list(csv.DictReader(fh))


class _Data:
    """What `fidelity_part` reads from the report's data: the table, the options, and the
    exclusions made by the default rules."""

    def __init__(self, table) -> None:
        self.table = table
        self.options = ReportOptions()
        self.exclusions = apply_exclusions(table.trials, self.options.rules)
        self.kept = self.exclusions.kept


def _section_text(folder: Path) -> tuple[str, list[str]]:
    table = load_trial_table(folder)
    part = fidelity_part(_Data(table))
    assert part is not None
    text = " ".join(getattr(b, "text", "") for b in fidelity_blocks(part))
    return text, part.table["lateness measured at"].tolist()


async def test_a_simulated_study_exports_and_reports_lateness_as_not_measured(tmp_path):
    study = load_study(tiny_study(tmp_path, attention=False))
    db = tmp_path / "sim.sqlite"
    with Store.open(db) as store:
        await simulate_session(study, store, 1, seed=3)
    export_db(db, tmp_path / "export")
    rows = [r for r in _rows(tmp_path / "export") if int(r["n_chunks"] or 0) > 0]
    assert rows and all(r["simulated"] == "1" for r in rows)
    for row in rows:
        assert [row[c] for c in LATENESS] == [""] * len(LATENESS), row  # not 0.0
    text, where = _section_text(tmp_path / "export")
    assert where == ["not measured (simulated)"]
    assert "simulated" in text and "lateness was not measured" in text
    assert "judged trials were shown" not in text  # none was judged: no "0 of 0"


async def test_zeros_stored_by_an_older_simulator_are_exported_empty(tmp_path):
    study = load_study(tiny_study(tmp_path, attention=False))
    db = tmp_path / "old-sim.sqlite"
    with Store.open(db) as store:
        await simulate_session(study, store, 1, seed=3)
    with sqlite3.connect(db) as conn:  # as stored before: zeros on the virtual clock
        conn.execute(
            "UPDATE trials SET timings = json_set(timings, '$.late_handed_p50_ms', 0.0,"
            " '$.drift_ms', 0.0, '$.fidelity_flag', 0) WHERE timings LIKE '%n_chunks%'"
        )
    conn.close()
    export_db(db, tmp_path / "export")
    rows = [r for r in _rows(tmp_path / "export") if int(r["n_chunks"] or 0) > 0]
    assert rows and all(r[c] == "" for r in rows for c in LATENESS)


async def test_a_real_session_still_exports_and_reports_its_measured_lateness(tmp_path):
    study = load_study(tiny_study(tmp_path, attention=False, break_every=100))
    db = tmp_path / "real.sqlite"
    clock = VirtualClock(0.0, lateness_ms=lambda n, t: 2.0)  # every wake-up 2 ms late
    with Store.open(db) as store:
        ss = StudySession.open(study, store, "P-REAL01", clock=clock)
        ss.load_fn = lambda: 0.25
        ss.accept_consent()
        ss.start_running()
        while (trial := ss.next_trial()) is not None:
            run = ss.begin(trial)
            run.send()
            await run.play(HeadlessSink(ss.clock))
            for q in run.questions:
                run.answer(q.id, {"yesno": "yes", "likert": 4}.get(q.type, "x"), 800.0)
            ss.commit(run)
        ss.finish({"comments": ("", 100.0)})
    export_db(db, tmp_path / "export")
    rows = [r for r in _rows(tmp_path / "export") if int(r["n_chunks"] or 0) > 0]
    assert rows and all(r["simulated"] == "0" for r in rows)
    assert {float(r["late_handed_p50_ms"]) for r in rows} == {2.0}
    assert {r["fidelity_flag"] for r in rows} == {"0"}
    text, where = _section_text(tmp_path / "export")
    assert where == ["hand-off"] and "lateness was not measured" not in text
    summary = fidelity_table(load_trial_table(tmp_path / "export").trials)
    assert summary is not None
    assert summary["p50 lateness, median trial (ms)"].tolist() == [2.0]
