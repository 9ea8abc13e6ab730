"""Kill a study day's processes at random and check that no committed answer is lost.

    uv run python benchmarks/durability_torture.py [--rounds 40] [--seed 1] [--sims 3]
        [--ptys 1] [--hosts 1] [--web-tabs 0] [--no-readers] [--jitter-ms 400]
        [--max-lines 30] [--keep DIR] [--postgres [--outages]]

With `--postgres` the study database is a PostgreSQL database on a server the benchmark
starts (the OS package's, as the tests do) instead of a SQLite file; the writers are the
simulators and the participants' programs (`--hosts` and `--web-tabs` are SQLite only).
With `--outages` too, in every round the server is stopped at once (`pg_ctl stop -m
immediate`, as a crash or a failover) at a random moment and started again a random 0.5-4 s
later: the participants' programs must show "Reconnecting…" and go on, their kills may
fall in the outage (a program started again while the server is away is refused with a
clear message and started in the next round: counted, not a violation), and nothing logged
as committed may be missing. A simulator or reader that meets the outage stops with the
server's "cannot be reached" in one line (counted, not a violation).

In every mode no participant may end up under a second identity: every participant's
program keeps the id it was started with (a session under any other id is a violation),
also when it is started again while its killed predecessor still holds the session.

One SQLite study database (the tests' tiny study with three TTFT levels) and, at once:

- `--sims` simulated participants' programs: `uxlab simulate` (the session controller and
  the store a participant's program uses, on a virtual clock), half of them `--durable`;
- `--ptys` participants' programs as the web and SSH hosts run them: `python -m
  uxlab.cli.remote_participant STUDY DB PARTICIPANT` on a pseudo-terminal of its own, the
  real Textual app, fed a fixed cycle of keys (a, Enter, y, 4, o, k, r) that takes any
  screen of the study forward;
- `--hosts` processes holding the study database open twice as `uxlab host` does (one
  store for codes and states, `PaintWriter`'s thread with its own store, and now and then
  an export's read-only connection) and storing paint reports through `PaintWriter` and
  `record_paints`, as the web host does;
- with `--web-tabs N`, a real `uxlab host` (browser mode) and N tabs over WebSockets
  (`wsproto`): hello with an invitation code, pongs, a paint report for every mark, the
  same key cycle; a tab whose program ended unfinished opens its link again (a resume).
  The host's programs log through the same hooks (a `sitecustomize` on `PYTHONPATH`);
- unless `--no-readers`, `uxlab export`, `uxlab verify` and `uxlab report` run one after
  another while the writers are live (a fifth of them killed on purpose).

Every writer logs to a side file, after the store call has returned, what it saw committed
(`COMMIT`, `START` with the resume count, `END` answers, `STATE completed`, `PAINT`), one
`os.write` per line. In each round every writer is killed once, at a random point (after a
random number of its own log lines, then a random `--jitter-ms`) with SIGKILL, SIGHUP,
SIGINT or SIGTERM (the web host: one of its programs, later the host itself, whose
programs are then hung up); the next round starts them again, so unfinished sessions are
resumed. After each round, with nothing running: `PRAGMA integrity_check` is `ok`; every
logged commit is stored with its outcome, responses, events and audit digest; every logged
paint and end answer is stored; every session is consistent (its trials numbered without
gaps, at most one in flight and only the last, `resumed_count` equal to its `resume` audit
entries and to its runs less one, a completed session with no trial in flight); `uxlab
verify` passes (trial lists, schedules, the audit chain); `uxlab export` works and writes a
row for every stored trial. Readers that ran during the round must have succeeded (one
killed on purpose excepted), and writers must not end unasked (a write locked out past its
busy timeout would). Prints counts and every violation; exit status 1 on any violation.

`tests/test_durability_torture.py` runs two rounds of the same code with kills at exact log
lines (no jitter).

Results, 2026-12-03, on the shared 2-core machine (other people's test runs alongside):

1. `--rounds 45 --seed 2 --sims 4 --ptys 2 --hosts 1` (readers on; `uptime` load 14.5 at
   the start, 4.0 at the end; 1,149 s): 249 kills (SIGHUP 66, SIGINT 54, SIGKILL 60,
   SIGTERM 69). Logged as committed and found after every round: 5,091 trials, 1,950
   paints, 712 starts/resumes, 569 completions, 62 end answers (108,830 checks, each round
   checking all so far). The database: 570 sessions, 5,192 trials, 105,307 events, 142
   resumes, 98 trials interrupted. integrity_check, verify and export passed 45 of 45;
   265 reader runs while writing: 225 ran to the end, all exit 0; 40 killed on purpose.
   No program showed "Could not save". Violations: 0.
2. `--rounds 30 --seed 3 --sims 3 --ptys 1 --hosts 1 --web-tabs 3`, stopped after 13
   rounds (75 kills, 0 violations flagged) because of what it showed by hand: a program of
   the web host alive 4 minutes after its host was killed, its terminal gone, a core at 65%
   (`do_epoll_wait`; py-spy: Textual's input thread polling). Its host had been killed while
   starting it, before the program made the terminal its controlling one: no SIGHUP, reads
   at end-of-file, which Textual polls again at once; it held its participant's session, so
   opening the link again was refused. Fixed in `uxlab/tui/hangup.py` (the first failed
   write to the terminal counts as a hang-up), `tests/test_run_lost_terminal.py`; the
   benchmark now finds such a program by its command line and reports it.
3. The same with `--rounds 25 --seed 4` (load 4.6 at the start and the end; 490 s): 156
   kills (SIGHUP 40, SIGINT 39, SIGKILL 48, SIGTERM 29; 25 of the web host, 25 of its
   programs). One
   violation, of the benchmark: an export that ran before any study was registered (only
   the web host's invitations) refused, rightly; such a refusal is no longer counted.
4. `--rounds 35 --seed 5 --sims 3 --ptys 1 --hosts 1 --web-tabs 3` (load 3.3 at the
   start, 7.9 at the end; 797 s): 220 kills (SIGHUP 59, SIGINT 52, SIGKILL 63, SIGTERM 46;
   35 of the web host, 35 of its programs). Logged as committed and found after every
   round: 2,313 trials, 7,536 paints (5,266 through the web host's WebSockets), 455
   starts/resumes, 256 completions, 40 end answers (42,754 trial checks in all). The
   database: 263 sessions, 2,401 trials, 48,744 events, 192 resumes, 85 trials interrupted.
   integrity_check, verify and export passed 35 of 35; 172 reader runs while writing: 147
   ran to the end, all exit 0; 25 killed on purpose. Violations: 0.

In all, 700 kills. No committed trial, answer, event, paint, end answer or resume count
was ever missing or changed, `PRAGMA integrity_check` was always `ok`, the audit chain
always verified, and no reader failed or held a writer up past its busy timeout.

With a PostgreSQL server stopped at once in every round (2026-12-06, the same machine with
three other engineers' jobs, load average 14-25):

5. `--rounds 20 --seed 21 --sims 2 --ptys 2 --hosts 0 --postgres --outages`, before the
   fixes it led to: participants' programs ended up under second identities. A session
   opening while the server was away fell back to the id screen with a new id, and a
   program started again for an id that had just completed the study was offered the id
   screen too; the key cycle typed new ids there (`ok`, `ay4okr...`). Fixed in
   `uxlab/tui/study_app.py` (the opening waits on "Reconnecting…" and tries the same id; a
   given id that cannot take part ends in plain words), `tests/test_outage_identity.py`.
6. The same after those fixes (703 s): 34 kills (SIGHUP 5, SIGINT 11, SIGKILL 11, SIGTERM
   7), 20 outages, 5,577 commit checks; one violation: a program ended by an internal
   error (`ScreenStackError`), an attention check answered twice before its screen had
   gone. Fixed in `uxlab/tui/check_screen.py` and `trial_screen.py`,
   `tests/test_double_answer.py`.
7. `--rounds 25 --seed 22 --sims 2 --ptys 2 --hosts 0 --postgres --outages` (load 14.3 at
   the start, 18.6 at the end; 799 s): 51 kills (SIGHUP 14, SIGINT 18, SIGKILL 11, SIGTERM
   8), 25 outages. Logged as committed and found after every round: 13,130 commit checks,
   2,064 starts/resumes, 451 end answers (cumulative over rounds). The database: 108
   sessions, 982 trials, 21,997 events, 43 resumes, 16 trials interrupted. Stopped in one
   clear line by an outage, not counted as violations: 13 simulator runs and 30 reader
   runs. verify and export passed 25 of 25; no participant under a second identity.
   Violations: 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIGNALS = (signal.SIGKILL, signal.SIGHUP, signal.SIGINT, signal.SIGTERM)
KEY_CYCLE = [b"a", b"\r", b"y", b"\r", b"4", b"\r", b"o", b"k", b"\r", b"r"]
"""Keys that take every screen of the tiny study forward (consent a, answers, Enter; r
retries a write that found the database locked past the app's busy timeout)."""
SIMULATED_PER_RUN = 40
"""Participants one `uxlab simulate` run takes through (the next seed after that)."""


# --- the writers' side: hooks that log what the store said was committed ------------------


class SideLog:
    """One line per store call that returned, written with a single `os.write`."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def line(self, *words: object) -> None:
        os.write(self.fd, (" ".join(str(w) for w in words) + "\n").encode())


def install_hooks(log: SideLog) -> None:
    """Log each committed trial, start/resume and completion after the store returns."""
    from uxlab.store.answers import normalise_responses
    from uxlab.store.end_answers import EndAnswers
    from uxlab.store.sessions import Sessions
    from uxlab.store.trials import Trials

    commit_trial = Trials.commit
    commit_end = EndAnswers.commit
    start = Sessions.start_or_resume
    set_state = Sessions.set_state

    def logged_commit(
        self, session, trial_index, outcome, timings=None, responses=None, events=None
    ):
        digest = commit_trial(self, session, trial_index, outcome, timings, responses, events)
        questions = session.study.trial_response_questions
        n_answers = len(normalise_responses(questions, responses or {}, ""))
        log.line("COMMIT", session.id, trial_index, outcome, n_answers, len(events or []), digest)
        return digest

    def logged_end(self, session, responses):
        commit_end(self, session, responses)
        n_answers = len(normalise_responses(session.study.end_questions, responses, ""))
        log.line("END", session.id, n_answers)

    def logged_start(self, *args, **kwargs):
        session = start(self, *args, **kwargs)
        log.line("START", session.id, session.resumed_count)
        return session

    def logged_state(self, session, state, by=None):
        set_state(self, session, state, by)
        if state == "completed":
            log.line("STATE", session.id, state)

    from uxlab.store import browser_paints

    record_paints = browser_paints.record_paints

    def logged_paints(store, paints):
        paints = list(paints)
        n = record_paints(store, paints)
        if n == len(paints):  # every row's session known (nothing withdrawn here)
            for p in paints:
                log.line("PAINTED", p.session_id, p.trial_index, p.chunk_index)
        return n

    browser_paints.record_paints = logged_paints  # before `uxlab.host.web_server` takes it
    Trials.commit = logged_commit  # type: ignore[method-assign]
    EndAnswers.commit = logged_end  # type: ignore[method-assign]
    Sessions.start_or_resume = logged_start  # type: ignore[method-assign]
    Sessions.set_state = logged_state  # type: ignore[method-assign]


def painted_ms(session_id: str, trial_index: int, chunk: int) -> float:
    """The painted time a host stores for a chunk: the same on every write of it."""
    return zlib.crc32(f"{session_id}/{trial_index}/{chunk}".encode()) % 100_000 / 10


async def host_worker(db: str, study_path: str, log: SideLog, seed: int) -> None:
    """A web host's connections: the codes store, `PaintWriter`'s store, paints stored."""
    from uxlab.host.web_server import PaintWriter
    from uxlab.store import Store
    from uxlab.store.browser_paints import ChunkPaint
    from uxlab.store.enrolment_salt import enrolment_salt
    from uxlab.store.invitations import count_invitations
    from uxlab.store.open_checks import open_read_only
    from uxlab.study import load_study

    study = load_study(study_path)
    with Store.open(db) as first:  # `run_web` counts invitations with a store of its own
        count_invitations(first, study.id)
    store = Store.open(db)  # read by the host for codes and states
    enrolment_salt(store, Path(db).with_name("enrolment.salt"), make=True)
    paints = PaintWriter(str(Path(db).resolve()))
    browser = open_read_only(db)  # the trials a participant's browser would paint
    rng = random.Random(seed)
    log.line("READY", os.getpid())
    n = 0
    while True:
        rows = browser.execute(
            "SELECT t.session_id, t.trial_index, s.participant FROM trials t "
            "JOIN sessions s ON s.session_id = t.session_id WHERE t.trial_index >= 0 "
            "ORDER BY t.session_id DESC, t.trial_index DESC LIMIT 40"
        ).fetchall()
        if rows:
            sid, idx, participant = rng.choice(rows)
            store.sessions.state_of(participant)  # what the host reads for a page
            batch = [
                ChunkPaint(sid, idx, k, painted_ms(sid, idx, k), 1.5, 0.25)
                for k in range(rng.randint(1, 6))
            ]
            stored = await paints.write(batch)
            if stored == len(batch):
                for p in batch:
                    log.line("PAINT", p.session_id, p.trial_index, p.chunk_index, p.painted_ms)
        n += 1
        if n % 25 == 0:  # an export's read-only connection in the host's process
            open_read_only(db).close()
        await asyncio.sleep(rng.uniform(0.005, 0.05))  # paint reports arrive per frame


def worker_main(argv: list[str]) -> int:
    """`--worker sim|pty|host LOG ...`: a writer of the torture, with its side log."""
    kind, log_path, *rest = argv
    log = SideLog(log_path)
    install_hooks(log)
    if kind == "sim":
        from uxlab.cli import main as uxlab_main

        return uxlab_main(["simulate", *rest])
    if kind == "pty":
        from uxlab.cli import remote_participant

        return remote_participant.main(rest)
    if kind == "host":
        db, study, seed = rest
        asyncio.run(host_worker(db, study, log, int(seed)))
        return 0
    raise SystemExit(f"unknown worker {kind!r}")


# --- the driver ----------------------------------------------------------------------------


@dataclass
class Config:
    """One torture run."""

    workdir: Path
    rounds: int = 40
    seed: int = 1
    sims: int = 3
    ptys: int = 1
    hosts: int = 1
    web_tabs: int = 0
    """Participants' browser tabs on one real `uxlab host` (0: no such host)."""
    readers: bool = True
    jitter_s: float = 0.4
    """After the chosen log line, a random wait up to this before the signal (0: at once)."""
    max_lines: int = 30
    """A writer is killed after a random 1..max_lines of its own log lines this round."""
    round_timeout_s: float = 240.0
    reader_kill_share: float = 0.2
    """The share of reader runs killed (at a random moment of their run) on purpose."""
    reader_commands: tuple[str, ...] = ("export", "export", "verify", "verify", "report")
    """What the readers run, drawn at random (a report is the slowest, so drawn less)."""
    reader_runs_per_round: int = 0
    """0: readers run back to back for the whole round (the benchmark's hammering); N: at
    most N a round, each distinct command of `reader_commands` in turn, the turn carried
    from one round to the next (the tests' small version: every kind of reader meets the
    writers, without a report's CPU over and over while a loaded machine stretches the
    round)."""
    check_every: int = 1
    log: bool = True
    postgres: bool = False
    """The study database on a PostgreSQL server the run starts (else a SQLite file)."""
    outages: bool = False
    """(PostgreSQL) stop the server at once once a round, and start it again."""


@dataclass
class Slot:
    """One writer's place: what it runs as and its processes, round after round."""

    kind: str
    index: int
    generation: int = 0
    runs: int = 0
    proc: subprocess.Popen | None = None
    master: int | None = None
    log_path: Path | None = None
    out_tail: bytearray = field(default_factory=bytearray)
    reader: threading.Thread | None = None
    saw_save_failed: bool = False


@dataclass
class WebRound:
    """This round's plan for the web host: after how many log lines what is killed."""

    log_path: Path
    program_at: int
    program_signal: int
    host_at: int
    host_signal: int
    program_killed: bool = False
    host_killed: bool = False
    stuck: bool = False
    done: bool = False


@dataclass
class Tally:
    """What a run did and found."""

    kills: Counter = field(default_factory=Counter)
    exits: Counter = field(default_factory=Counter)
    reader_runs: Counter = field(default_factory=Counter)
    reader_kills: int = 0
    commits_checked: int = 0
    paints_checked: int = 0
    starts_checked: int = 0
    ends_checked: int = 0
    web_endings: Counter = field(default_factory=Counter)
    """How each web tab's visit ended: the program's status (-1 closed, -3 round over)."""
    save_failed_screens: int = 0
    """Participant programs that showed "Could not save" (a write locked out past the app's
    busy timeout: retried with r, nothing lost, but the participant saw it)."""
    rounds: int = 0
    outages: int = 0
    outage_refusals: Counter = field(default_factory=Counter)
    """Writers and readers that stopped with "cannot be reached" during an outage."""
    violations: list[str] = field(default_factory=list)


class Torture:
    """The driver: starts writers and readers, kills them, checks the database."""

    def __init__(self, config: Config) -> None:
        self.c = config
        self.rng = random.Random(config.seed)
        self.reader_turn = 0
        """With `reader_runs_per_round`: the next command in turn, across rounds."""
        self.work = config.workdir
        self.logs = self.work / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.db = self.work / "study.sqlite"
        self.study = self.work / "tiny.toml"
        sys.path.insert(0, str(ROOT / "tests"))
        if not self.study.exists():
            from helpers.studies import tiny_study

            tiny_study(self.work, levels="20, 60, 120")
        self.cluster = None
        self.db_arg = str(self.db)
        """What the commands are given: the SQLite file, or the PostgreSQL URL."""
        if config.postgres:
            import tempfile

            from helpers.postgres import PostgresCluster

            if config.hosts or config.web_tabs:
                raise SystemExit("--postgres: the hosts' writers are SQLite only (--hosts 0)")
            self.cluster = PostgresCluster.start(Path(tempfile.mkdtemp(prefix="uxlab-pg-")))
            self.db_arg = self.cluster.database()
        self.outage_until = 0.0
        self.slots = (
            [Slot("sim", i) for i in range(config.sims)]
            + [Slot("pty", i) for i in range(config.ptys)]
            + [Slot("host", i) for i in range(config.hosts)]
        )
        self.tally = Tally()
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", "TERM": "xterm-256color"}
        self.env.pop("UXLAB_FPS", None)
        self.web: WebHost | None = None
        if config.web_tabs:
            codes_file = self.work / "codes.tsv"
            if not codes_file.exists():
                subprocess.run([sys.executable, "-m", "uxlab", "invite", str(self.study), "--db",
                                self.db_arg, "-n", str(50 * config.web_tabs), "-o",
                                str(codes_file)], cwd=self.work, env=self.env, check=True,
                               capture_output=True)  # fmt: skip
            codes = [ln.split("\t")[0] for ln in codes_file.read_text().splitlines() if ln]
            self.web = WebHost(self, [codes[i :: config.web_tabs] for i in range(config.web_tabs)])
        self.web_runs = 0

    def say(self, text: str) -> None:
        if self.c.log:
            print(text, flush=True)

    # -- writers ----------------------------------------------------------------------------
    def _command(self, slot: Slot) -> list[str]:
        assert slot.log_path is not None
        head = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--worker",
            slot.kind,
            str(slot.log_path),
        ]
        if slot.kind == "sim":
            seed = 1000 * (slot.index + 1) + slot.generation
            durable = ["--durable"] if slot.index % 2 == 0 else []
            return [
                *head,
                str(self.study),
                "-n",
                str(SIMULATED_PER_RUN),
                "--db",
                self.db_arg,
                "--seed",
                str(seed),
                *durable,
            ]
        if slot.kind == "pty":
            return [*head, str(self.study), self.db_arg, f"P-T{slot.index}G{slot.generation}"]
        return [*head, str(self.db), str(self.study), str(self.rng.randrange(1 << 30))]

    def start(self, slot: Slot) -> None:
        slot.runs += 1
        slot.log_path = self.logs / f"{slot.kind}{slot.index}-{slot.runs:04d}.log"
        slot.log_path.touch()
        slot.out_tail.clear()
        slot.saw_save_failed = False
        if slot.kind != "pty":
            err = open(slot.log_path.with_suffix(".err"), "wb")  # noqa: SIM115
            slot.proc = subprocess.Popen(
                self._command(slot),
                cwd=self.work,
                env=self.env,
                stdout=err,
                stderr=err,
                stdin=subprocess.DEVNULL,
            )
            err.close()
            return
        import fcntl
        import struct
        import termios

        master, tty = os.openpty()
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        slot.proc = subprocess.Popen(
            self._command(slot),
            cwd=self.work,
            env=self.env,
            stdin=tty,
            stdout=tty,
            stderr=tty,
            start_new_session=True,
        )
        os.close(tty)
        slot.master = master
        slot.reader = threading.Thread(target=self._press_keys, args=(slot, master), daemon=True)
        slot.reader.start()

    def _press_keys(self, slot: Slot, master: int) -> None:
        """Read the program's screen; type the next key of the cycle whenever it has been
        still for a moment (pacing only: no check depends on when a key lands)."""
        import select

        k = 0
        while True:
            ready, _, _ = select.select([master], [], [], 0.15)
            try:
                if not ready:  # the screen has been still: the next key
                    os.write(master, KEY_CYCLE[k % len(KEY_CYCLE)])
                    k += 1
                    continue
                data = os.read(master, 65536)
            except OSError:  # EIO: the program has ended
                return
            if not data:
                return
            slot.out_tail += data
            del slot.out_tail[:-8192]
            if b"Could not save" in data:
                slot.saw_save_failed = True

    def lines(self, slot: Slot) -> int:
        assert slot.log_path is not None
        with open(slot.log_path, "rb") as fh:
            return fh.read().count(b"\n")

    def finished(self, slot: Slot, status: int, killed: bool) -> None:
        """Reap a writer; a status nobody asked for is a violation (with its last output)."""
        self.tally.exits[f"{slot.kind}:{status}"] += 1
        if slot.master is not None:
            if slot.reader is not None:
                slot.reader.join(timeout=5)
            os.close(slot.master)
            slot.master = None
            assert slot.log_path is not None
            slot.log_path.with_suffix(".screen").write_bytes(bytes(slot.out_tail))
            self.tally.save_failed_screens += slot.saw_save_failed
        if killed:
            return
        if status == 0:  # done: the next participants (a new seed, a new participant id)
            slot.generation += 1
            return
        assert slot.log_path is not None
        if slot.kind == "pty":
            tail = slot.out_tail.decode("utf-8", "replace")[-1500:]
        else:
            tail = slot.log_path.with_suffix(".err").read_text(errors="replace")[-1500:]
        if (
            self.c.outages
            and "Traceback" not in tail
            and ("cannot be reached" in tail or "cannot open the database" in tail)
        ):  # met the outage (started while the server was away): one clear line
            self.tally.outage_refusals[slot.kind] += 1
            return
        self.violation(f"{slot.kind}{slot.index} run {slot.runs} exited {status} unasked:\n{tail}")

    def violation(self, text: str) -> None:
        self.tally.violations.append(text)
        self.say(f"VIOLATION: {text}")

    # -- readers ----------------------------------------------------------------------------
    def _readers(self, stop: threading.Event, round_no: int) -> None:
        n = 0
        cap = self.c.reader_runs_per_round
        in_turn = list(dict.fromkeys(self.c.reader_commands))
        while not stop.is_set() and (cap == 0 or n < cap):
            n += 1
            if cap:  # in turn across rounds: a short round does not start the cycle again
                what = in_turn[self.reader_turn % len(in_turn)]
                self.reader_turn += 1
            else:
                what = self.rng.choice(self.c.reader_commands)
            out = self.work / f"reader-{what}"
            cmd = {
                "export": ["export", self.db_arg, "--out", str(out)],
                "verify": ["verify", self.db_arg],
                "report": [
                    "report",
                    self.db_arg,
                    "--out",
                    str(out),
                    "--n-boot",
                    "50",
                    "-q",
                    "--no-participant-fits",
                ],
            }[what]
            err_path = self.logs / f"reader-{round_no}-{n}-{what}.err"
            with open(err_path, "wb") as err:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "uxlab", *cmd],
                    cwd=self.work,
                    env=self.env,
                    stdout=err,
                    stderr=err,
                )
            kill = self.rng.random() < self.c.reader_kill_share
            if kill:
                self._wait_a_little(proc, self.rng.uniform(0.2, 3.0))
                if proc.poll() is None:
                    proc.send_signal(self.rng.choice(SIGNALS))
                    self.tally.reader_kills += 1
            status = proc.wait()
            self.tally.reader_runs[f"{what}:{status}"] += 1
            if not kill and status != 0 and self._met_the_outage(err_path):
                self.tally.outage_refusals[f"reader {what}"] += 1
                continue
            if not kill and status != 0 and not self._nothing_yet(err_path):
                text = err_path.read_text(errors="replace")[-1500:]
                self.violation(f"reader {what} exited {status} while writers ran:\n{text}")

    @staticmethod
    def _wait_a_little(proc: subprocess.Popen, seconds: float) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=seconds)

    def _met_the_outage(self, err_path: Path) -> bool:
        """A command that stopped, in one line, because the server was away (an outage)."""
        if not self.c.outages:
            return False
        text = err_path.read_text(errors="replace")
        return "Traceback" not in text and (
            "cannot be reached" in text or "cannot open the database" in text
        )

    @staticmethod
    def _nothing_yet(err_path: Path) -> bool:
        """A reader of a database that holds only invitations so far (the web host's codes
        are made first) refuses, rightly: no study is registered until a session starts; so
        does a report while the trials stored show one latency level only, a report whose
        exclusions leave no trial yet (exit 1: e.g. simulated sessions beside the first real
        one's practice), and any reader of a PostgreSQL database no writer has made its
        tables in yet."""
        text = err_path.read_text(errors="replace")
        return any(
            why in text
            for why in (
                "no study registered yet",
                "no latency factor with 3 or more",
                "every trial was excluded",
                "(no uxlab tables)",  # a PostgreSQL database before its first writer
            )
        )

    # -- one round ----------------------------------------------------------------------------
    def round(self, round_no: int) -> None:
        plan = {}
        for slot in self.slots:
            self.start(slot)
            wait = self.rng.uniform(0, self.c.jitter_s) if self.c.jitter_s else 0.0
            plan[id(slot)] = (self.rng.randint(1, self.c.max_lines), self.rng.choice(SIGNALS), wait)
        stop = threading.Event()
        readers = threading.Thread(target=self._readers, args=(stop, round_no), daemon=True)
        if self.c.readers:
            readers.start()
        live = list(self.slots)
        fire_at: dict[int, float] = {}
        killed: set[int] = set()
        give_up = time.monotonic() + self.c.round_timeout_s
        web = self._start_web() if self.web is not None else None
        outage = self._plan_outage()
        while live or (web is not None and not web.done):
            outage = self._outage_step(outage)
            if web is not None and not web.done:
                self._drive_web(web, give_up)
            for slot in list(live):
                assert slot.proc is not None
                status = slot.proc.poll()
                if status is not None:
                    live.remove(slot)
                    self.finished(slot, status, id(slot) in killed)
                    continue
                if id(slot) in killed:
                    continue
                n_lines, sig, wait = plan[id(slot)]
                if id(slot) not in fire_at and self.lines(slot) >= n_lines:
                    fire_at[id(slot)] = time.monotonic() + wait
                if id(slot) in fire_at and time.monotonic() >= fire_at[id(slot)]:
                    slot.proc.send_signal(sig)
                    killed.add(id(slot))
                    self.tally.kills[f"{slot.kind}:{signal.Signals(sig).name}"] += 1
                if time.monotonic() > give_up:
                    tail = slot.out_tail.decode("utf-8", "replace")[-1500:]
                    self.violation(f"{slot.kind}{slot.index} stuck in round {round_no}: {tail}")
                    slot.proc.kill()
                    killed.add(id(slot))
            time.sleep(0.01)  # poll: the writers' side files and their exit statuses
        if outage is not None and outage[0] == "away":
            self._server_back()
        stop.set()
        if self.c.readers:
            readers.join()
        self.tally.rounds += 1

    # -- a PostgreSQL outage ---------------------------------------------------------------------
    def _plan_outage(self) -> list | None:
        """This round's outage: [state, when it begins, how long] (None: no outages). It is
        armed until a writer has logged its first line (the writers are up), then begins a
        random 0.2-2 s later and lasts a random 0.5-4 s."""
        if not self.c.outages:
            return None
        return ["armed", 0.0, self.rng.uniform(0.5, 4.0)]

    def _outage_step(self, outage: list | None) -> list | None:
        """Stop the server at its moment (at once, as a crash), start it again after."""
        if outage is None or outage[0] == "done":
            return outage
        assert self.cluster is not None
        now = time.monotonic()
        if outage[0] == "armed" and any(
            s.log_path is not None and self.lines(s) > 0 for s in self.slots
        ):
            outage[0], outage[1] = "planned", now + self.rng.uniform(0.2, 2.0)
        elif outage[0] == "planned" and now >= outage[1]:
            self.cluster.stop_now()
            self.tally.outages += 1
            outage[0] = "away"
        elif outage[0] == "away" and now >= outage[1] + outage[2]:
            self._server_back()
            outage[0] = "done"
        return outage

    def _server_back(self) -> None:
        assert self.cluster is not None
        self.cluster.start_again()

    def _start_web(self) -> WebRound:
        assert self.web is not None
        self.web_runs += 1
        log_path = self.logs / f"web-{self.web_runs:04d}.log"
        log_path.touch()
        self.web.start(log_path)
        k1 = self.rng.randint(1, 3 * self.c.max_lines)
        return WebRound(
            log_path,
            k1,
            self.rng.choice(SIGNALS),
            k1 + self.rng.randint(1, 3 * self.c.max_lines),
            self.rng.choice(SIGNALS),
        )

    def _drive_web(self, w: WebRound, give_up: float) -> None:
        """Kill one of the host's programs, later the host; done once every program is gone."""
        web = self.web
        assert web is not None and web.proc is not None
        programs = web.children()
        with open(w.log_path, "rb") as fh:
            n = fh.read().count(b"\n")
        if not w.program_killed and n >= w.program_at and programs:
            os.kill(self.rng.choice(programs), w.program_signal)
            w.program_killed = True
            self.tally.kills[f"webprogram:{signal.Signals(w.program_signal).name}"] += 1
        if w.program_killed and not w.host_killed and n >= w.host_at:
            web.proc.send_signal(w.host_signal)
            w.host_killed = True
            self.tally.kills[f"webhost:{signal.Signals(w.host_signal).name}"] += 1
        status = web.proc.poll()
        if status is not None and not w.host_killed:
            out = w.log_path.with_suffix(".out").read_text(errors="replace")[-1500:]
            self.violation(f"uxlab host exited {status} unasked:\n{out}")
            w.host_killed = True
        if time.monotonic() > give_up and not w.stuck:
            w.stuck = True
            what = "its programs outlived it" if w.host_killed else "no progress"
            self.violation(f"web host round stuck: {what} (programs {sorted(web.programs)})")
            web.proc.kill()
            for pid in web.programs:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            w.host_killed = True
        if w.host_killed and status is not None and not web.programs_running():
            self.tally.exits[f"webhost:{status}"] += 1
            web.end()
            w.done = True

    # -- the checks -----------------------------------------------------------------------------
    def _connect(self):  # -> a DB-API connection to the study database
        if self.cluster is not None:
            import psycopg

            return psycopg.connect(self.db_arg, autocommit=True)
        return sqlite3.connect(self.db)

    def check(self) -> None:
        conn = self._connect()
        try:
            if self.cluster is not None and conn.execute(
                "SELECT to_regclass('trials')"
            ).fetchone() == (None,):
                return  # every writer met the outage before the first session: nothing yet
            if self.cluster is None:
                problems = conn.execute("PRAGMA integrity_check").fetchall()
                if problems != [("ok",)]:
                    self.violation(f"integrity_check: {problems[:5]}")
                    return
            self._check_logged(conn)
            self._check_sessions(conn)
            self._check_identities(conn)
        finally:
            conn.close()
        verify = subprocess.run(
            [sys.executable, "-m", "uxlab", "verify", self.db_arg],
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
        )
        if verify.returncode != 0:
            self.violation(
                f"uxlab verify exited {verify.returncode}:\n{verify.stdout[-2000:]}"
                f"{verify.stderr[-1000:]}"
            )
        out = self.work / "check-export"
        export = subprocess.run(
            [sys.executable, "-m", "uxlab", "export", self.db_arg, "--out", str(out)],
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
        )
        if export.returncode != 0:
            self.violation(f"uxlab export exited {export.returncode}: {export.stderr[-1500:]}")
            return
        conn = self._connect()
        try:
            (n_trials,) = conn.execute(
                "SELECT COUNT(*) FROM trials WHERE trial_index >= 0"
            ).fetchone()
        finally:
            conn.close()
        with open(out / "trials.csv", encoding="utf-8") as fh:
            n_rows = sum(1 for _ in fh) - 1
        if n_rows != n_trials:
            self.violation(f"export wrote {n_rows} trial rows for {n_trials} stored trials")

    def _logged(self) -> list[list[str]]:
        rows = []
        for path in sorted(self.logs.glob("*.log")):
            for text in path.read_text().splitlines():
                rows.append(text.split())
        return rows

    def _check_identities(self, conn) -> None:
        """No participant under a second identity: every session belongs to an id a writer
        was started with (`SIM-...` of the simulators, `P-T<slot>G<generation>` of the
        participants' programs; the web host's invited ids), never to one offered on a
        screen when the session was found held by another process."""
        invited = set()
        if self.web is not None:
            invited = {p for (p,) in conn.execute("SELECT participant FROM invitations")}
        for (participant,) in conn.execute("SELECT DISTINCT participant FROM sessions"):
            if re.fullmatch(r"SIM-s\d+-\d+|P-T\d+G\d+", participant) or participant in invited:
                continue
            self.violation(f"a session under the id {participant!r}, which no writer was "
                           "started with: a participant under a second identity")  # fmt: skip

    def _check_logged(self, conn: sqlite3.Connection) -> None:
        trials = {
            (s, i): (o, c)
            for s, i, o, c in conn.execute(
                "SELECT session_id, trial_index, outcome, committed_at FROM trials"
            )
        }
        answers: Counter = Counter(
            {
                (s, i): n
                for s, i, n in conn.execute(
                    "SELECT session_id, trial_index, COUNT(*) FROM responses GROUP BY 1, 2"
                )
            }
        )
        events: Counter = Counter(
            {
                (s, i): n
                for s, i, n in conn.execute(
                    "SELECT session_id, trial_index, COUNT(*) FROM events GROUP BY 1, 2"
                )
            }
        )
        digests = {
            (s, d)
            for s, d in conn.execute("SELECT subject, sha256 FROM audit WHERE action = 'trial'")
        }
        paints = {
            (s, i, k): v
            for s, i, k, v in conn.execute(
                "SELECT session_id, trial_index, chunk_index, painted_ms FROM browser_paints"
            )
        }
        sessions = {
            s: (st, r)
            for s, st, r in conn.execute("SELECT session_id, state, resumed_count FROM sessions")
        }
        for words in self._logged():
            kind = words[0]
            if kind == "COMMIT":
                sid, idx, outcome, n_ans, n_ev, digest = words[1:]
                key = (sid, int(idx))
                self.tally.commits_checked += 1
                got = trials.get(key)
                if got is None or got[0] != outcome or got[1] is None:
                    self.violation(f"committed trial {key} ({outcome}) stored as {got}")
                if answers[key] != int(n_ans) or events[key] != int(n_ev):
                    self.violation(
                        f"trial {key}: {answers[key]}/{events[key]} answers/events "
                        f"stored, {n_ans}/{n_ev} committed"
                    )
                if (sid, digest) not in digests:
                    self.violation(f"trial {key}: no audit entry with its digest {digest[:12]}")
            elif kind == "PAINT":
                sid, idx, chunk, value = words[1:]
                self.tally.paints_checked += 1
                got_paint = paints.get((sid, int(idx), int(chunk)))
                if got_paint is None or abs(got_paint - float(value)) > 1e-6:
                    self.violation(f"paint {sid}/{idx}/{chunk}={value} stored as {got_paint}")
            elif kind == "PAINTED":
                self.tally.paints_checked += 1
                if (words[1], int(words[2]), int(words[3])) not in paints:
                    self.violation(f"paint {'/'.join(words[1:4])} reported stored, not found")
            elif kind == "START":
                sid, resumed = words[1], int(words[2])
                self.tally.starts_checked += 1
                if sid not in sessions or sessions[sid][1] < resumed:
                    self.violation(
                        f"session {sid} started with resumed_count {resumed}, "
                        f"stored {sessions.get(sid)}"
                    )
            elif kind == "END":
                self.tally.ends_checked += 1
                if answers[(words[1], -1)] < int(words[2]):
                    self.violation(
                        f"session {words[1]}: {answers[(words[1], -1)]} end answers "
                        f"stored, {words[2]} committed"
                    )
            elif kind == "STATE" and sessions.get(words[1], ("?",))[0] != words[2]:
                self.violation(f"session {words[1]} {words[2]}, stored {sessions.get(words[1])}")

    def _check_sessions(self, conn: sqlite3.Connection) -> None:
        by_session: dict[str, list[tuple[int, str]]] = {}
        for sid, idx, outcome in conn.execute(
            "SELECT session_id, trial_index, outcome FROM trials WHERE trial_index >= 0 "
            "ORDER BY session_id, trial_index"
        ):
            by_session.setdefault(sid, []).append((idx, outcome))
        resumes = Counter(
            s for (s,) in conn.execute("SELECT subject FROM audit WHERE action = 'resume'")
        )
        runs = Counter(s for (s,) in conn.execute("SELECT session_id FROM session_runs"))
        for sid, state, resumed in conn.execute(
            "SELECT session_id, state, resumed_count FROM sessions"
        ):
            rows = by_session.get(sid, [])
            indexes = [i for i, _ in rows]
            if indexes != list(range(len(indexes))):
                self.violation(f"session {sid}: trial indexes {indexes}")
            running = [i for i, o in rows if o == "running"]
            if running and (len(running) > 1 or running[0] != indexes[-1] or state == "completed"):
                self.violation(f"session {sid} ({state}): trials in flight {running}")
            if resumes[sid] != resumed or runs[sid] != resumed + 1:
                self.violation(
                    f"session {sid}: resumed_count {resumed}, {resumes[sid]} resume "
                    f"entries, {runs[sid]} runs"
                )

    # -- the whole run ----------------------------------------------------------------------------
    def run(self) -> Tally:
        # A driver started with SIGHUP or SIGINT ignored (nohup, a background job) would
        # hand that on to every child, and those kills would do nothing: children start
        # with the default dispositions.
        before = {sig: signal.getsignal(sig) for sig in (signal.SIGHUP, signal.SIGINT)}
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            for r in range(1, self.c.rounds + 1):
                self.round(r)
                if r % self.c.check_every == 0 or r == self.c.rounds:
                    self.check()
                self.say(
                    f"round {r}: kills {sum(self.tally.kills.values())}, "
                    f"commits checked {self.tally.commits_checked}, "
                    f"violations {len(self.tally.violations)}"
                )
        finally:
            for sig, handler in before.items():
                signal.signal(sig, handler)
        return self.tally

    def close(self) -> None:
        """Stop the PostgreSQL server this run started (nothing for a SQLite file)."""
        if self.cluster is not None:
            self.cluster.stop_now()
            shutil.rmtree(self.cluster.folder, ignore_errors=True)


