"""`uxlab host STUDY.toml [--db PATH] [--bind ADDR] [--port PORT | --ssh PORT] [--fps N]
[--enrol PARAM [--completion-url URL]]`.

Hosts a study for remote participants. By default in the browser (`uxlab.host.web_server`):
each participant opens their invitation link (`uxlab invite --base-url`) or, with `--enrol`,
the study link with a recruitment platform's participant id in it, and takes part in a
terminal in the browser tab. With `--ssh PORT`, over SSH (`uxlab.host.ssh_server`): each
invited participant runs `ssh -p PORT CODE@HOST`. Either way the flow is `uxlab run`'s.
Listens on loopback unless `--bind` says otherwise. Runs until Ctrl+C or SIGTERM; open
sessions are then hung up (a clean quit) before it exits.
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

from uxlab.cli.options import add_db_option, db_name


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "host",
        help="host a study for remote participants (in the browser, or over SSH)",
        description="Host a study for remote participants. In the browser (the default): a "
        "participant opens their invitation link (`uxlab invite --base-url URL`) or, with "
        "--enrol, the study link with a recruitment platform's id in it. Over SSH (--ssh "
        "PORT): a participant runs `ssh -p PORT CODE@HOST` with the code from `uxlab invite`; "
        "the host key is kept beside the database (DB.ssh_host_key).",
    )
    parser.add_argument("study", metavar="STUDY.toml", help="the study file")
    add_db_option(parser)
    parser.add_argument(
        "--ssh",
        type=int,
        metavar="PORT",
        help="serve over SSH on this TCP port instead of the web (0: any free port)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=8350,
        metavar="PORT",
        help="web: the HTTP port (default 8350; 0: any free port, printed at start)",
    )
    parser.add_argument(
        "--fps",
        type=int,
        metavar="N",
        help="web: the participants' frame cap (default 240, or UXLAB_FPS)",
    )
    parser.add_argument(
        "--max-open",
        type=int,
        default=20,
        metavar="N",
        help="web: at most N participants at once; one more is asked to come back later "
        "(default 20)",
    )
    parser.add_argument(
        "--enrol",
        metavar="PARAM",
        help="web: open enrolment; the link's query parameter PARAM (e.g. PROLIFIC_PID) "
        "names the participant (only a salted hash of it is stored)",
    )
    parser.add_argument(
        "--completion-url",
        metavar="URL",
        help="web, with --enrol: where a participant who completed the study is sent "
        "(e.g. the platform's completion link with its code)",
    )
    parser.add_argument(
        "--bind",
        default="127.0.0.1",
        metavar="ADDR",
        help="address to listen on (default 127.0.0.1: this machine only)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio  # here, not at the top: every command registers this one

    from uxlab.cli import CliError
    from uxlab.host.pty_program import program_vars
    from uxlab.store import Store, default_db_path
    from uxlab.store.invitations import count_invitations
    from uxlab.study import load_study

    hosting = None
    if args.ssh is None:
        from uxlab.host.web_run import web_hosting

        hosting = web_hosting(args.port, args.fps, args.max_open, args.enrol, args.completion_url)
    else:
        _check_ssh(args)
    study = load_study(args.study)
    db = args.db if args.db is not None else default_db_path(study)
    with Store.open(db) as store:
        invited = count_invitations(store, study.id)
    if invited == 0 and (hosting is None or hosting.enrol is None):
        raise CliError(
            f"{db_name(db)}: no invitations for study {study.id!r}; make some first with "
            f"`uxlab invite {args.study} --db {db_name(db)} -n 10`"
            + (", or take participants from a recruitment platform with --enrol PARAM"
               if hosting is not None else "")
        )  # fmt: skip
    passed = program_vars(study, db)
    if hosting is not None:  # in the browser
        import socket

        from uxlab.host.web_run import serve_web

        try:
            sock = socket.create_server((args.bind, args.port))
        except OSError as exc:
            raise CliError(
                f"--port {args.port} --bind {args.bind}: cannot listen ({exc})"
            ) from None
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve_web(Path(args.study), study.id, db, invited, sock, hosting, passed))
        return 0
    from uxlab.host.ssh_run import serve_ssh

    try:
        asyncio.run(serve_ssh(Path(args.study), study.id, db, invited, args.bind, args.ssh, passed))
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        raise CliError(f"--ssh {args.ssh} --bind {args.bind}: cannot listen ({exc})") from None
    return 0


def _check_ssh(args: argparse.Namespace) -> None:
    """Refuse what `--ssh` cannot do, before anything is opened."""
    from uxlab.cli import CliError

    if not 0 <= args.ssh <= 65535:
        raise CliError(f"--ssh {args.ssh}: a TCP port is 0..65535 (e.g. --ssh 2222)")
    for given, name in ((args.enrol, "--enrol"), (args.completion_url, "--completion-url")):
        if given is not None:
            raise CliError(f"{name}: open enrolment is for the browser; leave out --ssh")
