"""`uxlab host` in the browser: the web host's loop, from the listening socket to the
hang-up.

A participant opens their invitation link (`#CODE`) or, with open enrolment, the study
link with a recruitment platform's id in its query; their program (`uxlab run`'s flow)
runs behind a terminal in the browser tab. Ctrl+C or SIGTERM stops the host: every open
program is hung up first, then uvicorn, the paint writer and the store are closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from uxlab.errors import UxlabError
from uxlab.host.enrolment import host_files_beside, salt_path


class WebHostError(UxlabError):
    """The web host cannot start: a bad option, or its store refused the enrolment salt."""


@dataclass(frozen=True)
class WebHosting:
    """How the web host takes participants: its frame cap, how many programs at once, and
    open enrolment (the link's query parameter and where a completed participant goes)."""

    fps: int
    max_open: int = 20
    enrol: str | None = None
    completion_url: str | None = None


PARAM_RE = r"^[A-Za-z][A-Za-z0-9_]{0,63}$"
"""What `--enrol PARAM` may name: a query parameter."""


def web_hosting(
    port: int, fps: int | None, max_open: int, enrol: str | None, completion_url: str | None
) -> WebHosting:
    """The browser host's settings from `uxlab host`'s options, each checked before anything
    opens (a bad one is a `WebHostError` naming it); `fps` None: UXLAB_FPS, else 240."""
    if not 0 <= port <= 65535:
        raise WebHostError(f"--port {port}: a TCP port is 0..65535 (e.g. --port 8350)")
    if fps is None:
        from_env = os.environ.get("UXLAB_FPS", "")
        fps = int(from_env) if from_env.isdigit() and int(from_env) > 0 else 240
    if fps < 1:
        raise WebHostError(f"--fps {fps}: the frame cap must be >= 1 (e.g. --fps 240)")
    if max_open < 1:
        raise WebHostError(f"--max-open {max_open}: at least 1 (e.g. --max-open 20)")
    if enrol is not None and not re.match(PARAM_RE, enrol):
        raise WebHostError(
            f"--enrol {enrol!r}: name the link's query parameter that holds the "
            "platform's participant id (letters, digits, '_'; e.g. --enrol PROLIFIC_PID)"
        )
    if completion_url is not None:
        if enrol is None:
            raise WebHostError("--completion-url: only with --enrol (open enrolment)")
        parts = urlsplit(completion_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise WebHostError(
                f"--completion-url {completion_url!r}: give a full http(s) URL, e.g. "
                "https://app.prolific.com/submissions/complete?cc=CODE"
            )
    return WebHosting(fps, max_open, enrol, completion_url)


async def serve_web(
    study_path: Path,
    study_id: str,
    db: Path | str,
    invited: int,
    sock: socket.socket,
    hosting: WebHosting,
    passed_vars: tuple[str, ...] = (),
) -> None:
    """Host `study_id` in the browser on the listening `sock` until stopped."""
    import uvicorn

    from uxlab.host.web_app import hang_up_all, make_app
    from uxlab.host.web_server import Enrolment, PaintWriter, WebHostContext
    from uxlab.store import Store
    from uxlab.store.enrolment_salt import enrolment_salt
    from uxlab.store.invitations import participant_for_code
    from uxlab.store.schema import StoreError

    store = Store.open(db)  # read by the host for codes and states; each program has its own

    def log(line: str) -> None:
        print(f"uxlab host: {line}", flush=True)

    enrolment = None
    if hosting.enrol is not None:
        # the salt is kept in the database (one for every host sharing it); a salt file
        # beside it from before schema version 8 is adopted once, keeping existing ids
        salt_file = salt_path(host_files_beside(db))
        try:
            got = enrolment_salt(store, salt_file, make=True)
        except StoreError as exc:
            store.close()
            raise WebHostError(str(exc)) from None
        assert got is not None  # make=True always gives one
        if got.origin == "adopted":
            log(
                f"adopted the enrolment salt of {salt_file} into the database (existing "
                "participants keep their ids); the file is no longer read, and every host "
                "sharing the database now uses this salt"
            )
        enrolment = Enrolment(hosting.enrol, got.salt, hosting.completion_url)
    where = db if isinstance(db, str) else db.resolve()
    paints = PaintWriter(where)
    ctx = WebHostContext(
        study_path=study_path.resolve(),
        study_id=study_id,
        db=where,
        lookup=lambda code: participant_for_code(store, study_id, code),
        fps=hosting.fps,
        enrolment=enrolment,
        max_open=hosting.max_open,
        log=log,
        session_state=store.sessions.state_of,
        paints=paints,
        program_vars=passed_vars,
    )
    config = uvicorn.Config(
        make_app(ctx),
        access_log=False,  # request lines would carry a platform id; no address is logged
        log_level="warning",
        ws="wsproto",
        lifespan="off",
        server_header=False,
        timeout_graceful_shutdown=5,
    )
    server = quiet_server(config)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    modes = [f"{invited} invitations"]
    if enrolment is not None:
        modes.append(f"open enrolment by ?{enrolment.param}= (salt kept in the database)")
    log(f"study {study_id!r} ({', '.join(modes)}) in the browser on http://{shown}:{port}/ "
        f"at {hosting.fps} fps")  # fmt: skip
    log(f"a participant opens http://{shown}:{port}/#CODE; Ctrl+C stops")
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await asyncio.wait(
            {serving, asyncio.ensure_future(stop.wait())}, return_when="FIRST_COMPLETED"
        )
    finally:
        await hang_up_all(ctx)
        server.should_exit = True
        with contextlib.suppress(Exception):
            await serving
        paints.close()
        store.close()


def quiet_server(config: Any) -> Any:
    """uvicorn's server, with signals left to `serve_web` (it hangs up sessions first)."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return Server(config)
