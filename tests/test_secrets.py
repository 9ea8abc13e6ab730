"""A key echoed back escaped, encoded or split is found nowhere: not in the replay, the `.sse`
sidecar, stdout/stderr, a live study's screen, its database or its export, nor in what
`uxlab serve --upstream` serves its client or logs.

A hostile vendor on loopback (real HTTP) echoes the key the client sent: JSON-escaped in a
401 body (`\\/`, `\\u0073...`), as HTML character references in an error page (`&#x2F;`,
every character as `&#NN;`, `&sol;`, `&amp;#x2F;`), inside a mid-stream error event, split
across two SSE events, one character per event, split across two raw (non-JSON) events,
split between a reasoning delta and a content delta, and between the content and an error
event. Long keys and a short one (a local server's) alike.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
import threading
import urllib.parse
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
from uxlab.live.key_scrub import REDACTED, ChannelGuard, KeyScrubber, KeyStreamGuard
from uxlab.store import Store
from uxlab.streams import read_replay
from uxlab.study import load_study
from uxlab.tui.flow_screens import ConsentScreen, EndScreen, InstructionsScreen, TextScreen
from uxlab.tui.study_app import StudyApp
from uxlab.tui.trial_screen import TrialScreen

KEY = "sk-proj/UNMISTAKABLE-7f3a9c-0123456789abcdef"
SHORT_KEY = "lk-local/5ec7a9"
"""A local server's key: shorter than two of the scrubber's 12-character fragments."""
ENV = "UXLAB_SECRET_TEST_KEY"


def html_refs(text: str, every: bool = False) -> str:
    """`text` as an HTML error page writes it: `/` as `&#x2F;`, or every character `&#NN;`."""
    if every:
        return "".join(f"&#{ord(ch)};" for ch in text)
    return text.replace("/", "&#x2F;")


def split_events(key: str, second: str) -> list[bytes]:
    """The key's first half as reasoning, its second as `second`: content or an error."""
    half = len(key) // 2
    first = {"choices": [{"index": 0, "delta": {"reasoning_content": "Using " + key[:half]}}]}
    if second == "content":
        rest = {"choices": [{"index": 0, "delta": {"content": key[half:] + " ok"}}]}
        return [
            f"data: {json.dumps(first)}\n\n".encode(),
            f"data: {json.dumps(rest)}\n\n".encode(),
            chunk("", "stop"),
            b"data: [DONE]\n\n",
        ]
    content = chunk("Your key: " + key[:half])
    error = {"error": {"type": "bad_key", "message": key[half:] + " is not valid"}}
    return [content, f"data: {json.dumps(error)}\n\n".encode()]


def u_escaped(text: str) -> str:
    return "".join(f"\\u{ord(ch):04x}" for ch in text)


def slash_escaped(text: str) -> str:
    return json.dumps(text)[1:-1].replace("/", "\\/")


def chunk(text: str, finish: str | None = None) -> bytes:
    obj = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}
    return f"data: {json.dumps(obj)}\n\n".encode()


