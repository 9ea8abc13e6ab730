"""`uxlab serve`'s first request is as punctual as the later ones.

A fresh server used to pay its first-use costs (anyio's asyncio backend imported by the
first streaming response, ~100 ms) on the first request, which a chat UI under study showed
as a longer TTFT; and its connections used Nagle's algorithm, so a chunk written within a
delayed ACK (~40 ms) of the headers or of the previous chunk waited for it. `warm_up`
answers requests in memory before the banner; `listen_socket` sets TCP_NODELAY.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import socket
import subprocess
import sys
import textwrap

import httpx
from live_servers import serve_in_thread

from uxlab.live.clients import Prompt
from uxlab.live.record import record_stream
from uxlab.live.serve import WARM_UP_REQUESTS, ServeConfig, build_app, warm_up
from uxlab.live.serve_run import listen_socket
from uxlab.shaping import Profile, shape
from uxlab.streams import Chunk, End, Header, Meta, Recording, write_replay

TTFT_MS = 5.0


def answer(rid: str = "answer") -> Recording:
    chunks = [Chunk(300.0 + 20 * i, f" w{i}", "content", n_tokens=1) for i in range(12)]
    return Recording(
        Header(id=rid, source={"kind": "synthetic", "model": "m"}),
        events=[Meta(200.0, {"kind": "role", "role": "assistant"}), *chunks],
        end=End(600.0, "stop", None),
    )


def profile_shape(profile: Profile):
    return lambda rec, seed: shape(rec, profile, seed=seed)


async def record_first(base: str, n: int = 1) -> list[Recording]:
    out = []
    async with httpx.AsyncClient() as client:
        for _ in range(n):
            prompt = Prompt([{"role": "user", "content": "go"}])
            result = await record_stream(client, "openai", base, "m", prompt, None, "r")
            assert result.ok, result.message
            out.append(result.recording)
    return out


def test_a_fresh_server_is_ready_when_its_banner_appears(tmp_path):
    """Between the banner and the end of the first request the server imports nothing
    (`-X importtime` prints every import as it happens), and it is already listening:
    a connection made while it is stopped right after the banner is queued, not refused.
    How punctual the first request is on the real clock: benchmarks/serve_first_request.py."""
    write_replay(answer(), tmp_path)
    profile = Profile.from_table({"ttft": f"constant:{TTFT_MS:g}", "itl": "constant:5"})
    cmd = [sys.executable, "-X", "importtime", "-m", "uxlab", "serve", str(tmp_path)]
    cmd += ["--port", "0", "--ttft", f"constant:{TTFT_MS:g}", "--itl", "constant:5"]
    proc = subprocess.Popen([*cmd, "--seed", "3"], stderr=subprocess.PIPE, text=True)
    after_banner: list[str] = []
    try:
        for line in proc.stderr:
            if line.startswith("serving "):
                break
        else:
            raise AssertionError("uxlab serve printed no banner")
        base = re.search(r"(http://127\.0\.0\.1:\d+)/v1", line).group(1)
        port = int(base.rsplit(":", 1)[1])
        proc.send_signal(signal.SIGSTOP)  # not one more instruction until the connection
        try:
            early = socket.create_connection(("127.0.0.1", port), timeout=10)
        finally:
            proc.send_signal(signal.SIGCONT)
        early.close()
        (first,) = asyncio.run(record_first(base + "/v1"))
        for line in proc.stderr:  # up to the first request's log line
            after_banner.append(line)
            if line.startswith("request 0 "):
                break
    finally:
        proc.terminate()
        stopped = proc.wait(timeout=30)
    assert stopped == 0  # SIGTERM asks the server to stop: done, not killed (143)
    assert first.text == shape(answer(), profile, seed=3).text
    imports = [line.split("|")[-1].strip() for line in after_banner if "import time" in line]
    assert imports == [], f"imported after the banner: {imports}"
    assert after_banner and after_banner[-1].startswith("request 0 ")


def test_warm_up_answers_every_kind_of_request_without_counting_it():
    profile = Profile.from_table({"ttft": "constant:50"})
    served_lines = []
    config = ServeConfig(
        [answer("a"), answer("b")],
        profile_shape(profile),
        seed=40,
        token="s3cret",
        on_served=served_lines.append,
    )
    done = warm_up(config)
    assert done.statuses == [200] * len(WARM_UP_REQUESTS)  # the token was given
    assert done.body_pieces > 2 * len(WARM_UP_REQUESTS)  # streams were played, not refused
    assert served_lines == [] and len(config.served) == 0
    app = build_app(config)
    with serve_in_thread(app) as base:
        r = httpx.post(
            base + "/v1/chat/completions",
            headers={"authorization": "Bearer s3cret"},
            json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
        )
    assert r.status_code == 200
    assert r.headers["x-uxlab-request-index"] == "0"  # the first real request is request 0
    assert r.headers["x-uxlab-seed"] == "40"
    assert [s.request_index for s in served_lines] == [0]


def test_after_warm_up_a_request_imports_nothing_new(tmp_path):
    """In a fresh process: whatever the first request needs is loaded by the warm-up."""
    write_replay(answer(), tmp_path)
    script = textwrap.dedent(
        f"""
        import asyncio, json, sys
        from uxlab.live.serve import ServeConfig, asgi_post, build_app, warm_up
        from uxlab.shaping import Profile, shape
        from uxlab.streams import load_corpus

        profile = Profile.from_table({{"ttft": "constant:1", "itl": "constant:1"}})
        recs = load_corpus({str(tmp_path)!r}).recordings
        config = ServeConfig(recs, lambda r, s: shape(r, profile, seed=s))
        app = build_app(config)
        if sys.argv[1] == "warm":
            warm_up(config)
        body = {{"model": "m", "stream": True, "messages": [{{"role": "user", "content": "x"}}]}}

        async def main():
            before = set(sys.modules)
            sent = await asgi_post(app, "/v1/chat/completions", json.dumps(body))
            assert sent[0]["status"] == 200, sent[0]
            return sorted(set(sys.modules) - before)

        print(json.dumps(asyncio.run(main())))
        """
    )
    new_modules = {}
    for mode in ("cold", "warm"):
        out = subprocess.run(
            [sys.executable, "-c", script, mode], capture_output=True, text=True, check=True
        )
        new_modules[mode] = json.loads(out.stdout)
    assert new_modules["cold"], "a cold first request is expected to import something"
    assert new_modules["warm"] == []


def test_the_listening_socket_hands_out_connections_without_nagle():
    sock = listen_socket("127.0.0.1", 0)
    with sock:
        sock.listen(1)
        assert sock.proto == socket.IPPROTO_TCP  # asyncio sets TCP_NODELAY only then
        with socket.create_connection(sock.getsockname()) as client:
            conn, _ = sock.accept()
            with conn:
                assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            assert client  # keep the connection open until the check is done
