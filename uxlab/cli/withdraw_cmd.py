"""`uxlab withdraw DB (--participant ID | --enrolled PLATFORM_ID) [--yes]`: delete one
participant's data everywhere.

`--enrolled` names a participant of open enrolment (`uxlab host --enrol`) by the platform's
id: their participant id (`R-...`) is computed with the enrolment salt kept in the database
(`uxlab.store.enrolment_salt`); the platform id itself is neither stored nor printed.

Deletes the participant's sessions, trials, answers, events and runs (`Store.withdraw`) and
their invitation, if they had one (`withdraw_invited`: the code then opens nothing). The
audit log keeps a `delete` entry with the counts and the SHA-256 of what was deleted, never
its content. Then clears what the database still keeps of the deleted rows and says what
stays (`Store.clear_remains`: SQLite's write-ahead log while another process has the file
open; PostgreSQL's old row versions, write-ahead log and backups). Asks first, unless
`--yes`; without a terminal to ask on, `--yes` is required. Prints counts only, never an
answer.
"""

from __future__ import annotations

import argparse
import difflib
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from uxlab.cli.options import database_arg, db_name

if TYPE_CHECKING:
    from uxlab.store import Store


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "withdraw",
        help="delete a participant's data (their right to withdraw); the audit keeps counts",
        description="Delete everything the database holds about one participant: sessions, "
        "trials, answers, events, runs and their invitation code (which then opens nothing). "
        "The audit log keeps a 'delete' entry with the counts and a SHA-256 of what was "
        "deleted, never the content. What stays, and is said after each withdrawal: on "
        "SQLite, copies of the deleted rows in the write-ahead log (DB-wal) while another "
        "process has the database open (checkpointed and emptied otherwise; SQLite empties it "
        "when the last process closes it); on PostgreSQL, the rows' old versions in the "
        "table files (the tables are vacuumed, their space reused; VACUUM FULL rewrites them) "
        "and in the server's write-ahead log and backups; everywhere, exports, reports and "
        "backups made before: delete or remake them. Asks for confirmation unless --yes.",
    )
    parser.add_argument("db", metavar="DB", help="the study database (results/<study>.sqlite)")
    who = parser.add_mutually_exclusive_group(required=True)
    who.add_argument("--participant", metavar="ID", help="the participant id, e.g. P-7K3QX")
    who.add_argument(
        "--enrolled",
        metavar="PLATFORM_ID",
        help="open enrolment (uxlab host --enrol): the recruitment platform's id of the "
        "participant; their id is computed with the enrolment salt kept in the database",
    )
    parser.add_argument(
        "--yes", action="store_true", help="do not ask (required when stdin is not a terminal)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from uxlab.cli import CliError
    from uxlab.cli.hints import command
    from uxlab.cli.places import output_for
    from uxlab.store import Store
    from uxlab.store.invitations import withdraw_invited

    db = database_arg(args.db)
    if isinstance(db, Path) and not db.is_file():
        raise CliError(
            f"{db_name(db)}: no such database (a study database is results/<study id>.sqlite)"
        )
    who = args.participant if args.enrolled is None else _enrolled(db, args.enrolled)
    with Store.open(db) as store:
        invited = _has_invitations(store.conn)
        known = _participant_ids(store.conn, invited)
        if who not in known:
            if args.enrolled is not None:
                raise CliError(
                    f"--enrolled: no participant in {db_name(db)} has this platform id (its "
                    f"participant id would be {who}); nothing was deleted"
                )
            raise CliError(_unknown(db, who, known))
        busy = _live_session(store, who)
        if busy:
            raise CliError(f"--participant {who}: {busy}; nothing was deleted")
        planned = _counts(store.conn, who)
        print(
            f"Withdraw {who} from {db_name(db)}: deletes {_say(planned)}"
            + (", and their invitation" if invited and _is_invited(store.conn, who) else "")
            + ". This cannot be undone."
        )
        if not args.yes:
            if not (sys.stdin and sys.stdin.isatty()):
                raise CliError(
                    "no terminal to confirm on: nothing was deleted; to withdraw without "
                    f"asking: {command('withdraw', db, '--participant', who, '--yes')}"
                )
            try:
                answer = input(f"Type the participant id ({who}) to confirm: ").strip()
            except EOFError:
                answer = ""
            if answer != who:
                raise CliError("not confirmed: nothing was deleted")
        counts = withdraw_invited(store, who) if invited else store.withdraw(who)
        remains = store.clear_remains()
    gone = {**counts, "runs": planned["runs"]}
    invitation = counts.get("invitations", 0)
    print(
        f"Withdrew {who}: deleted {_say(gone)}"
        + (f", {invitation} invitation (its code opens nothing now)" if invitation else "")
        + ". The audit log keeps a 'delete' entry with these counts and no content."
    )
    for remain in remains:
        print(f"Still holding copies of the deleted rows: {remain}.")
    if not remains:
        print(
            "The database file holds no copy of them (deleted pages overwritten, its "
            "write-ahead log checkpointed and emptied); backups and copies of the file made "
            "before still do."
        )
    stale = [p for p in (output_for(db, "export"), output_for(db, "report")) if p.exists()]
    if stale:
        print(
            "Made before the withdrawal and still holding their data: "
            + ", ".join(f"{p}/" for p in stale)
            + f"; remake them ({command('export', db)}) or delete them."
        )
    return 0


def _enrolled(db: Path | str, platform_id: str) -> str:
    """The participant id open enrolment gave `platform_id` (with the salt kept in `db`)."""
    from uxlab.cli import CliError
    from uxlab.cli.places import host_files_beside
    from uxlab.host.enrolment import enrolled_participant, salt_path, valid_platform_id
    from uxlab.store import Store, StoreError
    from uxlab.store.enrolment_salt import enrolment_salt

    if not valid_platform_id(platform_id):
        raise CliError(
            "--enrolled: a platform id is 1-128 letters, digits, '-' or '_' (as in the "
            "study link's query); nothing was deleted"
        )
    salt_file = salt_path(host_files_beside(db))
    try:
        with Store.open(db) as store:
            got = enrolment_salt(store, salt_file, make=False)
    except StoreError as exc:
        raise CliError(f"{exc}; nothing was deleted") from None
    if got is None:
        raise CliError(
            f"--enrolled: {db_name(db)} holds no enrolment salt (kept in the database by "
            "`uxlab host --enrol`; without it platform ids cannot be matched, so give the "
            "participant id with --participant); nothing was deleted"
        )
    if got.origin == "adopted":
        print(
            f"Adopted the enrolment salt of {salt_file} into the database (existing "
            "participants keep their ids); the file is no longer read."
        )
    return enrolled_participant(got.salt, platform_id)


def _has_invitations(conn: sqlite3.Connection) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'invitations'"
        ).fetchone()
        is not None
    )


