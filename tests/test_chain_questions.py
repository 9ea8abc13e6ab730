"""Questions after chosen steps of an agent chain: the study file, the held playback on a
virtual clock (answering time shifts the later steps; giving up works during a hold), the
real trial screen (Pilot and an 80x24 snapshot), simulated participants and the export's
`q_<id>_s<step>` / `rt_<id>_s<step>_ms` columns."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pandas as pd
import pytest
from helpers.pilot import OneScreen, TrialHost, settle, trial_screen
from helpers.study_said import assert_said_at_key

from uxlab.clock import VirtualClock
from uxlab.kinds.chain import chain_steps, split_at_steps
from uxlab.player import HeadlessSink
from uxlab.session import StudySession, TrialRun
from uxlab.simulate import simulate_cohort
from uxlab.simulate.driver import GiveUpClock
from uxlab.store import Store
from uxlab.store.export import export_db
from uxlab.streams.replay_file import write_replay
from uxlab.streams.synthetic import synthesize
from uxlab.study import StudyError, load_study, parse_study
from uxlab.tui.chain_view import ChainView
from uxlab.tui.trial_screen import TrialScreen

ROOT = Path(__file__).resolve().parents[1]
CHAINS = ROOT / "replays" / "chains"

STEP_QUESTION = """
[chain]
ask_after_steps = {steps}

[[questions]]
id = "progress_ok"
type = "yesno"
text = "Is the assistant getting on well so far?"
when = "step"
"""

STUDY = """
[study]
id = "chain-questions"
title = "Mid-chain questions"
seed = 7

[texts]
consent = "Do you agree?"
instructions = "Press Enter to send; Escape stops."

[stimuli]
kind = "chain"
chains = "{chains}"

[profile]
itl = "lognormal:median={itl_ms},sigma=0.3"
chunk = 1

[factors]
call_ttft_ms = [{ttft}]
n_steps = [{n_steps}]

[design]
repeats = {repeats}

[[questions]]
id = "too_slow"
type = "yesno"
text = "Did the assistant take too long?"
yes_means = "too_slow"

