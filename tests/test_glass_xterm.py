"""The glass probe end to end: `uxlab replay --glass` in a real xterm window under Xvfb.

Asserts only what a loaded machine cannot change: every chunk is matched to a repaint the
probe really saw, at or after its flush, and the matching says which chunks shared one.
How late the glass is lives in `benchmarks/glass_timing.py`, not here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.xvfb import need_x, xvfb

from uxlab.streams.recording import Chunk, End, Header, Recording
from uxlab.streams.replay_file import write_replay

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def schedules(folder: Path) -> None:
    for name, gap_ms, n in (("gap10", 10.0, 60), ("gap30", 30.0, 30)):
        chunks = [Chunk(t_ms=200.0 + gap_ms * i, text=f"w{i:03d} ") for i in range(n)]
        rec = Recording(Header(id=name), chunks, End(t_ms=chunks[-1].t_ms))
        write_replay(rec, folder / f"{name}.jsonl")


def test_every_chunk_reaches_the_glass_at_or_after_its_flush(tmp_path):
    need_x("xterm")
    schedules(tmp_path)
    out = tmp_path / "bench.json"
    with xvfb() as env:
        command = [sys.executable, "-m", "uxlab", "replay", str(tmp_path), "--glass",
                   "--fps", "240", "--bench-json", str(out)]  # fmt: skip
        term = subprocess.Popen(["xterm", "-geometry", "80x24", "-e", *command], env=env, cwd=REPO)
        try:
            give_up = time.monotonic() + 180.0
            while not out.exists() and term.poll() is None and time.monotonic() < give_up:
                time.sleep(0.2)
            time.sleep(0.2)  # the app writes the file whole, then exits
        finally:
            term.terminate()
            term.wait(timeout=30)
    assert out.exists(), "the replay app wrote no result under xterm"
    payload = json.loads(out.read_text())
    assert payload.get("error") is None, payload
    glass = payload["glass"]
    assert glass["emulator"] == "XTerm" and glass["error"] is None
    repaint_times = {t for t, _ in glass["repaints"]}
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