# --- a real `uxlab host` (browser mode) with participants over WebSockets -------------------

MARK = re.compile(rb"\x1b\]7311;(\d+)\x07")


class WebParticipant(threading.Thread):
    """A browser tab, as far as the host can tell: hello with an invitation code, pongs,
    paint reports for every mark, and the key cycle typed whenever the screen is still.
    Opens its link again (the same code: a resume) whenever its program ends unfinished,
    and takes the next code once its session is completed, until `stop` is set."""

    def __init__(self, port: int, codes: list[str], stop: threading.Event, tally: Tally) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.codes = codes
        self.stop = stop
        self.tally = tally

    def run(self) -> None:
        while not self.stop.is_set() and self.codes:
            try:
                status = self._visit(self.codes[0])
            except OSError:
                return  # the host is gone
            self.tally.web_endings[str(status)] += 1
            if status == 0:
                self.codes.pop(0)
            if status is None:
                return

    def _visit(self, code: str) -> int | None:
        """One tab: until the host says the program ended (its status) or the socket closes."""
        import select
        import socket

        from wsproto import ConnectionType, WSConnection
        from wsproto.events import (
            AcceptConnection,
            BytesMessage,
            CloseConnection,
            Request,
            TextMessage,
        )

        sock = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        ws = WSConnection(ConnectionType.CLIENT)
        sock.sendall(ws.send(Request(host=f"127.0.0.1:{self.port}", target="/ws")))

        def send(obj: dict) -> None:
            sock.sendall(ws.send(TextMessage(data=json.dumps(obj))))

        k = 0
        text = ""
        accepted = False
        try:
            while not self.stop.is_set():
                ready, _, _ = select.select([sock], [], [], 0.15)
                if not ready:
                    if not accepted:
                        continue
                    send({"t": "in", "d": KEY_CYCLE[k % len(KEY_CYCLE)].decode()})
                    k += 1
                    continue
                data = sock.recv(65536)
                if not data:
                    return -1
                ws.receive_data(data)
                for event in ws.events():
                    if isinstance(event, AcceptConnection):
                        accepted = True
                        send({"t": "hello", "code": code, "cols": 80, "rows": 24, "hz": 60})
                    elif isinstance(event, BytesMessage):
                        now = time.monotonic() * 1000
                        marks = [[int(n), now, now + 1.0] for n in MARK.findall(event.data)]
                        if marks:
                            send({"t": "paints", "m": marks})
                    elif isinstance(event, TextMessage):
                        text += event.data
                        if not event.message_finished:
                            continue
                        msg, text = json.loads(text), ""
                        if msg.get("t") == "ping":
                            send({"t": "pong", "h": msg["h"], "p": time.monotonic() * 1000})
                        elif msg.get("t") == "end":
                            return int(msg.get("status", -1))
                        elif msg.get("t") in ("refused", "replaced"):
                            return -2
                    elif isinstance(event, CloseConnection):
                        return -1
            return -3  # the round is over: the tab is closed
        finally:
            sock.close()


