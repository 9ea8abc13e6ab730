"""The attention check through the real app: its own screen, only its question, not a trial
the participant counts or the analysis can take for a latency trial; a quit before its
answer asks it again on resume."""

from __future__ import annotations

import pandas as pd
from helpers.pilot import asking, do_trial, wait_for, wait_screen
from helpers.studies import tiny_study

from uxlab.cli import main
from uxlab.store import Store
from uxlab.study import load_study
from uxlab.study.design import design_trials
from uxlab.study.estimate import estimate_duration
from uxlab.tui.check_screen import CheckScreen
from uxlab.tui.flow_screens import ConsentScreen, InstructionsScreen, TextScreen
from uxlab.tui.questions import QuestionPanel
from uxlab.tui.study_app import StudyApp
from uxlab.tui.trial_screen import TrialScreen

STUDY = {"levels": "20, 40", "practice": 0, "break_every": 10, "end_question": False}


def app_for(tmp_path, participant: str = "P-CHECK") -> StudyApp:
    study = load_study(tiny_study(tmp_path, **STUDY))
    return StudyApp(study, Store.open(tmp_path / "results.sqlite"), participant=participant)


async def up_to_the_check(pilot) -> CheckScreen:
    app = pilot.app
    while not isinstance(app.screen, CheckScreen):
        await wait_for(pilot, lambda: isinstance(app.screen, (TrialScreen, CheckScreen)))
        if isinstance(app.screen, TrialScreen):
            header = str(app.screen.query_one("#trial-header").render())
            assert header.startswith("Trial ") and header.endswith(" of 4")  # checks not counted
            await do_trial(pilot, give_up=False)
    return app.screen


async def test_the_check_is_its_own_screen_and_a_quit_asks_it_again(tmp_path):
    app = app_for(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, ConsentScreen)
        await pilot.press("a")
        await wait_screen(pilot, InstructionsScreen)
        assert "There are 4 trials, and 1 short attention check." in app.screen.body
        await pilot.press("enter")
        check = await up_to_the_check(pilot)
        assert str(check.query_one("#trial-header").render()) == "Attention check"
        assert "Please answer No" in str(check.query_one("#check-text").render())
        await wait_for(pilot, lambda: asking(app))  # its panel is mounted after the screen
        panels = check.query(QuestionPanel)
        assert [p.question.id for p in panels] == ["acceptable"]  # only the check's question
        assert check.run.t0_ms is None and check.run.phase == "ready"  # nothing was sent
        index = check.run.trial.index
        await pilot.press("ctrl+q", "ctrl+q")
    app.store.close()

    again = app_for(tmp_path)
    async with again.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, InstructionsScreen)
        await pilot.press("enter")
        await wait_screen(pilot, CheckScreen)
        assert again.screen.run.trial.index == index  # asked again, not scored as a miss
        await pilot.press("y", "enter")  # the wrong answer
        while again.return_value is None:
            await wait_for(
                pilot,
                lambda: (
                    again.return_value is not None
                    or isinstance(again.screen, (TrialScreen, TextScreen))
                ),
            )
            if isinstance(again.screen, TrialScreen):
                await do_trial(pilot, give_up=False)
            elif isinstance(again.screen, TextScreen):
                await pilot.press("enter")
                await wait_for(
                    pilot,
                    lambda s=again.screen: again.screen is not s or again.return_value is not None,
                )
    again.store.close()

    out = tmp_path / "export"
    assert main(["export", str(tmp_path / "results.sqlite"), "-o", str(out)]) == 0
    table = pd.read_csv(out / "trials.csv")
    checks = table[table.attention_check == 1]
    assert checks.trial_index.tolist() == [index]
    row = checks.iloc[0]
    assert row.attention_ok == 0 and row.q_acceptable == 1  # answered "yes" where "no" was asked
    assert pd.isna(row.ttft_ms) and pd.isna(row.q_speed) and pd.isna(row.shown_first_ms)
    assert row.condition_id == "attention-check"
    main_rows = table[table.attention_check == 0]
    assert len(main_rows) == 4 and main_rows.ttft_ms.notna().all()


def test_the_duration_estimate_counts_a_check_as_its_one_question(tmp_path):
    study = load_study(tiny_study(tmp_path, **STUDY))
    trials = design_trials(study, "P-EST01", 1, study.seed)
    checks = [t for t in trials if t.attention is not None]
    without = [t for t in trials if t.attention is None]
    assert checks
    full, base = estimate_duration(study, trials), estimate_duration(study, without)
    assert full.streams_s == base.streams_s  # nothing streams on a check
    assert full.questions_s - base.questions_s == 2.5 * len(checks)  # one yes/no each
