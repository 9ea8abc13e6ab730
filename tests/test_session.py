"""The participant-flow controller (`uxlab.session`) on a VirtualClock, with no UI.

The study is `helpers.studies.tiny_study` (also run by the app, snapshot and tmux tests).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from helpers.studies import tiny_study

from uxlab.clock import VirtualClock
from uxlab.player import HeadlessSink
from uxlab.session import StudySession, shortest_gap_ms
from uxlab.store import Store, StoreError
from uxlab.study import load_study


def open_session(tmp_path: Path, participant: str = "P-TEST1", **kw) -> StudySession:
    study = load_study(kw.pop("study_path", None) or tiny_study(tmp_path, **kw.pop("study", {})))
    store = Store.open(tmp_path / "results.sqlite")
    return StudySession.open(study, store, participant, clock=VirtualClock(1000.0), **kw)


async def run_trial(ss: StudySession, give_up_ms: float | None = None, answers=None):
    """Play the next trial headless on the virtual clock; optionally give up at t0+give_up."""
    trial = ss.next_trial()
    assert trial is not None
    run = ss.begin(trial)
    if run.is_check:  # an attention check: its text and one question, nothing streams
        for q in run.questions:
            run.answer(q.id, (answers or {}).get(q.id, "no"), 900.0)
        run.phase = "answered"
        ss.commit(run)
        return run, None
    run.key("enter")
    t0 = run.send()
    sink = HeadlessSink(ss.clock)
    if give_up_ms is None:
        await run.play(sink)
    else:
        # The give-up is scripted as a stop at give_up_ms, then recorded as the key press.
        run.player = None
        from uxlab.player import Player

        player = Player(run.schedule, sink, ss.clock)
        run.player = player
        log = await player.play(t0, stop_at_ms=give_up_ms)
        run.log = log
        run.phase = "streaming" if any(r.n_chars for r in log.records) else "waiting"
        run.key("escape")
        assert run.abandon(t0 + give_up_ms)
        run.phase = "over"
    for q in run.questions:
        value = (answers or {}).get(q.id, {"yesno": "yes", "likert": 4}.get(q.type, "x"))
        run.answer(q.id, value, 900.0)
    ss.commit(run)
    return run, sink


def rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


async def test_a_whole_session_commits_every_trial_in_order(tmp_path):
    ss = open_session(tmp_path)
    assert ss.needs_consent and not ss.resumed
    ss.accept_consent()
    ss.start_running()
    n = len(ss.trials)
    n_checks = sum(t.attention is not None for t in ss.trials)
    assert n_checks and ss.n_practice == 1 and ss.n_main == n - 1 - n_checks
    assert ss.progress(ss.trials[0]) == "Practice 1 of 1"
    assert ss.progress(ss.trials[1]) == f"Trial 1 of {n - 1 - n_checks}"
    breaks = [t.index for t in ss.trials if ss.break_before(t)]
    assert breaks, "break_every = 2 must put a break in the list"
    while ss.next_trial() is not None:
        await run_trial(ss)
    ss.finish({"comments": ("fine", 3000.0)})
    db = tmp_path / "results.sqlite"
    got = rows(db, "SELECT trial_index, outcome, practice FROM trials ORDER BY trial_index")
    assert [r[0] for r in got] == list(range(n))
    assert {r[1] for r in got} == {"completed"}
    assert got[0][2] == 1 and all(r[2] == 0 for r in got[1:])
    assert rows(db, "SELECT state FROM sessions") == [("completed",)]
    assert rows(db, "SELECT value FROM responses WHERE trial_index = -1") == [("fine",)]


async def test_trial_times_are_from_the_send_and_match_the_schedule(tmp_path):
    ss = open_session(tmp_path)
    ss.accept_consent()
    ss.start_running()
    run, sink = await run_trial(ss)
    rec = run.record()
    scheduled = [c.t_ms for c in run.schedule.chunks]
    chunk_events = [e for e in rec.events if e["kind"] == "chunk"]
    assert [e["scheduled_ms"] for e in chunk_events] == scheduled
    # A virtual clock wakes exactly on time: handed == scheduled, and shown falls back to it.
    assert all(e["handed_ms"] == e["scheduled_ms"] for e in chunk_events)
    visible = [c.t_ms for c in run.schedule.chunks if c.text]
    assert rec.timings["shown_first_ms"] == visible[0]
    assert rec.timings["shown_last_ms"] == visible[-1]
    assert rec.timings["scheduled_end_ms"] == run.schedule.end.t_ms
    assert rec.timings["t_abandon_ms"] is None
    outcome = next(e for e in rec.events if e["kind"] == "outcome")
    assert outcome["shown_source"] == "handed"  # no terminal, no paint probe
    keys = [e for e in rec.events if e["kind"] == "key"]
    assert keys == [{"kind": "key", "t_ms": 0.0, "key": "enter", "phase": "ready"}]
    assert sink.text == "".join(c.text for c in run.schedule.chunks if c.channel == "content")


async def test_schedule_is_the_trials_recording_levels_and_seed(tmp_path):
    ss = open_session(tmp_path)
    trial = next(t for t in ss.trials if t.replay_id is not None)
    schedule = ss.schedule_for(trial)
    assert schedule.header.retime["seed"] == trial.seed
    assert schedule.header.retime["from"] == trial.replay_id
    first = next(c.t_ms for c in schedule.chunks if c.text)
    assert first == pytest.approx(trial.levels["ttft_ms"])
    # The same trial shaped again (e.g. after a resume) is the same stimulus.
    assert ss.schedule_for(trial).chunks == schedule.chunks


async def test_give_up_while_waiting_and_mid_stream(tmp_path):
    ss = open_session(tmp_path, study={"levels": "200", "itl": 20})
    ss.accept_consent()
    ss.start_running()
    run, sink = await run_trial(ss, give_up_ms=50.0)  # before the 200 ms first token
    rec = run.record()
    assert rec.outcome == "abandoned" and rec.timings["t_abandon_ms"] == 50.0
    assert run.abandoned_while == "waiting" and sink.applied == [] and sink.cancelled
    assert rec.responses == {}  # ask_questions = false
    run2, _sink2 = await run_trial(ss, give_up_ms=250.0)
    rec2 = run2.record()
    assert run2.abandoned_while == "streaming"
    assert rec2.timings["t_abandon_ms"] == 250.0
    assert all(e["t_ms"] <= 250.0 for e in rec2.events if e["kind"] == "chunk")
    assert rec2.timings["shown_last_ms"] <= 250.0
    db = tmp_path / "results.sqlite"
    got = rows(db, "SELECT outcome, t_abandon_ms FROM trials ORDER BY trial_index")
    assert got == [("abandoned", 50.0), ("abandoned", 250.0)]


async def test_abandon_is_refused_once_the_stream_is_over(tmp_path):
    ss = open_session(tmp_path)
    ss.accept_consent()
    ss.start_running()
    run = ss.begin(ss.next_trial())
    assert not run.abandon()  # not sent yet
    run.send()
    await run.play(HeadlessSink())
    assert not run.abandon()
    assert run.outcome == "completed"


async def test_timeout_ends_the_trial_as_timed_out_at_the_deadline(tmp_path):
    ss = open_session(tmp_path, study={"levels": "3000", "timeout_s": 1.5})
    ss.accept_consent()
    ss.start_running()
    run = ss.begin(ss.next_trial())
    t0 = run.send()
    sink = HeadlessSink()
    log = await run.play(sink)
    assert run.outcome == "timed_out"
    assert log.cancelled_at_ms == 1500.0 and ss.clock.now_ms() == t0 + 1500.0
    assert sink.cancelled and sink.applied == []
    assert [q.id for q in run.questions] == ["acceptable", "speed"]  # asked after a timeout
    ss.commit(run)
    db = tmp_path / "results.sqlite"
    assert rows(db, "SELECT outcome FROM trials") == [("timed_out",)]
    events = rows(db, "SELECT kind, t_ms FROM events WHERE kind = 'timeout'")
    assert events == [("timeout", 1500.0)]


async def test_attention_check_asks_only_its_question_and_scores_the_answer(tmp_path):
    ss = open_session(tmp_path, study={"practice": 0, "break_every": 10})
    ss.accept_consent()
    ss.start_running()
    checks = []
    while (trial := ss.next_trial()) is not None:
        is_check = trial.attention is not None
        if is_check:
            assert ss.progress(trial) == "Attention check"
            checks.append(trial.index)
        run, _ = await run_trial(ss, answers={"acceptable": "no" if is_check else "yes"})
        assert [q.id for q in run.questions] == (
            ["acceptable"] if is_check else ["acceptable", "speed"]
        )
        assert run.t0_ms is None if is_check else run.t0_ms is not None
    assert checks and ss.n_main == len(ss.trials) - len(checks)
    assert [ss.progress(t) for t in ss.trials if t.attention is None][-1] == (
        f"Trial {ss.n_main} of {ss.n_main}"
    )
    db = tmp_path / "results.sqlite"
    got = rows(
        db,
        "SELECT attention_ok, outcome, shown_first_ms, scheduled_end_ms FROM trials "
        "WHERE attention = 1",
    )
    assert got and all(g == (1, "completed", None, None) for g in got)  # no stream, no latency
    answered = rows(
        db,
        "SELECT DISTINCT r.question_id FROM responses r JOIN trials t USING (session_id, "
        "trial_index) WHERE t.attention = 1",
    )
    assert answered == [("acceptable",)]  # the latency questions are not asked
    kinds = rows(db, "SELECT DISTINCT e.kind FROM events e JOIN trials t USING (session_id, "
                     "trial_index) WHERE t.attention = 1")  # fmt: skip
    assert not {"send", "chunk"} & {k for (k,) in kinds}


async def test_quit_leaves_the_trial_in_flight_to_be_marked_interrupted(tmp_path):
    ss = open_session(tmp_path)
    ss.accept_consent()
    ss.start_running()
    await run_trial(ss)
    run = ss.begin(ss.next_trial())  # in flight, never committed
    run.send()
    ss.interrupt()
    db = tmp_path / "results.sqlite"
    assert rows(db, "SELECT state FROM sessions") == [("interrupted",)]
    ss.store.close()

    again = open_session(tmp_path)
    assert again.resumed and not again.needs_consent
    assert again.session.interrupted == [1]
    assert "Welcome back" in again.resume_note()
    assert again.next_trial().index == 2
    again.start_running()
    while again.next_trial() is not None:
        await run_trial(again)
    again.finish()
    got = rows(db, "SELECT trial_index, outcome FROM trials ORDER BY trial_index")
    assert [r[0] for r in got] == list(range(len(again.trials)))
    assert got[1] == (1, "interrupted")
    assert all(o == "completed" for i, o in got if i != 1)


async def test_declining_consent_keeps_only_the_refusal(tmp_path):
    ss = open_session(tmp_path)
    ss.decline_consent()
    db = tmp_path / "results.sqlite"
    assert rows(db, "SELECT COUNT(*) FROM sessions") == [(0,)]
    assert rows(db, "SELECT COUNT(*) FROM participants") == [(0,)]
    assert rows(db, "SELECT COUNT(*) FROM refusals") == [(1,)]


async def test_a_completed_participant_cannot_start_again(tmp_path):
    ss = open_session(tmp_path, study={"repeats": 1, "practice": 0, "attention": False})
    ss.accept_consent()
    ss.start_running()
    while ss.next_trial() is not None:
        await run_trial(ss)
    ss.finish()
    ss.store.close()
    with pytest.raises(StoreError, match="already completed"):
        open_session(tmp_path, study={"repeats": 1, "practice": 0, "attention": False})


def test_shortest_gap_comes_from_the_profile(tmp_path):
    study = load_study(tiny_study(tmp_path, itl=7))
    assert shortest_gap_ms(study) == pytest.approx(7.0)


def test_environment_record_and_timing_warnings():
    from uxlab.environment import collect_environment, timing_warnings

    env = collect_environment(
        60, size=(70, 20), environ={"TERM": "tmux-256color", "TMUX": "/tmp/x", "USER": "ann"}
    )
    assert (env["columns"], env["rows"], env["term"], env["frame_cap_fps"]) == (
        70,
        20,
        "tmux-256color",
        60,
    )
    assert "ann" not in repr(env)  # nothing that names a person
    warnings = timing_warnings(env, shortest_gap_ms=10.0)
    assert len(warnings) == 3
    assert "tmux" in warnings[0] and "70x20" in warnings[1] and "--fps" in warnings[2]
    good = collect_environment(240, size=(80, 24), environ={"TERM": "xterm-256color"})
    assert timing_warnings(good, shortest_gap_ms=10.0) == []


async def test_quit_after_a_give_up_keeps_the_give_up(tmp_path):
    ss = open_session(tmp_path, study={"levels": "200", "itl": 20, "practice": 0})
    ss.accept_consent()
    ss.start_running()
    run = ss.begin(ss.next_trial())
    t0 = run.send()
    assert run.abandon(t0 + 50.0)  # the stream is not over yet: the player has not wound down
    assert ss.quit(run, t0 + 80.0) == "committed"  # Ctrl+Q on the "stopped" screen
    db = tmp_path / "results.sqlite"
    assert rows(db, "SELECT trial_index, outcome, t_abandon_ms FROM trials") == [
        (0, "abandoned", 50.0)
    ]
    quit_event = rows(db, "SELECT t_ms, data FROM events WHERE kind = 'quit'")
    assert quit_event == [(80.0, '{"by":"key","phase":"waiting","unanswered":[]}')]
    assert rows(db, "SELECT state FROM sessions") == [("interrupted",)]
    ss.store.close()

    again = open_session(tmp_path, study={"levels": "200", "itl": 20, "practice": 0})
    assert again.session.interrupted == [] and again.next_trial().index == 1
    assert "skipped" not in again.resume_note()


async def test_quit_while_answering_stores_the_answers_given_and_empties_the_rest(tmp_path):
    ss = open_session(tmp_path, study={"practice": 0, "attention": False})
    ss.accept_consent()
    ss.start_running()
    run = ss.begin(ss.next_trial())
    run.send()
    await run.play(HeadlessSink(ss.clock))
    run.answer("acceptable", "yes", 700.0)  # the second question is on screen: quit
    assert ss.quit(run) == "committed"
    assert ss.quit(run) == "committed"  # a second quit stores nothing twice
    db = tmp_path / "results.sqlite"
    assert rows(db, "SELECT outcome FROM trials") == [("completed",)]
    got = rows(db, "SELECT question_id, value, rt_ms FROM responses ORDER BY 1")
    assert got == [("acceptable", "yes", 700.0), ("speed", None, None)]
    (data,) = rows(db, "SELECT data FROM events WHERE kind = 'quit'")[0]
    assert '"unanswered":["speed"]' in data and '"phase":"over"' in data


async def test_an_attention_check_quit_before_its_answer_is_offered_again(tmp_path):
    ss = open_session(tmp_path, study={"practice": 0, "break_every": 10})
    ss.accept_consent()
    ss.start_running()
    while (trial := ss.next_trial()).attention is None:
        await run_trial(ss)
    run = ss.begin(trial)
    assert not run.final  # shown, not answered: never scored as a miss
    assert ss.quit(run) == "released"
    db = tmp_path / "results.sqlite"
    got = rows(db, f"SELECT attention_ok FROM trials WHERE trial_index = {trial.index}")
    assert got == []
    ss.store.close()
    again = open_session(tmp_path, study={"practice": 0, "break_every": 10})
    assert again.next_trial().index == trial.index


async def test_a_trial_quit_before_it_was_sent_is_offered_again(tmp_path):
    ss = open_session(tmp_path)
    ss.accept_consent()
    ss.start_running()
    await run_trial(ss)
    shown = ss.begin(ss.next_trial())  # on screen, Enter never pressed
    shown.key("x")
    assert ss.quit(shown) == "released"
    db = tmp_path / "results.sqlite"
    assert rows(db, "SELECT trial_index, outcome FROM trials") == [(0, "completed")]
    ss.store.close()

    again = open_session(tmp_path)
    assert again.session.interrupted == [] and again.next_trial().index == 1
    run = again.begin(again.next_trial())  # begin still comes before the stream, as before
    assert rows(db, "SELECT outcome FROM trials WHERE trial_index = 1") == [("running",)]
    run.send()
    assert again.quit(run) == "in_flight"  # quit mid-stream: stored `interrupted` on resume
    again.store.close()
    third = open_session(tmp_path)
    assert third.session.interrupted == [1] and third.next_trial().index == 2


async def test_a_failed_commit_can_be_retried_without_storing_twice(tmp_path):
    ss = open_session(tmp_path, study={"practice": 0})
    ss.accept_consent()
    ss.start_running()
    ss.store.close()
    db = tmp_path / "results.sqlite"
    ss.store = Store.open(db, busy_timeout_s=0.05)
    run = ss.begin(ss.next_trial())
    run.send()
    await run.play(HeadlessSink(ss.clock))
    for q in run.questions:
        run.answer(q.id, {"yesno": "yes", "likert": 4}[q.type], 500.0)
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # another process holds the write lock
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        ss.commit(run)
    assert run.committed_sha256 is None and not ss.store.db.conn.in_transaction
    other.execute("ROLLBACK")
    other.close()
    digest = ss.commit(run)
    assert ss.commit(run) == digest and ss.committed == [0]
    assert rows(db, "SELECT outcome FROM trials") == [("completed",)]
