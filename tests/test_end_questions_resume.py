"""The end-of-study questions through the real app: each answer is saved as it is given, so a
quit between them loses none; a resume asks only those still unanswered, numbered as before,
and the first answer to a question is the one kept."""

from __future__ import annotations

from helpers.pilot import asking, do_trial, wait_for, wait_screen
from helpers.studies import tiny_study

from uxlab.store import Store
from uxlab.store.records import END_INDEX
from uxlab.study import load_study
from uxlab.tui.flow_screens import ConsentScreen, EndQuestionsScreen, EndScreen, InstructionsScreen
from uxlab.tui.study_app import StudyApp
from uxlab.tui.trial_screen import TrialScreen

OVERALL = """
[[questions]]
id = "overall"
type = "likert"
text = "Overall, how fast did the answers feel?"
scale = 5
labels = ["Very slow", "Very fast"]
when = "end"
"""
STUDY = {"levels": "20", "repeats": 2, "practice": 0, "break_every": 10, "attention": False}


def app_for(tmp_path) -> StudyApp:
    study = load_study(tiny_study(tmp_path, extra_questions=OVERALL, **STUDY))
    return StudyApp(study, Store.open(tmp_path / "results.sqlite"), participant="P-END01")


def end_answers(tmp_path) -> dict[str, str]:
    with Store.open(tmp_path / "results.sqlite") as store:
        rows = store.db.conn.execute(
            "SELECT question_id, value FROM responses WHERE trial_index = ?", (END_INDEX,)
        )
        return dict(rows.fetchall())


def panel_number(screen: EndQuestionsScreen) -> str:
    return str(screen.query_one("#end-questions").children[0].query_one(".question-text").render())


async def test_a_quit_between_end_questions_keeps_the_first_answer_and_asks_only_the_rest(
    tmp_path,
):
    app = app_for(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, ConsentScreen)
        await pilot.press("a")
        await wait_screen(pilot, InstructionsScreen)
        await pilot.press("enter")
        while not isinstance(app.screen, EndQuestionsScreen):
            await wait_for(pilot, lambda: isinstance(app.screen, (TrialScreen, EndQuestionsScreen)))
            if isinstance(app.screen, TrialScreen):
                await do_trial(pilot, give_up=False)
        screen = app.screen
        await wait_for(pilot, lambda: asking(app, "overall"))
        assert "1/2" in panel_number(screen)
        await pilot.press("2", "enter")
        await wait_for(pilot, lambda: asking(app, "comments"))
        await wait_for(pilot, lambda: end_answers(tmp_path) == {"overall": "2"})  # saved now
        await pilot.press("ctrl+q", "ctrl+q")
    app.store.close()
    assert end_answers(tmp_path) == {"overall": "2"}

    again = app_for(tmp_path)
    async with again.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, EndQuestionsScreen)  # every trial is done: straight there
        screen = again.screen
        assert [q.id for q in screen.questions] == ["comments"]  # not asked again
        await wait_for(pilot, lambda: asking(again, "comments"))
        assert "2/2" in panel_number(screen)
        assert "(not your name)" in screen.query_one("#answer").placeholder  # stored as typed
        assert str(screen.query_one(".page-title").render()) == "Last questions"
        await pilot.press(*"ok", "enter")
        await wait_screen(pilot, EndScreen)
        await pilot.press("enter")
    again.store.close()
    assert again.return_value.outcome == "completed"
    assert end_answers(tmp_path) == {"overall": "2", "comments": "ok"}


def test_the_first_end_answer_is_kept_when_one_is_given_again(tmp_path):
    study = load_study(tiny_study(tmp_path, extra_questions=OVERALL, **STUDY))
    with Store.open(tmp_path / "results.sqlite") as store:
        session = store.sessions.start_or_resume(study, "P-END02")
        store.end_answers.commit(session, {"overall": ("2", 900.0)})
        store.end_answers.commit(session, {"overall": ("5", 100.0), "comments": ("x", 5.0)})
        assert store.end_answers.answered(session) == {"overall", "comments"}
        rows = store.db.conn.execute(
            "SELECT question_id, value, rt_ms FROM responses WHERE trial_index = ? ORDER BY 1",
            (END_INDEX,),
        ).fetchall()
    assert [tuple(r) for r in rows] == [("comments", "x", 5.0), ("overall", "2", 900.0)]