class WebHost:
    """`uxlab host STUDY --db DB --port 0` with `n` participants' tabs; its programs log
    through the hooks (`sitecustomize` on PYTHONPATH, `TORTURE_LOG`)."""

    def __init__(self, torture: Torture, codes: list[list[str]]) -> None:
        self.t = torture
        self.codes = codes
        self.proc: subprocess.Popen | None = None
        self.programs: set[int] = set()
        self.clients: list[WebParticipant] = []
        self.stop = threading.Event()

    def start(self, log_path: Path) -> None:
        hooks = self.t.work / "hooks"
        hooks.mkdir(exist_ok=True)
        (hooks / "sitecustomize.py").write_text(
            "import os, sys\n"
            "if os.environ.get('TORTURE_LOG'):\n"
            f"    sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n"
            "    import durability_torture as t\n"
            "    t.install_hooks(t.SideLog(os.environ['TORTURE_LOG']))\n"
        )
        env = {**self.t.env, "TORTURE_LOG": str(log_path), "PYTHONPATH": str(hooks)}
        out = open(log_path.with_suffix(".out"), "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "uxlab", "host", str(self.t.study), "--db", str(self.t.db),
             "--port", "0", "--bind", "127.0.0.1"],
            cwd=self.t.work, env=env, stdout=out, stderr=out,
        )  # fmt: skip
        out.close()
        port = self._port(log_path.with_suffix(".out"))
        self.stop = threading.Event()
        self.clients = [WebParticipant(port, c, self.stop, self.t.tally) for c in self.codes]
        for client in self.clients:
            client.start()

    def _port(self, out: Path) -> int:
        """The port from the host's line `... on http://127.0.0.1:PORT/ ...` (waited for)."""
        assert self.proc is not None
        while True:
            found = re.search(r"http://127\.0\.0\.1:(\d+)/", out.read_text(errors="replace"))
            if found:
                return int(found.group(1))
            if self.proc.poll() is not None:
                raise RuntimeError(f"uxlab host ended: {out.read_text(errors='replace')}")
            time.sleep(0.05)

    def children(self) -> list[int]:
        """The host's participant programs now (also remembered, to wait for them)."""
        assert self.proc is not None
        pids = []
        for task in Path(f"/proc/{self.proc.pid}/task").glob("*"):
            with contextlib.suppress(OSError):
                pids += [int(p) for p in (task / "children").read_text().split()]
        self.programs.update(pids)
        return pids

    def programs_running(self) -> bool:
        """Whether any program the host ran is still alive (orphans once the host is gone),
        also one started too late to be seen among its children: any process running the
        host's program on this database."""
        needle = f"uxlab.cli.remote_participant\0{self.t.study}\0{self.t.db}\0".encode()
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            with contextlib.suppress(OSError):
                if needle in cmdline.read_bytes():
                    self.programs.add(int(cmdline.parent.name))
        alive = set()
        for pid in self.programs:
            with contextlib.suppress(OSError):
                text = Path(f"/proc/{pid}/stat").read_text()
                if text[text.rfind(")") + 2] != "Z":
                    alive.add(pid)
        self.programs = alive
        return bool(alive)

    def end(self) -> None:
        self.stop.set()
        for client in self.clients:
            client.join(timeout=10)


