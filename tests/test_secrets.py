"""A key echoed back escaped, encoded or split is found nowhere: not in the replay, the `.sse`
sidecar, stdout/stderr, a live study's screen, its database or its export.

A hostile vendor on loopback (real HTTP) echoes the key the client sent: JSON-escaped in a
401 body (`\\/`, `\\u0073...`), inside a mid-stream error event, split across two SSE
events, one character per event, and split across two raw (non-JSON) events.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from helpers.pilot import asking, wait_for
from live_servers import serve_in_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from uxlab.cli import main
from uxlab.live.key_scrub import REDACTED, KeyScrubber, KeyStreamGuard
from uxlab.store import Store
from uxlab.streams import read_replay
from uxlab.study import load_study
from uxlab.tui.flow_screens import ConsentScreen, EndScreen, InstructionsScreen, TextScreen
from uxlab.tui.study_app import StudyApp
from uxlab.tui.trial_screen import TrialScreen

KEY = "sk-proj/UNMISTAKABLE-7f3a9c-0123456789abcdef"
ENV = "UXLAB_SECRET_TEST_KEY"


def u_escaped(text: str) -> str:
    return "".join(f"\\u{ord(ch):04x}" for ch in text)


def slash_escaped(text: str) -> str:
    return json.dumps(text)[1:-1].replace("/", "\\/")


def chunk(text: str, finish: str | None = None) -> bytes:
    obj = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}
    return f"data: {json.dumps(obj)}\n\n".encode()


def events_for(model: str) -> list[bytes]:
    done = [chunk("", "stop"), b"data: [DONE]\n\n"]
    if model == "echo-midstream":
        error = '{"error": {"type": "bad_key", "message": "key ' + u_escaped(KEY) + '"}}'
        return [chunk("Hi"), f"data: {error}\n\n".encode()]
    if model == "echo-split":
        return [chunk("Your key is " + KEY[:20]), chunk(KEY[20:] + "."), *done]
    if model == "echo-trickle":
        return [chunk("Key: "), *(chunk(ch) for ch in KEY), chunk(" end"), *done]
    if model == "echo-split-raw":
        return [f"data: {KEY[:9]}\n\n".encode(), f"data: {KEY[9:]}\n\n".encode(), *done]
    return [chunk("Fine"), *done]


def hostile_app() -> Starlette:
    async def chat(request: Request) -> Response:
        body = await request.json()
        model = body.get("model")
        if model == "echo-401-escaped":
            sent = request.headers.get("authorization", "").removeprefix("Bearer ")
            text = (
                '{"error": {"message": "Incorrect API key provided: '
                + slash_escaped(sent)
                + " (also "
                + u_escaped(sent)
                + ')", "type": "invalid_request_error"}}'
            )
            return Response(text, status_code=401, media_type="application/json")

        async def stream() -> AsyncIterator[bytes]:
            for piece in events_for(model):
                yield piece
                await asyncio.sleep(0.002)

        return StreamingResponse(stream(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


@pytest.fixture(scope="module")
def hostile():
    with serve_in_thread(hostile_app()) as base:
        yield base + "/v1"


def decoded_views(text: str) -> list[str]:
    """`text` as written, and with JSON escapes undone once and twice."""

    def undo(t: str) -> str:
        t = re.sub(r"\\+u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), t)
        return re.sub(r"\\+/", "/", t)

    return [text, undo(text), undo(undo(text))]


def assert_no_key(text: str, where: str) -> None:
    for view in decoded_views(text):
        assert KEY not in view, f"the key is in {where}"
        assert KEY[20:] not in view, f"a long part of the key is in {where}"


def screen_text(svg: str) -> str:
    """The characters of a Textual SVG screenshot, spaces restored."""
    text = re.sub(r"<[^>]+>", "", svg)
    return html.unescape(text).replace("\xa0", " ")


def artifacts(folder: Path) -> str:
    return "\n".join(
        p.read_text(encoding="utf-8", errors="replace") for p in sorted(folder.rglob("*"))
    )


# --- the scrubber on its own ---------------------------------------------------------------


@pytest.mark.parametrize(
    "echo",
    [
        KEY,
        slash_escaped(KEY),
        u_escaped(KEY),
        json.dumps(json.dumps({"k": u_escaped(KEY)})),  # escaped twice
        u_escaped(KEY[:10]) + KEY[10:],  # mixed
        "%73%6B" + KEY[2:],  # percent-encoded start
        KEY.upper().lower() and KEY[:30],  # a long part of it
    ],
)
def test_the_scrubber_finds_the_key_in_any_encoding(echo):
    scrubbed = KeyScrubber(KEY)(f"before {echo} after")
    assert REDACTED in scrubbed and scrubbed.startswith("before ")
    assert_no_key(scrubbed, "the scrubbed text")


def test_the_scrubber_leaves_ordinary_text_and_short_keys_alone():
    text = 'plain "sk-proj-" docs \\u00e9 100% sure'
    assert KeyScrubber(KEY)(text) == text
    assert KeyScrubber("abc")("abc") == "abc"  # too short to scrub without harm


def test_pieces_lose_a_key_that_runs_across_them():
    pieces = ["a " + KEY[:5], KEY[5:30], KEY[30:] + " b"]
    out = KeyScrubber(KEY).scrub_pieces(pieces)
    assert out == ["a " + REDACTED, "", " b"]
    one_by_one = KeyScrubber(KEY).scrub_pieces(["x", *KEY, "y"])
    assert "".join(one_by_one) == "x" + REDACTED + "y"


def test_a_stream_guard_never_shows_the_key_one_piece_at_a_time():
    guard = KeyStreamGuard(KeyScrubber(KEY))
    shown = [guard.feed(ch) for ch in "Key: " + KEY + " end"] + [guard.flush()]
    assert "".join(shown) == "Key: sk" + REDACTED + " end"
    for i in range(len(shown)):  # at no moment is more than the public "sk" on screen
        assert_no_key("".join(shown[:i]), "the screen so far")
        assert KEY[:3] not in "".join(shown[:i])
    ordinary = KeyStreamGuard(KeyScrubber(KEY))
    pieces = ["I like task-", "based work", " with sk-", "learn"]
    shown = [ordinary.feed(p) for p in pieces] + [ordinary.flush()]
    assert "".join(shown) == "".join(pieces)  # nothing lost, at most held for a piece
    assert shown[0] == "I like ta" and shown[1] == "sk-based work"
    tail = KeyStreamGuard(KeyScrubber(KEY))
    shown = [tail.feed(p) for p in ["Hi ", KEY[:30]]] + [tail.flush()]
    assert "".join(shown) == "Hi " + REDACTED  # a long part held to the end is still redacted


# --- uxlab record over real HTTP -----------------------------------------------------------


@pytest.mark.parametrize(
    "model", ["echo-401-escaped", "echo-midstream", "echo-split", "echo-trickle", "echo-split-raw"]
)
def test_record_writes_the_key_nowhere(hostile, tmp_path, capsys, monkeypatch, model):
    monkeypatch.setenv(ENV, KEY)
    out = tmp_path / "out"
    argv = ["record", "--api", "openai", "--url", hostile, "--api-key-env", ENV]
    main([*argv, "--model", model, "--prompt", "hi", "-o", str(out)])
    captured = capsys.readouterr()
    assert_no_key(captured.out + captured.err, "stdout/stderr")
    assert_no_key(artifacts(out), "the replay or the sidecar")
    for replay in out.glob("*.jsonl"):
        rec = read_replay(replay, allow_truncated=True)
        assert_no_key(rec.text, "the joined chunk texts")
        assert_no_key(json.dumps([e.__dict__ for e in rec.events], default=str), "events")
    if model in ("echo-split", "echo-trickle"):
        text = read_replay(next(out.glob("*.jsonl"))).text
        assert REDACTED in text and text.endswith((".", " end"))  # the rest is kept
        sidecar = next(out.glob("*.sse"))  # and the sidecar re-imports to the same text
        again = tmp_path / "i"
        assert main(["import", "--from", "openai-sse", str(sidecar), "-o", str(again)]) == 0
        assert read_replay(next(again.glob("*.jsonl"))).text == text
    if model == "echo-401-escaped":
        assert "HTTP 401" in captured.err + captured.out


# --- a live study: the screen, the store and the export ------------------------------------

LIVE_STUDY = """
[study]
id = "live-secret"
title = "Live secret"
seed = 3

