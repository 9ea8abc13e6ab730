"""The glass probe end to end: `uxlab replay --glass` in a real xterm window under Xvfb.

Asserts only what a loaded machine cannot change: every chunk is matched to a repaint the
probe really saw, at or after its flush, and the matching says which chunks shared one.
How late the glass is lives in `benchmarks/glass_timing.py`, not here.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.xvfb import display_state, need_x, start_xterm, xvfb

from uxlab.streams.recording import Chunk, End, Header, Recording
from uxlab.streams.replay_file import write_replay

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def schedules(folder: Path) -> None:
    for name, gap_ms, n in (("gap10", 10.0, 60), ("gap30", 30.0, 30)):
        chunks = [Chunk(t_ms=200.0 + gap_ms * i, text=f"w{i:03d} ") for i in range(n)]
        rec = Recording(Header(id=name), chunks, End(t_ms=chunks[-1].t_ms))
        write_replay(rec, folder / f"{name}.jsonl")


def test_the_virtual_display_does_not_reset_when_its_last_client_leaves():
    # A reset (the X default) refuses clients that connect during it: xterm's "Can't open
    # display" in a loaded test run. A root-window property survives only if it never resets.
    need_x("xprop")
    with xvfb() as env:

        def xprop(*args: str) -> str:
            done = subprocess.run(["xprop", "-root", *args], env=env, capture_output=True)
            return done.stdout.decode(errors="replace")

        xprop("-f", "UXLAB_PROBE", "8s", "-set", "UXLAB_PROBE", "kept")  # then disconnects
        assert '"kept"' in xprop("UXLAB_PROBE"), display_state(env)


def test_every_chunk_reaches_the_glass_at_or_after_its_flush(tmp_path):
    need_x("xterm", "xdotool")
    schedules(tmp_path)
    out = tmp_path / "bench.json"
    with xvfb() as env:
        command = [sys.executable, "-m", "uxlab", "replay", str(tmp_path), "--glass",
                   "--fps", "240", "--bench-json", str(out)]  # fmt: skip
        log = tmp_path / "xterm.log"
        term = start_xterm(["-geometry", "80x24", "-e", *command], env, REPO, log)
        try:
            give_up = time.monotonic() + 180.0
            while not out.exists() and term.poll() is None and time.monotonic() < give_up:
                time.sleep(0.2)
            time.sleep(0.2)  # the app writes the file whole, then exits
        finally:
            term.terminate()
            term.wait(timeout=30)
    assert out.exists(), (
        f"the replay app wrote no result under xterm (xterm's {term.returncode}, its output: "
        f"{log.read_text(errors='replace')[-600:]!r})"
    )
    payload = json.loads(out.read_text())
    assert payload.get("error") is None, payload
    glass = payload["glass"]
    assert glass["emulator"] == "XTerm" and glass["error"] is None
    repaint_times = {t for t, _, _ in glass["repaint_log"]}
    n_chunks = 0
    for log in payload["logs"]:
        for rec in log["records"]:
            n_chunks += 1
            assert rec["painted_ms"] is not None, f"{log['schedule_id']} chunk {rec['index']}"
            assert rec["painted_ms"] >= rec["flushed_ms"]
            assert rec["flushed_ms"] >= rec["handed_ms"]
            assert rec["shared_repaint"] in (True, False)
            absolute = rec["painted_ms"] + log["t0_ms"]
            assert min(abs(absolute - t) for t in repaint_times) < 1e-3  # a repaint it saw
    assert n_chunks == 90


GLASS_STUDY = """
[study]
id = "glass"
title = "Glass test study"
version = "1"
seed = 3

[texts]
consent = "You agree to take part."
instructions = "Press Enter to send."

[stimuli]
corpus = "{corpus}"
files = ["chat-one-liner.jsonl", "chat-fast-small-model.jsonl"]
assignment = "cycle"

[profile]
itl = "constant:10"

[factors]
ttft_ms = [100, 200, 300]

[design]
repeats = 1
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