[abandon]
key = "escape"
{timeout}
"""


def study_file(
    tmp_path: Path,
    *,
    chains: Path = CHAINS,
    steps: str = "[2, 4]",
    n_steps: str = "6",
    ttft: str = "300",
    itl_ms: float = 26,
    repeats: int = 1,
    timeout_s: float | None = None,
    extra: str | None = None,
) -> Path:
    text = STUDY.format(
        chains=chains.as_posix(),
        itl_ms=itl_ms,
        ttft=ttft,
        n_steps=n_steps,
        repeats=repeats,
        timeout="" if timeout_s is None else f"timeout_s = {timeout_s}",
    )
    text += STEP_QUESTION.format(steps=steps) if extra is None else extra
    path = tmp_path / "study.toml"
    path.write_text(text, encoding="utf-8")
    return path


def tiny_chains(tmp_path: Path) -> Path:
    """One short chain: a planning call, a tool pause, the answer (asked after step 1)."""
    folder = tmp_path / "chains"
    folder.mkdir()
    plan = synthesize("I will look up the fare first.", id="tiny-plan", ttft_ms=100, seed=1)
    answer = synthesize(
        "The **cheapest** fare is 12 EUR on the 09:10 train.", id="tiny-answer", ttft_ms=100,
        seed=2,
    )  # fmt: skip
    write_replay(plan, folder / "tiny-plan.jsonl")
    write_replay(answer, folder / "tiny-answer.jsonl")
    chain = {
        "format": "uxlab.chain/1",
        "id": "tiny",
        "prompt": "What is the cheapest train to Porto tomorrow?",
        "steps": [
            {"kind": "call", "label": "Planning", "replay": "tiny-plan.jsonl"},
            {
                "kind": "pause",
                "label": "searching the web…",
                "ms": 150,
                "tool": {"name": "web_search", "arguments": {"query": "Lisbon Porto train"}},
            },
            {"kind": "answer", "label": "Answer", "replay": "tiny-answer.jsonl"},
        ],
    }
    (folder / "tiny.chain.json").write_text(json.dumps(chain), encoding="utf-8")
    return folder


def begin(tmp_path: Path, clock: VirtualClock, **kw) -> tuple[StudySession, TrialRun]:
    store = Store.open(tmp_path / "r.sqlite")
    ss = StudySession.open(load_study(study_file(tmp_path, **kw)), store, "P-HOLD1", clock=clock)
    ss.accept_consent()
    ss.start_running()
    return ss, ss.begin(ss.next_trial())


# -- the study file ---------------------------------------------------------------------------
def test_the_study_names_the_steps_and_the_columns(tmp_path) -> None:
    study = load_study(study_file(tmp_path))
    assert study.ask_after_steps == (2, 4)
    assert [q.id for q in study.step_questions] == ["progress_ok"]
    assert [q.id for q in study.trial_questions] == ["too_slow"]
    assert [q.id for q in study.trial_response_questions] == [
        "too_slow",
        "progress_ok_s2",
        "progress_ok_s4",
    ]
    assert study.step_questions[0].to_dict()["after_steps"] == [2, 4]
    assert study.asks_in(10) == [2, 4] and study.asks_in(3) == [] and study.asks_in(4) == [2]


@pytest.mark.parametrize(
    ("steps", "extra", "message"),
    [
        ("[2, 2]", None, "[chain].ask_after_steps[1]: 2 repeats step 2"),
        ("[-1]", None, "[chain].ask_after_steps[0]: -1 is not a step number (0, 1, ...:"),
        ("[1.5]", None, "[chain].ask_after_steps[0]: 1.5 is not a step number"),
        (
            "[11]",
            None,
            "[chain].ask_after_steps[0]: 11: no chain has a step 11 before its final answer "
            "(steps count from 0, tool pauses included; use 0..10)",
        ),
        (
            "",
            "\n[chain]\nask_after_step = [2]\n",
            "[chain].ask_after_step: unknown key (did you mean 'ask_after_steps'?)",
        ),
        (
            "",
            "\n[chain]\nask_after_steps = [2]\n",
            "[chain].ask_after_steps: no question to ask there: add [[questions]] with "
            'when = "step"',
        ),
        (
            "",
            STEP_QUESTION.split("[[questions]]")[1].join(["\n[[questions]]", ""]),
            '[[questions]][1].when: "step" needs the steps to ask after: [chain] '
            "ask_after_steps = [2, 4]",
        ),
        (
            "",
            STEP_QUESTION.format(steps="[2]").replace('"progress_ok"', '"too_slow_s"')
            + '\n[[questions]]\nid = "too_slow_s_s2"\ntype = "yesno"\ntext = "x"\n',
            "[[questions]][1].id: 'too_slow_s' asked after step 2 is stored as "
            "'too_slow_s_s2', the id of another question (rename one)",
        ),
    ],
)
def test_bad_mid_chain_questions_name_the_key_and_the_fix(tmp_path, steps, extra, message):
    path = study_file(tmp_path, steps=steps, extra=extra)
    with pytest.raises(StudyError) as info:
        load_study(path)
    assert_said_at_key(info.value, path, path.read_text(encoding="utf-8"), message)


def test_step_questions_need_a_chain_study() -> None:
    source = ROOT / "studies" / "ttft-threshold.toml"
    text = source.read_text(encoding="utf-8") + STEP_QUESTION.format(steps="[1]")
    with pytest.raises(StudyError) as info:
        parse_study(text, source)
    message = '[chain]: only in a chain study ([stimuli] kind = "chain")'
    assert_said_at_key(info.value, source, text, message)
    assert str(info.value).endswith(message)
    text = source.read_text(encoding="utf-8") + STEP_QUESTION.split("\n", 3)[3]
    with pytest.raises(StudyError, match=r"\]\.when: \"step\" questions are asked mid-chain"):
        parse_study(text, source)


# -- the held playback ------------------------------------------------------------------------
def test_split_keeps_every_event_once_and_ends_at_the_held_steps(tmp_path) -> None:
    ss, run = begin(tmp_path, VirtualClock())
    flat = run.schedule
    steps = chain_steps(flat)
    segments = split_at_steps(flat, [4, 2, 99, len(steps) - 1])  # the answer and 99: ignored
    assert [s.hold_after for s in segments] == [2, 4, None]
    assert [s.first_step for s in segments] == [0, 3, 5]
    assert sum(len(s.schedule.events) for s in segments) == len(flat.events)
    assert [s.schedule.end.t_ms for s in segments[:2]] == [steps[2]["end_ms"], steps[4]["end_ms"]]
    assert segments[-1].schedule.end == flat.end
    assert segments[1].start_ms == steps[3]["start_ms"]
    ss.store.close()


async def test_the_next_step_starts_when_the_last_answer_is_given(tmp_path) -> None:
    clock = VirtualClock(1000.0)
    ss, run = begin(tmp_path, clock)
    steps = chain_steps(run.schedule)
    asked: list[tuple[int, float, str]] = []

    async def ask(step, questions) -> None:
        asked.append((step, clock.now_ms() - t0, run.phase))
        clock.advance(2500.0 + 1000.0 * step)  # the participant takes 4.5 s, then 6.5 s
        run.answer_step(step, questions[0].id, "yes" if step == 2 else "no", 2500.0)

    t0 = run.send()
    log = await run.play(HeadlessSink(clock), ask)
    run.answer("too_slow", "no", 900.0)
    assert [(s, round(t, 3)) for s, t, _ in asked] == [
        (2, round(steps[2]["end_ms"], 3)),
        (4, round(steps[4]["end_ms"] + 4500.0, 3)),
    ]
    assert {p for _, _, p in asked} == {"asking"} and run.phase == "over"
    assert run.outcome == "completed"
    # every later step moved by the time spent answering; the chain's end too
    assert log.finished_ms == pytest.approx(steps[-1]["end_ms"] + 4500.0 + 6500.0)
    markers = [r for r in log.records if r.n_chars == 0]
    expected = [
        s["start_ms"] + (4500.0 if s["step"] > 2 else 0.0) + (6500.0 if s["step"] > 4 else 0.0)
        for s in steps
    ]
    assert [r.handed_ms for r in markers] == pytest.approx(expected)
    assert all(r.handed_ms - r.scheduled_ms == pytest.approx(0.0) for r in log.records)
    record = run.record()
    assert record.timings["paused_ms"] == pytest.approx(11000.0)
    assert record.timings["e2e_ms"] == pytest.approx(record.timings["scheduled_end_ms"])
    assert record.responses["progress_ok_s2"] == ("yes", 2500.0)
    assert record.responses["progress_ok_s4"] == ("no", 2500.0)
    holds = [e for e in record.events if e["kind"] == "hold"]
    assert [(h["step"], h["held_ms"], h["offset_ms"]) for h in holds] == [
        (2, 4500.0, 4500.0),
        (4, 6500.0, 11000.0),
    ]
    step_events = {e["step"]: e for e in record.events if e["kind"] == "step"}
    assert step_events[3]["start_ms"] == pytest.approx(steps[3]["start_ms"])  # as scheduled
    assert step_events[3]["shifted_start_ms"] == pytest.approx(steps[3]["start_ms"] + 4500.0)
    assert step_events[5]["offset_ms"] == pytest.approx(11000.0)
    ss.commit(run)
    ss.store.close()


async def test_giving_up_while_the_questions_are_up_keeps_the_held_step(tmp_path) -> None:
    clock = VirtualClock(0.0)
    ss, run = begin(tmp_path, clock)
    steps = chain_steps(run.schedule)

    async def ask(step, questions) -> None:
        clock.advance(1200.0)
        assert run.abandon()  # the key works during a hold
        await asyncio.Event().wait()  # never answered: cancelled by the give-up

    t0 = run.send()
    sink = HeadlessSink(clock)
    log = await run.play(sink, ask)
    assert run.outcome == "abandoned" and run.abandoned_while == "asking"
    assert log.cancelled_at_ms == pytest.approx(steps[2]["end_ms"] + 1200.0)
    assert sink.cancelled
    record = run.record()
    assert record.timings["abandon_step"] == 2
    assert record.timings["t_abandon_ms"] == pytest.approx(clock.now_ms() - t0)
    assert max(e["step"] for e in record.events if e["kind"] == "step") == 2  # none began after
    assert [e["resumed_ms"] for e in record.events if e["kind"] == "hold"] == [None]
    assert record.timings["paused_ms"] == pytest.approx(1200.0)  # up to the give-up
    ss.commit(run)
    ss.store.close()


async def test_a_give_up_after_a_hold_is_placed_on_the_chain_timeline(tmp_path) -> None:
    clock = GiveUpClock(0.0)
    ss, run = begin(tmp_path, clock)
    steps = chain_steps(run.schedule)

    async def ask(step, questions) -> None:
        clock.advance(3000.0)
        run.answer_step(step, questions[0].id, "yes", 3000.0)

    t0 = run.send()
    # mid-step 3 (the pause after the first hold) on the schedule: 3 s later in real time
    clock.give_up_at_ms = t0 + (steps[3]["start_ms"] + steps[3]["end_ms"]) / 2 + 3000.0
    clock.on_give_up = run.abandon
    await run.play(HeadlessSink(clock), ask)
    record = run.record()
    assert run.outcome == "abandoned" and run.abandoned_while == "streaming"
    assert record.timings["abandon_step"] == 3
    assert record.timings["paused_ms"] == pytest.approx(3000.0)
    ss.commit(run)
    ss.store.close()


async def test_the_timeout_counts_the_chain_not_the_answering(tmp_path) -> None:
    clock = VirtualClock(0.0)
    ss, run = begin(tmp_path, clock, timeout_s=5.0)
    steps = chain_steps(run.schedule)
    assert steps[2]["end_ms"] < 5000.0 < steps[4]["end_ms"]

    async def ask(step, questions) -> None:
        clock.advance(60_000.0)  # a minute over the question: not counted
        run.answer_step(step, questions[0].id, "yes", 60_000.0)

    t0 = run.send()
    log = await run.play(HeadlessSink(clock), ask)
    assert run.outcome == "timed_out"
    assert log.cancelled_at_ms == pytest.approx(5000.0 + 60_000.0)
    assert clock.now_ms() - t0 == pytest.approx(65_000.0)
    ss.commit(run)
    ss.store.close()


async def test_a_chain_cut_before_the_asked_step_is_not_held(tmp_path) -> None:
    clock = VirtualClock(0.0)
    ss, run = begin(tmp_path, clock, n_steps="2")  # steps: call, pause, answer
    assert run.step_asks == []

    async def ask(step, questions) -> None:  # pragma: no cover - must not be called
        raise AssertionError("held a chain without the asked step")

    run.send()
    await run.play(HeadlessSink(clock), ask)
    record = run.record()
    assert record.timings["paused_ms"] == 0.0 and run.outcome == "completed"
    assert "progress_ok_s2" not in record.responses
    ss.commit(run)
    ss.store.close()


# -- the trial screen -------------------------------------------------------------------------
def tiny_study_file(tmp_path: Path) -> Path:
    return study_file(tmp_path, chains=tiny_chains(tmp_path), steps="[1]", n_steps="2", itl_ms=5)


async def test_the_trial_screen_asks_mid_chain_and_goes_on(tmp_path) -> None:
    study = load_study(tiny_study_file(tmp_path))
    clock = VirtualClock()
    with Store.open(tmp_path / "r.sqlite") as store:
        ss = StudySession.open(study, store, "P-PILOT1", clock=clock)
        ss.accept_consent()
        ss.start_running()
        run = ss.begin(ss.next_trial())
        app = TrialHost(run)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            screen = app.screen
            view = screen.query_one("#chat", ChainView)
            await pilot.press("enter")
            await settle(pilot, lambda: run.phase == "asking" and screen.query("QuestionPanel"))
            lines = view.steps_view.lines_text()
            assert lines[0] == "✓ Planning" and lines[1] == "✓ searching the web…"
            assert lines[-1] == "⏸ Waiting for your answer below"
            assert "waits for your answer" in str(screen.query_one("#trial-hint").render())
            assert view.stream.answer_text() == "I will look up the fare first."
            clock.advance(1800.0)
            await pilot.press("y", "enter")
            await settle(pilot, lambda: run.phase == "over" and screen.query("QuestionPanel"))
            assert view.steps_view.note is None
            assert view.stream.answer_text().startswith("The **cheapest** fare")
            await pilot.press("n", "enter")
            await settle(pilot, lambda: app.result is not None)
        assert run.responses["progress_ok_s1"][0] == "yes"
        assert run.responses["progress_ok_s1"][1] == pytest.approx(1800.0)
        assert run.responses["too_slow"][0] == "no"
        ss.commit(run)
        row = store.db.conn.execute(
            "SELECT question_id, value FROM responses WHERE trial_index = 0 ORDER BY question_id"
        ).fetchall()
    assert row == [("progress_ok_s1", "yes"), ("too_slow", "no")]


async def test_escape_during_the_mid_chain_question_stops_the_chain(tmp_path) -> None:
    study = load_study(tiny_study_file(tmp_path))
    clock = VirtualClock()
    with Store.open(tmp_path / "r.sqlite") as store:
        ss = StudySession.open(study, store, "P-PILOT2", clock=clock)
        ss.accept_consent()
        ss.start_running()
        run = ss.begin(ss.next_trial())
        app = TrialHost(run)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            screen = app.screen
            view = screen.query_one("#chat", ChainView)
            await pilot.press("enter")
            await settle(pilot, lambda: run.phase == "asking" and screen.query("QuestionPanel"))
            await pilot.press("escape")
            await settle(pilot, lambda: screen.awaiting_next)
            assert not screen.query("QuestionPanel")
            assert view.steps_view.lines_text()[-1] == "■ Stopped"
            assert "You stopped this answer." in str(screen.query_one("#trial-hint").render())
            await pilot.press("enter")
            await settle(pilot, lambda: app.result is not None)
        assert run.outcome == "abandoned" and run.responses == {}
        ss.commit(run)
        timings = json.loads(
            store.db.conn.execute("SELECT timings FROM trials WHERE trial_index = 0").fetchone()[0]
        )
    assert timings["abandon_step"] == 1


def test_snapshot_mid_chain_question_80x24(snap_compare, tmp_path) -> None:
    study = load_study(tiny_study_file(tmp_path))
    app = OneScreen(
        trial_screen, study, Store.open(tmp_path / "snap.sqlite"), participant="P-SNAP1"
    )

    async def run_before(pilot) -> None:
        await settle(pilot, lambda: isinstance(app.screen, TrialScreen))
        screen = app.screen
        await pilot.press("enter")
        await settle(pilot, lambda: screen.run.phase == "asking" and screen.query("QuestionPanel"))
        await settle(pilot, lambda: app.focused is not None)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


# -- simulated participants and the export ----------------------------------------------------
def test_simulated_participants_answer_mid_chain_and_the_export_has_the_columns(tmp_path):
    study = load_study(study_file(tmp_path, ttft="150, 2400", n_steps="2, 6", repeats=2))
    db = tmp_path / "sim.sqlite"
    with Store.open(db, durable=False) as store:
        simulate_cohort(study, store, 4, seed=1)
    out = export_db(db, tmp_path / "out")
    trials = pd.read_csv(out["trials"])
    cols = list(trials.columns)
    at = cols.index("q_too_slow")
    assert cols[at : at + 6] == [
        "q_too_slow",
        "rt_too_slow_ms",
        "q_progress_ok_s2",
        "rt_progress_ok_s2_ms",
        "q_progress_ok_s4",
        "rt_progress_ok_s4_ms",
    ]
    assert cols[cols.index("e2e_ms") : cols.index("e2e_ms") + 3] == [
        "e2e_ms",
        "abandon_step",
        "paused_ms",
    ]
    long = trials[trials["n_steps"] == 6]
    short = trials[trials["n_steps"] == 2]
    assert short["q_progress_ok_s2"].isna().all() and (short["paused_ms"] == 0).all()
    reached = long[(long["outcome"] == "completed")]
    assert len(reached) > 0 and reached["q_progress_ok_s4"].notna().all()
    assert (reached["rt_progress_ok_s2_ms"] > 0).all()
    held = reached["rt_progress_ok_s2_ms"] + reached["rt_progress_ok_s4_ms"]
    assert (reached["paused_ms"] - held).abs().max() < 1e-6  # the virtual clock: rt = hold
    assert (reached["e2e_ms"] - reached["scheduled_end_ms"]).abs().max() < 1e-6
    # the yes/no answers are 0/1 as for per-trial questions; slower calls feel worse so far
    assert set(long["q_progress_ok_s2"].dropna()) <= {0, 1}
    ok = long.groupby("call_ttft_ms")["q_progress_ok_s2"].mean()
    assert ok[150] > ok[2400]
    study_json = json.loads(Path(out["study"]).read_text())
    step_q = next(q for q in study_json["questions"] if q["id"] == "progress_ok")
    assert step_q["when"] == "step" and step_q["after_steps"] == [2, 4]


async def test_step_events_begin_at_the_markers_whatever_empty_chunks_a_call_holds(
    tmp_path,
) -> None:
    """Steps are found by their markers, not by empty chunks (a call may stream "")."""
    from uxlab.streams import Chunk

    clock = VirtualClock(0.0)
    ss, run = begin(tmp_path, clock)
    flat = run.schedule
    steps = chain_steps(flat)
    first = next(i for i, e in enumerate(flat.events) if isinstance(e, Chunk) and e.text)
    flat.events.insert(first + 1, Chunk(t_ms=flat.events[first].t_ms, text=""))

    async def ask(step, questions) -> None:
        clock.advance(1000.0)
        run.answer_step(step, questions[0].id, "yes", 1000.0)

    run.send()
    await run.play(HeadlessSink(clock), ask)
    run.answer("too_slow", "no", 900.0)
    record = run.record()
    began = {e["step"]: e["t_ms"] for e in record.events if e["kind"] == "step"}
    held = {s["step"]: 1000.0 * sum(s["step"] > h for h in (2, 4)) for s in steps}
    assert began == pytest.approx({s["step"]: s["start_ms"] + held[s["step"]] for s in steps})
    ss.commit(run)
    ss.store.close()
