"""Timing fidelity of the real study runner: `uxlab run` in a real terminal, on the bundled corpus.

`benchmarks/timing_fidelity.py` plays synthetic schedules through the replay app; a study is
more than that (a store, screens, questions, Markdown after each answer, a larger heap), so
this benchmark runs the command a participant runs, `uxlab run STUDY`, in an 80x24 tmux
pane, drives it with send-keys like a person (consent, send, answer yes), and reads every
chunk's scheduled, handed and flushed time back from the study database. Each schedule is a
study of its own on the bundled chat corpus (`replays/chat`, every recording with more than
50 chunks, one chunk per token, TTFT 300 ms):

- `10ms`, `30ms`: a constant gap;
- `lognormal`: lognormal gaps with a 15 ms median (sigma 0.5), as in `timing_fidelity.py`.

At each load (0 = as the machine is; 2 and 6 = that many busy-loop processes this script
starts and stops itself) it prints, per schedule, shown − scheduled (shown = flushed to the
pty) p50 / p99 / SD / max, how many chunks were more than 16 ms late, the share of chunks
with a gap under 20 ms that shared a frame, and how many trials the study flagged at its
default tolerance; then, in the same load, the naive baseline (the whole text re-rendered
per token at 60 FPS, `timing_fidelity.naive_app`) on the same shaped schedules.

    .venv/bin/python benchmarks/study_runner_timing.py                # 20 trials, loads 0 2 6
    .venv/bin/python benchmarks/study_runner_timing.py --trials 8 --loads 0
    .venv/bin/python benchmarks/study_runner_timing.py --env UXLAB_GC=default   # an A/B
    .venv/bin/python benchmarks/study_runner_timing.py --json out.json
    .venv/bin/python benchmarks/study_runner_timing.py --predict 6 --loads 0,1,2

`--predict N` checks the pre-session timing check instead: N sessions of 8 trials (10 ms
schedule) at each load, each with the check on screen before its first trial as `uxlab run`
makes it, and prints how often a passed check was followed by more than one flagged trial
in 8 (a false pass) and a failed check by at most one (a false alarm).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPUS = ROOT / "replays" / "chat"
SCHEDULES = {
    "10ms": 'itl = "constant:10"',
    "30ms": 'itl = "constant:30"',
    "lognormal": 'itl = "lognormal:median=15,sigma=0.5"',
}
"""Schedule name -> the study's `[profile]` inter-token line."""
LATE_MS = 16.0
"""A chunk shown more than this late counts as a stall (the issue's bound)."""


def corpus_files(min_chunks: int = 50) -> list[str]:
    """The bundled chat recordings long enough to judge a stream (no mid-stream error)."""
    names = []
    for path in sorted(CORPUS.glob("*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        if len(lines) > min_chunks + 2 and '"type": "error"' not in path.read_text():
            names.append(path.name)
    return names


def study_text(name: str, itl_line: str, trials: int, files: list[str]) -> str:
    """A one-condition study: `trials` trials of the corpus' long answers at one schedule."""
    file_list = ", ".join(json.dumps(f) for f in files)
    return f"""
[study]
id = "bench-{name}"
title = "Timing benchmark {name}"
version = "1"
seed = 7

[texts]
consent = "A timing benchmark. Do you agree?"
instructions = "Press Enter to send; answer the question."

[stimuli]
corpus = {json.dumps(str(CORPUS))}
files = [{file_list}]
assignment = "cycle"

[profile]
ttft = 300
{itl_line}
chunk = 1

[factors]
ttft_ms = [300]

[design]
repeats = {trials}
blocks = 1
order = "fixed"

[[questions]]
id = "ok"
type = "yesno"
text = "Was the pace acceptable?"
yes_means = "acceptable"

[abandon]
key = "escape"
ask_questions = false
"""


# -- a participant in tmux ---------------------------------------------------------------------


class Pane:
    """One private tmux server with one 80x24 pane running a shell line."""

    def __init__(self, command: str, cwd: Path) -> None:
        self.socket = f"uxlab-bench-{uuid.uuid4().hex[:8]}"
        self._tmux(
            "new-session", "-d", "-s", "run", "-x", "80", "-y", "24", "-c", str(cwd), command
        )
        self._tmux("set-option", "-t", "run", "remain-on-exit", "on")

    def _tmux(self, *args: str) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-J", "-t", "run")

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "run", *keys)

    def dead(self) -> bool:
        return self._tmux("display-message", "-p", "-t", "run", "#{pane_dead}").strip() == "1"

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


def take_study(pane: Pane, deadline_s: float) -> None:
    """Answer every screen like a person until the runner exits."""
    give_up_at = time.monotonic() + deadline_s
    last = ""
    while time.monotonic() < give_up_at:
        if pane.dead():
            return
        screen = pane.screen()
        action = _keys_for(screen)
        if action is not None and action[0] != last:
            pane.keys(*action[1])
            last = action[0]
        elif action is None:
            last = ""
        time.sleep(0.1)
    raise TimeoutError(f"the study did not finish in {deadline_s:.0f} s; screen:\n{pane.screen()}")


def _keys_for(screen: str) -> tuple[str, list[str]] | None:
    head = next((ln.strip() for ln in screen.splitlines() if ln.strip()), "")
    if "Timing warnings" in screen:
        return "warnings", ["Enter"]
    if "Press a if you agree" in screen:
        return "consent", ["a"]
    if "Press Enter to begin" in screen:
        return "begin", ["Enter"]
    if "Press Enter to send." in screen:
        return f"{head} send", ["Enter"]
    if "Was the pace acceptable?" in screen and "Press Esc" not in screen:
        return f"{head} answer", ["y", "Enter"]
    if "Press Enter to close" in screen:
        return "end", ["Enter"]
    return None


# -- load ------------------------------------------------------------------------------------


class BusyLoops:
    """`n` processes that spin a CPU each until stopped (the load of the run)."""

    def __init__(self, n: int) -> None:
        code = "while True: pass"
        self.procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]

    def stop(self) -> None:
        for p in self.procs:
            p.kill()
            p.wait()


