"""The chat message view, mounted in a small host app and driven with Pilot."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static

from uxlab.player import Player, VirtualClock
from uxlab.streams.recording import Chunk, End, ErrorEvent, Header, Meta, Recording
from uxlab.tui.paint_probe import PaintProbe, ProbedSink
from uxlab.tui.stream_view import StreamView, wrap_overflow


class Host(App[None]):
    def compose(self) -> ComposeResult:
        yield StreamView(id="view")


def words(n: int) -> list[str]:
    return [f"w{i:04d} " for i in range(n)]


def test_wrap_overflow_breaks_at_spaces_and_hard_breaks_long_words():
    assert wrap_overflow("hello world", 20) == ([], "hello world")
    assert wrap_overflow("hello world", 8) == (["hello"], "world")
    assert wrap_overflow("hello world again", 11) == (["hello world"], "again")
    assert wrap_overflow("abcdefghij", 4) == (["abcd", "efgh"], "ij")
    # Wide characters count two cells.
    assert wrap_overflow("漢字漢字", 4) == (["漢字"], "漢字")


async def test_append_wraps_and_keeps_finished_lines_untouched():
    async with Host().run_test(size=(40, 10)) as pilot:
        view = pilot.app.query_one(StreamView)
        view.start("Tell me a story", waiting=False)
        for token in words(30):
            view.append(token)
        await pilot.pause()
        lines = view.lines_text()
        assert lines[0] == "You: Tell me a story"
        assert lines[1] == ""
        assert lines[2] == "Assistant:"  # the answer is labelled, as the prompt is
        assert lines[3].startswith("w0000 w0001")
        assert all(len(line) <= view.wrap_width for line in lines)
        assert " ".join(" ".join(lines[3:]).split()) == " ".join(t.strip() for t in words(30))
        assert view.answer_text() == "".join(words(30))

        before = view.finished_lines
        view.append("more text\nnext paragraph")
        after = view.finished_lines
        # The finished lines are the very same objects: nothing was re-rendered.
        assert all(a is b for a, b in zip(before, after[: len(before)], strict=True))
        assert view.lines_text()[-1] == "next paragraph"


async def test_per_append_work_does_not_grow_with_the_answer():
    async with Host().run_test(size=(60, 12)) as pilot:
        view = pilot.app.query_one(StreamView)
        view.start(None, waiting=False)
        await pilot.pause()
        width = view.wrap_width
        rebuilds_before = view.stats.rebuilds
        work = []
        for n, token in enumerate(words(2000)):
            view.append(token + ("\n\n" if n % 40 == 39 else ""))
            work.append((view.stats.last_wrapped_chars, view.stats.last_lines_built))
        # Re-wrapped characters are bounded by the width plus the token, at token 10 and
        # at token 2000 alike; at most a few strips are built per append.
        assert max(c for c, _ in work) <= width + len("w0000 ") + 1
        assert max(n for _, n in work) <= 4
        assert max(work[-100:]) <= max(work[:100])
        assert view.stats.rebuilds == rebuilds_before  # never a full re-render per token
        assert view.line_count > 2000 * 6 // width


async def test_scroll_stays_anchored_unless_the_reader_scrolls_up():
    async with Host().run_test(size=(40, 8)) as pilot:
        view = pilot.app.query_one(StreamView)
        view.start("q", waiting=False)
        for token in words(200):
            view.append(token)
        await pilot.pause()
        assert view.max_scroll_y > 0
        assert view.scroll_y == view.max_scroll_y and view.following
        view.scroll_to(y=0, animate=False)
        await pilot.pause()
        assert not view.following
        for token in words(50):
            view.append(token)
        await pilot.pause()
        assert view.scroll_y == 0  # the reader's position is kept
        view.scroll_end(animate=False)
        await pilot.pause()
        assert view.following
        view.append("last words here")
        await pilot.pause()
        assert view.scroll_y == view.max_scroll_y


async def test_finish_renders_markdown_once_and_stays_at_the_bottom():
    text = "# Title\n\nSome **bold** text.\n\n```python\nprint('hi')\n```\n\n- one\n- two\n"
    async with Host().run_test(size=(40, 12)) as pilot:
        view = pilot.app.query_one(StreamView)
        view.start("q", waiting=False)
        for piece in text.split(" "):
            view.append(piece + " ")
        assert "Some **bold** text." in view.lines_text()
        view.finish(End(t_ms=1.0), None)
        assert view.state == "finished"
        await pilot.pause()
        await pilot.pause()
        shown = "\n".join(view.lines_text())
        assert "**bold**" not in shown and "Some bold text." in shown
        assert "print('hi')" in shown and "• one" in shown
        assert "```" not in shown
        assert view.scroll_y == view.max_scroll_y
        view.append("ignored after finish")
        assert "ignored" not in "\n".join(view.lines_text())


async def test_cancel_keeps_the_text_and_says_stopped():
    async with Host().run_test(size=(40, 10)) as pilot:
        view = pilot.app.query_one(StreamView)
        view.start("q")
        view.append("Partial answer")
        view.cancel()
        await pilot.pause()
        assert view.state == "cancelled"
        assert view.lines_text()[-3:] == ["Partial answer", "", "■ Stopped"]
        view.append(" more")
        assert view.lines_text()[-1] == "■ Stopped"


async def test_waiting_indicator_until_the_first_chunk():
    async with Host().run_test(size=(40, 10)) as pilot:
        view = pilot.app.query_one(StreamView)
        view.start("Hello?")
        await pilot.pause()
        assert view.state == "waiting"
        assert view.lines_text()[-1] == "●  ○  ○"
        view.tick_waiting()
        assert view.lines_text()[-1] == "○  ●  ○"
        view.append("Hi")
        assert view.state == "streaming"
        assert view.lines_text()[-1] == "Hi" and "●" not in "".join(view.lines_text())


async def test_reasoning_and_tool_channels_are_collapsed_and_expand_with_t():
    async with Host().run_test(size=(50, 14)) as pilot:
        view = pilot.app.query_one(StreamView)
        view.start("q", waiting=False)
        view.append("Let me think ", "reasoning")
        assert view.lines_text()[-1] == "▸ Thinking…"
        view.append("about this carefully.", "reasoning")
        view.append('{"name": "get_weather", "arguments": {"city": "Oslo"}}', "tool")
        view.append("It is sunny.")
        lines = view.lines_text()
        assert "▸ Thought (6 words) · t to expand" in lines
        assert "▸ Tool call: get_weather (54 chars) · t to expand" in lines
        assert lines[-1] == "It is sunny."
        assert "about this carefully." not in "\n".join(lines)
        view.focus()
        await pilot.press("t")
        expanded = "\n".join(view.lines_text())
        assert "▾ Thought (6 words) · t to collapse" in expanded
        assert "about this carefully." in expanded
        assert '"city": "Oslo"' in expanded  # pretty JSON
        assert view.lines_text()[-1] == "It is sunny."
        await pilot.press("t")
        assert "about this carefully." not in "\n".join(view.lines_text())


async def test_error_is_shown_in_the_view():
    async with Host().run_test(size=(60, 10)) as pilot:
        view = pilot.app.query_one(StreamView)
        view.start("q", waiting=False)
        view.append("Hel")
        err = ErrorEvent(t_ms=5.0, error={"type": "overloaded_error", "message": "Overloaded"})
        view.finish(None, err)
        await pilot.pause()
        assert view.state == "error"
        assert "⚠ The response failed: overloaded_error (Overloaded)" in view.lines_text()


async def test_resize_rewraps_everything_to_the_new_width():
    async with Host().run_test(size=(40, 10)) as pilot:
        view = pilot.app.query_one(StreamView)
        view.start(None, waiting=False)
        for token in words(40):
            view.append(token)
        await pilot.pause()
        narrow = len(view.lines_text())
        await pilot.resize_terminal(80, 10)
        await pilot.pause()
        assert len(view.lines_text()) < narrow
        assert view.answer_text() == "".join(words(40))


class ProbedHost(Host):
    def __init__(self) -> None:
        super().__init__()
        self.probe = PaintProbe()
        self.probe.attach(self)


async def test_player_into_the_view_records_a_frame_for_every_chunk():
    times_ms = [20.0 + 10.0 * i for i in range(30)]
    events = [Chunk(t_ms=t, text=f"tok{i} ") for i, t in enumerate(times_ms)]
    schedule = Recording(Header(id="s"), events=events, end=End(t_ms=times_ms[-1]))
    app = ProbedHost()
    async with app.run_test(size=(40, 10)) as pilot:
        view = app.query_one(StreamView)
        view.start("q")
        player = Player(schedule, ProbedSink(view, app.probe), app.probe.clock)
        log = await player.play()
        await pilot.pause()
        assert view.answer_text() == "".join(e.text for e in events)
        assert [r.index for r in log.records] == list(range(30))
        for rec in log.records:
            # Headless: the frame is queued, there is no terminal to flush to.
            assert rec.queued_ms is not None and rec.flushed_ms is None
            assert rec.queued_ms >= rec.handed_ms >= rec.scheduled_ms
        assert log.finished_ms is not None and not app.probe.has_terminal


async def test_chunks_applied_before_a_frame_share_it():
    app = ProbedHost()
    async with app.run_test(size=(40, 10)) as pilot:
        view = app.query_one(StreamView)
        view.start(None, waiting=False)
        view.frames.enabled = False  # the screen's own update path (direct frames: see
        sink = ProbedSink(view, app.probe)  # tests/test_frame_request.py)
        await pilot.pause()
        sink.apply(0, Chunk(t_ms=0.0, text="a "))
        sink.apply(1, Chunk(t_ms=0.0, text="b "))
        sink.apply(2, Chunk(t_ms=0.0, text=""))  # empty: nothing to paint
        assert await app.probe.wait_painted(2, timeout_ms=2000)
        sink.apply(3, Chunk(t_ms=0.0, text="c "))
        assert await app.probe.wait_painted(3, timeout_ms=2000)
        times = sink.paint_times_ms()
        assert times[0] == times[1] and 2 not in times
        assert times[3][0] > times[1][0]
        assert app.probe.frame_of[3] > app.probe.frame_of[0]


async def test_a_tool_call_takes_its_name_from_the_meta_event():
    events = [
        Meta(t_ms=1.0, data={"kind": "tool_call", "id": "c1", "name": "get_weather"}),
        Chunk(t_ms=1.0, text='{"city": ', channel="tool"),
        Chunk(t_ms=2.0, text='"Lisbon"}', channel="tool"),
        Chunk(t_ms=3.0, text="Sunny."),
    ]
    schedule = Recording(Header(id="tool"), events=events, end=End(t_ms=3.0))
    app = ProbedHost()
    async with app.run_test(size=(60, 10)) as pilot:
        view = app.query_one(StreamView)
        view.start("q", waiting=False)
        await Player(schedule, ProbedSink(view, app.probe), VirtualClock()).play()
        await pilot.pause()
        assert "▸ Tool call: get_weather (18 chars) · t to expand" in view.lines_text()


async def test_two_tool_calls_in_a_row_are_two_named_blocks_not_one():
    def call(t_ms, index, name, args):
        start = Meta(t_ms=t_ms, data={"kind": "tool_call", "index": index, "name": name})
        return [start, Chunk(t_ms=t_ms, text=args, channel="tool", extra={"tool_index": index})]

    events = [*call(1.0, 0, "get_weather", '{"city": "Oslo"}'), *call(2.0, 1, "get_time", "{}")]
    schedule = Recording(Header(id="tools"), events=events, end=End(t_ms=3.0))
    app = ProbedHost()
    async with app.run_test(size=(60, 10)) as pilot:
        view = app.query_one(StreamView)
        view.start("q", waiting=False)
        await Player(schedule, ProbedSink(view, app.probe), VirtualClock()).play()
        await pilot.pause()
        lines = view.lines_text()
        assert "▸ Tool call: get_weather (16 chars) · t to expand" in lines
        assert "▸ Tool call: get_time (2 chars) · t to expand" in lines


class HostWithComposer(App[None]):
    """The trial screen's shape: a sibling with a side margin narrows the view while shown."""

    CSS = "#composer { height: 3; margin: 0 1; }"

    def compose(self) -> ComposeResult:
        yield StreamView(id="view")
        yield Static("composer", id="composer")