def events_for(model: str, key: str = KEY) -> list[bytes]:
    done = [chunk("", "stop"), b"data: [DONE]\n\n"]
    if model == "echo-split-channels":
        return split_events(key, "content")
    if model == "echo-split-error":
        return split_events(key, "error")
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
        if model in ("echo-401-html", "echo-401-named"):
            sent = request.headers.get("authorization", "").removeprefix("Bearer ")
            if model == "echo-401-html":
                shown = html_refs(sent) + " (" + html_refs(sent, every=True) + ")"
            else:
                shown = sent.replace("/", "&sol;") + " (" + sent.replace("/", "&amp;#x2F;") + ")"
            page = f"<html><body><h1>401</h1><p>Invalid key {shown}</p></body></html>"
            return Response(page, status_code=401, media_type="text/html")
        sent = request.headers.get("authorization", "").removeprefix("Bearer ")

        async def stream() -> AsyncIterator[bytes]:
            for piece in events_for(model, sent or KEY):
                yield piece
                await asyncio.sleep(0.002)

        return StreamingResponse(stream(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


@pytest.fixture(scope="module")
def hostile():
    with serve_in_thread(hostile_app()) as base:
        yield base + "/v1"


def decoded_views(text: str) -> list[str]:
    """`text` as written, and with JSON, URL and HTML escapes undone once and twice."""

    def undo(t: str) -> str:
        t = re.sub(r"\\+u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), t)
        t = re.sub(r"\\+/", "/", t)
        return html.unescape(urllib.parse.unquote(t))

    return [text, undo(text), undo(undo(text))]


def assert_no_key(text: str, where: str, key: str = KEY) -> None:
    half = len(key) // 2
    for view in decoded_views(text):
        assert key not in view, f"the key is in {where}"
        assert key[half:] not in view, f"the second half of the key is in {where}"
        assert key[:half] not in view, f"the first half of the key is in {where}"


def screen_text(svg: str) -> str:
    """The characters of a Textual SVG screenshot, spaces restored."""
    text = re.sub(r"<[^>]+>", "", svg)
    return html.unescape(text).replace("\xa0", " ")


def artifacts(folder: Path) -> str:
    return "\n".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(folder.rglob("*"))
        if p.is_file()
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
        KEY.replace("/", "%252F"),  # percent-encoded twice
        KEY.upper().lower() and KEY[:30],  # a long part of it
        html_refs(KEY),  # an HTML error page's &#x2F;
        html_refs(KEY, every=True),  # every character as &#NN;
        "".join(f"&#x{ord(ch):X}" for ch in KEY),  # hex, upper case, no semicolons
        KEY.replace("/", "&sol;"),  # a named reference
        KEY.replace("/", "&amp;#x2F;"),  # escaped twice
    ],
)
def test_the_scrubber_finds_the_key_in_any_encoding(echo):
    scrubbed = KeyScrubber(KEY)(f"before {echo} after")
    assert REDACTED in scrubbed and scrubbed.startswith("before ")
    assert_no_key(scrubbed, "the scrubbed text")


def test_the_scrubber_leaves_ordinary_text_and_short_keys_alone():
    text = 'plain "sk-proj-" docs \\u00e9 100% sure &amp; &#x2F; &sol; <b>'
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


def test_one_guard_keeps_a_key_split_across_channels_off_the_screen():
    """A short key begun in the reasoning and ended in the content (or in an error, never
    shown) is never on screen, nor is either half."""
    guard = ChannelGuard(KeyScrubber(SHORT_KEY))
    half = len(SHORT_KEY) // 2
    shown = guard.feed("reasoning", "Using " + SHORT_KEY[:half])
    shown += guard.feed("content", SHORT_KEY[half:] + " ok") + guard.flush()
    assert shown == [("reasoning", "Using "), ("reasoning", REDACTED), ("content", " ok")]
    guard = ChannelGuard(KeyScrubber(SHORT_KEY))
    shown = guard.feed("content", "Your key: " + SHORT_KEY[:half])
    shown += guard.feed(None, SHORT_KEY[half:] + " is not valid") + guard.flush()
    on_screen = [p for p in shown if p[0] is not None]
    assert on_screen == [("content", "Your key: "), ("content", REDACTED)]


RECORD_MODELS = [
    "echo-401-escaped", "echo-401-html", "echo-401-named", "echo-midstream", "echo-split",
    "echo-trickle", "echo-split-raw", "echo-split-channels", "echo-split-error",
]  # fmt: skip
ECHO_THE_LONG_KEY = ("echo-midstream", "echo-split", "echo-trickle", "echo-split-raw")
"""Models that echo the long test key itself, whatever key was sent."""


@pytest.mark.parametrize(
    ("model", "key"),
    [(m, KEY) for m in RECORD_MODELS]
    + [(m, SHORT_KEY) for m in RECORD_MODELS if m not in ECHO_THE_LONG_KEY],  # echo the sent key
    ids=[f"{m}-long-key" for m in RECORD_MODELS]
    + [f"{m}-short-key" for m in RECORD_MODELS if m not in ECHO_THE_LONG_KEY],
)
def test_record_writes_the_key_nowhere(hostile, tmp_path, capsys, monkeypatch, model, key):
    monkeypatch.setenv(ENV, key)
    out = tmp_path / "out"
    argv = ["record", "--api", "openai", "--url", hostile, "--api-key-env", ENV]
    main([*argv, "--model", model, "--prompt", "hi", "-o", str(out)])
    captured = capsys.readouterr()
    assert_no_key(captured.out + captured.err, "stdout/stderr", key)
    assert_no_key(artifacts(out), "the replay or the sidecar", key)
    for replay in out.glob("*.jsonl"):
        rec = read_replay(replay, allow_truncated=True)
        assert_no_key(rec.text, "the joined chunk texts", key)
        events = json.dumps([e.__dict__ for e in rec.events], default=str)
        assert_no_key(events, "events", key)
        assert_no_key("".join(c.text for c in rec.chunks), "every channel's text joined", key)
    if model == "echo-split-channels":
        rec = read_replay(next(out.glob("*.jsonl")))
        assert rec.text.endswith(" ok")  # the rest is kept
    if model in ("echo-401-html", "echo-401-named"):
        assert "HTTP 401" in captured.err + captured.out and REDACTED in artifacts(out)
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


LIVE_CASES = [
    *((m, KEY) for m in ("echo-401-escaped", "echo-401-html", "echo-midstream", "echo-split",
                         "echo-trickle", "echo-split-channels")),
    *((m, SHORT_KEY) for m in ("echo-401-html", "echo-401-named", "echo-split-channels",
                               "echo-split-error")),
]  # fmt: skip


@pytest.mark.parametrize(("model", "key"), LIVE_CASES)
async def test_a_live_study_never_shows_or_stores_the_key(
    hostile, tmp_path, monkeypatch, model, key
):
    monkeypatch.setenv(ENV, key)
    path = tmp_path / "live.toml"
    path.write_text(LIVE_STUDY.format(url=hostile, model=model, env=ENV), encoding="utf-8")
    db, screens = await run_live_session(tmp_path, path)
    assert screens
    for shot in screens:
        assert_no_key(screen_text(shot), "the participant's screen", key)
    if model == "echo-trickle":  # one character per event: held back, never on screen
        assert any("Key: sk" + REDACTED + " end" in screen_text(shot) for shot in screens)
    if model in ("echo-401-escaped", "echo-midstream"):  # shown, in neutral words
        assert any("model service" in screen_text(shot) for shot in screens)
        shown = "".join(screen_text(shot) for shot in screens)
        assert "Incorrect API key" not in shown and "bad_key" not in shown
    assert_no_key(db.read_bytes().decode("utf-8", errors="replace"), "the database", key)
    out = tmp_path / "export"
    assert main(["export", str(db), "-o", str(out)]) == 0
    assert_no_key(artifacts(out), "the export", key)
    if model.startswith("echo-401"):  # the recorder's message is kept, scrubbed
        (message,) = [r for r in artifacts(out).splitlines() if "live_request" in r]
        assert "HTTP 401" in message


# --- uxlab serve --upstream: what its client gets, what it logs and records ------------------

UPSTREAM_CASES = [
    ("echo-401-html", KEY),
    ("echo-401-html", SHORT_KEY),
    ("echo-401-named", SHORT_KEY),
    ("echo-split-channels", SHORT_KEY),
    ("echo-split-error", SHORT_KEY),
    ("echo-split-channels", KEY),
]


@pytest.mark.parametrize(("model", "key"), UPSTREAM_CASES)
def test_serve_upstream_passes_no_key_to_its_client_log_or_record(
    hostile, tmp_path, capsys, model, key
):
    """The client's own key goes upstream (no key in the environment); the hostile upstream
    echoes it; the served answer (stream or error), serve's exchange line and the recorded
    exchange hold neither the key nor a part of it."""
    import httpx

    from uxlab.live.serve import ServeConfig, build_app
    from uxlab.live.serve_run import log_exchange
    from uxlab.live.upstream import UpstreamConfig, UpstreamProxy
    from uxlab.shaping import Profile

    profile = Profile.from_table({"ttft": "5", "itl": "constant:1"})
    done = threading.Event()

    def logged_and_done(exchange) -> None:
        log_exchange(exchange)  # what `uxlab serve` prints for each exchange
        done.set()

    config = UpstreamConfig(
        url=hostile, profile=profile, record_dir=tmp_path / "rec",
        key_env="UXLAB_TEST_UNSET_KEY", on_done=logged_and_done,
    )  # fmt: skip
    proxy = UpstreamProxy(config)
    app = build_app(ServeConfig([], shape=lambda r, s: r, upstream=proxy))
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    with serve_in_thread(app) as base:
        response = httpx.post(
            base + "/v1/chat/completions",
            json=body,
            headers={"authorization": f"Bearer {key}"},
            timeout=30,
        )
        served = response.text
        assert done.wait(60), "the exchange never finished"
    assert_no_key(served, "the served answer", key)
    logged = capsys.readouterr()
    assert "request 0 done" in logged.err
    assert_no_key(logged.out + logged.err, "serve's log", key)
    assert_no_key(artifacts(tmp_path / "rec"), "the recorded exchange", key)
    if model == "echo-split-channels":
        assert " ok" in served and response.status_code == 200
    if model.startswith("echo-401"):
        assert response.status_code == 401
