"""`uxlab replay`'s app, driven with Pilot (keys q/r/n/Esc, prompt and settings editors)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.pilot import wait_for
from helpers.recordings import word_stream

from uxlab.cli import main
from uxlab.cli.replay_cmd import parse_settings
from uxlab.player import ChunkTiming, PlaybackLog
from uxlab.shaping import shape
from uxlab.streams.recording import Recording
from uxlab.streams.replay_file import write_replay
from uxlab.tui.replay_app import ReplayApp, Requested, recording_prompt, timing_summary
from uxlab.tui.stream_view import StreamView


def recording(rid: str, prompt: str, words: list[str], ttft_ms=15.0, gap_ms=4.0) -> Recording:
    return word_stream(
        words, rid=rid, prompt=prompt, ttft_ms=ttft_ms, gap_ms=gap_ms, end_after_ms=0.0
    )


def corpus() -> list[Recording]:
    return [
        recording("first", "Say hello", ["Hello", " there", ",", " friend", "."]),
        recording("second", "Count", [" one", " two", " three"]),
    ]


def title(app: ReplayApp) -> str:
    return str(app.query_one("#replay-title").render())


def timing(app: ReplayApp) -> str:
    return str(app.query_one("#timing").render())


async def test_autoplay_shows_the_answer_and_measured_timing():
    app = ReplayApp(corpus())
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.logs)
        view = app.query_one(StreamView)
        assert view.answer_text() == "Hello there, friend."
        assert view.lines_text()[0] == "You: Say hello"
        assert "first  (1/2)" in title(app) and "fps" in title(app)
        shown = timing(app)
        assert shown.startswith("requested TTFT    15.0 ms  ITL p50   4.0 ms")
        assert "measured  TTFT" in shown
        log = app.logs[0]
        assert log.completed and len(log.records) == 5
        assert all(r.queued_ms is not None for r in log.records)


async def test_n_plays_the_next_recording_and_wraps_around():
    app = ReplayApp(corpus())
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.logs)
        await pilot.press("n")
        await wait_for(pilot, lambda: len(app.logs) == 2)
        assert "second  (2/2)" in title(app)
        assert app.query_one(StreamView).answer_text() == " one two three"
        await pilot.press("n")
        assert "first  (1/2)" in title(app)


async def test_rapid_n_presses_never_mix_two_answers():
    app = ReplayApp(corpus())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n", "n", "n")
        await wait_for(pilot, lambda: any(log.completed for log in app.logs))
        await pilot.pause(0.1)
        assert app.query_one(StreamView).answer_text() == " one two three"


async def test_escape_stops_the_stream_and_r_replays():
    slow = recording("slow", "Wait", ["never"], ttft_ms=60_000.0)
    app = ReplayApp([slow])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.player is not None and app.player.playing)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.logs)
        log = app.logs[0]
        assert log.cancelled_at_ms is not None and log.records == []
        view = app.query_one(StreamView)
        assert view.state == "cancelled" and view.lines_text()[-1] == "■ Stopped"
        assert "stopped at" in timing(app)
        await pilot.press("r")
        await wait_for(pilot, lambda: app.player is not None and app.player.playing)
        assert view.state == "waiting"
        await pilot.press("q")
    assert app.return_code == 0 or app.return_code is None


async def test_q_quits():
    app = ReplayApp(corpus())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


async def test_typed_prompt_is_sent_and_letters_do_not_trigger_keys():
    app = ReplayApp(corpus(), autoplay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("slash")
        await pilot.pause()
        editor = app.query_one("#editor")
        assert editor.display and editor.has_focus
        editor.value = ""
        await pilot.press(*"qrn ok")
        assert editor.value == "qrn ok" and app.is_running and not app.logs
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.logs)
        assert app.query_one(StreamView).lines_text()[0] == "You: qrn ok"
        assert not editor.display


async def test_settings_reshape_the_stream():
    app = ReplayApp(corpus(), shaper=shape, parse_settings=parse_settings, autoplay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("s")
        editor = app.query_one("#editor")
        editor.value = "ttft=40 itl=constant:3 seed=5"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.logs)
        assert "requested TTFT    40.0 ms  ITL p50   3.0 ms" in timing(app)
        assert app.seed == 5 and "ttft=40 itl=constant:3" in title(app)
        # A bad setting is reported and the editor stays open.
        await pilot.press("s")
        editor.value = "itl=bogus:1"
        await pilot.press("enter")
        await pilot.pause()
        assert editor.display and app.settings_text == "ttft=40 itl=constant:3"


async def test_bench_mode_plays_everything_and_writes_the_logs(tmp_path: Path):
    out = tmp_path / "bench.json"
    app = ReplayApp(corpus(), bench_json=out)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, out.exists)
    payload = json.loads(out.read_text())
    assert payload["has_terminal"] is False and payload["frame_cap"] >= 1
    assert [len(log["records"]) for log in payload["logs"]] == [5, 3]


def test_recording_prompt_reads_the_last_user_message():
    rec = recording("x", "ignored", ["a"])
    rec.header.request = {
        "messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "reply"},
            {"role": "user", "content": [{"type": "text", "text": "second"}]},
        ]
    }
    assert recording_prompt(rec) == "second"
    rec.header.request = {}
    assert recording_prompt(rec) == ""


def test_cli_reports_a_missing_path(capsys):
    assert main(["replay", "no/such/folder"]) == 2
    assert "no/such/folder" in capsys.readouterr().err


def test_cli_rejects_a_bad_frame_cap(capsys, tmp_path):
    write_replay(corpus()[0], tmp_path / "a.jsonl")
    assert main(["replay", str(tmp_path), "--fps", "0"]) == 2
    assert "--fps 0" in capsys.readouterr().err


def fixed_log() -> PlaybackLog:
    records = [
        ChunkTiming(i, 600.0 + 30 * i, 600.4 + 30 * i, 601.0 + 30 * i, 601.5 + 30 * i, "content", 4)
        for i in range(10)
    ]
    return PlaybackLog("first", 0.0, "MonotonicClock", records, finished_ms=880.0)


def test_timing_summary_puts_requested_next_to_measured():
    text = timing_summary(Requested(600.0, 30.0), fixed_log())
    assert text.splitlines() == [
        "requested TTFT   600.0 ms  ITL p50  30.0 ms │ done at 880.0 ms",
        "measured  TTFT   601.5 ms  ITL p50  30.0 ms │ flushed, 0% shared a frame",
    ]
    assert all(len(line) <= 78 for line in text.splitlines())


def test_a_turn_without_text_says_so_instead_of_a_bare_dash():
    """A tool-call-only turn has no first token: `no text`, not `-`."""
    tools = [ChunkTiming(0, 400.0, 400.2, 400.5, 401.0, "tool", 12)]
    log = PlaybackLog("tool", 0.0, "MonotonicClock", tools, finished_ms=450.0)
    first, second = timing_summary(Requested(None, None), log).splitlines()
    assert first.startswith("requested TTFT    no text  ITL p50")
    assert second.startswith("measured  TTFT    no text  ITL p50")


def test_snapshot_80x24(snap_compare):
    long_answer = (
        "Here is a version that ignores case and punctuation:\n\n"
        "```python\ndef is_palindrome(s: str) -> bool:\n"
        "    kept = [c.lower() for c in s if c.isalnum()]\n"
        "    return kept == kept[::-1]\n```\n\n"
        "It keeps **letters and digits** only, then compares the list with its reverse."
    )
    rec = recording("chat-code-answer", "Write a palindrome check in Python.", [long_answer])
    app = ReplayApp([rec], autoplay=False)

    async def run_before(pilot) -> None:
        view = app.query_one(StreamView)
        view.start(recording_prompt(rec), waiting=False)
        view.append("Checking the cases ", "reasoning")
        view.append("first.", "reasoning")
        for piece in long_answer.split(" "):
            view.append(piece + " ")
        view.finish(rec.end, None)
        app.query_one("#timing").update(timing_summary(Requested(600.0, 30.0), fixed_log()))
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


@pytest.mark.parametrize("fps", ["abc", "0"])
def test_bad_uxlab_fps_is_a_clear_error(fps, monkeypatch):
    from uxlab.tui import FrameCapError, requested_frame_cap

    monkeypatch.setenv("UXLAB_FPS", fps)
    with pytest.raises(FrameCapError, match="UXLAB_FPS"):
        requested_frame_cap()
