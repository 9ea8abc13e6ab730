"""Session leases: one live process per session, so a second one cannot take a session over.

A process that starts or resumes a session holds its lease (a row in `session_leases`:
host, process id, the process's start stamp, when the lease was taken). Another process
asking for the same session while the holder is alive is refused with a message naming
the holder's host, process id and how long ago it started; nothing is changed. A lease is
stale, and is taken over, when its process is gone: on the same host the process id no
longer runs (or now belongs to a younger process), on another host the session was not
seen (`sessions.last_seen_s`) for the study's `stale_after_min`. The same process may take
its own lease again (a host serving many sessions, a test). `Store.close` gives the leases
back; a killed process leaves a stale one behind. `holders` applies the same rule to list
which unfinished sessions are in use now (the resume list of `uxlab run` marks them).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

from uxlab.store.backend import Connection
from uxlab.store.records import InUse
from uxlab.store.schema import StoreError


@dataclass(frozen=True)
class Holder:
    """A process that may hold a lease."""

    host: str
    pid: int
    pid_started: str | None


def this_process() -> Holder:
    """The calling process."""
    return Holder(socket.gethostname(), os.getpid(), process_started(os.getpid()))


def process_started(pid: int) -> str | None:
    """The start stamp of process `pid` (clock ticks since boot, Linux), or None if unknown."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()  # after "pid (comm) "
    return fields[19] if len(fields) > 19 else None  # field 22 of the whole line


def process_alive(holder: Holder) -> bool:
    """Whether `holder` still runs on this host (a zombie or a reused pid is gone)."""
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # runs, as another user
    proc = Path(f"/proc/{holder.pid}/stat")
    if proc.parent.exists():
        try:
            text = proc.read_text()
        except OSError:
            return False
        state = text[text.rfind(")") + 2 :].split()[:1]
        if state == ["Z"]:
            return False
        if holder.pid_started is not None and process_started(holder.pid) != holder.pid_started:
            return False
    return True


def live_holder(
    lease_row: tuple[str, int, str | None, float],
    last_seen_s: float | None,
    now_s: float,
    stale_after_s: float,
    me: Holder | None = None,
) -> InUse | None:
    """Who holds a lease (`host, pid, pid_started, taken_s`) now, or None when it is free
    to take: it is `me` (this process by default), its process on this host is gone, or
    on another host the session was idle (`last_seen_s`) for `stale_after_s`."""
    me = this_process() if me is None else me
    host, pid, pid_started, taken_s = lease_row
    holder = Holder(host, pid, pid_started)
    if holder.host == me.host:
        if holder.pid == me.pid or not process_alive(holder):
            return None
        return InUse(host, pid, now_s - taken_s)
    idle_s = now_s - (last_seen_s if last_seen_s is not None else taken_s)
    if idle_s >= stale_after_s:
        return None
    return InUse(host, pid, now_s - taken_s, True, idle_s, stale_after_s)


def holders(
    conn: Connection, session_ids: list[str], now_s: float, stale_after_s: float
) -> dict[str, InUse]:
    """The sessions among `session_ids` that a live process other than this one holds now
    (as `take` would find them: resuming them here would be refused)."""
    if not session_ids:
        return {}
    me = this_process()
    marks = ", ".join("?" * len(session_ids))
    rows = conn.execute(
        "SELECT l.session_id, l.host, l.pid, l.pid_started, l.taken_s, s.last_seen_s "
        "FROM session_leases l LEFT JOIN sessions s ON s.session_id = l.session_id "
        f"WHERE l.session_id IN ({marks})",
        tuple(session_ids),
    ).fetchall()
    found: dict[str, InUse] = {}
    for session_id, host, pid, pid_started, taken_s, last_seen_s in rows:
        lease_row = (host, pid, pid_started, taken_s)
        in_use = live_holder(lease_row, last_seen_s, now_s, stale_after_s, me)
        if in_use is not None:
            found[session_id] = in_use
    return found


def take(
    conn: Connection,
    path: Path | str,
    session_id: str,
    participant: str,
    now_s: float,
    now_iso: str,
    stale_after_s: float,
) -> None:
    """Take the session's lease, or raise StoreError while another live process holds it.

    Call inside the write transaction that starts or resumes the session, before anything
    of it is changed.
    """
    me = this_process()
    row = conn.execute(
        "SELECT l.host, l.pid, l.pid_started, l.taken_s, s.last_seen_s FROM session_leases l "
        "LEFT JOIN sessions s ON s.session_id = l.session_id WHERE l.session_id = ?",
        (session_id,),
    ).fetchone()
    if row is not None:
        host, pid, pid_started, taken_s, last_seen_s = row
        lease_row = (host, pid, pid_started, taken_s)
        held = live_holder(lease_row, last_seen_s, now_s, stale_after_s, me)
        if held is not None:
            message = _held(path, participant, session_id, held)
            if held.other_host:
                message += (
                    f" (another host: its lease counts as given up after "
                    f"{stale_after_s / 60:.0f} min without activity; last activity "
                    f"{_ago(held.idle_s)} ago)"
                )
            raise SessionInUse(message, participant, session_id, held)
    conn.execute(
        "INSERT INTO session_leases (session_id, host, pid, pid_started, taken_at, taken_s) "
        "VALUES (?,?,?,?,?,?) ON CONFLICT (session_id) DO UPDATE SET host = excluded.host, "
        "pid = excluded.pid, pid_started = excluded.pid_started, taken_at = excluded.taken_at, "
        "taken_s = excluded.taken_s",
        (session_id, me.host, me.pid, me.pid_started, now_iso, now_s),
    )


class SessionInUse(StoreError):
    """A session another live process holds now: the message names it for the researcher
    (pid, host, session); a participant's screen says it in plain words instead."""

    def __init__(self, message: str, participant: str, session_id: str, held: InUse):
        super().__init__(message)
        self.participant = participant
        self.session_id = session_id
        self.held = held


def give_back(conn: Connection, session_ids: list[str]) -> None:
    """Release this process's leases on `session_ids` (one short transaction)."""
    if not session_ids:
        return
    me = this_process()
    marks = ", ".join("?" * len(session_ids))
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            f"DELETE FROM session_leases WHERE session_id IN ({marks}) AND host = ? AND pid = ?",
            (*session_ids, me.host, me.pid),
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _held(path: Path | str, participant: str, session_id: str, held: InUse) -> str:
    return (
        f"{path}: participant {participant} is taking part right now in another process "
        f"(pid {held.pid} on host {held.host}, session {session_id}, started "
        f"{_ago(held.held_s)} ago); nothing was changed. Finish or quit that session first, "
        "or use another participant id"
    )


def _ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
