"""Mid-chain questions everywhere a chain trial is timed: the through-UI simulation answers
the holds (and its patience excludes them), the survival analysis counts waiting time only
(`t_abandon_ms - paused_ms`), and the duration estimate counts the mid-chain questions."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from analysis_fixtures import simulate_trial_table, write_export_folder

from analysis.report import ReportOptions, analyse
from analysis.report.blocks import Para
from analysis.report.contents import build_blocks
from analysis.report.summary import plain_summary
from analysis.survival import survival_data
from analysis.trial_table import load_trial_table
from uxlab.cli import main
from uxlab.simulate import PopulationTruth, participant_id, simulate_session
from uxlab.store import Store
from uxlab.study import load_study
from uxlab.study.design import design_trials
from uxlab.study.estimate import estimate_duration
from uxlab.study.spec import ANSWER_S
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


def chain_study(
    tmp_path: Path, *, ask: bool = True, levels: str = "150, 2400", n_steps: str = "2"
) -> Path:
    """A copy of studies/agent-chain.toml cut to two short trials (call, tool pause, answer),
    with one mid-chain question after the tool pause (step 1)."""
    text = (ROOT / "studies" / "agent-chain.toml").read_text(encoding="utf-8")
    chains = (ROOT / "replays" / "chains").as_posix()
    for pattern, repl in [
        (r'^chains = ".*"', f'chains = "{chains}"'),
        (r"^call_ttft_ms = \[.*\]", f"call_ttft_ms = [{levels}]"),
        (r"^n_steps = \[.*\]", f"n_steps = [{n_steps}]"),
        (r"^repeats = \d+", "repeats = 1"),
        (r"^practice = \d+", "practice = 0"),
        (r"^break_every = \d+\n", ""),
    ]:
        text, n = re.subn(pattern, repl, text, flags=re.M)
        assert n == 1, pattern
    path = tmp_path / ("chain-study.toml" if ask else "chain-study-no-ask.toml")
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
    # (on the real clock a loaded machine can only press the give-up late, so the chain may
    # reach a hold the virtual person gave up before: the one difference allowed)
    held = [i for i, (_, _, t) in got.items() if t["paused_ms"] > 0]
    vt_held = [i for i, (_, _, t) in vt.items() if t["paused_ms"] > 0]
    assert vt_held and set(vt_held) <= set(held)
    assert all(vt[i][0] == "abandoned" for i in set(held) - set(vt_held)), (got, vt)
    ui_answers = _responses(tmp_path / "ui.sqlite", ui.session_id)
    vt_answers = _responses(tmp_path / "virtual.sqlite", virtual.session_id)
    step_answers = {r for r in ui_answers if r[1] == "progress_ok_s1"}
    assert {i for i, _, _ in step_answers} == set(held)
    vt_step_answers = {r for r in vt_answers if r[1] == "progress_ok_s1"}
    assert {r for r in step_answers if r[0] in vt_held} == vt_step_answers
    # a give-up after the hold: pressed at the planned waiting time plus the time answering
    after = [i for i in held if got[i][0] == "abandoned"]
    assert after, "the observer gave up after the hold"
    for i in after:
        _, t_abandon_ms, timings = got[i]
        assert timings["abandon_step"] == 2
        waited_ms = t_abandon_ms - timings["paused_ms"]
        planned_ms = ui.planned_give_ups[i]
        # never early. How late is the real clock's business, not this logic's: at load 12 it
        # was 4.9 s of study time (at 10x), at load 20 12.6 s, so no upper bound is asserted
        # (timing quality is measured in benchmarks/, not asserted here)
        assert planned_ms <= waited_ms


# -- 2. survival on waiting time ------------------------------------------------------------
def _held(trials: pd.DataFrame, seed: int = 5) -> pd.DataFrame:
    """The same trials as if mid-chain questions had held some of them: every time after the
    hold (the give-up, the scheduled and shown ends) moves on by the hold, kept in paused_ms."""
    rng = np.random.default_rng(seed)
    held = trials.copy()
    paused_ms = np.where(rng.random(len(held)) < 0.5, rng.uniform(500.0, 6000.0, len(held)), 0.0)
    held["paused_ms"] = paused_ms
    for col in ("t_abandon_ms", "scheduled_end_ms", "shown_last_ms"):
        held[col] = held[col] + paused_ms
    return held


def test_survival_counts_waiting_time_not_answering_time():
    trials = simulate_trial_table(n_participants=8, reps=2, seed=1)
    plain = survival_data(trials, ["ttft_ms", "indicator"])
    held = survival_data(_held(trials), ["ttft_ms", "indicator"])
    assert held["paused_ms"].gt(0).any() and (plain["paused_ms"] == 0).all()
    assert held["event"].tolist() == plain["event"].tolist()
    assert np.allclose(held["duration_ms"], plain["duration_ms"])  # give-ups and censoring
    # a table with the column but no value for a trial (no chain, no hold): nothing taken off
    gaps = _held(trials).assign(paused_ms=np.nan)
    assert survival_data(gaps, ["ttft_ms"])["duration_ms"].gt(plain["duration_ms"]).any()
    assert np.allclose(
        survival_data(trials.assign(paused_ms=np.nan), ["ttft_ms"])["duration_ms"],
        plain["duration_ms"],
    )


@pytest.mark.slow
def test_report_says_abandonment_is_waiting_time_when_chains_were_held(tmp_path):
    trials = simulate_trial_table(n_participants=8, reps=2, seed=1)
    texts = {}
    for name, table in [("plain", trials), ("held", _held(trials))]:
        folder = write_export_folder(tmp_path / name, table)
        data = analyse(load_trial_table(folder), ReportOptions(n_boot=20, per_participant=False))
        paras = [b.text for b in build_blocks(data) if isinstance(b, Para)]
        abandonment = next(p for p in paras if "abandoned. The clock starts" in p)
        summary = next(s for s in plain_summary(data) if s.startswith("Abandonment:"))
        texts[name] = (abandonment, summary, data.survival.aft.time_ratios_)
    assert "paused_ms" not in texts["plain"][0] and "after the send" in texts["plain"][1]
    assert "t_abandon_ms - paused_ms" in texts["held"][0]
    assert "of waiting (mid-chain answering not counted)" in texts["held"][1]
    # the same waiting times: the same model
    pd.testing.assert_frame_equal(texts["plain"][2], texts["held"][2], rtol=1e-6)


# -- 3. the duration estimate counts the mid-chain questions -------------------------------
def test_study_check_counts_mid_chain_questions(tmp_path, capsys):
    # n_steps 1 is a plain answer (no step 1 to ask after); n_steps 2 reaches the hold
    kw = {"levels": "150, 600, 2400", "n_steps": "1, 2"}
    asked, plain = chain_study(tmp_path, **kw), chain_study(tmp_path, ask=False, **kw)
    estimates = {}
    for name, path in [("asked", asked), ("plain", plain)]:
        assert main(["study", "check", str(path)]) == 0
        out = capsys.readouterr().out
        found = re.search(r"Estimated duration: .* min \(streams .*, questions ([\d.]+)", out)
        assert found, out
        study = load_study(path)
        trials = design_trials(study, "P-EXAMPLE")
        estimates[name] = (float(found.group(1)), estimate_duration(study, trials), trials)
    trials = estimates["asked"][2]
    n_reaching = sum(t.levels["n_steps"] == 2 for t in trials)
    assert 0 < n_reaching < len(trials)
    extra_s = estimates["asked"][1].questions_s - estimates["plain"][1].questions_s
    assert extra_s == pytest.approx(ANSWER_S["yesno"] * n_reaching)
    assert estimates["asked"][1].streams_s == pytest.approx(estimates["plain"][1].streams_s)
    assert estimates["asked"][0] > estimates["plain"][0]  # what study check prints (minutes)
