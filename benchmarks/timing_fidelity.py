"""Timing fidelity of playback in the terminal client: scheduled vs handed vs flushed.

Runs the real `uxlab replay` app on four schedules (10 ms, 30 ms, alternating 10/30 ms,
and a 2,000-token lognormal stream) and, in the same run, a naive baseline (the whole text
re-rendered with `Static.update` on every token, at Textual's default 60 FPS). Each
configuration runs in its own process, because Textual reads its frame cap at import:

- headless, through `App.run_test` (no terminal: the "flushed" column is the frame-queued
  time there);
- in a real terminal: a detached tmux pane (when tmux exists), where flushed is the time
  the frame's bytes were flushed to the pty.

For every configuration and schedule it prints handed−scheduled and flushed−scheduled
p50/p99, the share of chunks that shared a frame with the previous chunk, the mean flushed
gap where 10 ms and 30 ms were scheduled, and the drift over the stream (median lateness
of the last 200 chunks minus that of the first 200), then our/baseline ratios.

    .venv/bin/python benchmarks/timing_fidelity.py            # full run, a few minutes
    .venv/bin/python benchmarks/timing_fidelity.py --quick    # shorter streams
    .venv/bin/python benchmarks/timing_fidelity.py --json out.json
    .venv/bin/python benchmarks/timing_fidelity.py --ab       # + the A/B variants below

`--ab` adds, in the same run, ours with the direct frame request off
(`UXLAB_DIRECT_FRAMES=0`: the screen's idle/timer path paints) and ours with the clock's
other waits (`UXLAB_CLOCK_WAIT=block`: one blocking nanosleep for the last ms, `timer`:
the asyncio timer alone; the default is `spin`). Every configuration reports its CPU time
during the plays (ms of CPU per chunk, all threads of the process).
"""

from __future__ import annotations

import argparse
import asyncio
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
SIZE = (100, 30)

# -- schedules --------------------------------------------------------------------------


def make_schedules(quick: bool, seed: int = 11) -> dict[str, list[float]]:
    """Name -> chunk times (ms from the send)."""
    ttft_ms = 250.0
    n10, n30, nalt, nlong = (120, 80, 120, 500) if quick else (300, 150, 300, 2000)
    rng = np.random.default_rng(seed)
    alt_gaps = np.array([10.0, 30.0] * nalt)[: nalt - 1]
    long_gaps = rng.lognormal(mean=np.log(15.0), sigma=0.5, size=nlong - 1)
    return {
        "10ms": [ttft_ms + 10.0 * i for i in range(n10)],
        "30ms": [ttft_ms + 30.0 * i for i in range(n30)],
        "10/30ms": list(ttft_ms + np.concatenate([[0.0], alt_gaps.cumsum()])),
        "lognormal-2000": list(ttft_ms + np.concatenate([[0.0], np.cumsum(long_gaps)])),
    }


def write_schedules(schedules: dict[str, list[float]], folder: Path) -> None:
    from uxlab.streams.recording import Chunk, End, Header, Recording
    from uxlab.streams.replay_file import write_replay

    for n, (name, times_ms) in enumerate(schedules.items()):
        events = []
        for i, t in enumerate(times_ms):
            text = f"w{i:04d}" + ("\n\n" if i % 40 == 39 else " ")
            events.append(Chunk(t_ms=float(t), text=text, n_tokens=1))
        request = {"messages": [{"role": "user", "content": f"benchmark {name}"}]}
        rec = Recording(
            Header(id=name, request=request),
            events=events,
            end=End(t_ms=float(times_ms[-1]), finish_reason="stop"),
        )
        write_replay(rec, folder / f"{n}-{name.replace('/', '-')}.jsonl")


# -- the naive baseline app (worker side) --------------------------------------------------


