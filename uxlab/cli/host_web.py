"""`uxlab host STUDY.toml` in the browser (no `--ssh`): the checks, the server, the log lines."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

PARAM_RE = r"^[A-Za-z][A-Za-z0-9_]{0,63}$"


def run_web(args: argparse.Namespace) -> int:
    """Check the options, then serve until Ctrl+C or SIGTERM; the exit status."""
    import os
    import re

    from uxlab.cli import CliError
    from uxlab.store import Store, default_db_path
    from uxlab.store.dialect import db_name
    from uxlab.store.invitations import count_invitations
    from uxlab.study import load_study

    if not 0 <= args.port <= 65535:
        raise CliError(f"--port {args.port}: a TCP port is 0..65535 (e.g. --port 8350)")
    fps = args.fps
    if fps is None:
        from_env = os.environ.get("UXLAB_FPS", "")
        fps = int(from_env) if from_env.isdigit() and int(from_env) > 0 else 240
    if fps < 1:
        raise CliError(f"--fps {fps}: the frame cap must be >= 1 (e.g. --fps 240)")
    if args.max_open < 1:
        raise CliError(f"--max-open {args.max_open}: at least 1 (e.g. --max-open 20)")
    if args.enrol is not None and not re.match(PARAM_RE, args.enrol):
        raise CliError(
            f"--enrol {args.enrol!r}: name the link's query parameter that holds the "
            "platform's participant id (letters, digits, '_'; e.g. --enrol PROLIFIC_PID)"
        )
    if args.completion_url is not None:
        if args.enrol is None:
            raise CliError("--completion-url: only with --enrol (open enrolment)")
        parts = urlsplit(args.completion_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise CliError(
                f"--completion-url {args.completion_url!r}: give a full http(s) URL, e.g. "
                "https://app.prolific.com/submissions/complete?cc=CODE"
            )
    study = load_study(args.study)
    db = args.db if args.db is not None else default_db_path(study)
    with Store.open(db) as store:
        invited = count_invitations(store, study.id)
    if invited == 0 and args.enrol is None:
        raise CliError(
            f"{db_name(db)}: no invitations for study {study.id!r}; make some first with "
            f"`uxlab invite {args.study} --db {db_name(db)} -n 10`, or take participants from a "
            "recruitment platform with --enrol PARAM"
        )
    try:
        sock = socket.create_server((args.bind, args.port))
    except OSError as exc:
        raise CliError(f"--port {args.port} --bind {args.bind}: cannot listen ({exc})") from None
    from uxlab.host.pty_program import program_vars

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args, study.id, db, invited, fps, sock, program_vars(study, db)))
    return 0


async def _serve(
    args: argparse.Namespace,
    study_id: str,
    db: Path | str,
    invited: int,
    fps: int,
    sock: socket.socket,
    passed_vars: tuple[str, ...] = (),
) -> None:
    import uvicorn

    from uxlab.cli import CliError
    from uxlab.cli.places import host_files_beside
    from uxlab.host.enrolment import salt_path
    from uxlab.host.web_server import (
        Enrolment,
        PaintWriter,
        WebHostContext,
        hang_up_all,
        make_app,
    )
    from uxlab.store import Store
    from uxlab.store.enrolment_salt import enrolment_salt
    from uxlab.store.invitations import participant_for_code
    from uxlab.store.schema import StoreError

    store = Store.open(db)  # read by the host for codes and states; each program has its own

    def log(line: str) -> None:
        print(f"uxlab host: {line}", flush=True)

    def session_state(participant: str) -> str | None:
        row = store.conn.execute(
            "SELECT state FROM sessions WHERE participant = ? ORDER BY created_at DESC LIMIT 1",
            (participant,),
        ).fetchone()
        return row[0] if row else None

    enrolment = None
    if args.enrol is not None:
        # the salt is kept in the database (one for every host sharing it); a salt file
        # beside it from before schema version 8 is adopted once, keeping existing ids
        salt_file = salt_path(host_files_beside(db))
        try:
            got = enrolment_salt(store, salt_file, make=True)
        except StoreError as exc:
            store.close()
            raise CliError(str(exc)) from None
        assert got is not None  # make=True always gives one
        if got.origin == "adopted":
            log(
                f"adopted the enrolment salt of {salt_file} into the database (existing "
                "participants keep their ids); the file is no longer read, and every host "
                "sharing the database now uses this salt"
            )
        enrolment = Enrolment(args.enrol, got.salt, args.completion_url)
    where = db if isinstance(db, str) else db.resolve()
    paints = PaintWriter(where)
    ctx = WebHostContext(
        study_path=Path(args.study).resolve(),
        study_id=study_id,
        db=where,
        lookup=lambda code: participant_for_code(store, study_id, code),
        fps=fps,
        enrolment=enrolment,
        max_open=args.max_open,
        log=log,
        session_state=session_state,
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
    server = _QuietServer(config)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    modes = [f"{invited} invitations"]
    if enrolment is not None:
        modes.append(f"open enrolment by ?{enrolment.param}= (salt kept in the database)")
    log(f"study {study_id!r} ({', '.join(modes)}) in the browser on http://{shown}:{port}/ "
        f"at {fps} fps")  # fmt: skip
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


class _QuietServer:
    """uvicorn's server, with signals left to `_serve` (it hangs up sessions first)."""

    def __new__(cls, config: Any) -> Any:
        import uvicorn

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                yield

        return Server(config)
