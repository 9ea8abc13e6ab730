"""A chain trial's large chunk (a tool result pasting a file) is fed in pieces across loop
turns, as a chat answer's is: a key is handled before it is all shown, the step markers and
chunks behind it keep their order, and its shown time is the frame that completes it.

Real Textual driver (run_test/Pilot); ordering is asserted through events, never time.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding

from uxlab.kinds.chain.schedule import StepStart
from uxlab.streams.recording import Chunk
from uxlab.tui.chain_view import ChainView
from uxlab.tui.paint_probe import PaintProbe, ProbedSink
from uxlab.tui.stream_view import PIECE_CHARS

BIG = "".join(f"line {i:06d} of the pasted file\n" for i in range(12 * PIECE_CHARS // 28))


class Host(App[None]):
    BINDINGS: ClassVar[list[Binding]] = [Binding("x", "mark", "mark")]

    def __init__(self) -> None:
        super().__init__()
        self.probe = PaintProbe()
        self.probe.attach(self)
        self.marks: list[str] = []
        """What happened, in order: key presses, chunks fed, steps begun."""

    def compose(self) -> ComposeResult:
        yield ChainView(spinner_interval_s=3600.0)

    def action_mark(self) -> None:
        self.marks.append(f"key (backlog {self.query_one(ChainView).backlog_chars})")


def marked(app: Host, view: ChainView) -> ProbedSink:
    """The view behind the paint probe, with what it feeds and begins noted in `app.marks`."""
    sink = ProbedSink(view, app.probe)
    fed, begin = view.on_chunk_fed, view.begin_step
    assert fed is not None  # the view says when a large chunk's last piece goes in
    view.on_chunk_fed = lambda index: (app.marks.append(f"fed {index}"), fed(index))
    view.begin_step = lambda step: (app.marks.append(f"step {step.position}"), begin(step))[1]  # type: ignore[method-assign]
    return sink


async def handed_over(app: Host, pilot) -> tuple[ChainView, ProbedSink]:
    """The view started and marked, then handed at once what a player hands on a virtual
    clock: a tool call's step whose result is `BIG`, then the answer's step and its text."""
    view = app.query_one(ChainView)
    view.start("Plan my trip")
    sink = marked(app, view)
    await pilot.pause()
    sink.apply(0, StepStart(0, "call", "Reading the file").chunk(0.0))
    sink.apply(1, Chunk(t_ms=1.0, text=BIG))
    sink.apply(2, StepStart(1, "answer", "Answer").chunk(2.0))
    sink.apply(3, Chunk(t_ms=3.0, text="Here is your plan."))
    return view, sink


async def test_a_large_chunk_in_a_chain_is_fed_in_pieces_and_the_next_step_waits_for_it():
    app = Host()
    async with app.run_test(size=(80, 24)) as pilot:
        view, sink = await handed_over(app, pilot)
        sink.finish(None, None)
        assert PIECE_CHARS < view.backlog_chars < len(BIG) + 20  # returned at once: queued
        assert view.current is not None and view.current.position == 0  # step 1 waits
        await pilot.press("x")
        assert await sink.wait_painted(3, timeout_ms=120_000)
        await pilot.pause()
        assert view.backlog_chars == 0 and view.state == "finished"
        assert app.marks[0] == "step 0"
        assert app.marks[1].startswith("key (backlog ") and app.marks[1] != "key (backlog 0)"
        assert app.marks[2:] == ["fed 1", "step 1", "fed 3"]  # the order of the schedule
        assert view.stream.answer_text() == "Here is your plan."
        assert view.steps_view.states == ("done", "done")
        assert app.probe.frame_of[3] >= app.probe.frame_of[1]  # shown when its last piece was


async def test_giving_up_behind_a_large_chunk_drops_what_was_never_shown():
    app = Host()
    async with app.run_test(size=(80, 24)) as pilot:
        view, sink = await handed_over(app, pilot)
        assert view.backlog_chars > 0
        sink.cancel()
        await pilot.pause()
        assert view.backlog_chars == 0 and view.state == "cancelled"
        assert "step 1" not in app.marks and "fed 3" not in app.marks  # never shown
        assert len(view.stream.answer_text()) < len(BIG)
