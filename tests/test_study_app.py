"""`uxlab run`'s app driven with Pilot at 80x24: every screen, a give-up, answers, the data.

The study is the tiny copy of the quickstart's shape from `helpers.studies.tiny_study`; its
slow level (30 s to the first token) is the one the test gives up on (the attention
checks stream at the middle level, 40 ms), so the give-up is
always while waiting, whatever the machine's speed.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from helpers.pilot import asking, do_trial, wait_for, wait_screen
from helpers.studies import SLOW_MS, TRIAL_COLUMNS, tiny_study

from uxlab.cli import main
from uxlab.store import Store
from uxlab.study import load_study
from uxlab.tui.check_screen import CheckScreen
from uxlab.tui.flow_screens import (
    ConsentScreen,
    EndQuestionsScreen,
    EndScreen,
    InstructionsScreen,
    ParticipantScreen,
    SaveFailedScreen,
    TextScreen,
    WarningsScreen,
)
from uxlab.tui.study_app import StudyApp
from uxlab.tui.trial_screen import TrialScreen

REPO = Path(__file__).resolve().parents[1]


def make_app(tmp_path: Path, busy_timeout_s: float = 30.0, **kw) -> StudyApp:
    options = {"levels": f"20, 40, {SLOW_MS:g}", **kw.pop("study", {})}
    study = load_study(tiny_study(tmp_path, **options))
    store = Store.open(tmp_path / "results.sqlite", busy_timeout_s=busy_timeout_s)
    kw.setdefault("suggested_id", "P-TEST1")
    return StudyApp(study, store, **kw)


async def next_trial_screen(pilot) -> None:
    """Continue through text screens (practice over, breaks) up to the next trial."""
    while not isinstance(pilot.app.screen, TrialScreen):
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, (TrialScreen, TextScreen)))
        if isinstance(pilot.app.screen, TextScreen):
            screen = pilot.app.screen
            await pilot.press("enter")
            await wait_for(pilot, lambda s=screen: pilot.app.screen is not s)


@pytest.mark.slow
async def test_full_session_through_every_screen_then_rows_and_export(tmp_path):
    app = make_app(tmp_path, warnings=["running inside tmux: ..."])
    seen: list[str] = []
    outcomes: dict[int, str] = {}
    checks_seen: set[int] = set()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, WarningsScreen)
        await pilot.press("enter")
        await wait_screen(pilot, ParticipantScreen)
        await pilot.press("enter")  # the suggested pseudonymous id
        await wait_screen(pilot, ConsentScreen)
        await pilot.press("a")
        await wait_screen(pilot, InstructionsScreen)
        await pilot.press("enter")
        while not isinstance(app.screen, EndScreen):
            await wait_for(pilot, lambda: type(app.screen).__name__ != "Screen")
            screen = app.screen
            seen.append(type(screen).__name__)
            if isinstance(screen, (TrialScreen, CheckScreen)):
                index = screen.run.trial.index
                if isinstance(screen, CheckScreen):
                    checks_seen.add(index)
                assert app.session.committed == list(range(index)), "commit before next screen"
                outcomes[index] = await do_trial(pilot)
            elif isinstance(screen, EndQuestionsScreen):
                await wait_for(pilot, lambda s=screen: s.query("Input"))
                await pilot.press(*"ok", "enter")
                await wait_for(pilot, lambda s=screen: app.screen is not s)
            else:
                assert isinstance(screen, TextScreen)
                await pilot.press("enter")
                await wait_for(pilot, lambda s=screen: app.screen is not s)
        await pilot.press("enter")
    assert app.return_value.outcome == "completed"
    assert {"TrialScreen", "CheckScreen", "BreakScreen", "TextScreen", "EndQuestionsScreen"} <= set(
        seen
    )
    assert "abandoned" in outcomes.values() and "completed" in outcomes.values()

    db = tmp_path / "results.sqlite"
    conn = sqlite3.connect(db)
    trials = conn.execute(
        "SELECT trial_index, practice, outcome, t_abandon_ms, shown_first_ms, shown_last_ms, "
        "scheduled_end_ms FROM trials ORDER BY trial_index"
    ).fetchall()
    assert [t[0] for t in trials] == sorted(outcomes) == list(range(len(trials)))
    assert trials[0][1] == 1 and all(t[1] == 0 for t in trials[1:])
    for index, _, outcome, t_abandon, first, last, end in trials:
        assert outcome == outcomes[index]
        if index in checks_seen:  # its own screen: nothing sent, nothing streamed
            assert (outcome, t_abandon, first, last, end) == ("completed", None, None, None, None)
        elif outcome == "abandoned":
            assert 0 <= t_abandon < SLOW_MS and first is None
        else:
            assert t_abandon is None and 0 < first <= last and end > 0
    kinds = dict(conn.execute("SELECT kind, COUNT(*) FROM events GROUP BY kind").fetchall())
    n_sent = len(trials) - len(checks_seen)
    assert kinds["chunk"] > 0 and kinds["key"] >= len(trials) and kinds["send"] == n_sent
    chunk = json.loads(conn.execute("SELECT data FROM events WHERE kind='chunk'").fetchone()[0])
    assert {"scheduled_ms", "handed_ms", "queued_ms", "flushed_ms"} <= set(chunk)
    assert chunk["queued_ms"] is not None  # the paint probe saw the frame (no tty: no flush)
    sources = {
        json.loads(d)["shown_source"]
        for (d,) in conn.execute("SELECT data FROM events WHERE kind='outcome'")
    }
    assert sources <= {"queued", None}
    (env,) = conn.execute("SELECT environment FROM sessions").fetchone()
    assert json.loads(env)["timing_warnings"] == ["running inside tmux: ..."]
    conn.close()

    out = tmp_path / "export"
    assert main(["export", str(db), "-o", str(out)]) == 0
    table = pd.read_csv(out / "trials.csv")
    assert list(table.columns) == TRIAL_COLUMNS
    assert len(table) == len(trials)
    assert table["participant"].unique().tolist() == ["P-TEST1"]
    done = table[(table.outcome == "completed") & (table.attention_check == 0)]
    assert done["q_speed"].notna().all() and (done["rt_speed_ms"] > 0).all()
    assert table.loc[table.outcome == "abandoned", "q_acceptable"].isna().all()
    checks = table[table.attention_check == 1]
    assert sorted(checks.trial_index) == sorted(checks_seen) and (checks.attention_ok == 1).all()
    # Not a latency trial: no level, no latency answer besides the check's own question.
    assert checks.ttft_ms.isna().all() and (checks.condition_id == "attention-check").all()
    assert checks.q_speed.isna().all() and (checks.q_acceptable == 0).all()
    sessions = pd.read_csv(out / "sessions.csv")
    assert sessions["state"].tolist() == ["completed"]
    assert sessions["q_comments"].tolist() == ["ok"]


async def test_declining_consent_stores_only_the_refusal(tmp_path):
    app = make_app(tmp_path, participant="P-DECL1")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, ConsentScreen)
        await pilot.press("d")
        await wait_screen(pilot, EndScreen)
        await pilot.press("enter")
    assert app.return_value.outcome == "declined"
    conn = sqlite3.connect(tmp_path / "results.sqlite")
    assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone() == (0,)
    assert conn.execute("SELECT COUNT(*) FROM refusals").fetchone() == (1,)


async def test_quit_mid_trial_then_the_same_command_resumes(tmp_path):
    study = {"levels": f"{SLOW_MS:g}", "attention": False}  # trial 1 is still waiting at the quit
    app = make_app(tmp_path, participant="P-QUIT1", study=study)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, ConsentScreen)
        await pilot.press("a")
        await wait_screen(pilot, InstructionsScreen)
        await pilot.press("enter")
        await wait_screen(pilot, TrialScreen)
        await do_trial(pilot)
        await next_trial_screen(pilot)
        await pilot.press("enter", "ctrl+q", "ctrl+q")  # quit with trial 1 in flight
    assert app.return_value.outcome == "interrupted"
    assert app.return_value.committed == [0]
    app.store.close()

    again = make_app(tmp_path, participant="P-QUIT1", study=study)
    async with again.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, InstructionsScreen)
        body = again.screen.body
        assert "Welcome back" in body and "again at the end" in body
        assert "continues with trial 1 of 2" in body
        await pilot.press("enter")
        await wait_screen(pilot, TrialScreen)
        assert again.screen.run.trial.index == 2
        await pilot.press("ctrl+c", "ctrl+c")  # trial 2 never sent: released, offered again
    conn = sqlite3.connect(tmp_path / "results.sqlite")
    got = conn.execute("SELECT trial_index, outcome FROM trials ORDER BY 1").fetchall()
    assert got == [(0, "abandoned"), (1, "interrupted")]
    assert conn.execute("SELECT state, resumed_count FROM sessions").fetchone() == (
        "interrupted",
        1,
    )


async def test_a_resume_during_practice_does_not_say_you_start_with_it(tmp_path):
    study = {"levels": "20", "attention": False, "practice": 2}
    app = make_app(tmp_path, participant="P-PRAC1", study=study)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, ConsentScreen)
        await pilot.press("a")
        await wait_screen(pilot, InstructionsScreen)
        assert "You start with 2 practice trials." in app.screen.body
        await pilot.press("enter")
        await wait_screen(pilot, TrialScreen)
        await do_trial(pilot)
        await next_trial_screen(pilot)
        await pilot.press("ctrl+q", "ctrl+q")  # the second practice trial never sent
    assert app.return_value.outcome == "interrupted"
    app.store.close()

    again = make_app(tmp_path, participant="P-PRAC1", study=study)
    async with again.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, InstructionsScreen)
        body = again.screen.body
        assert "continues with practice trial 2" in body
        assert "The practice trials come first." in body and "You start with" not in body
        await pilot.press("ctrl+q", "ctrl+q")


async def test_keys_are_stored_by_name_and_typed_text_is_not(tmp_path):
    app = make_app(
        tmp_path,
        participant="P-KEYS1",
        pilot=True,
        study={
            "practice": 0,
            "attention": False,
            "levels": "20",
            "extra_questions": '\n[[questions]]\nid = "why"\ntype = "text"\ntext = "Why?"\n',
        },
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, ConsentScreen)
        await pilot.press("a")
        await wait_screen(pilot, InstructionsScreen)
        await pilot.press("enter")
        await wait_screen(pilot, TrialScreen)
        await do_trial(pilot, answers=("y", "4", "secret"), give_up=False)
        await pilot.press("ctrl+q", "ctrl+q")
    conn = sqlite3.connect(tmp_path / "results.sqlite")
    keys = [
        json.loads(d)["key"] for (d,) in conn.execute("SELECT data FROM events WHERE kind='key'")
    ]
    assert keys[:1] == ["enter"] and "y" in keys and "char" in keys
    assert not set("secret") & set(keys)
    assert conn.execute("SELECT pilot FROM sessions").fetchone() == (1,)  # --pilot
    assert conn.execute("SELECT value FROM responses WHERE question_id='why'").fetchone() == (
        "secret",
    )


def test_run_command_reports_a_bad_study_and_a_bad_participant(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("[study]\nid = 'x'\n")
    assert main(["run", str(bad)]) == 2
    assert "bad.toml" in capsys.readouterr().err
    good = tiny_study(tmp_path)
    assert main(["run", str(good), "--participant", "Jane Doe"]) == 2
    assert "never a name" in capsys.readouterr().err


def test_the_shipped_quickstart_study_loads_and_shapes():
    study = load_study(REPO / "studies" / "quickstart.toml")
    from uxlab.session import shortest_gap_ms

    assert study.trial_questions and shortest_gap_ms(study) > 0


async def test_participant_screen_refuses_a_name_and_takes_a_code(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, ParticipantScreen)
        screen = app.screen
        await pilot.press(*"Jane Doe", "enter")  # typing replaces the offered id
        await pilot.pause()
        assert app.screen is screen
        assert "spaces" in str(screen.query_one("#participant-error").render())
        for _ in "Jane Doe":
            await pilot.press("backspace")
        await pilot.press(*"P-LAB01", "enter")
        await wait_screen(pilot, ConsentScreen)
        assert app.session.participant == "P-LAB01"
        await pilot.press("ctrl+q", "ctrl+q")
    assert app.return_value.outcome == "interrupted"


ONE_LEVEL = {"practice": 0, "attention": False, "repeats": 2, "break_every": 10}


def stored(tmp_path: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(tmp_path / "results.sqlite") as conn:
        return conn.execute(sql).fetchall()


async def start_trials(pilot) -> TrialScreen:
    await wait_screen(pilot, ConsentScreen)
    await pilot.press("a")
    await wait_screen(pilot, InstructionsScreen)
    await pilot.press("enter")
    await wait_screen(pilot, TrialScreen)
    return pilot.app.screen


async def resumed_trial_index(tmp_path: Path, participant: str, study: dict) -> tuple[int, str]:
    """Run the same command again: (index of the trial offered first, the resume note)."""
    again = make_app(tmp_path, participant=participant, study=study)
    async with again.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(again.screen, (ConsentScreen, InstructionsScreen)))
        note = again.screen.body
        if isinstance(again.screen, ConsentScreen):  # nothing begun yet: consent is asked again
            await pilot.press("a")
            await wait_screen(pilot, InstructionsScreen)
        await pilot.press("enter")
        await wait_screen(pilot, TrialScreen)
        index = again.screen.run.trial.index
        await pilot.press("ctrl+q", "ctrl+q")
    again.store.close()
    return index, note


async def test_quit_on_the_stopped_screen_keeps_the_give_up(tmp_path):
    study = {**ONE_LEVEL, "levels": f"{SLOW_MS:g}"}
    app = make_app(tmp_path, participant="P-GIVE1", study=study)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await start_trials(pilot)
        await pilot.press("enter", "escape")
        await wait_for(pilot, lambda: screen.awaiting_next)  # "You stopped this answer."
        await pilot.press("ctrl+q", "ctrl+q")
    assert app.return_value.outcome == "interrupted"
    assert app.return_value.committed == [0] and app.return_value.quit_trial == "committed"
    app.store.close()
    got = stored(tmp_path, "SELECT trial_index, outcome, t_abandon_ms FROM trials")
    assert [g[:2] for g in got] == [(0, "abandoned")] and 0 <= got[0][2] < SLOW_MS
    keys = stored(tmp_path, "SELECT data FROM events WHERE kind = 'key'")
    assert [json.loads(k)["key"] for (k,) in keys] == ["enter", "escape", "ctrl+q", "ctrl+q"]
    index, note = await resumed_trial_index(tmp_path, "P-GIVE1", study)
    assert index == 1 and "skipped" not in note


async def test_quit_while_answering_stores_what_was_answered(tmp_path):
    study = {**ONE_LEVEL, "levels": "20"}
    app = make_app(tmp_path, participant="P-HALF1", study=study)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await start_trials(pilot)
        await pilot.press("enter")
        await wait_for(pilot, lambda: asking(app, "acceptable"))
        await pilot.press("n", "enter")
        await wait_for(pilot, lambda: asking(app, "speed"))
        await pilot.press("2", "ctrl+q", "ctrl+q")  # chosen but not confirmed: not an answer
    assert app.return_value.committed == [0] and screen.run.outcome == "completed"
    app.store.close()
    assert stored(tmp_path, "SELECT question_id, value FROM responses ORDER BY 1") == [
        ("acceptable", "no"),
        ("speed", None),
    ]
    (quit_data,) = stored(tmp_path, "SELECT data FROM events WHERE kind = 'quit'")[0]
    assert json.loads(quit_data)["unanswered"] == ["speed"]
    index, _note = await resumed_trial_index(tmp_path, "P-HALF1", study)
    assert index == 1


async def test_quit_before_sending_offers_the_same_trial_again(tmp_path):
    study = {**ONE_LEVEL, "levels": "20"}
    app = make_app(tmp_path, participant="P-SEND1", study=study)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await start_trials(pilot)
        await pilot.press("ctrl+q", "ctrl+q")  # the prompt was never sent
    assert app.return_value.quit_trial == "released" and app.return_value.committed == []
    assert screen.run.t0_ms is None
    app.store.close()
    assert stored(tmp_path, "SELECT COUNT(*) FROM trials") == [(0,)]
    index, note = await resumed_trial_index(tmp_path, "P-SEND1", study)
    assert index == 0 and "skipped" not in note
    assert stored(tmp_path, "SELECT COUNT(*) FROM trials") == [(0,)]  # released again


async def test_a_locked_database_shows_why_and_r_retries_the_save(tmp_path):
    study = {**ONE_LEVEL, "levels": "20"}
    app = make_app(tmp_path, participant="P-LOCK1", study=study, busy_timeout_s=0.1)
    other = sqlite3.connect(tmp_path / "results.sqlite", isolation_level=None, timeout=0.1)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await start_trials(pilot)
            await pilot.press("enter")
            await wait_for(pilot, lambda: asking(app, "acceptable"))
            other.execute("BEGIN EXCLUSIVE")  # another process holds the file
            await pilot.press("y", "enter")
            await wait_for(pilot, lambda: asking(app, "speed"))
            await pilot.press("4", "enter")
            await wait_screen(pilot, SaveFailedScreen)
            failed = app.screen
            assert "Could not save this trial: database is locked" in failed.body
            assert "Press **r** to retry" in failed.body
            await pilot.press("enter")  # not the retry key: nothing happens
            await pilot.press("r")  # still locked: the same screen again
            await wait_for(pilot, lambda: app.screen is not failed)
            await wait_screen(pilot, SaveFailedScreen)
            assert stored(tmp_path, "SELECT outcome FROM trials") == [("running",)]
            other.execute("ROLLBACK")
            await pilot.press("r")
            await wait_for(pilot, lambda: app.screen is not screen and not isinstance(
                app.screen, SaveFailedScreen))  # fmt: skip
            await wait_screen(pilot, TrialScreen)
            assert app.screen.run.trial.index == 1
            await pilot.press("ctrl+q", "ctrl+q")
    finally:
        other.close()
    assert app.return_value.committed == [0]
    app.store.close()
    assert stored(tmp_path, "SELECT trial_index, outcome FROM trials ORDER BY 1") == [
        (0, "completed")
    ]
    assert stored(tmp_path, "SELECT COUNT(*) FROM responses WHERE trial_index = 0") == [(2,)]
