"""Mid-chain questions everywhere a chain trial is timed: the through-UI simulation answers
the holds (and its patience excludes them), the survival analysis counts waiting time only
(`t_abandon_ms - paused_ms`), and the duration estimate counts the mid-chain questions."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from pathlib import Path

from uxlab.simulate import PopulationTruth, participant_id, simulate_session
from uxlab.store import Store
from uxlab.study import load_study
from uxlab.tui import simulated_run
from uxlab.tui.simulated_run import simulate_through_ui

ROOT = Path(__file__).resolve().parents[1]
STEP_QUESTION = """
[chain]
ask_after_steps = [1]

[[questions]]
id = "progress_ok"
type = "yesno"
text = "Is the assistant getting on well so far?"
when = "step"
"""
TRUTH = PopulationTruth(patience_scale_ms=4000.0)
"""Seed 0, participant 1 gives up once before and once after the hold (virtual clock)."""


def chain_study(tmp_path: Path, *, ask: bool = True, levels: str = "150, 2400") -> Path:
    """A copy of studies/agent-chain.toml cut to two short trials (call, tool pause, answer),
    with one mid-chain question after the tool pause (step 1)."""
    text = (ROOT / "studies" / "agent-chain.toml").read_text(encoding="utf-8")
    chains = (ROOT / "replays" / "chains").as_posix()
    for pattern, repl in [
        (r'^chains = ".*"', f'chains = "{chains}"'),
        (r"^call_ttft_ms = \[.*\]", f"call_ttft_ms = [{levels}]"),
        (r"^n_steps = \[.*\]", "n_steps = [2]"),
        (r"^repeats = \d+", "repeats = 1"),
        (r"^practice = \d+", "practice = 0"),
        (r"^break_every = \d+\n", ""),
    ]:
        text, n = re.subn(pattern, repl, text, flags=re.M)
        assert n == 1, pattern
    path = tmp_path / "chain-study.toml"
    path.write_text(text + (STEP_QUESTION if ask else ""), encoding="utf-8")
    return path


def _trials(db: Path, session_id: str) -> dict[int, tuple[str, float | None, dict]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT trial_index, outcome, t_abandon_ms, timings FROM trials WHERE session_id = ?",
            (session_id,),
        ).fetchall()
    return {i: (outcome, t_abandon, json.loads(timings)) for i, outcome, t_abandon, timings in rows}


def _responses(db: Path, session_id: str) -> set[tuple[int, str, str]]:
    with sqlite3.connect(db) as conn:
        return set(
            conn.execute(
                "SELECT trial_index, question_id, value FROM responses WHERE session_id = ?",
                (session_id,),
            ).fetchall()
        )


# -- 1. the through-UI simulation answers the holds ---------------------------------------------
def test_through_ui_answers_mid_chain_and_gives_up_on_waiting_time(tmp_path, monkeypatch):
    monkeypatch.setattr(simulated_run, "STALL_S", 10.0)  # a stall fails fast, not in 120 s
    study = load_study(chain_study(tmp_path))
    with Store.open(tmp_path / "virtual.sqlite") as store:
        virtual = asyncio.run(simulate_session(study, store, 1, seed=0, truth=TRUTH))
    with Store.open(tmp_path / "ui.sqlite") as store:
        ui = asyncio.run(
            simulate_through_ui(
                study, store, 1, seed=0, truth=TRUTH, time_scale=10.0,
                participant=participant_id(0, 1),  # the virtual path's trial list
            )
        )  # fmt: skip
    assert ui.outcome == "completed" and ui.n_trials == 2
    vt = _trials(tmp_path / "virtual.sqlite", virtual.session_id)
    got = _trials(tmp_path / "ui.sqlite", ui.session_id)
    assert {i: o for i, (o, _, _) in got.items()} == {i: o for i, (o, _, _) in vt.items()}
    # the hold was answered through the widget, as the same person answers it on the
    # virtual clock (the same draws), and stored as q_progress_ok_s1
    held = [i for i, (_, _, t) in got.items() if t["paused_ms"] > 0]
    assert held and held == [i for i, (_, _, t) in vt.items() if t["paused_ms"] > 0]
    ui_answers = _responses(tmp_path / "ui.sqlite", ui.session_id)
    vt_answers = _responses(tmp_path / "virtual.sqlite", virtual.session_id)
    step_answers = {r for r in ui_answers if r[1] == "progress_ok_s1"}
    assert {i for i, _, _ in step_answers} == set(held)
    assert step_answers == {r for r in vt_answers if r[1] == "progress_ok_s1"}
    # a give-up after the hold: pressed at the planned waiting time plus the time answering
    after = [i for i in held if got[i][0] == "abandoned"]
    assert after, "the observer gave up after the hold"
    for i in after:
        _, t_abandon_ms, timings = got[i]
        assert timings["abandon_step"] == 2
        waited_ms = t_abandon_ms - timings["paused_ms"]
        planned_ms = ui.planned_give_ups[i]
        assert planned_ms <= waited_ms < planned_ms + 3000.0  # the key lands a few frames late
