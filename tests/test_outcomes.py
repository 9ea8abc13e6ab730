"""One list of trial outcomes: uxlab's `Outcome`, what the store keeps, what analysis reads;
one list of event kinds: `EventKind`, and what the store writes in simulated sessions."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from analysis.trial_table import OUTCOMES as ANALYSIS_OUTCOMES
from uxlab.outcomes import FINISHED, EventKind, Outcome
from uxlab.simulate import simulate_cohort
from uxlab.store import Store, read_tables
from uxlab.study import load_study

GOOD = Path(__file__).parent / "data" / "bad_studies" / "good.toml"
STUDIES = Path(__file__).resolve().parents[1] / "studies"


def test_the_analysis_reads_every_outcome_uxlab_writes_and_no_other() -> None:
    assert [o.value for o in Outcome] == list(ANALYSIS_OUTCOMES)


def test_an_outcome_is_its_stored_text() -> None:
    assert Outcome.TIMED_OUT == "timed_out" and f"{Outcome.TIMED_OUT}" == "timed_out"
    assert set(FINISHED) == set(Outcome) - {Outcome.INTERRUPTED}


def test_every_finished_outcome_is_stored_and_exported_as_its_text(tmp_path) -> None:
    study = load_study(GOOD)
    with Store.open(tmp_path / "o.sqlite") as store:
        session = store.sessions.start_or_resume(study, "P-OUTCOME")
        for index, outcome in enumerate(FINISHED):
            store.trials.begin(session, index)
            store.trials.commit(
                session,
                index,
                outcome,
                {"t_abandon_ms": 900.0 if outcome == Outcome.ABANDONED else None},
                {},
                [],
            )
    _columns, rows = read_tables(tmp_path / "o.sqlite")["trials"]
    stored = [r["outcome"] for r in rows if r["outcome"] is not None]
    assert stored == [o.value for o in FINISHED]
    assert all(type(o) is str for o in stored)


def stored_event_kinds(db: Path) -> list[Any]:
    with sqlite3.connect(db) as conn:
        return [kind for (kind,) in conn.execute("SELECT DISTINCT kind FROM events")]


@pytest.mark.parametrize("study_file", ["quickstart.toml", "agent-chain.toml"])
def test_every_event_kind_the_store_writes_is_an_event_kind(tmp_path, study_file) -> None:
    study = load_study(STUDIES / study_file)
    db = tmp_path / "events.sqlite"
    with Store.open(db, durable=False) as store:
        simulate_cohort(study, store, 2, seed=3)
    kinds = stored_event_kinds(db)
    assert all(type(kind) is str for kind in kinds)
    assert set(kinds) <= {k.value for k in EventKind}, set(kinds) - set(EventKind)
    expected = {EventKind.SHOWN, EventKind.SEND, EventKind.CHUNK, EventKind.OUTCOME}
    if study_file == "agent-chain.toml":
        expected.add(EventKind.STEP)
    assert expected <= set(kinds)


def test_an_event_kind_is_its_stored_text() -> None:
    assert EventKind.LIVE_REQUEST == "live_request" and f"{EventKind.CHUNK}" == "chunk"
    assert len({k.value for k in EventKind}) == len(EventKind)
