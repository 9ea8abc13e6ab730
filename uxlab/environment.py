"""What a session ran on, and whether that setup can show a study's timing faithfully.

Recorded with every session: terminal program, TERM, size, multiplexer, frame cap, clock
source, Python and package versions, and the machine's state (load averages, CPUs, CPU
steal; `uxlab.machine`). Nothing that identifies a person (no user name, host
name or home path) is collected.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import sys
import time
from collections.abc import Mapping
from importlib import metadata
from typing import Any

from uxlab.machine import machine_state

MIN_COLUMNS = 80
MIN_ROWS = 24
PACKAGES = ("uxlab", "textual", "rich", "numpy", "scipy", "pandas")


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def multiplexer(environ: Mapping[str, str] | None = None) -> str | None:
    """'tmux', 'screen' or None: multiplexers repaint on their own schedule."""
    env = os.environ if environ is None else environ
    if env.get("TMUX") or env.get("TERM", "").startswith("tmux"):
        return "tmux"
    if env.get("STY") or env.get("TERM", "").startswith("screen"):
        return "screen"
    return None


def collect_environment(
    frame_cap: int, size: tuple[int, int] | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The environment record of a session (JSON-serialisable)."""
    env = os.environ if environ is None else environ
    if size is None:
        ts = shutil.get_terminal_size(fallback=(0, 0))
        size = (ts.columns, ts.lines)
    clock = time.get_clock_info("perf_counter")
    return {
        "term": env.get("TERM"),
        "term_program": env.get("TERM_PROGRAM"),
        "colorterm": env.get("COLORTERM"),
        "columns": size[0],
        "rows": size[1],
        "multiplexer": multiplexer(env),
        "ssh": bool(env.get("SSH_CONNECTION")),
        "frame_cap_fps": frame_cap,
        "clock": {
            "source": "time.perf_counter_ns",
            "implementation": clock.implementation,
            "monotonic": clock.monotonic,
            "resolution_s": clock.resolution,
        },
        "python": sys.version.split()[0],
        "platform": f"{platform.system()} {platform.release()} {platform.machine()}",
        "packages": {name: _version(name) for name in PACKAGES},
        "machine": machine_state(),
    }


def timing_warnings(env: dict[str, Any], shortest_gap_ms: float | None) -> list[str]:
    """Reasons this setup cannot show the study's timing faithfully (empty when it can)."""
    warnings = []
    if env.get("multiplexer"):
        warnings.append(
            f"running inside {env['multiplexer']}: it repaints the real terminal on its own "
            "schedule, so shown times are not what participants see; run studies outside it"
        )
    cols, rows = env.get("columns") or 0, env.get("rows") or 0
    if cols and rows and (cols < MIN_COLUMNS or rows < MIN_ROWS):
        warnings.append(
            f"terminal is {cols}x{rows}; the study screens need at least {MIN_COLUMNS}x{MIN_ROWS}"
        )
    fps = env.get("frame_cap_fps") or 0
    if shortest_gap_ms and fps:
        frame_ms = 1000.0 / fps
        if frame_ms > shortest_gap_ms / 2:
            need = int(2000 / shortest_gap_ms) + 1
            warnings.append(
                f"frame cap {fps} FPS ({frame_ms:.1f} ms per frame) is too coarse for the "
                f"study's shortest gap of {shortest_gap_ms:g} ms; use --fps {max(need, 240)}"
            )
    if env.get("ssh"):
        warnings.append("running over SSH: network delay adds to every shown time")
    return warnings


def warning_verdict(warnings: list[str]) -> list[str]:
    """What kind of problems `warnings` name, without how much: each warning's words before
    its first colon, numbers left out (`running inside tmux`, `terminal is #x#; ...`, `this
    machine cannot keep the study's shortest gaps right now`), sorted.

    A resume shows the researcher the warnings again only when this changes: a load of 8.3
    instead of 8.1 is the same verdict; a new kind of problem, or one gone, is not.
    """
    kinds = {re.sub(r"\d+(?:\.\d+)?", "#", w.split(":", 1)[0]).strip() for w in warnings}
    return sorted(kinds)


def display_warning(display_hz: float | None, shortest_gap_ms: float | None) -> str | None:
    """Why a display refreshing `display_hz` times a second cannot show the study's gaps.

    A display shows a new image once per refresh, so chunks less than one refresh apart
    share an image: warned when the refresh interval exceeds the study's shortest gap.
    None when it does not (or when either is unknown).
    """
    if not display_hz or display_hz <= 0 or not shortest_gap_ms:
        return None
    refresh_ms = 1000.0 / display_hz
    if refresh_ms <= shortest_gap_ms:
        return None
    return (
        f"the participant's display refreshes every {refresh_ms:.1f} ms ({display_hz:.0f} Hz), "
        f"longer than the study's shortest gap of {shortest_gap_ms:g} ms: chunks closer "
        "than one refresh share an image"
    )
