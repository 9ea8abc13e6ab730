"""`uxlab invite STUDY.toml [--db PATH] [-n N] [-o FILE] [--base-url URL]`.

Makes N single-participant invitation codes for remote participants (`uxlab host`), each
bound to a new pseudonymous participant id. The codes are printed (or written to FILE,
readable by its owner only) once: the database keeps only their SHA-256. With `--base-url`
each line also has the participant's browser link, `URL#CODE` (the code in the fragment,
which browsers never send to a server, so no proxy or server log holds it).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from uxlab.cli.options import add_db_option
from uxlab.cli.places import add_out_option


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "invite",
        help="make invitation codes for remote participants",
        description="Make N unguessable single-participant invitation codes, each bound to a "
        "pseudonymous participant id. A participant connects with `ssh -p PORT CODE@HOST` "
        "(see `uxlab host`). The codes are shown only now: the database keeps their hashes.",
    )
    parser.add_argument("study", metavar="STUDY.toml", help="the study file")
    add_db_option(parser)
    parser.add_argument("-n", type=int, default=1, metavar="N", help="how many (default 1)")
    add_out_option(
        parser,
        "write `code<TAB>participant` lines to FILE (mode 0600) instead of printing them",
        metavar="FILE",
        type=Path,
        old_spelling=True,
    )
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help="add each participant's browser link, URL#CODE (URL: where `uxlab host` is "
        "reached, e.g. https://study.example.org/)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from uxlab.cli import CliError
    from uxlab.store import Store, default_db_path
    from uxlab.store.invitations import create_invitations
    from uxlab.study import load_study

    if args.n < 1 or args.n > 100_000:
        raise CliError(f"-n {args.n}: make between 1 and 100000 invitations (e.g. -n 50)")
    base = args.base_url
    if base is not None:
        from urllib.parse import urlsplit

        parts = urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
            raise CliError(
                f"--base-url {base!r}: give the http(s) address participants open, without "
                "a '#' part (e.g. --base-url https://study.example.org/)"
            )
    if args.out is not None and args.out.exists():
        raise CliError(f"-o {args.out}: the file exists; choose a new file name")
    if args.out is not None:  # before any code is made: they are shown only once
        try:
            args.out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CliError(f"-o {args.out}: cannot make its folder ({exc.strerror})") from exc
    study = load_study(args.study)
    db = args.db if args.db is not None else default_db_path(study)
    with Store.open(db) as store:
        made = create_invitations(store, study.id, args.n)

    def link(code: str) -> str:
        return f"\t{base}#{code}" if base is not None else ""

    lines = "".join(f"{inv.code}\t{inv.participant}{link(inv.code)}\n" for inv in made)
    if args.out is None:
        print(lines, end="")
        return 0
    fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(lines)
    print(f"uxlab invite: {len(made)} codes for study {study.id!r} written to {args.out}")
    return 0