# -- reading the database back ---------------------------------------------------------------


@dataclass
class TrialTiming:
    trial_index: int
    replay_id: str
    flag: int | None
    scheduled_ms: np.ndarray
    handed_ms: np.ndarray
    shown_ms: np.ndarray
    queued_ms: np.ndarray


def read_trials(db: Path) -> list[TrialTiming]:
    con = sqlite3.connect(db)
    trials = con.execute(
        "SELECT trial_index, replay_id, timings FROM trials WHERE practice = 0 "
        "AND attention = 0 AND outcome != 'running' ORDER BY trial_index"
    ).fetchall()
    out = []
    for index, replay_id, timings in trials:
        flag = json.loads(timings or "{}").get("fidelity_flag")
        rows = con.execute(
            "SELECT data FROM events WHERE trial_index = ? AND kind = 'chunk' ORDER BY seq",
            (index,),
        ).fetchall()
        recs = [json.loads(r[0]) for r in rows]
        recs = [r for r in recs if r.get("n_chars", 1) and r.get("channel", "content") != "tool"]

        def col(name: str, recs: list[dict[str, Any]] = recs) -> np.ndarray:
            return np.array([np.nan if r.get(name) is None else r[name] for r in recs], float)

        flushed, queued = col("flushed_ms"), col("queued_ms")
        shown = np.where(np.isnan(flushed), queued, flushed)
        out.append(
            TrialTiming(
                index, replay_id, flag, col("scheduled_ms"), col("handed_ms"), shown, queued
            )
        )
    con.close()
    return out


def summarise(trials: list[TrialTiming]) -> dict[str, Any]:
    """Pooled lateness figures over every chunk of every trial, and per-trial flags."""
    late = np.concatenate([t.shown_ms - t.scheduled_ms for t in trials]) if trials else np.array([])
    handed = np.concatenate([t.handed_ms - t.scheduled_ms for t in trials]) if trials else late
    shared, short = [], []
    for t in trials:
        gaps = np.diff(t.scheduled_ms)
        same = np.diff(t.queued_ms) == 0
        shared.append(same[gaps < 20.0])
        short.append(gaps < 20.0)
    shared_all = np.concatenate(shared) if shared else np.array([])
    late = late[~np.isnan(late)]
    worst = sorted(
        (
            (float(np.nanmax(t.shown_ms - t.scheduled_ms)), t.trial_index, t.replay_id)
            for t in trials
            if len(t.shown_ms)
        ),
        reverse=True,
    )[:3]
    return {
        "trials": len(trials),
        "chunks": len(late),
        "handed_p99": float(np.percentile(handed, 99)) if len(handed) else None,
        "shown_p50": float(np.percentile(late, 50)) if len(late) else None,
        "shown_p99": float(np.percentile(late, 99)) if len(late) else None,
        "shown_sd": float(np.std(late)) if len(late) > 1 else None,
        "shown_max": float(late.max()) if len(late) else None,
        "over_16": int((late > LATE_MS).sum()),
        "trials_over_16": sum(
            1
            for t in trials
            if len(t.shown_ms) and np.nanmax(t.shown_ms - t.scheduled_ms) > LATE_MS
        ),
        "shared_short": float(shared_all.mean()) if len(shared_all) else None,
        "flagged": sum(1 for t in trials if t.flag == 1),
        "worst": worst,
    }