async def test_a_width_change_rewraps_before_the_next_frame_is_drawn():
    async with HostWithComposer().run_test(size=(40, 12)) as pilot:
        view = pilot.app.query_one(StreamView)
        view.start("Tell me a story", waiting=False)
        for token in words(40):
            view.append(token)
        view.finish(None)
        await pilot.pause()
        narrow = view.wrap_width
        drawn: list[tuple[int, int]] = []
        render_line = view.render_line

        def recording(y: int):
            strip = render_line(y)
            drawn.append((strip.cell_length, view.scrollable_content_region.width))
            return strip

        view.render_line = recording
        rebuilds = view.stats.rebuilds
        pilot.app.query_one("#composer").display = False  # the questions replace the input
        await pilot.pause()
        await pilot.pause()
        assert view.wrap_width == narrow + 2
        assert drawn and all(got == want for got, want in drawn), drawn
        assert view.stats.rebuilds == rebuilds + 1  # re-wrapped once for the new width
        before = view.stats.rebuilds
        view.refresh()
        await pilot.pause()
        assert view.stats.rebuilds == before  # drawing again costs no re-wrap


async def test_a_markdown_swap_with_fewer_lines_repaints_the_rows_below_its_end():
    async with Host().run_test(size=(40, 12)) as pilot:
        view = pilot.app.query_one(StreamView)
        view.start("Hi", waiting=False)
        for piece in ("one\n", "\n", "\n", "\n", "two"):  # Markdown folds the blank lines
            view.append(piece)
        await pilot.pause()
        raw_rows = view.line_count
        painted: list[int] = []
        render_line = view.render_line

        def recording(y: int):
            painted.append(y)
            return render_line(y)

        view.render_line = recording
        view.finish(None)
        while not view.shows_markdown:
            await pilot.pause()
        await pilot.pause()
        assert view.line_count < raw_rows and view.lines_text()[-1] == "two"
        # The rows that held the raw text's last lines are drawn again (blank), so the
        # terminal does not keep showing "two" a second time below the new end.
        assert set(range(raw_rows)) <= set(painted)
