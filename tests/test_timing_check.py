"""The pre-session timing check (`uxlab.timing_check`, `uxlab check-timing`), judged on an
injected clock and injected machine readings: no absolute-time assertions."""

from __future__ import annotations

import pytest
from helpers.studies import tiny_study

from uxlab.clock import VirtualClock
from uxlab.machine import CpuTimes
from uxlab.player import ChunkTiming, PlaybackLog
from uxlab.study import load_study
from uxlab.timing_check import (
    MAX_CHECK_CHUNKS,
    TEST_DURATION_MS,
    TimingCheck,
    check_schedule,
    check_timing,
    judge_play,
)

IDLE = {"load_1m": 0.2, "cpus": 4, "cpus_usable": 4}


def steady_steal(share: float):
    """cpu_times readings: 1000 ticks pass between the two, `share` of them stolen."""
    readings = iter([CpuTimes(0, 0), CpuTimes(int(1000 * share), 1000)])
    return lambda: next(readings)


def check(tmp_path, late_ms: float = 0.0, machine=IDLE, steal: float = 0.0, **kw):
    study = load_study(tiny_study(tmp_path, itl=20))
    clock = VirtualClock(0.0, lateness_ms=lambda n, t: late_ms)
    return check_timing(
        study,
        frame_cap_fps=240,
        clock=clock,
        machine_fn=lambda: dict(machine),
        cpu_times_fn=steady_steal(steal),
        **kw,
    )


def test_the_test_schedule_plays_the_gap_for_the_duration():
    rec = check_schedule(10.0, duration_ms=500.0)
    times = [c.t_ms for c in rec.chunks]
    assert times[1] - times[0] == 10.0 and times[-1] <= 500.0 and len(times) == 48


def test_a_very_short_gap_plays_a_bounded_number_of_chunks_for_less_time():
    """At 2 ms the 3 s test would be 1,490 chunks; it stops at the cap, still every 2 ms."""
    rec = check_schedule(2.0)
    times = [c.t_ms for c in rec.chunks]
    assert len(times) == MAX_CHECK_CHUNKS and times[1] - times[0] == 2.0
    assert times[-1] < TEST_DURATION_MS / 2
    assert len(check_schedule(10.0).chunks) < MAX_CHECK_CHUNKS  # ordinary gaps: the full 3 s


def test_a_punctual_idle_machine_passes(tmp_path):
    c = check(tmp_path)
    assert c.ok and c.warning() is None and c.late_p99_ms == 0.0
    assert c.gap_ms == pytest.approx(20.0, abs=1.0) and c.n_chunks > 10
    assert c.to_environment()["ok"] is True


def test_late_hand_offs_fail_with_what_to_do(tmp_path):
    c = check(tmp_path, late_ms=9.0, multiplexer="tmux")
    assert not c.ok
    text = c.warning()
    assert "handed out 9.0 ms late at p99" in text
    assert "run outside tmux" in text and "--nice 10" in text and "close other programs" in text


def test_lateness_within_the_tolerance_but_not_a_frame_below_it_fails(tmp_path):
    # tolerance 10 ms (half the 20 ms gap); one frame at 240 fps leaves 5.8 ms for hand-off
    assert check(tmp_path, late_ms=5.0).ok
    assert not check(tmp_path, late_ms=7.0).ok


def test_load_is_a_caution_until_it_overloads_the_cpus(tmp_path):
    busy = check(tmp_path, machine={"load_1m": 2.5, "cpus": 2, "cpus_usable": 2})
    assert busy.ok and busy.cautions == ["load average 2.5 on 2 CPUs"]
    overloaded = check(tmp_path, machine={"load_1m": 9.0, "cpus": 2, "cpus_usable": 2})
    assert not overloaded.ok and "load average 9 on 2 CPUs" in overloaded.warning()


def test_cpu_steal_fails_and_says_so(tmp_path):
    c = check(tmp_path, steal=0.2)
    assert c.steal_share == pytest.approx(0.2)
    assert not c.ok and "20% of CPU time stolen" in c.warning()
    assert "virtual machine" in c.warning()


def test_an_explicit_tolerance_is_used(tmp_path):
    path = tiny_study(tmp_path, itl=20)
    path.write_text(path.read_text() + "\n[timing]\nmax_late_p99_ms = 30\n")
    c = check_timing(
        load_study(path),
        frame_cap_fps=240,
        clock=VirtualClock(0.0, lateness_ms=lambda n, t: 20.0),
        machine_fn=lambda: dict(IDLE),
        cpu_times_fn=lambda: None,
    )
    assert c.ok and not c.tolerance.derived and c.steal_share is None