def _live_session(store: Store, who: str) -> str | None:
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
        stale_s = _stale_after_min(study_text) * 60.0
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


def _stale_after_min(study_text: str) -> float:
    """The study's `[counterbalance] stale_after_min`, read from the text stored with it."""
    import tomllib

    from uxlab.study.spec import Counterbalance

    default = Counterbalance().stale_after_min
    try:
        value = tomllib.loads(study_text).get("counterbalance", {}).get("stale_after_min")
    except (tomllib.TOMLDecodeError, AttributeError):
        return default
    return float(value) if isinstance(value, (int, float)) and value > 0 else default


def _participant_ids(conn: sqlite3.Connection, invited: bool) -> list[str]:
    """Every participant the database knows: those with data, and those only invited."""
    ids = [r[0] for r in conn.execute("SELECT participant FROM participants ORDER BY number")]
    if invited:
        ids += [r[0] for r in conn.execute("SELECT participant FROM invitations ORDER BY 1")]
    return list(dict.fromkeys(ids))


def _is_invited(conn: sqlite3.Connection, who: str) -> bool:
    row = conn.execute("SELECT 1 FROM invitations WHERE participant = ?", (who,)).fetchone()
    return row is not None


def _unknown(db: Path, who: str, known: list[str]) -> str:
    """`--participant X: not in DB; did you mean Y?` with how to list the ids."""
    if not known:
        return f"--participant {who}: {db_name(db)} holds no participant"
    close = difflib.get_close_matches(who, known, n=1, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(who.upper(), known, n=1, cutoff=0.6)
    guess = f"; did you mean {close[0]}?" if close else ""
    return (
        f"--participant {who}: no such participant in {db_name(db)}{guess} "
        f"({len(known)} participant(s); their ids are in sessions.csv of the export)"
    )


def _counts(conn: sqlite3.Connection, who: str) -> dict[str, int]:
    """How many rows of each kind the participant has (counts only, never content)."""
    counts = {}
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


def _say(counts: dict[str, int]) -> str:
    """`1 session(s), 12 trial(s), 24 answer(s), 310 event(s)`."""
    names = (("sessions", "session"), ("trials", "trial"), ("responses", "answer"),
             ("events", "event"), ("runs", "run"))  # fmt: skip
    return ", ".join(f"{counts.get(key, 0)} {name}(s)" for key, name in names)