# -- one configuration -------------------------------------------------------------------------


def run_study(
    name: str,
    trials: int,
    files: list[str],
    folder: Path,
    env: dict[str, str],
    timeout_s: float,
    check: bool = False,
) -> dict[str, Any]:
    study = folder / f"{name}.toml"
    study.write_text(study_text(name, SCHEDULES[name], trials, files), encoding="utf-8")
    db = folder / f"{name}-{uuid.uuid4().hex[:6]}.sqlite"
    pairs = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    cmd = (
        f"{pairs} {shlex.quote(sys.executable)} -m uxlab run {shlex.quote(str(study))} "
        f"--db {shlex.quote(str(db))} --participant P1" + ("" if check else " --no-timing-check")
    )
    pane = Pane(cmd, ROOT)
    started_cpu = _children_cpu_s()
    try:
        take_study(pane, timeout_s)
    finally:
        pane.close()
    result = summarise(read_trials(db))
    result["cpu_s"] = _children_cpu_s() - started_cpu
    result["timing_check"] = read_check(db)
    return result


def read_check(db: Path) -> dict[str, Any] | None:
    """The session's stored timing check (None when it ran without one)."""
    con = sqlite3.connect(db)
    row = con.execute("SELECT environment FROM sessions").fetchone()
    con.close()
    return json.loads(row[0]).get("timing_check") if row else None


def predict(args: argparse.Namespace, files: list[str], env: dict[str, str]) -> int:
    """`--predict N`: the check's verdict against the flags of the 8 trials after it."""
    loads = [int(x) for x in args.loads.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="uxlab-runner-predict-") as tmp:
        for n_busy in loads:
            busy = BusyLoops(n_busy)
            try:
                if n_busy:
                    time.sleep(5.0)
                for k in range(args.predict):
                    la = os.getloadavg()[0]
                    r = run_study("10ms", 8, files, Path(tmp), env, 900.0, check=True)
                    check = r["timing_check"] or {}
                    rows.append((n_busy, la, bool(check.get("ok")), r["flagged"], check))
                    print(
                        f"  load {n_busy} ({la:.1f}) session {k + 1}: check "
                        f"{'passed' if check.get('ok') else 'failed'} (shown p99 "
                        f"{check.get('shown_p99_ms')} ms), {r['flagged']}/8 trials flagged",
                        flush=True,
                    )
            finally:
                busy.stop()
    print(
        "\nbusy loops | sessions | check passed | passed, then >1 of 8 flagged | failed, "
        "then <=1 of 8 flagged"
    )
    for n_busy in loads:
        mine = [r for r in rows if r[0] == n_busy]
        passed = [r for r in mine if r[2]]
        false_pass = sum(1 for r in passed if r[3] > 1)
        false_alarm = sum(1 for r in mine if not r[2] and r[3] <= 1)
        print(
            f"{n_busy:10d} | {len(mine):8d} | {len(passed):12d} | {false_pass:28d} | "
            f"{false_alarm:d}"
        )
    return 0


def _children_cpu_s() -> float:
    t = os.times()
    return t.children_user + t.children_system


def naive_baseline(name: str, trials: int, files: list[str], folder: Path) -> dict[str, Any]:
    """The naive client (`timing_fidelity.naive_app`) on the same shaped schedules, in tmux."""
    sys.path.insert(0, str(HERE))
    import tomllib

    import timing_fidelity as tf

    from uxlab.shaping import Profile, shape
    from uxlab.streams.corpus import load_corpus
    from uxlab.streams.replay_file import write_replay

    corpus = load_corpus(CORPUS)
    by_name = {r.id: r for r in corpus.recordings}
    profile = Profile.from_table(tomllib.loads(f"ttft = 300\n{SCHEDULES[name]}\nchunk = 1\n"))
    out_dir = folder / f"naive-{name}-{uuid.uuid4().hex[:6]}"  # one per load and schedule
    out_dir.mkdir()
    ids = [f.removesuffix(".jsonl") for f in files]
    for k in range(trials):
        rec = shape(by_name[ids[k % len(ids)]], profile, seed=k)
        write_replay(rec, out_dir / f"{k:03d}.jsonl")
    payload = tf.run_config("tty", "naive", 60, out_dir, timeout_s=600)
    timings = []
    for k, log in enumerate(payload["logs"]):
        recs = [r for r in log["records"] if r["n_chars"] > 0 and r["channel"] != "tool"]

        def col(key: str, recs: list[dict[str, Any]] = recs) -> np.ndarray:
            return np.array([np.nan if r[key] is None else r[key] for r in recs], float)

        flushed, queued = col("flushed_ms"), col("queued_ms")
        timings.append(
            TrialTiming(
                k,
                log["schedule_id"],
                None,
                col("scheduled_ms"),
                col("handed_ms"),
                np.where(np.isnan(flushed), queued, flushed),
                queued,
            )
        )
    result = summarise(timings)
    result["flagged"] = None
    return result