def test_check_timing_command_runs_on_a_study(tmp_path, capsys):
    from uxlab.cli import main

    status = main(["check-timing", str(tiny_study(tmp_path, itl=20))])
    out = capsys.readouterr().out
    assert status in (0, 1)  # depends on this machine's load today; the text must say which
    assert "timing check:" in out and "tolerance: p99 lateness <=" in out
    assert ("ok: this machine keeps" in out) == (status == 0)


def played(late_ms: list[float], where: str, shared: list[bool] | None = None) -> PlaybackLog:
    """A played test schedule (20 ms gaps) whose chunks were `late_ms` late at `where`."""
    records = []
    for i, late in enumerate(late_ms):
        t = 20.0 * i
        rec = ChunkTiming(i, t, t + 0.1, t + 0.5, n_chars=1)
        if where == "flushed":
            rec.flushed_ms = t + late
        if where == "painted":
            rec.flushed_ms = t + min(late, 1.0)
            rec.painted_ms = t + late
            rec.shared_repaint = bool(shared[i]) if shared else False
        records.append(rec)
    return PlaybackLog(
        "uxlab-timing-check", 0.0, "VirtualClock", records, finished_ms=20.0 * len(late_ms)
    )


def judge(tmp_path, log: PlaybackLog, **study) -> TimingCheck:
    path = tiny_study(tmp_path, itl=20)
    if study:
        path.write_text(
            path.read_text() + "\n[timing]\n" + "".join(f"{k} = {v}\n" for k, v in study.items())
        )
    return judge_play(load_study(path), log, frame_cap_fps=240, machine=dict(IDLE), steal=0.0)


def test_an_on_screen_check_is_judged_by_the_tolerance_the_trials_are_flagged_by(tmp_path):
    # tolerance 10 ms (half the 20 ms gap): what a trial's flag uses, not the hand-off budget
    ok = judge(tmp_path, played([1.0] * 95 + [9.0] * 5, "flushed"))
    assert ok.ok and ok.measured == "flushed" and ok.shown_p99_ms == pytest.approx(9.0)
    late = judge(tmp_path, played([1.0] * 95 + [12.0] * 5, "flushed"))
    assert not late.ok and "12.0 ms late at p99, as flushed to the terminal" in late.warning()
    assert late.to_environment()["measured"] == "flushed"


def test_a_check_at_the_glass_says_so_and_counts_shared_repaints(tmp_path):
    shared = [i % 4 == 0 for i in range(100)]
    c = judge(tmp_path, played([3.0] * 100, "painted", shared), max_frame_shared_share=0.1)
    assert c.measured == "painted" and c.shown_p50_ms == pytest.approx(3.0)
    assert c.shared_share == pytest.approx(25 / 99, abs=1e-3)
    assert not c.ok and "shared a frame (allowed 10%)" in c.warning()
    assert "at the glass" in c.summary() and "shared a repaint" in c.summary()


def test_an_off_screen_play_keeps_the_hand_off_budget(tmp_path):
    c = judge(tmp_path, played([0.0] * 50, "handed"))
    assert c.measured == "handed" and c.shown_p99_ms is None and "off-screen" in c.summary()


async def test_the_study_app_plays_the_check_on_screen_first_and_stores_it(tmp_path):
    import json
    import sqlite3

    from helpers.pilot import wait_for, wait_screen

    from uxlab.store import Store
    from uxlab.tui.calibration import CalibrationScreen
    from uxlab.tui.flow_screens import ParticipantScreen, WarningsScreen
    from uxlab.tui.study_app import StudyApp

    study = load_study(tiny_study(tmp_path, itl=20))
    store = Store.open(tmp_path / "s.sqlite")
    app = StudyApp(study, store, suggested_id="P-CHECK1", timing_check=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, CalibrationScreen)  # the researcher's check comes first
        # the next screen the participant or researcher sees (not the blank one between)
        await wait_for(pilot, lambda: isinstance(app.screen, (WarningsScreen, ParticipantScreen)))
        if isinstance(app.screen, WarningsScreen):  # a loaded machine: the check said so
            await pilot.press("enter")
        await wait_screen(pilot, ParticipantScreen)
        await pilot.press("enter")
        await pilot.pause()
    store.close()
    assert app.timing_check is not None and app.timing_check.n_chunks > 10
    with sqlite3.connect(tmp_path / "s.sqlite") as conn:
        (env,) = conn.execute("SELECT environment FROM sessions").fetchone()
    stored = json.loads(env)["timing_check"]
    assert stored["measured"] == "handed"  # headless: no terminal, so no flushed times
    assert stored["gap_ms"] == pytest.approx(20.0, abs=1.0)
