"""Timing at the glass of real terminal emulators: scheduled vs flushed vs painted.

Starts its own X server (Xvfb, with GLX for the OpenGL emulators and Mesa's software
renderer), opens each emulator that is installed (xterm, alacritty, kitty) at 80x24 running
`uxlab replay --glass` on three schedules (10 ms, 30 ms, and a lognormal stream with a 15 ms
median gap), `--repeats` times each, and reads back every chunk's scheduled, flushed (the
frame's bytes handed to the pty) and painted (the glass probe saw the window show it) times.
It prints, per emulator and schedule, pooled over the repeats:

- glass − scheduled p50 / p99 / SD (ms): what a participant sees;
- the share of chunks that first reached the glass together with a later chunk (a repaint
  that batched two frames: two tokens that looked like one);
- glass − flushed p50 / p99: what the emulator (and the X server) add;
- flushed − scheduled p50 / p99 from the same plays: uxlab's own side, the baseline.

    .venv/bin/python benchmarks/glass_timing.py                 # 3 repeats, all emulators
    .venv/bin/python benchmarks/glass_timing.py --quick --repeats 1 --emulators xterm
    .venv/bin/python benchmarks/glass_timing.py --busy 2         # with 2 busy loops beside
    .venv/bin/python benchmarks/glass_timing.py --json out.json

Needs the OS packages xvfb, xterm, alacritty and kitty (an emulator that is missing, or does
not start under Xvfb, is named and skipped).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import timing_fidelity  # noqa: E402  (its schedules and writer)

from benchmarks.support.xserver import virtual_display  # noqa: E402
from uxlab.glass.emulators import EMULATORS, close_window, open_window, wait_for_file  # noqa: E402

SCHEDULES = ("10ms", "30ms", "lognormal-2000")
"""The `timing_fidelity` schedules played (the lognormal one has a 15 ms median gap)."""


def play_in(emulator: str, folder: Path, out: Path, env: dict[str, str]) -> dict[str, Any]:
    """One `uxlab replay --glass` of every schedule in `folder`, in a new `emulator` window."""
    argv = [sys.executable, "-m", "uxlab", "replay", str(folder), "--glass", "--fps", "240",
            "--bench-json", str(out)]  # fmt: skip
    log = out.with_suffix(".log")
    window = open_window(emulator, argv, env=env, software_gl=emulator != "xterm", log=log)
    try:
        if not wait_for_file(out, window, timeout_s=300.0):
            said = " | ".join(log.read_text(errors="replace").strip().splitlines()[-3:])
            raise RuntimeError(
                f"{emulator}: no result (exit {window.poll()}; it said: {said or 'nothing'})"
            )
    finally:
        close_window(window)
    payload: dict[str, Any] = json.loads(out.read_text())
    if payload.get("error"):
        raise RuntimeError(f"{emulator}: {payload['error']}")
    return payload


def late(records: list[dict[str, Any]], a: str, b: str) -> np.ndarray:
    return np.array([r[a] - r[b] for r in records if r.get(a) is not None and r.get(b) is not None])


def figures(records: list[dict[str, Any]]) -> dict[str, Any]:
    visible = [r for r in records if r["n_chars"]]
    glass = late(visible, "painted_ms", "scheduled_ms")
    emulator = late(visible, "painted_ms", "flushed_ms")
    flushed = late(visible, "flushed_ms", "scheduled_ms")
    painted = [r for r in visible if r.get("painted_ms") is not None]

    def pct(x: np.ndarray, q: float) -> float | None:
        return float(np.percentile(x, q)) if len(x) else None

    return {
        "chunks": len(visible),
        "painted": len(painted),
        "glass_p50": pct(glass, 50),
        "glass_p99": pct(glass, 99),
        "glass_sd": float(np.std(glass)) if len(glass) > 1 else None,
        "shared": sum(bool(r.get("shared_repaint")) for r in painted) / max(1, len(painted)),
        "emulator_p50": pct(emulator, 50),
        "emulator_p99": pct(emulator, 99),
        "flushed_p50": pct(flushed, 50),
        "flushed_p99": pct(flushed, 99),
    }


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def print_table(rows: list[tuple[str, str, dict[str, Any]]]) -> None:
    head = ("emulator", "schedule", "chunks", "glass−sched p50/p99", "SD", "shared repaint",
            "glass−flushed p50/p99", "flushed−sched p50/p99")  # fmt: skip
    table = [head]
    for emulator, schedule, m in rows:
        table.append((
            emulator, schedule, f"{m['painted']}/{m['chunks']}",
            f"{_f(m['glass_p50'])} / {_f(m['glass_p99'])}", _f(m["glass_sd"]),
            f"{100 * m['shared']:.1f}%", f"{_f(m['emulator_p50'])} / {_f(m['emulator_p99'])}",
            f"{_f(m['flushed_p50'])} / {_f(m['flushed_p99'])}",
        ))  # fmt: skip
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for n, row in enumerate(table):
        print(" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
        if n == 0:
            print("-|-".join("-" * w for w in widths))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=3, help="plays of every schedule (3)")
    parser.add_argument("--quick", action="store_true", help="shorter streams")
    parser.add_argument("--emulators", default=",".join(EMULATORS), help="which emulators")
    parser.add_argument("--busy", type=int, default=0, help="busy loops to run beside (0)")
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    args = parser.parse_args()
    wanted = [e for e in args.emulators.split(",") if e]
    schedules = {k: v for k, v in timing_fidelity.make_schedules(args.quick).items()
                 if k in SCHEDULES}  # fmt: skip
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    if busy:
        time.sleep(5.0)
    la = os.getloadavg()
    print(f"glass timing {time.strftime('%Y-%m-%d %H:%M')}: {os.cpu_count()} CPUs, load "
          f"{la[0]:.2f}/{la[1]:.2f}/{la[2]:.2f} (1/5/15 min), {args.busy} busy loops, "
          f"{args.repeats} repeats, streams {', '.join(schedules)}")  # fmt: skip
    rows: list[tuple[str, str, dict[str, Any]]] = []
    raw: dict[str, Any] = {}
    skipped: list[str] = []
    try:
        with virtual_display(glx=True) as env, tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "schedules"
            folder.mkdir()
            timing_fidelity.write_schedules(schedules, folder)
            for emulator in wanted:
                if shutil.which(emulator) is None:
                    skipped.append(f"{emulator} (not installed)")
                    continue
                pooled: dict[str, list[dict[str, Any]]] = {}
                failed: list[str] = []
                for r in range(args.repeats):
                    print(f"  {emulator}, play {r + 1}/{args.repeats} "
                          f"(load {os.getloadavg()[0]:.2f}) ...", flush=True)  # fmt: skip
                    for attempt in (1, 2):  # a window that did not open is tried once more
                        out = Path(tmp) / f"{emulator}-{r}-{attempt}.json"
                        try:
                            payload = play_in(emulator, folder, out, env)
                            break
                        except RuntimeError as exc:
                            failed.append(f"play {r + 1}, attempt {attempt}: {exc}")
                            print(f"    {exc}", flush=True)
                    else:
                        continue
                    raw[f"{emulator}-{r}"] = payload
                    for log in payload["logs"]:
                        name = log["schedule_id"].split("~")[0]
                        pooled.setdefault(name, []).extend(log["records"])
                if failed:
                    skipped.append(
                        f"{emulator}: {len(failed)} failed attempt(s), " + "; ".join(failed)
                    )
                if not pooled:
                    continue
                for name in schedules:
                    rows.append((emulator, name, figures(pooled.get(name, []))))
    finally:
        for p in busy:
            p.kill()
            p.wait()
    print(f"load after: {os.getloadavg()[0]:.2f}\n")
    print("times in ms; glass = the probe saw the window show the chunk's frame (X DAMAGE);")
    print("shared repaint = the chunk first reached the glass together with a later chunk\n")
    print_table(rows)
    if skipped:
        print("\nnot measured (or not every play): " + "; ".join(skipped))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "raw": raw}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
