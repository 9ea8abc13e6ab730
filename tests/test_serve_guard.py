"""`uxlab serve` against hostile and careless peers, over real loopback HTTP: malformed
bodies are 400s, big bodies 413s, foreign Host names and web-page origins are refused, slow
request heads are cut off, and connections beyond the cap get 503 while the server stays up."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
import uvicorn

from uxlab.live.serve import ServeConfig, build_app
from uxlab.live.serve_guard import GuardSettings, host_name
from uxlab.live.serve_run import listen_socket, uvicorn_config
from uxlab.shaping import Profile, shape
from uxlab.streams import Chunk, End, Header, Recording, write_replay

PROFILE = Profile.from_table({"ttft": "constant:5", "itl": "constant:1"})
OK_BODY = {"model": "m", "messages": [{"role": "user", "content": "x"}]}


def story() -> Recording:
    words = ["Once", " upon", " a", " time"]
    return Recording(
        Header(id="story", source={"kind": "synthetic", "model": "rec-model"}),
        events=[Chunk(10.0 + i, w, "content", n_tokens=1) for i, w in enumerate(words)],
        end=End(20.0, "stop", None),
    )


def make_config(**guard) -> ServeConfig:
    config = ServeConfig([story()], lambda r, s: shape(r, PROFILE, seed=s))
    if guard:
        config.guard = GuardSettings(**guard)
    return config


@contextmanager
def serving(
    config: ServeConfig,
    max_connections: int = 64,
    header_timeout_s: float = 10.0,
    max_slow_per_client: int = 16,
) -> Iterator[str]:
    """The app with `uxlab serve`'s own uvicorn settings, on a free loopback port."""
    sock = listen_socket("127.0.0.1", 0)
    sock.listen(128)
    port = sock.getsockname()[1]
    settings = uvicorn_config(
        build_app(config), max_connections, header_timeout_s, max_slow_per_client
    )
    server = uvicorn.Server(settings)
    server.config.log_level = "critical"
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(scope="module")
def base():
    config = make_config(max_body_bytes=64 * 1024)
    with serving(config) as url:
        yield url, config


MALFORMED = [
    b"",
    b"{nope",
    b"\xff\xfe not utf-8",
    b"[" * 20_000 + b"]" * 20_000,  # nested past the decoder's recursion limit
    b'{"messages": [], "max_tokens": ' + b"9" * 5000 + b"}",  # an int too long to convert
    b"[1, 2]",
    b'"text"',
    b'{"messages": "hi"}',
    b'{"messages": [1, 2]}',
    b'{"messages": [{"content": "no role"}]}',
    b'{"messages": [{"role": "user", "content": 5}]}',
    b'{"messages": [{"role": "user", "content": [1]}]}',
    b'{"messages": [{"role": "user", "content": [{"type": "text", "text": 7}]}]}',
    b'{"messages": [{"role": "user", "content": "x"}], "stream": "yes"}',
    b'{"messages": [{"role": "user", "content": "x"}], "stream": true, "stream_options": []}',
    b'{"messages": [{"role": "user", "content": "x"}], "model": {"a": 1}}',
    b'{"messages": [{"role": "user", "content": "x"}], "max_tokens": -1}',
    b'{"messages": [{"role": "user", "content": "x"}], "n": "two"}',
    b'{"messages": [{"role": "user", "content": "x"}], "system": 3}',
]


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages"])
def test_every_malformed_body_is_a_400_and_nothing_is_served(base, path):
    url, config = base
    before = len(config.served)
    for raw in MALFORMED:
        r = httpx.post(url + path, content=raw, headers={"content-type": "application/json"})
        if path == "/v1/chat/completions" and raw.endswith(b'"system": 3}'):
            assert r.status_code == 200  # OpenAI Chat has no `system` field: ignored
            continue
        assert r.status_code == 400, (raw[:60], r.status_code, r.text[:200])
        assert r.json()["error"]["type"] == "invalid_request_error"
    assert len(config.served) == before + (path == "/v1/chat/completions")


