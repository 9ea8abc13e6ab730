"""The browser host's parts, without a browser: paint marks taken out of the byte stream, the
page-to-host clock mapping, open-enrolment ids, the browser family, the display warning,
the report's flag rule, and the WebSocket's refusal of a wrong code (real HTTP over an
in-process ASGI client; no program is started)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from starlette.testclient import TestClient

from analysis.report.browser_part import PAINT_SLACK_MS, browser_paint_table
from uxlab.environment import display_warning
from uxlab.host.enrolment import (
    enrolled_participant,
    valid_platform_id,
)
from uxlab.host.limits import FailureLimiter
from uxlab.host.web_app import identify_participant, make_app
from uxlab.host.web_server import ClockMapping, Enrolment, WebHostContext, browser_family
from uxlab.paint_marks import MarkRewriter, PaintMark
from uxlab.store import check_participant_id

MARK = PaintMark("S-1a2b", 3, 5, 7, 1000.5, 1020.25)


def test_a_mark_round_trips_and_malformed_payloads_are_refused():
    payload = MARK.encode().encode()[len("\x1b]7311;") : -1]
    assert PaintMark.decode(payload) == MARK
    for bad in (b"", b"a,b", b"S,1,5,4,0,0", b"S,1,-1,2,0,0", b",1,1,1,0,0", b"\xff,1,1,1,0,0"):
        assert PaintMark.decode(bad) is None


@pytest.mark.parametrize("cut", range(0, 60, 3))
def test_marks_split_anywhere_are_numbered_and_the_rest_passes_unchanged(cut):
    mark = MARK.encode().encode()
    stream = b"\x1b[2Jhello" + mark + b"world\x1b]0;title\x07" + mark
    rewriter = MarkRewriter()
    out1, found1 = rewriter.feed(stream[:cut])
    out2, found2 = rewriter.feed(stream[cut:])
    assert out1 + out2 == b"\x1b[2Jhello\x1b]7311;0\x07world\x1b]0;title\x07\x1b]7311;1\x07"
    assert [(n, m) for n, m in found1 + found2] == [(0, MARK), (1, MARK)]


def test_a_malformed_mark_is_dropped_and_an_endless_one_passes_through():
    rewriter = MarkRewriter()
    out, found = rewriter.feed(b"a\x1b]7311;junk\x07b")
    assert (out, found) == (b"ab", [])
    endless = b"\x1b]7311;" + b"x" * (MarkRewriter.MAX_HELD + 10)
    out, found = rewriter.feed(endless)
    assert out == endless and found == []


def test_the_clock_mapping_takes_the_fastest_recent_exchange():
    clock = ClockMapping()
    assert clock.best() is None
    clock.add(sent_ms=100.0, page_ms=5.0, received_ms=110.0)  # rtt 10: offset 100 +- 5
    clock.add(sent_ms=200.0, page_ms=103.0, received_ms=202.0)  # rtt 2: offset 98 +- 1
    clock.add(sent_ms=300.0, page_ms=150.0, received_ms=299.0)  # negative rtt: ignored
    assert clock.best() == (98.0, 1.0)
    for i in range(20):  # the fast exchange leaves the window; a slower recent one is used
        clock.add(sent_ms=1000.0 + i, page_ms=900.0 + i, received_ms=1004.0 + i)
    assert clock.best() == (102.0, 2.0)


def test_enrolled_ids_are_salted_hashes_that_resume_and_never_hold_the_platform_id(tmp_path):
    salt = b"s" * 32
    pid = "5f3c0a1b2c3d4e5f6a7b8c9d"
    participant = enrolled_participant(salt, pid)
    assert participant == enrolled_participant(salt, pid)  # reopening the link resumes
    assert participant != enrolled_participant(b"another salt", pid)
    assert pid not in participant and check_participant_id(participant) == participant
    assert valid_platform_id(pid)
    assert not valid_platform_id("a b") and not valid_platform_id("x" * 129)


def test_the_browser_family_is_all_that_is_kept_of_the_user_agent():
    chrome = (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/120.0.0.0 Safari/537.36"
    )
    assert browser_family(chrome) == "Chrome"
    assert browser_family(chrome + " Edg/120.0") == "Edge"
    assert browser_family("Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Firefox/120.0") == "Firefox"
    assert browser_family(chrome.replace("Chrome/", "HeadlessChrome/")) == "Chromium (headless)"
    assert browser_family("Mozilla/5.0 (Macintosh) Version/17.1 Safari/605.1.15") == "Safari"
    assert browser_family("") == "other"


def test_a_display_slower_than_the_shortest_gap_is_warned():
    assert display_warning(60.0, 10.0) is not None and "16.7 ms" in display_warning(60.0, 10.0)
    assert display_warning(240.0, 10.0) is None
    assert display_warning(None, 10.0) is None and display_warning(60.0, None) is None


def test_the_report_flags_browser_sessions_by_the_stated_rule():
    def trials(session, hz, keeps, painted_p99):
        return [
            {
                "participant": session,
                "session_id": session,
                "browser": "Chrome",
                "display_hz": hz,
                "display_keeps_gaps": keeps,
                "late_handed_p99_ms": 1.0,
                "late_shown_p99_ms": 3.0,
                "late_painted_p99_ms": p,
                "paint_clock_uncertainty_ms": 0.4,
            }
            for p in painted_p99
        ]

    refresh = 1000.0 / 60.0
    table = browser_paint_table(
        pd.DataFrame(
            trials("ok", 60.0, 1, [refresh, refresh + PAINT_SLACK_MS - 1, 90.0])
            + trials("late", 60.0, 1, [refresh + PAINT_SLACK_MS + 1] * 3)
            + trials("slow", 30.0, 0, [10.0])
            + [{"participant": "terminal", "session_id": "terminal", "late_shown_p99_ms": 2.0}]
        )
    )
    flags = dict(zip(table["session_id"], table["flagged"], strict=True))
    assert flags["ok"] == "no"  # the median trial is within one refresh + slack
    assert "beyond one refresh" in flags["late"]
    assert "display slower" in flags["slow"]
    assert "terminal" not in flags  # a terminal session has no painted times
    assert table.set_index("session_id").loc["ok", "p99 painted, worst trial (ms)"] == 90.0


def _ctx(tmp_path, lines, enrolment=None):
    return WebHostContext(
        study_path=tmp_path / "s.toml",
        study_id="tiny",
        db=tmp_path / "s.sqlite",
        lookup=lambda code: "P-AAAAA" if code == "good-code" else None,
        fps=240,
        enrolment=enrolment,
        limiter=FailureLimiter(delay_s=0.0),
        log=lines.append,
        close_tail_s=0.0,
    )


def test_identify_takes_a_code_or_an_enrolment_id_and_nothing_else(tmp_path):
    ctx = _ctx(tmp_path, [], Enrolment("PROLIFIC_PID", b"salt"))
    assert identify_participant(ctx, {"code": "good-code"}) == "P-AAAAA"
    assert identify_participant(ctx, {"code": "bad-code", "query": "?PROLIFIC_PID=abc"}) is None
    assert identify_participant(
        ctx, {"code": "", "query": "?PROLIFIC_PID=abc"}
    ) == enrolled_participant(b"salt", "abc")
    assert identify_participant(ctx, {"query": "?PROLIFIC_PID=a&PROLIFIC_PID=b"}) is None
    assert identify_participant(ctx, {"query": "?OTHER=abc"}) is None
    assert (
        identify_participant(_ctx(tmp_path, []), {"query": "?PROLIFIC_PID=abc"}) is None
    )  # no enrolment


def test_a_wrong_code_is_refused_counted_and_never_logged(tmp_path):
    lines: list[str] = []
    ctx = _ctx(tmp_path, lines)
    client = TestClient(make_app(ctx))
    page = client.get("/")
    assert page.status_code == 200 and "xterm.js" in page.text
    assert page.headers["x-frame-options"] == "DENY" and page.headers["cache-control"] == "no-store"
    assert client.get("/static/client.js").status_code == 200
    for guess in ("not-a-code-1", "not-a-code-2"):
        with client.websocket_connect("/ws") as ws:
            ws.send_text(json.dumps({"t": "hello", "code": guess, "cols": 80, "rows": 24}))
            reply = json.loads(ws.receive_text())
        assert reply["t"] == "refused"
    assert ctx.limiter.recent_failures() == 2
    assert lines == ["refused an unknown link (waiting 0 s)"] * 2
    assert ctx.running == {}


class Open:
    """An open participant's program, as far as the host's capacity looks at it."""

    def __init__(self, participant: str, clock, last_input_s: float) -> None:
        self.participant, self.clock, self.last_input_s = participant, clock, last_input_s
        self.hung_up = False

    def idle_s(self) -> float:
        return self.clock() - self.last_input_s

    async def idle_hang_up(self) -> None:
        self.hung_up = True


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_one_participant_more_than_max_open_is_asked_to_come_back(tmp_path):
    lines: list[str] = []
    ctx = _ctx(tmp_path, lines)
    ctx.max_open = 1
    ctx.running["P-OTHER"] = Open("P-OTHER", ctx.clock, ctx.clock())  # active just now
    with TestClient(make_app(ctx)).websocket_connect("/ws") as ws:
        ws.send_text(json.dumps({"t": "hello", "code": "good-code"}))
        reply = json.loads(ws.receive_text())
    assert reply["t"] == "refused" and "full" in reply["message"]
    assert ctx.limiter.recent_failures() == 0  # a valid code is not a failure
    assert lines == ["P-AAAAA: turned away, 1 sessions are in use"]


async def test_only_programs_with_recent_keys_fill_the_study_and_the_idlest_makes_room(
    tmp_path,
):
    """Open enrolment admits any made-up id: links opened and left idle count towards
    --max-open only while they have had a key recently; then the idlest is hung up (its
    session paused, the link resumes it) for a new participant. The clock is injected."""
    from uxlab.host.web_app import make_room

    lines: list[str] = []
    ctx = _ctx(tmp_path, lines)
    ctx.clock = clock = Clock()
    ctx.max_open = 2
    ctx.running = {p: Open(p, clock, clock.t) for p in ("R-INVENTED1", "R-INVENTED2")}
    assert not await make_room(ctx)  # both had a key just now: full
    clock.t += ctx.idle_after_s - 1
    ctx.running["R-INVENTED2"].last_input_s = clock.t  # one still in use
    assert not await make_room(ctx)
    clock.t += 2  # the other: idle for longer than idle_after_s
    assert await make_room(ctx)
    assert ctx.running["R-INVENTED1"].hung_up and not ctx.running["R-INVENTED2"].hung_up
    assert lines == ["R-INVENTED1: hung up after 5 min without a key, to make room (the link "
                     "resumes the session)"]  # fmt: skip


def test_a_page_of_another_origin_cannot_open_a_participants_socket(tmp_path):
    from starlette.websockets import WebSocketDisconnect

    ctx = _ctx(tmp_path, [])
    client = TestClient(make_app(ctx))
    with (
        pytest.raises(WebSocketDisconnect),
        client.websocket_connect("/ws", headers={"origin": "https://evil.example"}),
    ):
        pass
    with client.websocket_connect("/ws", headers={"origin": "http://testserver"}) as ws:
        ws.send_text(json.dumps({"t": "hello", "code": "not-a-code"}))
        assert json.loads(ws.receive_text())["t"] == "refused"  # the host's own page: answered


def test_links_naming_no_one_are_limited_per_address_and_in_all(tmp_path):
    """Connections that have not named a participant (waiting for their first message, or
    for the answer to a failed link) are limited per address and host-wide: beyond, the
    handshake itself is refused and the socket closed, so parallel guesses cannot hold the
    host's sockets (200 parallel guesses once ran it out of descriptors)."""
    from starlette.websockets import WebSocketDisconnect

    from uxlab.host.web_server import MAX_UNIDENTIFIED, MAX_UNIDENTIFIED_PER_ADDRESS

    lines: list[str] = []
    ctx = _ctx(tmp_path, lines)
    client = TestClient(make_app(ctx))
    for pending in ({"testclient": MAX_UNIDENTIFIED_PER_ADDRESS},
                    {f"10.0.0.{k}": 1 for k in range(MAX_UNIDENTIFIED)}):  # fmt: skip
        ctx.unidentified = dict(pending)  # as many as allowed are open
        with pytest.raises(WebSocketDisconnect), client.websocket_connect("/ws"):
            pass  # refused at the handshake
        assert ctx.unidentified == pending
    assert ctx.limiter.recent_failures() == 0 and lines == []  # nothing read, nothing waited
    ctx.unidentified = {"testclient": MAX_UNIDENTIFIED_PER_ADDRESS - 1}
    with client.websocket_connect("/ws") as ws:
        ws.send_text(json.dumps({"t": "hello", "code": "guess"}))
        assert json.loads(ws.receive_text())["t"] == "refused"
    assert ctx.unidentified == {"testclient": MAX_UNIDENTIFIED_PER_ADDRESS - 1}  # given back