[texts]
consent = "Agree?"
instructions = "Send, watch, answer."

[stimuli]
live = {{ api = "openai", url = "{url}", model = "{model}", api_key_env = "{env}", \
prompts = ["x"] }}

[profile]
itl = "constant:5"

[factors]
ttft_ms = [50]

[design]
repeats = 1
order = "fixed"

[[questions]]
id = "acceptable"
type = "yesno"
text = "Acceptable?"

[abandon]
timeout_s = 20
"""


async def run_live_session(tmp_path: Path, study_path: Path) -> tuple[Path, list[str]]:
    """Run the one-trial study through the real app; the screens seen during the trial."""
    study = load_study(study_path)
    db = tmp_path / "results.sqlite"
    app = StudyApp(study, Store.open(db), participant="P-SECRET")
    screens: list[str] = []
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ConsentScreen))
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, InstructionsScreen))
        await pilot.press("enter")
        while not isinstance(app.screen, EndScreen):
            await wait_for(
                pilot, lambda: isinstance(app.screen, (TrialScreen, TextScreen, EndScreen))
            )
            screen = app.screen
            if isinstance(screen, TextScreen):
                await pilot.press("enter")
                await wait_for(pilot, lambda s=screen: app.screen is not s)
                continue
            if not isinstance(screen, TrialScreen):
                break
            run = screen.run
            await pilot.press("enter")
            await wait_for(pilot, lambda r=run: r.phase in ("over", "answered"))
            await pilot.pause()
            screens.append(app.export_screenshot())
            await wait_for(pilot, lambda: asking(app))
            screens.append(app.export_screenshot())
            await pilot.press("y", "enter")
            await wait_for(pilot, lambda s=screen: app.screen is not s)
        await pilot.press("enter")
    return db, screens


@pytest.mark.parametrize(
    "model", ["echo-401-escaped", "echo-midstream", "echo-split", "echo-trickle"]
)
async def test_a_live_study_never_shows_or_stores_the_key(hostile, tmp_path, monkeypatch, model):
    monkeypatch.setenv(ENV, KEY)
    path = tmp_path / "live.toml"
    path.write_text(LIVE_STUDY.format(url=hostile, model=model, env=ENV), encoding="utf-8")
    db, screens = await run_live_session(tmp_path, path)
    assert screens
    for shot in screens:
        assert_no_key(screen_text(shot), "the participant's screen")
    if model == "echo-trickle":  # one character per event: held back, never on screen
        assert any("Key: sk" + REDACTED + " end" in screen_text(shot) for shot in screens)
    if model in ("echo-401-escaped", "echo-midstream"):  # shown, in neutral words
        assert any("model service" in screen_text(shot) for shot in screens)
        shown = "".join(screen_text(shot) for shot in screens)
        assert "Incorrect API key" not in shown and "bad_key" not in shown
    assert_no_key(db.read_bytes().decode("utf-8", errors="replace"), "the database")
    out = tmp_path / "export"
    assert main(["export", str(db), "-o", str(out)]) == 0
    assert_no_key(artifacts(out), "the export")
