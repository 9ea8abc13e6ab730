"""`uxlab withdraw DB (--participant ID | --enrolled PLATFORM_ID) [--yes]`: delete one
participant's data everywhere.

`--enrolled` names a participant of open enrolment (`uxlab host --enrol`) by the platform's
id: their participant id (`R-...`) is computed with the enrolment salt kept in the database
(`uxlab.store.enrolment_salt`); the platform id itself is neither stored nor printed.

Deletes the participant's sessions, trials, answers, events and runs
(`store.withdrawal.withdraw`) and their invitation, if they had one (`withdraw_invited`: the
code then opens nothing). The audit log keeps a `delete` entry with the counts and the
SHA-256 of what was deleted, never its content. Then clears what the database still keeps of
the deleted rows and says what stays (`store.withdrawal.clear_remains`: SQLite's write-ahead
log while another process has the file open; PostgreSQL's old row versions, write-ahead log
and backups). Asks first, unless `--yes`; without a terminal to ask on, `--yes` is required.
Prints counts only, never an answer.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from uxlab.cli.options import database_arg, db_name


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    from uxlab.store import withdraw_check as check
    from uxlab.store.invitations import withdraw_invited

    db = database_arg(args.db)
    if isinstance(db, Path) and not db.is_file():
        raise CliError(
            f"{db_name(db)}: no such database (a study database is results/<study id>.sqlite)"
        )
    who = args.participant if args.enrolled is None else _enrolled(db, args.enrolled)
    with Store.open(db) as store:
        known = store.withdrawal.participants()
        if who not in known:
            if args.enrolled is not None:
                raise CliError(
                    f"--enrolled: no participant in {db_name(db)} has this platform id (its "
                    f"participant id would be {who}); nothing was deleted"
                )
            raise CliError(check.unknown_participant(db_name(db), who, known))
        busy = store.withdrawal.live_session(who)
        if busy:
            raise CliError(f"--participant {who}: {busy}; nothing was deleted")
        planned = store.withdrawal.row_counts(who)
        print(
            f"Withdraw {who} from {db_name(db)}: deletes {check.say_counts(planned)}"
            + (", and their invitation" if store.withdrawal.is_invited(who) else "")
            + ". This cannot be undone."
        )
        if not args.yes:
            _confirm(who, command("withdraw", db, "--participant", who, "--yes"))
        counts = withdraw_invited(store, who)
        remains = store.withdrawal.clear_remains()
    gone = {**counts, "runs": planned["runs"]}
    invitation = counts.get("invitations", 0)
    print(
        f"Withdrew {who}: deleted {check.say_counts(gone)}"
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


def _confirm(who: str, without_asking: str) -> None:
    """Ask for the participant id on the terminal; refuse without one or a wrong answer."""
    from uxlab.cli import CliError

    if not (sys.stdin and sys.stdin.isatty()):
        raise CliError(
            f"no terminal to confirm on: nothing was deleted; to withdraw without asking: "
            f"{without_asking}"
        )
    try:
        answer = input(f"Type the participant id ({who}) to confirm: ").strip()
    except EOFError:
        answer = ""
    if answer != who:
        raise CliError("not confirmed: nothing was deleted")


def _enrolled(db: Path | str, platform_id: str) -> str:
    """The participant id open enrolment gave `platform_id` (with the salt kept in `db`)."""
    from uxlab.host.enrolment import participant_of

    who, adopted = participant_of(db, platform_id)
    if adopted is not None:
        print(
            f"Adopted the enrolment salt of {adopted} into the database (existing "
            "participants keep their ids); the file is no longer read."
        )
    return who
