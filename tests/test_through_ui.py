"""Simulated participants through the real terminal runner (`StudyApp` headless, Pilot keys).

The tiny study (`helpers.studies.tiny_study`) with a slow level (30 s to the first token) and
impatient observers (patience scale 3 s), played 20x faster on the real monotonic clock:
the observers give up with the study's key, answer through the question widgets, and what
is stored must be what they chose. The same observer on the virtual-clock path makes the
same choices wherever a trial ends the same way.

The real clock is shared with whatever else the machine runs, so only the slow level's
give-ups are asserted exactly: there the give-up comes seconds of study time (over 1 s of
real time) before the first token. On the faster levels a give-up planned near the stream's
end may lose the race on a loaded machine; the tests allow that and nothing else.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest
from helpers.shared import built_once
from helpers.studies import tiny_study

from uxlab.cli import main
from uxlab.simulate import PopulationTruth, participant_id, simulate_session
from uxlab.simulate.scripted import ScaledClock, answer_keys
from uxlab.store import Store
from uxlab.study import load_study
from uxlab.study.spec import Question
from uxlab.tui.simulated_run import simulate_through_ui, ui_participant_id

TRUTH = PopulationTruth(patience_scale_ms=3000.0)
SCALE = 20.0
SLOW_MS = 30000.0
"""The slow level: every impatient observer gives up long before its first token."""


@pytest.fixture(scope="module")
def ui_run(tmp_path_factory):
    return built_once(tmp_path_factory, "through-ui", _ui_run)


def _ui_run(tmp):
    study = load_study(tiny_study(tmp, levels=f"20, 400, {SLOW_MS:g}"))
    db = tmp / "ui.sqlite"
    with Store.open(db) as store:
        sessions = [
            asyncio.run(  # participant 1 under its virtual-clock id: the same trial list
                simulate_through_ui(
                    study,
                    store,
                    n,
                    seed=3,
                    truth=TRUTH,
                    time_scale=SCALE,
                    participant=participant_id(3, 1) if n == 1 else None,
                )
            )
            for n in (1, 2)
        ]
    return study, db, sessions, tmp


SLOW_TRIALS = (
    "FROM trials WHERE attention = 0 AND practice = 0 AND json_extract(levels, '$.ttft_ms') = ?"
)


def _rows(db, sql, *params):
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchall()


@pytest.mark.slow
def test_every_trial_is_committed_and_marked_simulated(ui_run):
    _, db, sessions, _ = ui_run
    assert [s.outcome for s in sessions] == ["completed", "completed"]
    for s in sessions:
        ((state, simulated, env_json, plan_json),) = _rows(
            db,
            "SELECT state, simulated, environment, plan FROM sessions WHERE participant = ?",
            s.participant,
        )
        env = json.loads(env_json)
        assert (state, simulated) == ("completed", 1)
        assert env["through_ui"] is True and env["time_scale"] == SCALE
        assert env["simulated_truth"]["participant"] == s.observer.own()
        outcomes = _rows(
            db, "SELECT outcome FROM trials WHERE session_id = ? ORDER BY trial_index",
            s.session_id,
        )  # fmt: skip
        assert len(outcomes) == len(json.loads(plan_json)) == s.n_trials
        assert {o for (o,) in outcomes} <= {"completed", "abandoned"}


@pytest.mark.slow
def test_stored_answers_are_the_observers_choices(ui_run):
    _, db, sessions, _ = ui_run
    for s in sessions:
        stored = {
            (i, q): v
            for i, q, v in _rows(
                db,
                "SELECT trial_index, question_id, value FROM responses WHERE session_id = ?",
                s.session_id,
            )
        }
        chosen = {(c.trial_index if c.trial_index is not None else -1, c.question_id): str(c.value)
                  for c in s.choices}  # fmt: skip
        assert stored == chosen
        assert any(q == "speed" for _, q in chosen)  # Likert answers went through the digits
        assert chosen[(-1, "comments")] == "none"  # free text was typed


@pytest.mark.slow
def test_give_ups_are_pressed_at_the_observers_patience_and_ask_nothing(ui_run):
    _, db, sessions, _ = ui_run
    planned = {(s.session_id, i): ms for s in sessions for i, ms in s.planned_give_ups.items()}
    slow = set(_rows(db, f"SELECT session_id, trial_index {SLOW_TRIALS}", SLOW_MS))
    assert planned.keys() & slow, "the impatient observers gave up at least once on the slow level"
    abandoned = _rows(
        db, "SELECT session_id, trial_index, t_abandon_ms FROM trials WHERE outcome = 'abandoned'"
    )
    stored = {(sid, i) for sid, i, _ in abandoned}
    assert stored <= set(planned)  # nobody gave up unplanned
    assert planned.keys() & slow <= stored  # and no slow-level give-up was lost
    for sid, i, t_abandon_ms in abandoned:
        assert t_abandon_ms >= planned[(sid, i)]  # the key is stamped when it arrives, never early
        assert not _rows(
            db, "SELECT 1 FROM responses WHERE session_id = ? AND trial_index = ?", sid, i
        )
        (events,) = _rows(
            db,
            "SELECT data FROM events WHERE session_id = ? AND trial_index = ? AND kind = 'key' "
            "AND data LIKE '%escape%'",
            sid,
            i,
        )
        assert json.loads(events[0])["key"] == "escape"


@pytest.mark.slow
def test_same_person_same_choices_as_on_the_virtual_clock(ui_run):
    study, db, sessions, tmp = ui_run
    with Store.open(tmp / "virtual.sqlite") as store:
        virtual = asyncio.run(simulate_session(study, store, 1, seed=3, truth=TRUTH))
    assert virtual.observer == sessions[0].observer
    assert sessions[1].participant == ui_participant_id(3, 2)
    ui_sid, v_sid = sessions[0].session_id, virtual.session_id
    outcomes = "SELECT trial_index, outcome FROM trials WHERE session_id = ?"
    ui = dict(_rows(db, outcomes, ui_sid))
    vt = dict(_rows(tmp / "virtual.sqlite", outcomes, v_sid))
    same = [i for i in ui if ui[i] == vt[i]]
    # Only a give-up racing a fast stream's end may differ; every slow-level trial ends alike.
    slow = {i for sid, i in _rows(db, f"SELECT session_id, trial_index {SLOW_TRIALS}", SLOW_MS)
            if sid == ui_sid}  # fmt: skip
    assert slow and slow <= set(same), (ui, vt)
    assert all({ui[i], vt[i]} == {"completed", "abandoned"} for i in ui if i not in same)
    sql = "SELECT question_id, value FROM responses WHERE session_id = ? AND trial_index = ?"
    for i in same:
        assert sorted(_rows(db, sql, ui_sid, i)) == sorted(
            _rows(tmp / "virtual.sqlite", sql, v_sid, i)
        )


def test_answer_keys_reach_the_value_the_widgets_hold():
    likert = Question("speed", "likert", "How fast?", scale=5)
    assert answer_keys(likert, 4) == (["4", "enter"], 4)
    assert answer_keys(Question("ok", "yesno", "OK?"), "no") == (["n", "enter"], "no")
    choice = Question("c", "choice", "Pick", options=("a", "b", "c"))
    assert answer_keys(choice, "c") == (["3", "enter"], "c")
    slider = Question("s", "slider", "How slow?", min=0.0, max=100.0)
    keys, value = answer_keys(slider, 73.4)
    # the first arrow places it at 50, then 2 big steps and 3 small ones
    assert keys == ["right", "shift+right", "shift+right", "right", "right", "right", "enter"]
    assert value == 73.0
    keys, value = answer_keys(slider, 8.0)
    assert keys.count("shift+left") == 4 and keys.count("left") == 2 and value == 8.0
    assert answer_keys(Question("t", "text", "Notes"), None) == ([*"none", "enter"], "none")


async def test_scaled_clock_sleeps_to_its_own_deadlines():
    clock = ScaledClock(50.0)
    start = clock.now_ms()
    await clock.sleep_until(start + 500.0)  # 10 ms of real time
    assert clock.now_ms() >= start + 500.0


def test_cli_through_ui_refuses_a_time_scale_without_it(tmp_path, capsys):
    path = tiny_study(tmp_path)
    assert main(["simulate", str(path), "-n", "1", "--time-scale", "5"]) != 0
    assert "--through-ui" in capsys.readouterr().err
    assert main(["simulate", str(path), "--through-ui", "--time-scale", "0"]) != 0
    assert "--time-scale 0" in capsys.readouterr().err
    assert ui_participant_id(3, 1) == "SIM-s3-ui001"


@pytest.mark.slow
def test_cli_runs_a_participant_through_the_runner(tmp_path, capsys):
    path = tiny_study(tmp_path, levels="20, 40", repeats=1, attention=False)
    db = tmp_path / "cli.sqlite"
    argv = ["simulate", str(path), "-n", "1", "--through-ui", "--time-scale", "40", "--db", str(db)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "SIM-s0-ui001: completed" in out and "x40 faster" in out
    ((simulated, env),) = _rows(db, "SELECT simulated, environment FROM sessions")
    assert simulated == 1 and json.loads(env)["frame_cap_fps"] >= 1
