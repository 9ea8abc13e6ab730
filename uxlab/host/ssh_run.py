"""`uxlab host --ssh PORT`: the SSH host's loop, from the listening socket to the hang-up.

Each invited participant runs `ssh -p PORT CODE@HOST`; the host looks the code up and runs
their program (`uxlab run`'s flow) in a pseudo-terminal. Ctrl+C or SIGTERM stops it: every
open session is hung up (a clean quit) within its grace time, then the store is closed.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from uxlab.host.enrolment import host_files_beside


async def serve_ssh(
    study_path: Path,
    study_id: str,
    db: Path | str,
    invited: int,
    bind: str,
    port: int,
    passed_vars: tuple[str, ...] = (),
) -> None:
    """Host `study_id` over SSH on `bind:port` (0: any free port) until stopped."""
    from uxlab.host.ssh_server import (
        HostContext,
        host_key_path,
        load_or_create_host_key,
        start_ssh_host,
    )
    from uxlab.store import Store
    from uxlab.store.invitations import participant_for_code

    key, created = load_or_create_host_key(host_files_beside(db))
    store = Store.open(db)  # read by the host for codes only; each participant has its own

    def log(line: str) -> None:
        print(f"uxlab host: {line}", flush=True)

    ctx = HostContext(
        study_path=study_path.resolve(),
        study_id=study_id,
        db=db if isinstance(db, str) else db.resolve(),
        lookup=lambda code: participant_for_code(store, study_id, code),
        log=log,
        program_vars=passed_vars,
    )
    acceptor = await start_ssh_host(ctx, bind, port, key)
    port = acceptor.sockets[0].getsockname()[1]
    log(
        f"study {study_id!r} ({invited} invitations) over SSH on {bind}:{port}; "
        f"host key {key.get_fingerprint()} ({'new' if created else 'kept'}, "
        f"{host_key_path(host_files_beside(db))})"
    )
    log(f"a participant connects with: ssh -p {port} CODE@{bind}; Ctrl+C stops")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # Ctrl+C as well as SIGTERM, also when started where SIGINT is ignored (a shell's
    # background job, a service manager): the web host does the same
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        acceptor.close()
        sessions = list(ctx.running.values())
        for session in sessions:
            if session.chan is not None:
                session.chan.close()
        await asyncio.gather(*(s.hang_up() for s in sessions))  # each within its grace time
        store.close()