# -- printing ------------------------------------------------------------------------------------


def _f(value: Any, fmt: str = "{:.2f}") -> str:
    return "-" if value is None else fmt.format(value)


def print_rows(rows: list[tuple[str, str, str, dict[str, Any]]]) -> None:
    head = (
        "load",
        "client",
        "schedule",
        "trials",
        "chunks",
        "p50",
        "p99",
        "SD",
        "max",
        f">{LATE_MS:g}ms",
        "shared<20ms",
        "flagged",
        "CPU ms/chunk",
    )
    table = [head]
    for load, client, sched, r in rows:
        cpu = r.get("cpu_s")
        table.append(
            (
                load,
                client,
                sched,
                str(r["trials"]),
                str(r["chunks"]),
                _f(r["shown_p50"]),
                _f(r["shown_p99"]),
                _f(r["shown_sd"]),
                _f(r["shown_max"]),
                f"{r['over_16']} in {r['trials_over_16']} trials",
                _f(None if r["shared_short"] is None else 100 * r["shared_short"], "{:.1f}%"),
                "-" if r["flagged"] is None else f"{r['flagged']}/{r['trials']}",
                "-" if cpu is None or not r["chunks"] else f"{1000 * cpu / r['chunks']:.2f}",
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for n, row in enumerate(table):
        print(" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
        if n == 0:
            print("-|-".join("-" * w for w in widths))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20, help="trials per schedule (20)")
    parser.add_argument("--loads", default="0,2,6", help="busy loops to run beside (0,2,6)")
    parser.add_argument("--schedules", default=",".join(SCHEDULES), help="which schedules")
    parser.add_argument("--no-naive", action="store_true", help="skip the naive baseline")
    parser.add_argument("--env", action="append", default=[], help="K=V for the runner (A/B)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--predict", type=int, metavar="N", help="check the timing check")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    env = dict(kv.split("=", 1) for kv in args.env)
    files = corpus_files()
    if args.predict:
        return predict(args, files, env)
    loads = [int(x) for x in args.loads.split(",")]
    names = [s for s in args.schedules.split(",") if s]
    la = os.getloadavg()
    print(
        f"study runner timing: {os.cpu_count()} CPUs, load {la[0]:.2f}/{la[1]:.2f}/{la[2]:.2f}, "
        f"{args.trials} trials per schedule, corpus {len(files)} recordings, env {env or '-'}"
    )
    rows: list[tuple[str, str, str, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory(prefix="uxlab-runner-bench-") as tmp:
        folder = Path(tmp)
        for n_busy in loads:
            busy = BusyLoops(n_busy)
            try:
                if n_busy:
                    time.sleep(5.0)  # let the load settle
                for name in names:
                    load_text = f"{n_busy} ({os.getloadavg()[0]:.1f})"
                    print(f"  load {load_text}: uxlab run, {name} ...", flush=True)
                    result = run_study(name, args.trials, files, folder, env, 1200.0)
                    rows.append((load_text, "uxlab run", name, result))
                    if args.json:  # as it goes: a late failure keeps what was measured
                        args.json.write_text(json.dumps(rows, default=str))
                    if not args.no_naive:
                        print(f"  load {load_text}: naive, {name} ...", flush=True)
                        base = naive_baseline(name, args.trials, files, folder)
                        rows.append((load_text, "naive@60", name, base))
                        if args.json:
                            args.json.write_text(json.dumps(rows, default=str))
            finally:
                busy.stop()
    print(
        "\nshown − scheduled in ms (shown = the frame's bytes flushed to the pty); load = busy "
        "loops started (1-min load average when the study began)\n"
    )
    print_rows(rows)
    for load, client, sched, r in rows:
        if client == "uxlab run" and r["worst"]:
            worst = ", ".join(
                f"{ms:.1f} ms (trial {i}, {rid.split('~')[0]})" for ms, i, rid in r["worst"]
            )
            print(f"  worst at load {load}, {sched}: {worst}")
    if args.json:
        args.json.write_text(json.dumps(rows, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