def screen_text(env: dict[str, str]) -> str:
    """What xterm shows, for a failure message (its window's text is not readable from X:
    saved as a PNG beside the test's files instead)."""
    import numpy as np
    from Xlib import X, display

    shown = display.Display(env["DISPLAY"])
    image = shown.screen().root.get_image(0, 0, 640, 400, X.ZPixmap, 0xFFFFFFFF)
    pixels = np.frombuffer(bytes(image.data), dtype=np.uint8).reshape(400, 640, 4)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(env.get("UXLAB_TEST_SHOT", "/tmp")) / "glass-study-screen.png"
    plt.imsave(path, pixels[:, :, [2, 1, 0]])
    return f"saved to {path}"


def _session_done(db: Path) -> bool:
    import sqlite3

    if not db.exists():
        return False
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1.0)
        try:
            row = conn.execute("SELECT state FROM sessions").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return row is not None and row[0] == "completed"


def test_a_study_run_at_the_glass_exports_painted_times_and_the_report_reads_them(tmp_path):
    """`uxlab run --glass` in xterm, keys by xdotool (pressed again until the database says
    the session is complete: no timing assumed), then export and report."""
    need_x("xterm", "xdotool")
    study = tmp_path / "glass.toml"
    study.write_text(GLASS_STUDY.format(corpus=REPO / "replays" / "chat"))
    db = tmp_path / "glass.sqlite"
    command = [sys.executable, "-m", "uxlab", "run", str(study), "--glass", "--participant",
               "P-GLASS1", "--db", str(db)]  # fmt: skip
    with xvfb() as env:
        env["UXLAB_TEST_SHOT"] = str(tmp_path)
        # the run's exit status, kept for the failure message (its stderr is the screen:
        # Textual draws there)
        rc = tmp_path / "run.rc"
        wrapped = f"{shlex.join(command)}; echo $? >{shlex.quote(str(rc))}"
        xterm_log = tmp_path / "xterm.log"  # xterm's own complaints (an X error ends it)
        term = start_xterm(["-geometry", "80x24+0+0", "-e", "sh", "-c", wrapped], env, REPO,
                           xterm_log)  # fmt: skip
        try:
            keys = ["a", "Return", "y", "Return"]  # consent; warnings, send or answer; ...
            give_up = time.monotonic() + 240.0
            n = 0
            while not _session_done(db) and term.poll() is None:
                if time.monotonic() > give_up:
                    raise AssertionError(f"not completed; the screen: {screen_text(env)}")
                # The pointer moves over the window each time: with no window manager the
                # keyboard follows it, and a window mapped under a still pointer gets no keys.
                xy = ["200", "150"] if n % 2 else ["210", "160"]
                subprocess.run(["xdotool", "mousemove", *xy], env=env, check=True)
                subprocess.run(["xdotool", "key", keys[n % len(keys)]], env=env, check=True)
                n += 1
                time.sleep(0.3)
        finally:
            term.terminate()
            term.wait(timeout=30)
            x_state = display_state(env)  # while the server runs: for the message below
    status = rc.read_text().strip() if rc.exists() else "(none written: the shell did not end)"
    assert _session_done(db), (
        f"the run ended before the session did (the program's exit status {status}; xterm's "
        f"{term.returncode}, its output: {xterm_log.read_text(errors='replace')[-600:]!r}; "
        f"{x_state})"
    )
    out = tmp_path / "export"
    assert subprocess.run([sys.executable, "-m", "uxlab", "export", str(db), "-o", str(out)],
                          cwd=REPO, capture_output=True).returncode == 0  # fmt: skip
    import pandas as pd

    trials = pd.read_csv(out / "trials.csv")
    main = trials[trials["attention_check"].fillna(0) == 0]
    assert (main["terminal_emulator"] == "XTerm").all()
    assert (main["n_painted"] > 0).all() and main["late_painted_p99_ms"].notna().all()
    events = pd.read_csv(out / "events.csv")
    chunks = [json.loads(d) for d in events.loc[events["kind"] == "chunk", "data"]]
    painted = [c for c in chunks if c.get("painted_ms") is not None]
    assert painted and all(c["painted_ms"] >= c["flushed_ms"] for c in painted)
    report = tmp_path / "report"
    # --keep-flagged: on a loaded machine every trial may be flagged; the table is the point
    done = subprocess.run([sys.executable, "-m", "uxlab", "report", str(db), "-o", str(report),
                           "--keep-flagged"], cwd=REPO, capture_output=True, text=True)  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    text = (report / "report.md").read_text()
    assert "Painted at the glass" in text and "terminal XTerm" in text
