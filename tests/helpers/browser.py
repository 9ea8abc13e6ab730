"""Browser host tests: `uxlab host STUDY --port 0` as a real process and participants in real
headless Chromium (the OS package, /usr/bin/chromium) driven by Playwright.

`WebHost` starts the host, reads its port from the first line and keeps every later line.
`launch_chromium` starts the OS's Chromium (Playwright never downloads a browser here);
`open_link(browser, host, code)` opens a participant's link in a new tab.
`screen(page)` reads the terminal's rows from xterm.js's DOM; `drive(page, ...)` answers the
study's screens like the SSH tests' participant, and gives up on a slow answer (Escape)
when it has waited `give_up_after_s`. `checked_paints(db)` checks the stored painted times
against their chunks' (either backend). Waits poll with generous deadlines: a hang becomes a
failure, not a timing claim.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from pathlib import Path
from typing import Any

from helpers.host_process import CollectedHost
from helpers.postgres import query

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Screen markers -> keys, as in the SSH test (the first marker on the screen decides).
ACTIONS = [
    ("Press a if you agree", ["a"]),
    ("Practice over", ["Enter"]),
    ("Take a short rest", ["Enter"]),
    ("Press Enter to begin", ["Enter"]),
    ("Press Enter to send.", ["Enter"]),
    ("Press Enter for the next trial", ["Enter"]),
    ("Was the wait acceptable?", ["y", "Enter"]),
    ("How fast did the answer feel?", ["4", "Enter"]),
    ("Anything else you noticed?", ["o", "k", "Enter"]),
    ("Press Enter to close", ["Enter"]),
]
WAITING = "to stop waiting"


class WebHost(CollectedHost):
    """`python -m uxlab host STUDY --db DB --port 0 [extra]`, its output collected by line."""

    def __init__(
        self, study: Path, db: Path | str, extra: list[str] | None = None, env: dict | None = None
    ) -> None:
        args = [str(study), "--db", str(db), "--port", "0", *(extra or [])]
        super().__init__(args, REPO, dict(os.environ, PYTHONPATH=str(REPO), **(env or {})))
        first = self.wait_line("in the browser on", deadline_s=60)
        self.port = int(re.search(r":(\d+)/", first).group(1))
        self.url = f"http://127.0.0.1:{self.port}/"


async def launch_chromium(playwright: Any) -> Any:
    """The OS's headless Chromium (fails, not skips, when it is missing)."""
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: install the OS package `chromium`"
    return await playwright.chromium.launch(
        executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
    )


async def open_link(browser: Any, host: WebHost, code: str) -> Any:
    """A new tab (1000x700) on `host`'s page with the invitation `code` after its `#`."""
    page = await browser.new_page(viewport={"width": 1000, "height": 700})
    await page.goto(host.url + "#" + code)
    return page


async def screen(page: Any) -> str:
    """The terminal's rows as text ('' before the terminal has rows), then the page's notice."""
    return await page.evaluate(
        """() => {
            const rows = document.querySelector('.xterm-rows');
            const status = document.getElementById('status');
            const note = status && !status.hidden ? status.innerText : '';
            return (rows ? rows.innerText.replace(/\\u00a0/g, ' ') : '') + '\\n' + note;
        }"""
    )


async def wait_screen(page: Any, condition, deadline_s: float = 90.0) -> str:
    give_up = time.monotonic() + deadline_s
    while time.monotonic() < give_up:
        text = await screen(page)
        if condition(text):
            return text
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting; the screen:\n{await screen(page)}")


async def drive(
    page: Any, stop_when=None, deadline_s: float = 180.0, give_up_after_s: float = 1.5
) -> str:
    """Answer screens until the page says the session ended (or `stop_when(screen)`)."""
    give_up = time.monotonic() + deadline_s
    last_acted = None
    waiting_since: float | None = None
    while time.monotonic() < give_up:
        text = await screen(page)
        if "you may close this tab" in text or "Open your link again" in text:
            return text
        if stop_when is not None and stop_when(text):
            return text
        if WAITING in text and "Press Enter to send." not in text:
            waiting_since = waiting_since or time.monotonic()
            if time.monotonic() - waiting_since > give_up_after_s:
                await page.keyboard.press("Escape")
                waiting_since = None
        else:
            waiting_since = None
        for marker, keys in ACTIONS:
            if marker in text:
                lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
                state = (marker, tuple(lines[:3]))
                if state != last_acted:
                    for key in keys:
                        await page.keyboard.press(key)
                    last_acted = state
                break
        await asyncio.sleep(0.1)
    raise AssertionError(f"the study did not finish in time; the screen:\n{await screen(page)}")


def checked_paints(db: Path | str) -> tuple[set[int], set[int]]:
    """(trials that streamed chunks with flush times, trials with painted chunks), after
    checking every stored paint against its chunk's event: never before it was queued (a
    frame is queued before its bytes are written), mostly after its flush where that was
    timed (the flush is timed when the writer thread gets back from it, which a loaded
    machine can delay past the paint), each within its clock mapping's stated uncertainty."""
    chunks = {
        (t, json.loads(d)["index"]): json.loads(d)
        for t, d in query(db, "SELECT trial_index, data FROM events WHERE kind = 'chunk'")
    }
    paints = query(
        db,
        "SELECT trial_index, chunk_index, painted_ms, clock_uncertainty_ms, "
        "parse_to_paint_ms FROM browser_paints",
    )
    after_flush = []
    for trial, index, painted_ms, uncertainty, parse_to_paint in paints:
        chunk = chunks[(trial, index)]
        assert painted_ms + uncertainty >= chunk["queued_ms"], "painted before it was queued?"
        assert parse_to_paint >= 0
        if chunk.get("flushed_ms") is not None:  # None: the flush was not timed (a frame
            # cut short when the tab closed mid-trial), which the event says as it is
            after_flush.append(painted_ms + uncertainty >= chunk["flushed_ms"])
    assert sum(after_flush) > len(after_flush) / 2
    streamed = {t for (t, _), c in chunks.items() if c.get("flushed_ms") is not None}
    return streamed, {t for t, *_ in paints}
