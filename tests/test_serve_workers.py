"""`uxlab serve` at scale: shaping off the event loop, and `--workers N` sharing the port.

The loop test holds one request's shaping on a gate and checks that another request is
answered meanwhile (no timing). The workers test starts the real command over loopback,
sends concurrent streaming requests, sees both worker processes answer (their pid in a
response header) and stops it with SIGTERM, leaving no process behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from uxlab.cli import main
from uxlab.clock import VirtualClock
from uxlab.live.serve import ServeConfig, asgi_post, build_app
from uxlab.live.serve_workers import run_workers, serve_worker
from uxlab.streams import load_corpus

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "replays" / "chat"
STUDY = ROOT / "studies" / "quickstart.toml"
BODY = json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]})


def _headers(sent: list[dict]) -> dict[str, str]:
    start = next(m for m in sent if m["type"] == "http.response.start")
    return {k.decode(): v.decode() for k, v in start["headers"]}


def test_a_request_is_answered_while_another_ones_shaping_is_held():
    """Request 0's shaping waits on a gate in its thread; request 1 is answered meanwhile.
    Were shaping on the event loop, request 0 would hold the loop until the gate's timeout
    and request 1 would finish after it."""
    gate, shaping = threading.Event(), threading.Event()

    def held_shape(rec, seed):
        if seed == 0:
            shaping.set()
            gate.wait(timeout=5)
        return rec

    recs = load_corpus(CORPUS).recordings[:1]
    app = build_app(ServeConfig(recordings=recs, shape=held_shape, clock=VirtualClock()))

    async def both() -> tuple[bool, list[dict], list[dict]]:
        first = asyncio.create_task(asgi_post(app, "/v1/chat/completions", BODY))
        await asyncio.to_thread(shaping.wait, 5)  # request 0 has its index and is shaping
        second = await asgi_post(app, "/v1/chat/completions", BODY)
        first_was_done = first.done()
        gate.set()
        return first_was_done, await first, second

    first_was_done, first, second = asyncio.run(both())
    assert not first_was_done
    assert _headers(second)["x-uxlab-request-index"] == "1"
    assert _headers(first)["x-uxlab-request-index"] == "0"
    assert any(b"[DONE]" in m.get("body", b"") for m in first)


def test_a_worker_numbers_its_requests_with_its_stride_and_says_its_pid():
    recs = load_corpus(CORPUS).recordings
    config = ServeConfig(
        recordings=recs,
        shape=lambda r, s: r,
        clock=VirtualClock(),
        seed=100,
        request_index_start=1,
        request_index_step=2,
    )
    app = build_app(config)

    async def three() -> list[dict[str, str]]:
        return [_headers(await asgi_post(app, "/v1/chat/completions", BODY)) for _ in range(3)]

    headers = asyncio.run(three())
    assert [h["x-uxlab-request-index"] for h in headers] == ["1", "3", "5"]
    assert [h["x-uxlab-seed"] for h in headers] == ["101", "103", "105"]
    assert [h["x-uxlab-replay-id"] for h in headers] == [recs[i].id for i in (1, 3, 5)]
    assert {h["x-uxlab-worker-pid"] for h in headers} == {str(os.getpid())}


def test_workers_with_a_study_are_refused_before_listening(capsys):
    args = ["serve", "--study", str(STUDY), "--participant", "p", "--port", "0"]
    assert main([*args, "--workers", "2"]) == 2
    err = capsys.readouterr().err
    assert "--workers 2 with --study" in err and "--workers 1" in err
    assert "serving" not in err
    assert main(["serve", str(CORPUS), "--workers", "0"]) == 2
    assert "--workers 0: must be >= 1" in capsys.readouterr().err


def test_a_worker_that_ends_on_its_own_stops_the_others():
    """Worker 0 fails at once; worker 1 would wait forever: the parent stops it, says which
    worker ended and returns 1."""

    def serve_one(k: int, sock: socket.socket) -> None:
        if k == 0:
            raise RuntimeError("worker 0 broke")
        signal.pause()  # until the parent's SIGTERM (default action: end)

    socks = [socket.socket(), socket.socket()]
    assert run_workers(socks, serve_one) == 1
    assert all(s.fileno() == -1 for s in socks)  # the parent closed its copies


def test_each_worker_leaves_the_terminals_process_group(tmp_path):
    """A terminal's Ctrl-C goes to its foreground process group. Were the workers in it,
    each would get the SIGINT itself besides the parent's SIGTERM, and one that handled the
    SIGTERM first read the SIGINT as a second Ctrl-C: uvicorn's forced exit, cutting the
    open streams (seen on a loaded machine). In a group of its own, a worker hears only
    its parent."""

    def serve_one(k: int, sock: socket.socket) -> None:
        (tmp_path / f"worker-{k}.tmp").write_text(f"{os.getpgrp()} {os.getpid()}")
        (tmp_path / f"worker-{k}.tmp").rename(tmp_path / f"worker-{k}")
        while not all((tmp_path / f"worker-{j}").exists() for j in (0, 1)):
            time.sleep(0.01)  # the first to end stops the other: both must have written

    assert run_workers([socket.socket(), socket.socket()], serve_one) == 0
    for k in (0, 1):
        group, pid = (tmp_path / f"worker-{k}").read_text().split()
        assert group == pid != str(os.getpgrp())


def test_a_worker_that_stopped_cleanly_first_does_not_turn_the_ctrl_c_into_a_second_one(
    tmp_path,
):
    """A worker may end cleanly before the parent has run its own Ctrl-C handler (asked by a
    signal to its pid, or by a Ctrl-C that came before it left the terminal's group). That
    is no crash, and the parent's Ctrl-C, handled after, is still the first one: the other
    worker gets SIGTERM both times (finish the open streams), never SIGINT (uvicorn: stop
    at once, cutting them)."""
    got, ready = tmp_path / "signals", tmp_path / "ready"

    def serve_one(k: int, sock: socket.socket) -> None:
        if k == 1:
            while not ready.exists():  # worker 0 hears signals now
                time.sleep(0.01)
            return  # as a worker asked to stop before the parent's Ctrl-C handler ran
        names: list[str] = []

        def note(signum: int, frame: object) -> None:
            names.append(signal.Signals(signum).name)

        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, note)
        ready.touch()
        while not names:
            signal.pause()  # the parent's reaction to worker 1's end
        os.kill(os.getppid(), signal.SIGINT)  # the parent's own Ctrl-C, handled late
        while len(names) < 2:
            signal.pause()
        got.write_text(" ".join(names), encoding="utf-8")

    socks = [socket.socket(), socket.socket()]
    assert run_workers(socks, serve_one) == 130  # stopped by a Ctrl-C: its exit status
    assert got.read_text(encoding="utf-8") == "SIGTERM SIGTERM"


def test_the_workers_end_as_one_server_does_0_after_sigterm_130_after_ctrl_c():
    """The parent's exit status says what stopped it, as `uxlab serve` without workers:
    SIGTERM (a request to stop) is done, 0; Ctrl-C (SIGINT) is 130."""

    def asks_the_parent(sig: int) -> Callable[[int, socket.socket], None]:
        def serve_one(k: int, sock: socket.socket) -> None:
            if k == 0:
                os.kill(os.getppid(), sig)
            while True:
                signal.pause()  # until the parent's SIGTERM (default action: end)

        return serve_one

    for sig, status in ((signal.SIGTERM, 0), (signal.SIGINT, 130)):
        assert run_workers([socket.socket(), socket.socket()], asks_the_parent(sig)) == status


def test_a_stop_handled_between_two_forks_reaches_the_worker_forked_after(tmp_path, monkeypatch):
    """Python runs a signal handler in the main thread between any two instructions, also
    between the forks (in a process with other threads it could not be blocked there: the
    kernel hands the signal to another thread). Told at once, a worker forked after it never
    heard it and the server waited for it forever (seen in CI); it is told once all exist."""
    import uxlab.live.serve_workers as serve_workers

    real_fork = os.fork
    forks: list[int] = []

    def fork_then_stop() -> int:
        pid = real_fork()
        if pid:  # the parent, after its first worker: the stop comes now
            forks.append(pid)
            if len(forks) == 1:
                signal.raise_signal(signal.SIGTERM)
        return pid

    monkeypatch.setattr(serve_workers.os, "fork", fork_then_stop)

    def serve_one(k: int, sock: socket.socket) -> None:
        time.sleep(20)  # the parent's SIGTERM ends it first (default action)
        (tmp_path / f"worker-{k}-was-never-told").touch()

    assert run_workers([socket.socket(), socket.socket()], serve_one) == 0
    assert len(forks) == 2 and not list(tmp_path.iterdir())


def test_a_worker_whose_server_stops_unasked_ends_with_a_failure():
    """A clean exit tells the parent "asked to stop", so a worker whose server returned
    without a signal (here: uvicorn's own limit of one request reached) must not exit
    cleanly."""
    import uvicorn

    config = ServeConfig(recordings=load_corpus(CORPUS).recordings[:1], shape=lambda r, s: r)
    sock = socket.create_server(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    pid = os.fork()
    if pid == 0:  # the worker, as `run_workers` runs it
        code = 0
        try:
            serve_worker(config, 0, 1, sock, lambda app: uvicorn.Config(app, limit_max_requests=1))
        except RuntimeError as exc:
            code = 3 if "without being asked" in str(exc) else 4
        except BaseException:
            code = 4
        finally:
            os._exit(code)
    sock.close()
    try:
        assert httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=30).status_code == 200
        assert os.WEXITSTATUS(os.waitpid(pid, 0)[1]) == 3
    finally:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def _parent_pid(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def _alive(pid: int) -> bool:
    """Running (a zombie, ended but not yet reaped by whoever adopted it, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


@pytest.mark.slow
def test_workers_end_when_their_parent_is_killed():
    """SIGKILL leaves the parent no chance to stop its workers: the kernel does
    (`PR_SET_PDEATHSIG`), so no worker outlives the server."""
    cmd = [sys.executable, "-m", "uxlab", "serve", str(CORPUS), "--workers", "2", "--port", "0"]
    proc = subprocess.Popen([*cmd, "--quiet"], stderr=subprocess.PIPE, text=True)
    workers: list[int] = []
    try:
        assert "with 2 worker processes" in (proc.stderr.readline() if proc.stderr else "")
        deadline = time.monotonic() + 30  # the banner comes just before the forks
        while len(workers) < 2 and time.monotonic() < deadline:
            workers = _children(proc.pid)
        assert len(workers) == 2
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(pid) for pid in workers)
    finally:
        if proc.poll() is None:
            proc.terminate()  # its workers end with it
            proc.wait()
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_two_workers_serve_concurrent_requests_and_stop_cleanly():
    cmd = [sys.executable, "-m", "uxlab", "serve", str(CORPUS), "--workers", "2", "--port", "0"]
    cmd += ["--ttft", "constant:200", "--itl", "constant:10", "--quiet"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        banner = proc.stderr.readline() if proc.stderr else ""
        assert "with 2 worker processes" in banner, banner
        base = re.search(r"(http://127\.0\.0\.1:\d+/v1)", banner).group(1)

        async def many() -> list[httpx.Response]:
            async with httpx.AsyncClient(timeout=60) as client:

                async def one() -> httpx.Response:
                    r = await client.post(f"{base}/chat/completions", content=BODY)
                    assert r.status_code == 200 and r.content.startswith(b"data: ")
                    return r

                return await asyncio.gather(*(one() for _ in range(24)))

        answers = asyncio.run(many())
        pids = {int(r.headers["x-uxlab-worker-pid"]) for r in answers}
        indices = [int(r.headers["x-uxlab-request-index"]) for r in answers]
        assert len(pids) == 2 and proc.pid not in pids
        assert all(_parent_pid(pid) == proc.pid for pid in pids)
        assert sorted(indices) == sorted(set(indices))  # unique across the workers
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert not any(_alive(pid) for pid in pids)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_study_is_shaped_once_before_serving(monkeypatch):
    """`--study` plays a finite trial list: each schedule is shaped when the picker is built,
    and no request shapes anything."""
    import uxlab.study.serve_picker as study_picker_module
    from uxlab.study import design_trials, load_study

    calls: list[int] = []
    real = study_picker_module.trial_schedule

    def counted(study, trial):
        calls.append(trial.index)
        return real(study, trial)

    monkeypatch.setattr(study_picker_module, "trial_schedule", counted)
    study = load_study(STUDY)
    trials = design_trials(study, "p-test", 1)
    pick = study_picker_module.study_picker(study, trials)
    assert len(calls) == len(trials)
    picks = [pick(i, None) for i in range(2 * len(trials))]
    assert len(calls) == len(trials)
    assert picks[0].schedule is picks[len(trials)].schedule
    assert [p.labels["trial-index"] for p in picks[: len(trials)]] == [str(t.index) for t in trials]


@pytest.mark.slow
def test_ctrl_c_lets_open_streams_finish_then_stops_every_worker():
    """SIGINT to the whole process group, as a terminal's Ctrl-C sends it, while streams
    are open: each stream still arrives whole, then the server and its workers are gone."""
    cmd = [sys.executable, "-m", "uxlab", "serve", str(CORPUS), "--workers", "2", "--port", "0"]
    cmd += ["--ttft", "constant:100", "--itl", "constant:10", "--quiet"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        banner = proc.stderr.readline() if proc.stderr else ""
        base = re.search(r"(http://127\.0\.0\.1:\d+/v1)", banner).group(1)

        async def open_then_interrupt() -> tuple[set[int], list[bytes]]:
            async with httpx.AsyncClient(timeout=60) as client:
                requests = [
                    client.build_request("POST", f"{base}/chat/completions", content=BODY)
                    for _ in range(8)
                ]
                responses = await asyncio.gather(*(client.send(r, stream=True) for r in requests))
                os.killpg(proc.pid, signal.SIGINT)  # every stream's headers are in
                bodies = [await r.aread() for r in responses]  # raises if a body is cut
                pids = {int(r.headers["x-uxlab-worker-pid"]) for r in responses}
                return pids, bodies

        try:
            pids, bodies = asyncio.run(open_then_interrupt())
            assert all(b.rstrip().endswith((b"data: [DONE]", b"}")) for b in bodies)
            assert proc.wait(timeout=30) == 130  # Ctrl-C's exit status, as one server's
        except (AssertionError, httpx.HTTPError) as exc:
            # What the server and its workers said is the evidence (a cut stream was once
            # a worker's forced exit: the group's SIGINT handled after the parent's SIGTERM).
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            said = proc.communicate(timeout=30)[1] if proc.stderr else ""
            raise AssertionError(
                f"{exc!r}; exit {proc.returncode}; the server said: {said!r}"
            ) from exc
        assert not any(_alive(pid) for pid in pids)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _refuses(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


@pytest.mark.slow
def test_a_second_ctrl_c_cuts_the_open_streams_with_one_line_per_worker_not_tracebacks():
    """The first Ctrl-C lets open streams finish; a second stops at once. uvicorn would log
    a traceback for each stream it cancels; the server says one line per worker instead."""
    cmd = [sys.executable, "-m", "uxlab", "serve", str(CORPUS), "--workers", "2", "--port", "0"]
    cmd += ["--ttft", "constant:100", "--itl", "constant:2000", "--quiet"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        banner = proc.stderr.readline() if proc.stderr else ""
        base = re.search(r"(http://127\.0\.0\.1:(\d+)/v1)", banner)
        url, port = base.group(1), int(base.group(2))

        async def interrupt_twice() -> list[str]:
            async with httpx.AsyncClient(timeout=60) as client:
                requests = [
                    client.build_request("POST", f"{url}/chat/completions", content=BODY)
                    for _ in range(4)
                ]
                responses = await asyncio.gather(*(client.send(r, stream=True) for r in requests))
                os.killpg(proc.pid, signal.SIGINT)
                deadline = time.monotonic() + 30  # the first is handled: no more listening
                while not await asyncio.to_thread(_refuses, port):
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.05)
                os.killpg(proc.pid, signal.SIGINT)
                ends = []
                for r in responses:
                    try:
                        await r.aread()
                        ends.append("whole")
                    except httpx.RemoteProtocolError:
                        ends.append("cut")
                return ends

        assert asyncio.run(interrupt_twice()) == ["cut"] * 4
        proc.wait(timeout=30)
        said = proc.stderr.read() if proc.stderr else ""
        assert "Traceback" not in said and "CancelledError" not in said
        cut = re.findall(r"worker \d \(pid \d+\) stopped at once: (\d+) open stream", said)
        assert sum(int(n) for n in cut) == 4, said
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