def naive_app(recordings: list[Any], out: Path) -> Any:
    """Full-text `Static.update` per token in an anchored scroll: the common pattern."""
    from textual.app import App, ComposeResult
    from textual.containers import VerticalScroll
    from textual.widgets import Static

    from uxlab.clock import MonotonicClock
    from uxlab.player import Player
    from uxlab.tui import frame_cap
    from uxlab.tui.paint_probe import PaintProbe, ProbedSink

    class NaiveView:
        def __init__(self, static: Static) -> None:
            self.static = static
            self.text = ""

        def apply(self, index: int, chunk: Any) -> None:
            self.text += chunk.text
            self.static.update(self.text)

        def finish(self, end: Any, error: Any) -> None:
            pass

        def cancel(self) -> None:
            pass

    class NaiveApp(App[int]):
        def __init__(self) -> None:
            super().__init__()
            self.clock = MonotonicClock()
            self.probe = PaintProbe(self.clock)
            self.probe.attach(self)

        def compose(self) -> ComposeResult:
            with VerticalScroll(id="scroll"):
                yield Static(id="text")

        def on_mount(self) -> None:
            self.query_one("#scroll").anchor()
            self.call_after_refresh(self.bench)

        async def _bench(self) -> None:
            view = NaiveView(self.query_one("#text", Static))
            logs = []
            cpu_start_s = time.process_time()
            for rec in recordings:
                view.text = ""
                view.static.update("")
                log = await Player(rec, ProbedSink(view, self.probe), self.clock).play()
                logs.append(log.to_dict())
            payload = {"frame_cap": frame_cap(), "has_terminal": self.probe.has_terminal}
            payload["logs"] = logs
            payload["cpu_s"] = time.process_time() - cpu_start_s
            out.write_text(json.dumps(payload))
            self.exit(0)

        def bench(self) -> None:
            self.run_worker(self._bench())

    return NaiveApp()


def bare_floor(recordings: list[Any], out: Path) -> None:
    """The same player on a bare asyncio loop, no Textual: what the machine alone gives."""
    from uxlab.player import HeadlessSink, Player

    async def play_all() -> list[dict[str, Any]]:
        return [(await Player(rec, HeadlessSink()).play()).to_dict() for rec in recordings]

    cpu_start_s = time.process_time()
    logs = asyncio.run(play_all())
    cpu_s = time.process_time() - cpu_start_s
    payload = {"frame_cap": 0, "has_terminal": False, "logs": logs, "cpu_s": cpu_s}
    out.write_text(json.dumps(payload))


def worker(args: argparse.Namespace) -> int:
    """Run one configuration in this process (the frame cap is already in the env)."""
    import uxlab.tui  # noqa: F401  (frame cap before textual)
    from uxlab.streams.corpus import load_corpus
    from uxlab.tui.replay_app import ReplayApp

    recordings = load_corpus(args.dir).recordings
    out = Path(args.out)
    if args.view == "bare":
        bare_floor(recordings, out)
        return 0
    if args.view == "ours":
        app = ReplayApp(recordings, bench_json=out)
    else:
        app = naive_app(recordings, out)
    if args.mode == "tty":
        app.run()
        return 0

    async def headless() -> None:
        async with app.run_test(size=SIZE):
            while app.is_running and not out.exists():
                await asyncio.sleep(0.05)

    asyncio.run(headless())
    return 0


# -- running configurations (parent side) --------------------------------------------------


VARIANTS = {
    "": {},
    "no-direct-frames": {"UXLAB_DIRECT_FRAMES": "0"},
    "wait=block": {"UXLAB_CLOCK_WAIT": "block"},
    "wait=timer": {"UXLAB_CLOCK_WAIT": "timer"},
}
"""A/B variant name -> environment it runs with (`--ab`)."""


def run_config(
    mode: str, view: str, fps: int, folder: Path, timeout_s: float, variant: str = ""
) -> dict[str, Any]:
    out = folder / f"result-{mode}-{view}-{fps}-{variant.replace('=', '-')}.json"
    extra = VARIANTS[variant]
    env = dict(os.environ, TEXTUAL_FPS=str(max(fps, 1)), UXLAB_FPS=str(max(fps, 1)), **extra)
    if mode == "headless" or view == "naive":
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker"]
        cmd += ["--mode", mode, "--view", view, "--dir", str(folder), "--out", str(out)]
    else:  # the real CLI, as a user runs it
        cmd = [sys.executable, "-m", "uxlab", "replay", str(folder), "--fps", str(fps)]
        cmd += ["--bench-json", str(out)]
    started = time.monotonic()
    if mode == "headless":
        subprocess.run(cmd, env=env, cwd=ROOT, check=True, timeout=timeout_s)
    else:
        session = f"uxlab-bench-{os.getpid()}"
        pairs = [("TEXTUAL_FPS", fps), ("UXLAB_FPS", fps), *extra.items()]
        shell = " ".join(f"{k}={v}" for k, v in pairs)
        shell += " " + " ".join(_quote(c) for c in cmd)
        width, height = (str(n) for n in SIZE)
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", session, "-x", width, "-y", height, shell],
            cwd=ROOT,
            check=True,
        )
        try:
            while not out.exists():
                if time.monotonic() - started > timeout_s:
                    raise TimeoutError(f"{mode}/{view}: no result after {timeout_s:.0f} s")
                time.sleep(0.5)
        finally:
            time.sleep(0.5)
            subprocess.run(
                ["tmux", "kill-session", "-t", session], check=False, stderr=subprocess.DEVNULL
            )  # normally gone already: the session ends with the app
    payload = json.loads(out.read_text())
    payload["wall_s"] = time.monotonic() - started
    return payload


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


