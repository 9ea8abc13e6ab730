"""The paint probe's frame -> flush matching, with the writer thread's side on a real thread."""

from __future__ import annotations

import io
import threading

from textual.drivers.linux_driver import LinuxDriver

from uxlab.clock import VirtualClock
from uxlab.streams.recording import Chunk, End, Header, Recording
from uxlab.tui.paint_probe import FlushTimedLinuxDriver, PaintProbe
from uxlab.tui.replay_app import ReplayApp


def on_writer_thread(fn) -> None:
    thread = threading.Thread(target=fn)
    thread.start()
    thread.join()


def test_frames_are_matched_to_the_flush_that_wrote_their_bytes():
    clock = VirtualClock(start_ms=100.0)
    probe = PaintProbe(clock)
    out = io.StringIO()
    proxy = probe.wrap_output(out)
    assert probe.has_terminal

    # Frame 0 holds chunks 0 and 1 (two writes); frame 1 holds chunk 2 (one write).
    probe.applied(0)
    probe.applied(1)
    probe.write_enqueued()
    probe.write_enqueued()
    clock.advance(1.0)
    probe.frame_queued()  # queued at 101
    probe.applied(2)
    probe.write_enqueued()
    clock.advance(4.0)
    probe.frame_queued()  # queued at 105
    assert not probe.painted(0)  # nothing flushed yet

    def writer() -> None:
        proxy.write("frame0-a")  # at 105: a write can already push bytes out
        proxy.write("frame0-b")
        clock.advance(0.5)
        proxy.flush()  # frame 0's bytes: timed at its batch's first write, 105
        clock.advance(1.0)
        proxy.write("frame1")  # at 106.5
        clock.advance(2.0)
        proxy.flush()  # frame 1's bytes: timed at 106.5, never after they could be shown

    on_writer_thread(writer)
    assert out.getvalue() == "frame0-aframe0-bframe1"
    assert probe.painted(2)
    assert probe.paint_times_ms() == {0: (101.0, 105.0), 1: (101.0, 105.0), 2: (105.0, 106.5)}
    assert probe.frame_of == {0: 0, 1: 0, 2: 1}


def test_one_flush_can_cover_several_frames_and_empty_frames_have_no_flush():
    clock = VirtualClock()
    probe = PaintProbe(clock)
    proxy = probe.wrap_output(io.StringIO())
    probe.applied(0)
    probe.write_enqueued()
    probe.frame_queued()
    probe.applied(1)
    probe.write_enqueued()
    probe.frame_queued()
    probe.applied(2)
    probe.frame_queued()  # wrote nothing: chunk 2 changed nothing visible

    def writer() -> None:
        clock.advance(3.0)
        proxy.write("a")  # the batch starts at 3
        proxy.write("b")
        clock.advance(1.0)
        proxy.flush()  # the writer thread flushes only when its queue is empty

    on_writer_thread(writer)
    times = probe.paint_times_ms()
    assert times[0][1] == times[1][1] == 3.0
    assert times[2] == (0.0, None)
    assert probe.painted(2)


def test_a_frame_that_joins_a_batch_already_writing_is_timed_at_its_own_write():
    """The writer thread writes every queued frame before one flush: a chunk handed out
    while the frame before it was being written is in a frame written later in the same
    batch, and that frame's bytes cannot leave before the chunk existed (timing it at the
    batch's first write put it 0.7 ms before its chunk in a full run under load)."""
    clock = VirtualClock(start_ms=300.0)
    probe = PaintProbe(clock)
    proxy = probe.wrap_output(io.StringIO())
    probe.applied(0)
    probe.write_enqueued()
    probe.frame_queued()  # frame 0 at 300
    on_writer_thread(lambda: proxy.write("frame0"))  # begins at 300: a slow terminal
    clock.advance(9.3)
    probe.applied(1)  # chunk 1 handed out at 309.3, while frame 0 is still being written
    probe.write_enqueued()
    probe.frame_queued()  # frame 1

    def writer() -> None:
        clock.advance(0.7)
        proxy.write("frame1")  # frame 1's bytes begin at 310.0, in frame 0's batch
        clock.advance(0.2)
        proxy.flush()

    on_writer_thread(writer)
    times = probe.paint_times_ms()
    assert times[0] == (300.0, 300.0)
    assert times[1] == (309.3, 310.0)  # not 300.0: never before the chunk was handed out
    assert times[1][1] >= probe.applied_ms[1]


def test_new_stream_forgets_chunk_indices_but_keeps_frame_numbers():
    probe = PaintProbe(VirtualClock())
    probe.applied(0)
    probe.frame_queued()
    probe.new_stream()
    assert probe.paint_times_ms() == {}
    probe.applied(0)
    probe.frame_queued()
    assert probe.frame_of == {0: 1}


def test_attach_swaps_in_the_flush_timed_driver_and_hooks_frames():
    rec = Recording(Header(id="a"), events=[Chunk(t_ms=1.0, text="x")], end=End(t_ms=1.0))
    app = ReplayApp([rec])
    assert app.driver_class is FlushTimedLinuxDriver or app.driver_class is not LinuxDriver
    before = len(app.probe.frames_queued_ms)
    app.post_display_hook()
    assert len(app.probe.frames_queued_ms) == before + 1
