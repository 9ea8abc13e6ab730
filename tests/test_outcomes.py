"""One list of trial outcomes: uxlab's `Outcome`, what the store keeps, what analysis reads."""

from __future__ import annotations

from pathlib import Path

from analysis.trial_table import OUTCOMES as ANALYSIS_OUTCOMES
from uxlab.outcomes import FINISHED, Outcome
from uxlab.store import Store, read_tables
from uxlab.study import load_study

GOOD = Path(__file__).parent / "data" / "bad_studies" / "good.toml"


def test_the_analysis_reads_every_outcome_uxlab_writes_and_no_other() -> None:
    assert [o.value for o in Outcome] == list(ANALYSIS_OUTCOMES)


def test_an_outcome_is_its_stored_text() -> None:
    assert Outcome.TIMED_OUT == "timed_out" and f"{Outcome.TIMED_OUT}" == "timed_out"
    assert set(FINISHED) == set(Outcome) - {Outcome.INTERRUPTED}


def test_every_finished_outcome_is_stored_and_exported_as_its_text(tmp_path) -> None:
    study = load_study(GOOD)
    with Store.open(tmp_path / "o.sqlite") as store:
        session = store.start_or_resume_session(study, "P-OUTCOME")
        for index, outcome in enumerate(FINISHED):
            store.begin_trial(session, index)
            store.commit_trial(
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
