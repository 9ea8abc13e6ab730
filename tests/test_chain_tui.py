"""A chain trial in the real trial screen: the chain view plays the trial's flattened chain,
the question comes at the end, and the committed row keeps the end-to-end time."""

from __future__ import annotations

from pathlib import Path

from helpers.pilot import TrialHost, wait_for

from uxlab.clock import VirtualClock
from uxlab.session import StudySession
from uxlab.store import Store
from uxlab.study import load_study
from uxlab.tui.chain_view import ChainView

STUDY = Path(__file__).resolve().parents[1] / "studies" / "agent-chain.toml"


async def test_a_chain_trial_plays_in_the_trial_screen_and_is_committed(tmp_path) -> None:
    study = load_study(STUDY)
    clock = VirtualClock()
    with Store.open(tmp_path / "r.sqlite") as store:
        ss = StudySession.open(study, store, "P-CHAIN1", clock=clock)
        ss.accept_consent()
        ss.start_running()
        trial = ss.next_trial()
        run = ss.begin(trial)
        app = TrialHost(run, "Trial 1 of 42")
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            view = app.screen.query_one("#chat", ChainView)
            await pilot.press("enter")
            await wait_for(pilot, lambda: run.phase == "over", timeout_s=60.0)
            assert run.outcome == "completed"
            lines = view.steps_view.lines_text()
            n_steps = int(trial.levels["n_steps"])
            assert sum(line.startswith("✓") for line in lines) >= min(n_steps - 1, 1)
            answer = study.kind.chains[trial.replay_id].steps[-1].replay.text
            assert view.stream.answer_text() == answer
            await pilot.press("y", "enter")
            await wait_for(pilot, lambda: app.result is not None)
        assert app.result is run and run.responses["too_slow"][0] in ("yes", True, 1)
        ss.commit(run)
        row = store.db.conn.execute(
            "SELECT outcome, scheduled_end_ms, timings FROM trials WHERE trial_index = 0"
        ).fetchone()
    assert row[0] == "completed"
    assert '"e2e_ms"' in row[2] and '"abandon_step": null' in row[2]
