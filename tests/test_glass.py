"""Timing at the glass (`uxlab.glass`): the frame marker's colours, unwrapping, matching
repaints to frames by what they show, the probe's lines and where glass timing cannot run.
All with injected event streams; `test_glass_xterm.py` runs the real probe under Xvfb."""

from __future__ import annotations

import io

import pytest

from uxlab.glass.availability import glass_problem
from uxlab.glass.feed import GlassFeed
from uxlab.glass.marker import (
    LOCATOR,
    MODULUS,
    FrameUnwrapper,
    frame_colour,
    frame_of_pixel,
    locator_bytes,
    marker_bytes,
)
from uxlab.glass.matching import Repaint, frame_paints
from uxlab.glass.probe import probe_lag_ms


@pytest.mark.parametrize("frame", [0, 1, 15, 16, 255, 256, 4095, 4096, 4097, 123456])
def test_every_frame_number_reads_back_from_its_colour(frame):
    rgb = frame_colour(frame)
    assert all(0 <= c <= 255 for c in rgb)
    assert frame_of_pixel(rgb) == frame % MODULUS


def test_colours_that_are_no_marker_read_as_none():
    assert frame_of_pixel(LOCATOR) is None
    assert frame_of_pixel((0x1E, 0x1E, 0x1E)) is None  # the view's background
    assert frame_of_pixel((255, 255, 255)) is None


def test_the_marker_is_one_cell_at_the_bottom_right_and_restores_the_cursor():
    text = marker_bytes(5, rows=24, cols=80)
    assert text.startswith("\x1b7") and text.endswith("\x1b8")  # save / restore cursor
    assert "\x1b[24;80H" in text
    r, g, b = frame_colour(5)
    assert f"\x1b[48;2;{r};{g};{b}m " in text
    assert "\n" not in text and "\r" not in text  # never pushed early by line buffering
    r, g, b = LOCATOR
    assert f"48;2;{r};{g};{b}m" in locator_bytes(24, 80)


def test_unwrapping_follows_markers_across_the_modulus():
    unwrap = FrameUnwrapper()
    seen = [unwrap.unwrap(n % MODULUS) for n in range(1, 3 * MODULUS, 7)]
    assert seen == list(range(1, 3 * MODULUS, 7))


def test_unwrapping_tolerates_a_late_report_of_an_older_marker():
    unwrap = FrameUnwrapper(start=MODULUS + 10)
    assert unwrap.unwrap(12) == MODULUS + 12
    assert unwrap.unwrap(11) == MODULUS + 11  # an older one (a stray read): not a wrap
    assert unwrap.last == MODULUS + 12


def test_a_frame_is_painted_at_the_first_repaint_showing_it_or_a_later_one():
    repaints = [Repaint(10.0, 1), Repaint(20.0, 2), Repaint(35.0, 4), Repaint(50.0, 5)]
    paints = frame_paints([1, 2, 3, 4, 5, 6], repaints)
    assert paints[1].painted_ms == 10.0 and not paints[1].shared
    assert paints[2].painted_ms == 20.0 and not paints[2].shared
    # frame 3 never showed alone: it reached the glass with frame 4, and says so
    assert paints[3].painted_ms == 35.0 and paints[3].shared and paints[3].shown_frame == 4
    assert paints[4].painted_ms == 35.0 and not paints[4].shared
    assert 6 not in paints  # not painted (yet)


def test_a_stray_read_does_not_move_a_frame_earlier_or_later():
    repaints = [Repaint(10.0, 1), Repaint(12.0, 3), Repaint(14.0, 2), Repaint(20.0, 4)]
    paints = frame_paints([2, 3, 4], repaints)
    assert paints[2].painted_ms == 12.0 and paints[2].shared
    assert paints[3].painted_ms == 12.0
    assert paints[4].painted_ms == 20.0


def test_matching_every_frame_to_exactly_one_repaint_on_an_injected_stream():
    """A simulated emulator that batches frames closer than its repaint interval."""
    frames = list(range(1, 201))
    flushed = {f: 10.0 * f for f in frames}  # a frame every 10 ms
    repaint_every_ms = 16.0  # a 60 Hz emulator: some repaints show two frames
    repaints, t = [], 0.0
    while t < 2100.0:
        t += repaint_every_ms
        shown = max((f for f in frames if flushed[f] <= t - 1.0), default=None)
        if shown is not None and (not repaints or repaints[-1].frame != shown):
            repaints.append(Repaint(t, shown))
    paints = frame_paints(frames, repaints, flushed)
    assert set(paints) == set(frames)
    for f, paint in paints.items():
        assert paint.painted_ms >= flushed[f]  # at or after its flush
        assert paint.painted_ms in {r.t_ms for r in repaints}  # one repaint it really was
    shared = sum(p.shared for p in paints.values())
    assert 0 < shared < len(frames)  # 10 ms frames on a 16 ms repaint clock share some


def test_the_feed_reads_the_probes_lines_in_order():
    lines = io.StringIO(
        "window XTerm\nready 478 307\n100.5 1 0.2\n110.25 2 3.5\nlost\nready 470 300\n"
    )
    feed = GlassFeed(lines)
    assert feed.ended.wait(5)
    assert feed.emulator == "XTerm" and feed.cell == (470, 300) and feed.losses == 1
    assert feed.repaints() == [Repaint(100.5, 1, 0.2), Repaint(110.25, 2, 3.5)]
    described = feed.describe()
    assert described["emulator"] == "XTerm" and described["probe_behind_share"] == 0.5


@pytest.mark.parametrize(
    ("seen_ms", "stamp", "lag"),
    [
        (1000.7, 1000, 0.0),  # the probe kept up: seen within the stamp's millisecond
        (1020.0, 1000, 19.0),  # held up ~19 ms past the drawing's millisecond
        (2.0**32 + 5.5, 3, 1.5),  # the 32-bit stamp wrapped
        (1000.7, 500_000, 0.0),  # a stamp from another clock says nothing
    ],
)
def test_how_far_behind_the_probe_was_comes_from_the_servers_stamp(seen_ms, stamp, lag):
    assert probe_lag_ms(seen_ms, stamp) == pytest.approx(lag)


@pytest.mark.parametrize(
    ("env", "platform", "words"),
    [
        ({}, "linux", "no X display"),
        ({"WAYLAND_DISPLAY": "wayland-0"}, "linux", "Wayland"),
        ({"SSH_CONNECTION": "1.2.3.4 5 6.7.8.9 22"}, "linux", "over SSH"),
        ({"DISPLAY": ":0"}, "linux", "WINDOWID"),
        ({"DISPLAY": ":0", "WINDOWID": "123"}, "darwin", "macOS"),
    ],
)
def test_where_the_glass_cannot_be_timed_it_says_why(env, platform, words):
    problem = glass_problem(env, platform)
    assert problem is not None and words in problem


def test_an_x_terminal_with_a_window_id_can_be_timed():
    assert glass_problem({"DISPLAY": ":0", "WINDOWID": "4194316"}, "linux") is None
