"""Before a withdrawal (`uxlab withdraw`): whom the database knows, how many rows of each
kind a participant has, whether a live process still runs one of their sessions, and a
mistyped id matched to the closest known one. Counts only, never content."""

from __future__ import annotations

import difflib
from pathlib import Path

from uxlab.store.backend import Connection
from uxlab.store.store import Store


def has_invitations(conn: Connection) -> bool:
    """Whether the database has the invitations table (`uxlab invite` made it)."""
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'invitations'"
    ).fetchone()
    return row is not None


def participant_ids(conn: Connection, invited: bool) -> list[str]:
    """Every participant the database knows: those with data, and those only invited."""
    ids = [r[0] for r in conn.execute("SELECT participant FROM participants ORDER BY number")]
    if invited:
        ids += [r[0] for r in conn.execute("SELECT participant FROM invitations ORDER BY 1")]
    return list(dict.fromkeys(ids))


def is_invited(conn: Connection, who: str) -> bool:
    """Whether `who` holds an invitation."""
    row = conn.execute("SELECT 1 FROM invitations WHERE participant = ?", (who,)).fetchone()
    return row is not None


def row_counts(conn: Connection, who: str) -> dict[str, int]:
    """How many rows of each kind the participant has (counts only, never content)."""
    counts: dict[str, int] = {}
    for table in ("trials", "responses", "events", "session_runs"):
        counts[table] = conn.execute(
            f"SELECT count(*) FROM {table} t JOIN sessions s ON s.session_id = t.session_id "
            "WHERE s.participant = ?",
            (who,),
        ).fetchone()[0]
    counts["sessions"] = conn.execute(
        "SELECT count(*) FROM sessions WHERE participant = ?", (who,)
    ).fetchone()[0]
    counts["runs"] = counts.pop("session_runs")
    return counts


def say_counts(counts: dict[str, int]) -> str:
    """`1 session(s), 12 trial(s), 24 answer(s), 310 event(s), 1 run(s)`."""
    names = (("sessions", "session"), ("trials", "trial"), ("responses", "answer"),
             ("events", "event"), ("runs", "run"))  # fmt: skip
    return ", ".join(f"{counts.get(key, 0)} {name}(s)" for key, name in names)


def unknown_participant(db: Path | str, who: str, known: list[str]) -> str:
    """`--participant X: no such participant in DB; did you mean Y?` with how to list the
    ids (`db`: how messages name the database)."""
    if not known:
        return f"--participant {who}: {db} holds no participant"
    close = difflib.get_close_matches(who, known, n=1, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(who.upper(), known, n=1, cutoff=0.6)
    guess = f"; did you mean {close[0]}?" if close else ""
    return (
        f"--participant {who}: no such participant in {db}{guess} "
        f"({len(known)} participant(s); their ids are in sessions.csv of the export)"
    )


def live_session(store: Store, who: str) -> str | None:
    """What says a live process still runs one of `who`'s sessions, or None: the same rule
    as resuming (`uxlab.store.lease.live_holder`). On this host its process must be alive;
    on another host (a shared PostgreSQL store) the session counts as live until it was idle
    for its study's `stale_after_min`. (Deleting under it would fail its next commit.)"""
    from uxlab.store import lease

    rows = store.conn.execute(
        "SELECT s.session_id, st.text FROM sessions s "
        "JOIN studies st ON st.sha256 = s.study_sha256 WHERE s.participant = ?",
        (who,),
    ).fetchall()
    for session_id, study_text in rows:
        stale_s = stale_after_min(study_text) * 60.0
        held = lease.holders(store.conn, [session_id], store.clock(), stale_s).get(session_id)
        if held is None:
            continue
        if not held.other_host:
            return (
                f"session {session_id} is running now (process {held.pid} on {held.host}); "
                "withdraw after it ends or is stopped"
            )
        return (
            f"session {session_id} is live on another host ({held.host}, process {held.pid}, "
            f"last active {held.idle_s / 60.0:.0f} min ago; it counts as ended after "
            f"{held.stale_after_s / 60.0:.0f} min without activity); withdraw after it ends "
            "or is stopped there"
        )
    return None


def stale_after_min(study_text: str) -> float:
    """The study's `[counterbalance] stale_after_min`, read from the text stored with it."""
    import tomllib

    from uxlab.study.spec import Counterbalance

    default = Counterbalance().stale_after_min
    try:
        value = tomllib.loads(study_text).get("counterbalance", {}).get("stale_after_min")
    except (tomllib.TOMLDecodeError, AttributeError):
        return default
    return float(value) if isinstance(value, (int, float)) and value > 0 else default