def test_a_body_over_the_limit_is_a_413_by_length_and_by_stream(base):
    url, _ = base
    big = json.dumps({**OK_BODY, "pad": "x" * 100_000}).encode()
    r = httpx.post(url + "/v1/chat/completions", content=big)
    assert r.status_code == 413 and "65,536 bytes" in r.json()["error"]["message"]

    def chunked() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        for _ in range(100):
            yield b" " * 4096

    r = httpx.post(url + "/v1/chat/completions", content=chunked())
    assert r.status_code == 413
    ok = httpx.post(url + "/v1/chat/completions", json=OK_BODY)  # and the server is fine
    assert ok.status_code == 200


def test_a_foreign_host_name_is_refused_and_loopback_names_pass(base):
    url, config = base
    before = len(config.served)
    r = httpx.post(url + "/v1/chat/completions", json=OK_BODY, headers={"host": "evil.example"})
    assert r.status_code == 421 and "--allow-host" in r.json()["error"]["message"]
    assert len(config.served) == before  # the rebinding page advanced nothing
    for host in ("localhost:8000", "127.0.0.1", "[::1]:8000"):
        r = httpx.post(url + "/v1/chat/completions", json=OK_BODY, headers={"host": host})
        assert r.status_code == 200, host
    assert host_name("LocalHost:80") == "localhost" and host_name("[::1]") == "[::1]"


def test_a_simple_cross_origin_post_from_a_web_page_is_refused(base):
    """text/plain needs no preflight, so a browser sends it from any page: refused by Origin."""
    url, config = base
    before = len(config.served)
    r = httpx.post(
        url + "/v1/chat/completions",
        content=json.dumps(OK_BODY).encode(),
        headers={"content-type": "text/plain", "origin": "http://evil.example"},
    )
    assert r.status_code == 403 and "--cors" in r.json()["error"]["message"]
    assert len(config.served) == before
    allowed = make_config(max_body_bytes=64 * 1024)
    allowed.cors_origins = ["http://localhost:3000"]
    with serving(allowed) as other:
        r = httpx.post(
            other + "/v1/chat/completions",
            json=OK_BODY,
            headers={"origin": "http://localhost:3000"},
        )
        assert r.status_code == 200


def recv_until_closed(sock: socket.socket, deadline_s: float = 30.0) -> bytes:
    """Read until the server closes the connection (a generous deadline turns a hang into
    a failure; nothing is asserted about how long it took)."""
    sock.settimeout(deadline_s)
    data = b""
    while True:
        piece = sock.recv(4096)
        if not piece:
            return data
        data += piece


def test_a_slow_request_head_is_cut_off_and_others_are_served_meanwhile():
    with serving(make_config(), header_timeout_s=0.3) as url:
        port = int(url.rsplit(":", 1)[1])
        slow = socket.create_connection(("127.0.0.1", port))
        slow.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # no end
        idle = socket.create_connection(("127.0.0.1", port))  # sends nothing at all
        assert httpx.post(url + "/v1/chat/completions", json=OK_BODY).status_code == 200
        assert recv_until_closed(slow) == b""  # closed by the server, no answer
        assert recv_until_closed(idle) == b""
        slow.close()
        idle.close()
        assert httpx.post(url + "/v1/chat/completions", json=OK_BODY).status_code == 200


def test_connections_beyond_the_cap_get_503_and_the_server_stays_up():
    with serving(make_config(), max_connections=3) as url:
        port = int(url.rsplit(":", 1)[1])
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        for s in held:  # each sends a request head, so it is counted before ours
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        statuses = set()
        for _ in range(3):  # a new connection each: the held ones fill the cap
            with httpx.Client() as client:
                statuses.add(client.post(url + "/v1/chat/completions", json=OK_BODY).status_code)
        assert statuses == {503}
        for s in held:
            s.close()
        deadline = time.monotonic() + 30
        while httpx.post(url + "/v1/chat/completions", json=OK_BODY).status_code != 200:
            assert time.monotonic() < deadline, "still refusing after the slots were freed"
            time.sleep(0.05)


