"""A 1 MB chunk is fed in pieces across loop turns: keys are handled before it is all shown.

Real Textual driver (run_test/Pilot); ordering is asserted through events, never time.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.strip import Strip

from uxlab.player import Player
from uxlab.streams.recording import Chunk, End, Header, Recording
from uxlab.tui.paint_probe import PaintProbe, ProbedSink
from uxlab.tui.stream_view import MARKDOWN_MAX_CHARS, PIECE_CHARS, StreamView

ONE_MB = 1_000_000


def big_text(n_chars: int) -> str:
    words = [f"w{i % 997:03d}" for i in range(n_chars // 5 + 1)]
    return " ".join(words)[:n_chars]


class Host(App[None]):
    BINDINGS: ClassVar[list[Binding]] = [Binding("x", "mark", "mark")]

    def __init__(self) -> None:
        super().__init__()
        self.probe = PaintProbe()
        self.probe.attach(self)
        self.marks: list[str] = []
        """What happened, in order: key presses and the big chunk's last piece."""

    def compose(self) -> ComposeResult:
        yield StreamView(id="view")

    def action_mark(self) -> None:
        view = self.query_one(StreamView)
        self.marks.append(f"key (backlog {view.backlog_chars})")


def shown_text(view: StreamView) -> str:
    return "".join(view.lines_text())


async def test_a_key_pressed_after_a_1mb_chunk_is_handled_before_the_chunk_is_all_shown():
    app = Host()
    text = big_text(ONE_MB)
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(StreamView)
        view.start(None, waiting=False)
        sink = ProbedSink(view, app.probe)
        fed = view.on_chunk_fed
        assert fed is not None
        view.on_chunk_fed = lambda index: (app.marks.append(f"fed {index}"), fed(index))
        await pilot.pause()
        sink.apply(0, Chunk(t_ms=0.0, text=text))
        # Returned at once: most of the chunk is still queued, nothing is lost.
        assert 0 < view.backlog_chars <= ONE_MB
        await pilot.press("x")
        assert await sink.wait_painted(0, timeout_ms=120_000)
        assert view.backlog_chars == 0
        # The key ran while pieces were still waiting, and before the last piece went in.
        assert app.marks[0].startswith("key (backlog ") and app.marks[0] != "key (backlog 0)"
        assert app.marks.index("fed 0") > 0
        # The whole chunk ends up on screen (wrapping removes only the spaces it breaks at).
        assert view.answer_text() == text
        assert shown_text(view).replace(" ", "") == text.replace(" ", "")
        # Its frame is the one that completed it, not the one after its first piece.
        assert 0 in app.probe.frame_of and app.probe.frames_queued_ms
        # ~12,500 finished lines, but strips (each with its own caches) only for drawn ones.
        assert len(view.finished_lines) > 10_000
        assert not any(isinstance(line, Strip) for line in view.finished_lines)
        assert 0 < view.drawn_strip_count <= 4 * 24 + 1


async def test_player_log_holds_the_big_chunks_completing_frame_and_finish_waits_for_it():
    app = Host()
    big = big_text(4 * PIECE_CHARS + 123)
    events = [Chunk(t_ms=1.0, text="a "), Chunk(t_ms=2.0, text=big), Chunk(t_ms=3.0, text=" z")]
    schedule = Recording(Header(id="s"), events=events, end=End(t_ms=4.0))
    async with app.run_test(size=(60, 12)) as pilot:
        view = app.query_one(StreamView)
        view.start("q")
        sink = ProbedSink(view, app.probe)
        log = await Player(schedule, sink, app.probe.clock).play()
        await pilot.pause()
        assert view.state == "finished" and view.backlog_chars == 0
        assert view.answer_text() == "a " + big + " z"  # order kept behind the big chunk
        by_index = {r.index: r for r in log.records}
        assert [r.index for r in log.records] == [0, 1, 2]
        big_rec, after = by_index[1], by_index[2]
        # Handed when the player gave it; shown when its last piece's frame was queued.
        assert big_rec.queued_ms is not None and big_rec.queued_ms >= big_rec.handed_ms
        assert after.queued_ms is not None and after.queued_ms >= big_rec.queued_ms
        assert app.probe.frame_of[2] >= app.probe.frame_of[1] >= app.probe.frame_of[0]


async def test_cancel_drops_unfed_pieces_and_a_huge_answer_stays_plain_text():
    app = Host()
    async with app.run_test(size=(60, 12)) as pilot:
        view = app.query_one(StreamView)
        view.start(None, waiting=False)
        await pilot.pause()
        view.apply(0, Chunk(t_ms=0.0, text=big_text(ONE_MB)))
        view.finish()  # queued behind the pieces
        assert view.state != "finished" and view.backlog_chars > 0
        view.feed_one_piece()  # one piece, as the next loop turn would
        view.cancel()
        assert view.state == "cancelled" and view.backlog_chars == 0
        assert len(view.answer_text()) < ONE_MB  # only what was fed was ever shown
        assert view.lines_text()[-1] == "■ Stopped"
        await pilot.pause()
        assert view.state == "cancelled"  # the queued finish does not run after a cancel

        huge = big_text(MARKDOWN_MAX_CHARS + 10)
        view.start(None, waiting=False)
        view.apply(0, Chunk(t_ms=0.0, text="**bold** " + huge))
        view.finish()
        while view.state != "finished":
            await pilot.pause()
        await pilot.pause()
        assert not view.shows_markdown and view.lines_text()[0].startswith("**bold**")
