"""Garbage-collector pacing (`uxlab.collector`): full collections only between trials, only
young ones while a stream plays; checked with a recording stand-in for the `gc` module and
through the study app's flow."""

from __future__ import annotations

import gc

from helpers.pilot import do_trial, wait_for, wait_screen
from test_study_app import make_app

from uxlab.collector import HELD_THRESHOLD, CollectorPacing
from uxlab.tui.flow_screens import ConsentScreen, EndScreen, InstructionsScreen, ParticipantScreen
from uxlab.tui.trial_screen import TrialScreen


class FakeGc:
    """Records what pacing asked of the collector."""

    def __init__(self, thresholds: tuple[int, int, int] = (700, 10, 10), enabled: bool = True):
        self.thresholds = thresholds
        self.enabled = enabled
        self.calls: list[tuple] = []

    def collect(self, generation: int = 2) -> int:
        self.calls.append(("collect", generation, self.thresholds))
        return 0

    def freeze(self) -> None:
        self.calls.append(("freeze",))

    def unfreeze(self) -> None:
        self.calls.append(("unfreeze",))

    def get_threshold(self) -> tuple[int, int, int]:
        return self.thresholds

    def set_threshold(self, t0: int, t1: int = 10, t2: int = 10) -> None:
        self.thresholds = (t0, t1, t2)
        self.calls.append(("set_threshold", t0, t1, t2))

    def isenabled(self) -> bool:
        return self.enabled


def test_settle_collects_everything_then_freezes_after_unfreezing():
    fake = FakeGc()
    pacing = CollectorPacing(fake)
    pacing.settle()
    assert fake.calls == [("unfreeze",), ("collect", 2, (700, 10, 10)), ("freeze",)]
    assert pacing.settles == 1 and pacing.last_settle_ms is not None


def test_a_hold_keeps_only_young_collections_and_release_restores_after_a_middle_one():
    fake = FakeGc((700, 10, 10))
    pacing = CollectorPacing(fake)
    pacing.hold()
    assert pacing.holding
    assert fake.thresholds == (700, HELD_THRESHOLD, HELD_THRESHOLD)  # young ones go on
    pacing.hold()  # a second hold changes nothing (and keeps the saved thresholds)
    assert fake.thresholds == (700, HELD_THRESHOLD, HELD_THRESHOLD)
    pacing.release()
    assert not pacing.holding
    assert fake.thresholds == (700, 10, 10)
    collect = [c for c in fake.calls if c[0] == "collect"]
    assert collect == [("collect", 1, (700, HELD_THRESHOLD, HELD_THRESHOLD))]  # before restoring
    pacing.release()  # nothing held: nothing happens
    assert len(fake.calls) == 3


def test_a_disabled_collector_is_left_alone_and_settle_ends_a_hold():
    off = FakeGc(enabled=False)
    CollectorPacing(off).hold()
    assert off.calls == []
    fake = FakeGc()
    pacing = CollectorPacing(fake)
    pacing.hold()
    pacing.settle()
    assert not pacing.holding and fake.thresholds == (700, 10, 10)


def test_the_real_collector_is_restored_and_nothing_stays_frozen_past_a_settle():
    pacing = CollectorPacing()
    before = gc.get_threshold()
    try:
        pacing.hold()
        assert gc.get_threshold()[1:] == (HELD_THRESHOLD, HELD_THRESHOLD)
        pacing.release()
        assert gc.get_threshold() == before
        pacing.settle()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


async def test_the_study_app_collects_between_trials_and_never_fully_during_a_stream(tmp_path):
    app = make_app(tmp_path)
    fake = FakeGc()
    app.collector = CollectorPacing(fake)
    played = 0
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, ParticipantScreen)
        await pilot.press("enter")
        await wait_screen(pilot, ConsentScreen)
        await pilot.press("a")
        await wait_screen(pilot, InstructionsScreen)
        await pilot.press("enter")
        while played < 2:
            await wait_for(pilot, lambda: type(app.screen).__name__ != "Screen")
            if isinstance(app.screen, TrialScreen):
                await do_trial(pilot)
                played += 1
            elif not isinstance(app.screen, EndScreen):
                await pilot.press("enter")  # a text screen or an attention check's answer
                await pilot.pause()
        await wait_for(pilot, lambda: app.collector.settles >= 3)  # start-up + 2 trials
    # Every full collection ran outside a hold; every hold was released by a middle one.
    holding = False
    for call in fake.calls:
        if call[0] == "set_threshold":
            holding = call[2] == HELD_THRESHOLD
        if call[0] == "collect" and call[1] == 2:
            assert not holding, "a full collection while a stream played"
    assert ("set_threshold", 700, HELD_THRESHOLD, HELD_THRESHOLD) in fake.calls
    assert not app.collector.holding
