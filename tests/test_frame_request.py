"""The direct frame request (`uxlab.tui.frame_request`): a chunk applied to the stream view
is composed into a frame before `apply` returns, in the real Textual app (headless)."""

from __future__ import annotations

from textual.app import App, ComposeResult

from uxlab.streams.recording import Chunk
from uxlab.tui.frame_request import FrameRequester
from uxlab.tui.paint_probe import PaintProbe, ProbedSink
from uxlab.tui.stream_view import StreamView


class Host(App[None]):
    def compose(self) -> ComposeResult:
        yield StreamView(id="view")


def rendered_text(view: StreamView, log: list[str]):
    """Record the text of every line the compositor asks the view for."""
    original = view.render_lines

    def render_lines(crop):
        strips = original(crop)
        log.extend(s.text for s in strips)
        return strips

    view.render_lines = render_lines  # type: ignore[method-assign]


async def started_with_direct_frames(pilot) -> StreamView:
    """The host's view, started, painting every applied chunk directly: 10 ms pass between
    requests on its clock, so the frame cap never holds one back."""
    view = pilot.app.query_one(StreamView)
    view.start("prompt", waiting=False)
    await pilot.pause()
    ticks = iter(range(0, 1_000_000, 10))
    view.frames = FrameRequester(min_interval_ms=4.0, now_ms=lambda: float(next(ticks)))
    view.frames.enabled = True
    return view


async def test_an_applied_chunk_is_in_a_frame_before_apply_returns():
    app = Host()
    probe = PaintProbe()
    probe.attach(app)
    async with app.run_test(size=(60, 12)) as pilot:
        view = await started_with_direct_frames(pilot)
        painted: list[str] = []
        rendered_text(view, painted)
        sink = ProbedSink(view, probe)
        for i, word in enumerate(["alpha ", "beta ", "gamma"]):
            frames_before = len(probe.frames_queued_ms)
            sink.apply(i, Chunk(t_ms=None, text=word))
            assert len(probe.frames_queued_ms) == frames_before + 1  # composed right here
            assert probe.frame_of[i] == frames_before  # ... and the chunk is in that frame
            assert word.strip() in " ".join(painted)
        assert view.frames.painted == 3


async def test_requests_closer_than_a_frame_period_go_the_normal_path():
    app = Host()
    probe = PaintProbe()
    probe.attach(app)
    async with app.run_test(size=(60, 12)) as pilot:
        view = pilot.app.query_one(StreamView)
        view.start("prompt", waiting=False)
        await pilot.pause()
        view.frames = FrameRequester(min_interval_ms=4.0, now_ms=lambda: 100.0)  # no time passes
        view.frames.enabled = True
        sink = ProbedSink(view, probe)
        sink.apply(0, Chunk(t_ms=None, text="one "))
        n = len(probe.frames_queued_ms)
        sink.apply(1, Chunk(t_ms=None, text="two"))
        assert len(probe.frames_queued_ms) == n and 1 not in probe.frame_of  # not yet
        assert view.frames.painted == 1
        await pilot.pause()
        assert 1 in probe.frame_of  # the screen's own update painted it
        assert "two" in view.answer_text()


async def test_off_the_direct_path_is_the_usual_one():
    app = Host()
    probe = PaintProbe()
    probe.attach(app)
    async with app.run_test(size=(60, 12)) as pilot:
        view = pilot.app.query_one(StreamView)
        view.start("prompt", waiting=False)
        await pilot.pause()
        view.frames.enabled = False
        sink = ProbedSink(view, probe)
        n = len(probe.frames_queued_ms)
        sink.apply(0, Chunk(t_ms=None, text="later"))
        assert len(probe.frames_queued_ms) == n
        await pilot.pause()
        assert 0 in probe.frame_of


async def test_a_chunk_that_scrolls_the_view_is_painted_at_the_new_bottom():
    app = Host()
    probe = PaintProbe()
    probe.attach(app)
    async with app.run_test(size=(40, 8)) as pilot:
        view = pilot.app.query_one(StreamView)
        view.start("prompt", waiting=False)
        await pilot.pause()
        ticks = iter(range(0, 100_000, 10))
        view.frames = FrameRequester(min_interval_ms=4.0, now_ms=lambda: float(next(ticks)))
        view.frames.enabled = True
        painted: list[str] = []
        rendered_text(view, painted)
        sink = ProbedSink(view, probe)
        stepped_aside: list[int] = []
        for i in range(120):  # far more lines than the 8-row screen holds
            painted.clear()
            word = f"w{i:03d} "
            sink.apply(i, Chunk(t_ms=None, text=word))
            if i not in probe.frame_of:  # a layout was due (the scrollbar appeared): usual path
                stepped_aside.append(i)
                await pilot.pause()
                assert i in probe.frame_of
                continue
            assert word.strip() in " ".join(painted), (i, painted)
        assert view.scroll_y > 0 and len(stepped_aside) <= 2
        assert view.frames.painted == 120 - len(stepped_aside)


async def test_the_chunk_that_first_overflows_the_view_is_painted_at_once_too():
    """The answer's first line past the bottom used to show the scrollbar, which needs a
    screen layout: that chunk went the slow path (5-17 ms late, issue 27). The scrollbar is
    always there now, so every chunk of a long answer is painted before `apply` returns."""
    app = Host()
    probe = PaintProbe()
    probe.attach(app)
    async with app.run_test(size=(60, 12)) as pilot:
        view = await started_with_direct_frames(pilot)
        sink = ProbedSink(view, probe)
        n_chunks = 40  # 40 lines in a 12-row view: it overflows part-way
        for i in range(n_chunks):
            frames_before = len(probe.frames_queued_ms)
            sink.apply(i, Chunk(t_ms=None, text=f"{i + 1}. item\n"))
            assert probe.frame_of.get(i) == frames_before, f"chunk {i} waited for a layout"
        assert view.frames.painted == n_chunks
        assert view.line_count > view.scrollable_content_region.height
        assert view.scroll_y == view.max_scroll_y > 0  # still following the newest line
