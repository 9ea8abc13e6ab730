"""The chain view driven by the real Textual driver: a chain's flattened schedule played
into it by the one `Player`, as a study trial plays it."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App, ComposeResult

from uxlab.clock import VirtualClock
from uxlab.kinds.chain import abandon_step, build_chain_schedule, load_chain
from uxlab.player import Player
from uxlab.tui.chain_view import ChainSteps, ChainView, tool_call_line

CHAINS = Path(__file__).resolve().parents[1] / "replays" / "chains"


class Host(App[None]):
    def __init__(self, spinner_interval_s: float = 0.1) -> None:
        super().__init__()
        self.spinner_interval_s = spinner_interval_s

    def compose(self) -> ComposeResult:
        yield ChainView(spinner_interval_s=self.spinner_interval_s)


@pytest.fixture(scope="module")
def trip():
    return load_chain(CHAINS / "trip" / "trip.chain.json")


async def test_a_played_chain_ends_with_every_step_ticked_and_the_answer(trip) -> None:
    sched = build_chain_schedule(trip, {"call_ttft_ms": 300, "n_steps": 4}, seed=1)
    # The spinner ticks on the real clock (a redraw per tick): kept from ticking here, so
    # the count below is the step boundaries' however long a loaded machine takes to play.
    async with Host(spinner_interval_s=3600.0).run_test(size=(80, 24)) as pilot:
        view = pilot.app.query_one(ChainView)
        view.start(sched.prompt)
        redraws = 0
        steps = view.steps_view
        original = steps.redraw

        def counting() -> None:
            nonlocal redraws
            redraws += 1
            original()

        steps.redraw = counting  # type: ignore[method-assign]
        log = await Player(sched.to_recording(), view, VirtualClock()).play()
        await pilot.pause()
        assert log.completed and view.state == "finished"
        # the work done folds into one line once the answer streams; t unfolds it
        kinds = [s.kind for s in sched.steps if s.kind != "answer"]
        n_calls, n_tools = kinds.count("call"), kinds.count("pause")
        assert steps.lines_text() == [
            f"✓ {len(kinds)} steps: {n_calls} model calls, {n_tools} tool calls  (t: show)"
        ]
        assert steps.states == ("done",) * len(sched.steps)
        view.action_toggle_details()
        await pilot.pause()
        lines = steps.lines_text()
        assert lines[0].startswith("… ") and lines[-1].startswith("    ")  # the newest, whole
        assert "✓ " + sched.steps[-2].label in lines
        # the list changes at step boundaries only, not per chunk
        n_chunks = sum(len(s.schedule.chunks) for s in sched.steps if s.schedule is not None)
        assert redraws <= 2 * len(sched.steps) + 2 < n_chunks
        assert view.stream.answer_text() == trip.steps[-1].replay.text
        assert view.stream.stats.last_wrapped_chars < 200  # O(1): only the last line re-wraps


async def test_t_expands_the_tool_calls_json(trip) -> None:
    sched = build_chain_schedule(trip, {"n_steps": 2}, seed=1)
    async with Host().run_test(size=(80, 24)) as pilot:
        view = pilot.app.query_one(ChainView)
        view.start(sched.prompt)
        await Player(sched.to_recording(), view, VirtualClock()).play()
        view.focus()
        await pilot.press("t")
        lines = view.steps_view.lines_text()
        assert "    ▾ web_search" in lines
        assert '        "query": "Lisbon Porto train Saturday morning"' in lines
        await pilot.press("t")
        assert "    ▾ web_search" not in view.steps_view.lines_text()


@pytest.mark.parametrize("where", ["pause", "call"])
async def test_giving_up_marks_the_running_step_stopped(trip, where) -> None:
    sched = build_chain_schedule(trip, {"call_ttft_ms": 500}, seed=2)
    step = next(s for s in sched.steps[1:] if s.kind == where)
    async with Host().run_test(size=(80, 24)) as pilot:
        view = pilot.app.query_one(ChainView)
        view.start(sched.prompt)
        stop_ms = step.start_ms + step.duration_ms / 2
        flat = sched.to_recording()
        log = await Player(flat, view, VirtualClock()).play(0.0, stop_at_ms=stop_ms)
        await pilot.pause()
        assert abandon_step(flat, log) == step.position and view.state == "cancelled"
        assert f"■ {step.label}" in view.steps_view.lines_text()
        if where == "call":
            assert view.stream.state == "cancelled"


def test_long_tool_arguments_are_cut_to_the_width() -> None:
    line = tool_call_line({"name": "sql", "arguments": {"query": "SELECT " + "x, " * 50}}, 40)
    assert len(line) == 1 and len(line[0]) == 40 and line[0].endswith("…")
    assert tool_call_line(None, 40) == []


async def test_a_long_chain_scrolls_whole_steps_away(trip) -> None:
    sched = build_chain_schedule(trip, {"call_ttft_ms": 300}, seed=1)
    async with Host(spinner_interval_s=3600.0).run_test(size=(80, 24)) as pilot:
        view = pilot.app.query_one(ChainView)
        view.start(sched.prompt)
        steps = view.steps_view
        for step in sched.steps[:-2]:
            view.begin_step(step)
            view.end_step(step)
        view.begin_step(sched.steps[-2])  # "Checking the plan", running
        await pilot.pause()
        lines = steps.lines_text()
        assert len(lines) <= ChainSteps.MAX_LINES
        assert lines[0].startswith("… ") and lines[0].endswith(" earlier steps")
        assert not lines[1].startswith("    ")  # never a tool call without its step
        assert lines[-1] == "⠋ Checking the plan"
        shown = sum(not x.startswith(("    ", "… ")) for x in lines)
        assert int(lines[0].split()[1]) + shown == len(sched.steps) - 1
        view.hold()
        lines = steps.lines_text()
        assert len(lines) <= ChainSteps.MAX_LINES and lines[-1].startswith("⏸")
        assert lines[-2] == "✓ Checking the plan"


def test_snapshot_80x24(snap_compare, trip) -> None:
    sched = build_chain_schedule(trip, {"call_ttft_ms": 400}, seed=3)
    app = Host(spinner_interval_s=3600.0)

    async def run_before(pilot) -> None:
        view = app.query_one(ChainView)
        view.start(sched.prompt)
        for step in sched.steps[:5]:
            sink = view.begin_step(step)
            if sink is not None:
                for i, chunk in enumerate(step.schedule.chunks):
                    sink.apply(i, chunk)
                sink.finish(step.schedule.end, None)
            view.end_step(step)
        view.begin_step(sched.steps[5])  # "searching the web…", running
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


async def test_a_flattened_chain_plays_through_the_one_player_path(trip) -> None:
    from uxlab.player import Player

    sched = build_chain_schedule(trip, {"call_ttft_ms": 300, "n_steps": 3}, seed=1)
    flat = sched.to_recording()
    async with Host().run_test(size=(80, 24)) as pilot:
        view = pilot.app.query_one(ChainView)
        view.start(None, waiting=False)
        assert view.state == "idle"
        view.start(sched.prompt)
        log = await Player(flat, view, VirtualClock()).play(0.0)
        await pilot.pause()
        assert log.completed and view.state == "finished"
        assert view.steps_view.lines_text()[0].startswith(f"✓ {len(sched.steps) - 1} steps: ")
        assert view.steps_view.states == ("done",) * len(sched.steps)
        assert view.stream.answer_text() == trip.steps[-1].replay.text
        markers = [r for r in log.records if r.n_chars == 0]
        assert [r.handed_ms for r in markers] == pytest.approx([s.start_ms for s in sched.steps])


async def test_giving_up_on_a_flattened_chain_marks_the_step(trip) -> None:
    from uxlab.player import Player

    sched = build_chain_schedule(trip, {"call_ttft_ms": 300}, seed=1)
    pause = next(s for s in sched.steps if s.kind == "pause")
    async with Host().run_test(size=(80, 24)) as pilot:
        view = pilot.app.query_one(ChainView)
        view.start(sched.prompt)
        stop_ms = pause.start_ms + 10
        await Player(sched.to_recording(), view, VirtualClock()).play(0.0, stop_at_ms=stop_ms)
        await pilot.pause()
        assert view.state == "cancelled"
        assert view.steps_view.lines_text()[-2] == f"■ {pause.label}"
