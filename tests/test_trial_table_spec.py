"""Contract 2 as data: the export writes only columns `trial_table_spec` lists, and the
analysis, reading the table alone (no study.json), takes none of them for a design factor."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import trial_table_spec as spec
from analysis.trial_table import TrialTableError, known_columns, load_trial_table
from uxlab.store import Store, export_db
from uxlab.study import load_study

GOOD = Path(__file__).parent / "data" / "bad_studies" / "good.toml"


def test_every_exported_column_is_in_the_spec_and_no_spec_column_becomes_a_factor(tmp_path):
    study = load_study(GOOD)
    db = tmp_path / "spec.sqlite"
    with Store.open(db) as store:
        session = store.sessions.start_or_resume(study, "P-SPEC1", simulated=True)
        store.sessions.set_state(session, "consented")
        store.sessions.set_state(session, "running")
        main = next(t.index for t in session.trials if not t.practice)
        for t in session.trials[: main + 1]:
            store.trials.begin(session, t.index)
            store.trials.commit(
                session,
                t.index,
                "completed",
                {  # every optional group present, as a chain or a live trial stores them
                    "shown_first_ms": 101.0,
                    "shown_last_ms": 900.0,
                    "scheduled_end_ms": 900.0,
                    "e2e_ms": 900.0,
                    "abandon_step": None,
                    "paused_ms": 0.0,
                    "violations_n": 1,
                    "violation_max_ms": 12.0,
                    "violation_sum_ms": 12.0,
                },
                {"acceptable": ("yes", 800.0), "speed": (4, 900.0)},
            )
        assert store.sessions.requeue_trial(session, main, "interrupted") is not None
    out = tmp_path / "out"
    export_db(db, out)
    columns = list(pd.read_csv(out / "trials.csv", nrows=0).columns)
    factors = [f.name for f in study.factors]
    questions = [c for q in study.trial_questions for c in spec.question_columns(q.id)]

    unknown = [c for c in columns if c not in (*known_columns(), *factors, *questions)]
    assert unknown == [], f"add {unknown} to trial_table_spec (the export wrote them)"
    for group in (*spec.OPTIONAL_GROUPS, spec.RERUN):
        assert set(spec.names(group)) <= set(columns)

    kinds = {q.id: q.answer_kind for q in load_trial_table(out).questions.values()}
    assert kinds == {"acceptable": "binary", "speed": "rating", "comments": "text"}

    (out / "study.json").unlink()  # the analysis must tell factors from the columns alone
    table = load_trial_table(out)
    assert table.factors == factors


def test_answers_are_checked_by_the_kind_study_json_gives_their_type(tmp_path):
    """A question type the analysis has never heard of is checked by its answer kind."""
    (tmp_path / "trials.csv").write_text("participant,q_stars\nP1,4\nP2,7\n")
    study = {"questions": [{"id": "stars", "type": "stars", "scale": 5}]}
    (tmp_path / "study.json").write_text(json.dumps(study))
    load_trial_table(tmp_path)  # no kind for "stars": not checked

    study["answer_kinds"] = {"stars": "rating"}
    (tmp_path / "study.json").write_text(json.dumps(study))
    with pytest.raises(TrialTableError, match=r"row 2 column 'q_stars': 7 is not a rating"):
        load_trial_table(tmp_path)