def test_the_serve_command_applies_its_limits(tmp_path):
    write_replay(story(), tmp_path)
    cmd = [sys.executable, "-m", "uxlab", "serve", str(tmp_path), "--port", "0"]
    cmd += ["--ttft", "5", "--itl", "constant:1", "--max-body-mb", "0.01", "--quiet"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        banner = proc.stderr.readline()
        base = re.search(r"(http://127\.0\.0\.1:\d+)/v1", banner).group(1)
        big = {**OK_BODY, "pad": "x" * 20_000}
        assert httpx.post(base + "/v1/chat/completions", json=big).status_code == 413
        r = httpx.post(base + "/v1/chat/completions", json=OK_BODY, headers={"host": "a.example"})
        assert r.status_code == 421
        assert httpx.post(base + "/v1/chat/completions", json=OK_BODY).status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_body_that_stops_arriving_gets_408_and_nothing_is_served():
    config = make_config(body_timeout_s=0.3)
    with serving(config) as url:
        port = int(url.rsplit(":", 1)[1])
        slow = socket.create_connection(("127.0.0.1", port))
        slow.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"model"'
        )
        answer = recv_until_closed(slow)
        slow.close()
        assert answer.startswith(b"HTTP/1.1 408")
        assert not config.served
        assert httpx.post(url + "/v1/chat/completions", json=OK_BODY).status_code == 200


def slow_body(port: int) -> socket.socket:
    """A connection that sends a whole request head, then its body one byte at a time
    (here: one byte, then nothing), as a client trickling its body does."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
    )
    return s


def still_open(s: socket.socket) -> bool:
    """Neither closed nor answered by the server (peeked: nothing is consumed)."""
    s.setblocking(False)
    try:
        s.recv(1, socket.MSG_PEEK)  # b"": closed; bytes: an answer
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False


def trickle(port: int, n: int) -> list[socket.socket]:
    """`n` slow bodies, one after another (each holds a connection towards the cap)."""
    out = []
    for _ in range(n):
        out.append(slow_body(port))
        time.sleep(0.02)
    return out


@pytest.mark.parametrize("allowance", [100, 3])
def test_one_address_trickling_bodies_cannot_hold_the_connection_cap(allowance):
    """Nine slow bodies from one address fill a cap of 10 connections with the next one: a
    request sent at network speed then gets 503 for as long as the body timeout. With an
    allowance of 3 slow senders per address, the other six are closed once they have been
    sending for a second, and the request is served."""
    with serving(make_config(), max_connections=10, max_slow_per_client=allowance) as url:
        port = int(url.rsplit(":", 1)[1])
        slow = trickle(port, 9)
        if allowance >= 9:  # no allowance: the cap stays full
            with httpx.Client() as client:
                r = client.post(url + "/v1/chat/completions", json=OK_BODY)
            assert r.status_code == 503
            assert sum(still_open(s) for s in slow) == 9
        else:
            deadline = time.monotonic() + 30
            while sum(still_open(s) for s in slow) > allowance:
                assert time.monotonic() < deadline, "slow senders beyond the allowance kept"
                time.sleep(0.05)
            with httpx.Client() as client:
                r = client.post(url + "/v1/chat/completions", json=OK_BODY)
            assert r.status_code == 200
            assert sum(still_open(s) for s in slow) == allowance  # the allowance, kept
        for s in slow:
            s.close()


def test_many_requests_at_once_from_one_address_are_not_slow_senders():
    """Forty streams opened at once from one address (a benchmark's concurrency) with an
    allowance of 2 slow senders: each sends its request at network speed, none is cut."""
    import concurrent.futures

    with serving(make_config(), max_connections=64, max_slow_per_client=2) as url:

        def one(_: int) -> int:
            with httpx.Client() as client:
                body = {**OK_BODY, "stream": True}
                with client.stream("POST", url + "/v1/chat/completions", json=body) as r:
                    r.read()
                    return r.status_code

        with concurrent.futures.ThreadPoolExecutor(40) as pool:
            statuses = list(pool.map(one, range(40)))
    assert statuses == [200] * 40