def summary(tally: Tally, torture: Torture) -> str:
    conn = torture._connect()
    try:
        counts = {
            t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
            for t in ("sessions", "trials", "responses", "events", "browser_paints", "audit")
        }
        interrupted = conn.execute(
            "SELECT COUNT(*) FROM trials WHERE outcome = 'interrupted'"
        ).fetchone()[0]
        resumed = conn.execute("SELECT COALESCE(SUM(resumed_count), 0) FROM sessions").fetchone()[0]
    finally:
        conn.close()
    return "\n".join(
        [
            f"rounds {tally.rounds}; kills {sum(tally.kills.values())}: "
            + ", ".join(f"{k} {v}" for k, v in sorted(tally.kills.items())),
            "web tabs' visits ended by status: "
            + ", ".join(f"{k} {v}" for k, v in sorted(tally.web_endings.items())),
            "writer exits: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.exits.items())),
            f"readers while writing: {sum(tally.reader_runs.values())} runs ("
            + ", ".join(f"{k} {v}" for k, v in sorted(tally.reader_runs.items()))
            + f"), {tally.reader_kills} killed on purpose",
            f"checked (cumulative over rounds): {tally.commits_checked} logged commits, "
            f"{tally.paints_checked} paints, {tally.starts_checked} starts/resumes, "
            f"{tally.ends_checked} end answers",
            f"participant programs that showed 'Could not save' (retried): "
            f"{tally.save_failed_screens}",
            f"server outages: {tally.outages}; stopped in one line by one: "
            + (", ".join(f"{k} {v}" for k, v in sorted(tally.outage_refusals.items())) or "none"),
            "database: "
            + ", ".join(f"{k} {v}" for k, v in counts.items())
            + f"; {interrupted} trials interrupted, {resumed} resumes",
            f"violations: {len(tally.violations)}",
        ]
    )


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        return worker_main(sys.argv[2:])
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--sims", type=int, default=3)
    p.add_argument("--ptys", type=int, default=1)
    p.add_argument("--hosts", type=int, default=1)
    p.add_argument("--web-tabs", type=int, default=0, help="tabs on a real uxlab host")
    p.add_argument("--no-readers", action="store_true")
    p.add_argument("--jitter-ms", type=float, default=400.0)
    p.add_argument("--max-lines", type=int, default=30)
    p.add_argument("--check-every", type=int, default=1)
    p.add_argument(
        "--keep", type=Path, help="work in this folder (kept) instead of a temporary one"
    )
    p.add_argument("--postgres", action="store_true", help="a PostgreSQL study database")
    p.add_argument("--outages", action="store_true", help="(--postgres) stop it once a round")
    a = p.parse_args()
    if a.outages and not a.postgres:
        p.error("--outages: stops a PostgreSQL server; add --postgres")
    work = a.keep or Path(__import__("tempfile").mkdtemp(prefix="uxlab-torture-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {subprocess.getoutput('uptime').strip()}")
    print(f"work folder {work}")
    config = Config(
        work,
        a.rounds,
        a.seed,
        a.sims,
        a.ptys,
        a.hosts,
        a.web_tabs,
        not a.no_readers,
        a.jitter_ms / 1000,
        a.max_lines,
        check_every=a.check_every,
        postgres=a.postgres,
        outages=a.outages,
    )
    started = time.monotonic()
    torture = Torture(config)
    try:
        tally = torture.run()
        print(summary(tally, torture))
    finally:
        torture.close()
    print(f"{time.monotonic() - started:.0f} s; {subprocess.getoutput('uptime').strip()}")
    if a.keep is None and not tally.violations:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if tally.violations else 0


if __name__ == "__main__":
    sys.exit(main())