# -- metrics -------------------------------------------------------------------------------


def metrics(log: dict[str, Any]) -> dict[str, float | None]:
    """The figures of one schedule played once."""
    recs = log["records"]
    scheduled = np.array([r["scheduled_ms"] for r in recs])
    handed = np.array([r["handed_ms"] for r in recs])
    queued = np.array([np.nan if r["queued_ms"] is None else r["queued_ms"] for r in recs])
    flushed = np.array([np.nan if r["flushed_ms"] is None else r["flushed_ms"] for r in recs])
    shown = np.where(np.isnan(flushed), queued, flushed)
    late_handed = handed - scheduled
    late_shown = shown - scheduled
    sched_gaps = np.diff(scheduled)
    shown_gaps = np.diff(shown)
    same_frame = np.diff(queued) == 0
    n = len(recs)
    k = min(200, n // 4)

    def pct(x: np.ndarray, q: float) -> float | None:
        x = x[~np.isnan(x)]
        return float(np.percentile(x, q)) if len(x) else None

    def mean_gap(target: float) -> float | None:
        # Only for the fixed-gap schedules (a lognormal stream has no 10 or 30 ms gaps).
        sel = np.isclose(sched_gaps, target, atol=0.01) & ~np.isnan(shown_gaps)
        return float(shown_gaps[sel].mean()) if sel.mean() > 0.25 else None

    def drift(x: np.ndarray) -> float | None:
        if np.isnan(x[-k:]).all() or np.isnan(x[:k]).all():
            return None
        return float(np.nanmedian(x[-k:]) - np.nanmedian(x[:k]))

    short = sched_gaps < 20.0
    if np.isnan(queued).all():  # no frames at all (the bare-asyncio floor)
        short = np.zeros_like(short)
        same_frame = np.array([], dtype=bool)
    return {
        "chunks": n,
        "unpainted": int(np.isnan(queued).sum()),
        "handed_p50": pct(late_handed, 50),
        "handed_p99": pct(late_handed, 99),
        "shown_p50": pct(late_shown, 50),
        "shown_p99": pct(late_shown, 99),
        "shown_sd": float(np.nanstd(late_shown)) if (~np.isnan(late_shown)).sum() > 1 else None,
        "shared_all": float(same_frame.mean()) if len(same_frame) else None,
        "shared_short": float(same_frame[short].mean()) if short.any() else None,
        "gap10": mean_gap(10.0),
        "gap30": mean_gap(30.0),
        "drift_handed": drift(late_handed),
        "drift_shown": drift(late_shown),
    }


def _f(value: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if value is None else fmt.format(value)


def print_table(results: dict[str, dict[str, Any]]) -> None:
    cols = (
        "config",
        "schedule",
        "handed−sched p50/p99",
        "shown−sched p50/p99",
        "shown SD",
        "shared",
        "gap@10",
        "gap@30",
        "drift h/s",
        "CPU ms/chunk",
    )
    rows = []
    for config, payload in results.items():
        n_chunks = sum(len(log["records"]) for log in payload["logs"]) or 1
        cpu = payload.get("cpu_s")
        cpu_text = "-" if cpu is None else f"{1000.0 * cpu / n_chunks:.3f}"
        for log in payload["logs"]:
            m = metrics(log)
            shared = m["shared_short"] if m["shared_short"] is not None else m["shared_all"]
            rows.append(
                (
                    config,
                    log["schedule_id"].split("~")[0],
                    f"{_f(m['handed_p50'])} / {_f(m['handed_p99'])}",
                    f"{_f(m['shown_p50'])} / {_f(m['shown_p99'])}",
                    _f(m["shown_sd"]),
                    _f(None if shared is None else 100 * shared, "{:.1f}%"),
                    _f(m["gap10"]),
                    _f(m["gap30"]),
                    f"{_f(m['drift_handed'])} / {_f(m['drift_shown'])}",
                    cpu_text,
                )
            )
    widths = [max(len(str(r[i])) for r in [cols, *rows]) for i in range(len(cols))]
    print(" | ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)))
    print("-|-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)))


def print_ratios(results: dict[str, dict[str, Any]]) -> None:
    print("\nour / baseline (lower is better; gap error = |mean gap − scheduled gap|)")
    for mode in ("headless", "tmux"):
        ours, base = results.get(f"{mode}:ours@240"), results.get(f"{mode}:naive@60")
        if not ours or not base:
            continue
        for lo, lb in zip(ours["logs"], base["logs"], strict=True):
            mo, mb = metrics(lo), metrics(lb)
            parts = []
            for key in ("shown_p50", "shown_p99", "shared_all"):
                if mo[key] is not None and mb[key]:
                    parts.append(f"{key} {mo[key] / mb[key]:.2f}")
            for key, target in (("gap10", 10.0), ("gap30", 30.0)):
                if mo[key] is not None and mb[key] is not None and abs(mb[key] - target) > 0:
                    ratio = abs(mo[key] - target) / abs(mb[key] - target)
                    parts.append(f"{key} error {ratio:.2f}")
            print(f"  {mode:8} {lo['schedule_id'].split('~')[0]:15} " + ", ".join(parts))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter streams")
    parser.add_argument("--no-tmux", action="store_true", help="headless only")
    parser.add_argument("--json", type=Path, help="also write all raw results here")
    parser.add_argument(
        "--also-fps", type=int, action="append", default=[], help="also run ours headless at N fps"
    )
    parser.add_argument(
        "--ab", action="store_true", help="also ours without direct frames and with other waits"
    )
    parser.add_argument(
        "--only-ab",
        action="store_true",
        help="only the floor and ours with its A/B variants (no naive baseline)",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=("headless", "tty"), help=argparse.SUPPRESS)
    parser.add_argument("--view", choices=("ours", "naive", "bare"), help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    sys.path.insert(0, str(ROOT))
    schedules = make_schedules(args.quick)
    total_s = sum(t[-1] for t in schedules.values()) / 1000.0
    load = os.getloadavg()
    print(
        f"timing fidelity: {os.cpu_count()} CPUs, load {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f}"
        f" (1/5/15 min), streams {total_s:.0f} s per configuration"
    )
    ab = args.ab or args.only_ab
    variants = list(VARIANTS) if ab else [""]
    configs = [("headless", "bare", 0, "")]
    configs += [("headless", "ours", 240, v) for v in variants]
    if not args.only_ab:
        configs += [("headless", "naive", 60, "")]
    configs += [("headless", "ours", fps, "") for fps in args.also_fps]
    if shutil.which("tmux") and not args.no_tmux:
        configs += [("tmux", "ours", 240, v) for v in variants if v != "wait=timer"]
        if not args.only_ab:
            configs += [("tmux", "naive", 60, "")]
    elif not args.no_tmux:
        print("tmux not found: headless only")
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="uxlab-bench-") as tmp:
        folder = Path(tmp)
        write_schedules(schedules, folder)
        for mode, view, fps, variant in configs:
            name = "floor:bare-asyncio" if view == "bare" else f"{mode}:{view}@{fps}"
            name += f" {variant}" if variant else ""
            load_before = os.getloadavg()[0]
            print(f"  running {name} (load {load_before:.2f}) ...", flush=True)
            mode_arg = "headless" if mode == "headless" else "tty"
            timeout_s = total_s * 3 + 120
            payload = run_config(mode_arg, view, fps, folder, timeout_s, variant)
            payload["load_before"] = load_before
            if view != "bare" and payload["frame_cap"] != fps:
                print(f"  warning: {name} ran at {payload['frame_cap']} fps")
            results[name] = payload
    print(f"load after: {os.getloadavg()[0]:.2f}\n")
    print("times in ms; 'shown' = flushed to the pty under tmux, frame queued when headless;")
    print("'shared' = chunks (with a scheduled gap < 20 ms) painted in the same frame as the")
    print("previous chunk; drift = median lateness, last 200 chunks minus first 200\n")
    print_table(results)
    print_ratios(results)
    if args.json:
        args.json.write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
