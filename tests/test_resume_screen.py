"""The first screen of `uxlab run` lists unfinished sessions and continues one with one key.

Sessions are made with the UI-free controller on the same database (one paused by a quit
after a trial, one that stopped before consent, one completed), then the real app is driven
with Pilot at 80x24: a digit continues that row's session, ↓ and Enter the highlighted one,
`n` starts a new participant; with `--participant` (or nothing unfinished) there is no list.
"""

from __future__ import annotations

import sqlite3

from helpers.pilot import wait_screen
from helpers.studies import tiny_study
from test_session import run_trial

from uxlab.clock import VirtualClock
from uxlab.session import StudySession
from uxlab.store import Store
from uxlab.study import load_study
from uxlab.tui.flow_screens import ConsentScreen, InstructionsScreen, ParticipantScreen
from uxlab.tui.resume_screen import ResumeScreen, ago_text, session_line
from uxlab.tui.study_app import StudyApp

STUDY = {"levels": "20", "repeats": 2, "practice": 0, "attention": False}


async def make_sessions(tmp_path):
    """P-DONE completed, P-HALF paused after 1 of 2 trials, P-NEW stopped before consent."""
    study = load_study(tiny_study(tmp_path, **STUDY))
    store = Store.open(tmp_path / "results.sqlite")
    for participant in ("P-DONE", "P-HALF"):
        ss = StudySession.open(study, store, participant, clock=VirtualClock(1000.0))
        ss.accept_consent()
        ss.start_running()
        await run_trial(ss)
        if participant == "P-DONE":
            await run_trial(ss)
            ss.finish()
        else:
            ss.quit(None)
    StudySession.open(study, store, "P-NEW", clock=VirtualClock(1000.0))
    store.close()
    return study


def participants(tmp_path) -> list[str]:
    with sqlite3.connect(tmp_path / "results.sqlite") as conn:
        return [r[0] for r in conn.execute("SELECT participant FROM participants ORDER BY 1")]


async def test_a_digit_continues_that_session_and_no_participant_is_added(tmp_path):
    study = await make_sessions(tmp_path)
    app = StudyApp(study, Store.open(tmp_path / "results.sqlite"), suggested_id="P-OTHER")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, ResumeScreen)
        listed = [s.participant for s in app.screen.sessions]
        assert sorted(listed) == ["P-HALF", "P-NEW"]  # not the completed one
        half = app.screen.sessions[listed.index("P-HALF")]
        assert (half.n_done, half.n_trials, half.state) == (1, 2, "interrupted")
        await pilot.press(str(listed.index("P-HALF") + 1))
        await wait_screen(pilot, InstructionsScreen)
        assert "Welcome back" in app.screen.body
        assert app.session.participant == "P-HALF" and app.session.resumed
        await pilot.press("ctrl+q", "ctrl+q")
    app.store.close()
    assert participants(tmp_path) == ["P-DONE", "P-HALF", "P-NEW"]


async def test_arrows_and_enter_continue_the_highlighted_session(tmp_path):
    study = await make_sessions(tmp_path)
    app = StudyApp(study, Store.open(tmp_path / "results.sqlite"), suggested_id="P-OTHER")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, ResumeScreen)
        second = app.screen.sessions[1].participant
        await pilot.press("down", "enter")
        await wait_screen(pilot, (ConsentScreen, InstructionsScreen))
        assert app.session.participant == second
        await pilot.press("ctrl+q", "ctrl+q")
    app.store.close()


async def test_n_starts_a_new_participant(tmp_path):
    study = await make_sessions(tmp_path)
    app = StudyApp(study, Store.open(tmp_path / "results.sqlite"), suggested_id="P-OTHER")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, ResumeScreen)
        await pilot.press("n")
        await wait_screen(pilot, ParticipantScreen)
        await pilot.press("enter")
        await wait_screen(pilot, ConsentScreen)
        assert app.session.participant == "P-OTHER" and not app.session.resumed
        await pilot.press("ctrl+q", "ctrl+q")
    app.store.close()
    assert "P-OTHER" in participants(tmp_path)


async def test_a_participant_id_given_resumes_directly(tmp_path):
    study = await make_sessions(tmp_path)
    app = StudyApp(study, Store.open(tmp_path / "results.sqlite"), participant="P-HALF")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, InstructionsScreen)
        assert app.session.resumed
        await pilot.press("ctrl+q", "ctrl+q")
    app.store.close()


def test_rows_fit_80_columns_and_say_how_long_ago():
    from uxlab.store.store import UnfinishedSession

    s = UnfinishedSession("S-1", "P-7K3QX", "interrupted", 12, 120, "", 1_000_000.0, True)
    line = session_line(9, s, now_s=1_000_000.0 + 3 * 3600)
    assert "P-7K3QX" in line and "12/120 trials" in line and "paused" in line and "3 h ago" in line
    assert len(line) <= 72  # inside the page's padding and the list's border at 80 columns
    assert [ago_text(x) for x in (5, 125, 7200, 3 * 86400)] == [
        "just now",
        "2 min ago",
        "2 h ago",
        "3 days ago",
    ]


async def test_sessions_of_another_version_of_the_file_are_counted_not_listed(tmp_path):
    await make_sessions(tmp_path)
    path = tmp_path / "tiny.toml"
    path.write_text(path.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    edited = load_study(path)
    store = Store.open(tmp_path / "results.sqlite")
    assert store.sessions.unfinished(edited) == []
    assert store.sessions.unfinished_of_other_versions(edited) == 2
    StudySession.open(edited, store, "P-EDIT", clock=VirtualClock(1000.0))
    app = StudyApp(edited, store, suggested_id="P-OTHER")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, ResumeScreen)
        assert [s.participant for s in app.screen.sessions] == ["P-EDIT"]
        assert app.screen.n_other_versions == 2
        await pilot.press("ctrl+q", "ctrl+q")
    store.close()
