"""`uxlab host` in the browser, end to end: a real host process, real headless Chromium (the
OS package) driven by Playwright, the real study database.

An invited participant opens their link, consents, takes part, gives up on a slow answer,
closes the tab in the middle (the host hangs the program up: a clean quit), opens the link
again and finishes. The store then holds every trial once, the give-up, the session as
resumed with the browser's family and display rate, the frame cap the host asked for (240,
though the host itself was started with Textual's 60), and a painted time for the chunks
of every streamed trial, none before its chunk was flushed (within the clock mapping's
stated uncertainty). A wrong code is refused and appears nowhere in the host's output.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from helpers.browser import WebHost, checked_paints, drive, launch_chromium, open_link, wait_screen
from helpers.studies import tiny_study
from playwright.async_api import async_playwright

from uxlab.store import Store
from uxlab.store.invitations import create_invitations

pytestmark = pytest.mark.slow


def committed(db) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT trial_index, outcome FROM trials WHERE outcome != 'running' ORDER BY 1"
        ).fetchall()


async def test_a_whole_study_in_chromium_with_a_give_up_and_a_resume(tmp_path):
    study = tiny_study(tmp_path, levels="20, 30000", itl=4, repeats=1, attention=False)
    db = tmp_path / "web.sqlite"
    with Store.open(db) as store:
        (inv,) = create_invitations(store, "tiny", 1)
    wrong = "Zz9notaninvitationcode00"
    host = WebHost(study, db, env={"TEXTUAL_FPS": "60"})  # the host's own cap is not used
    try:
        async with async_playwright() as pw:
            browser = await launch_chromium(pw)
            page = await open_link(browser, host, wrong)
            refused = await wait_screen(page, lambda s: "does not open a study" in s)
            assert "Consent" not in refused
            host.wait_line("refused an unknown link")

            page = await open_link(browser, host, inv.code)
            consent = await wait_screen(page, lambda s: "Press a if you agree" in s)
            assert "You agree to take part" in consent

            def two_committed(text: str) -> bool:
                return "Press Enter to send." in text and len(committed(db)) >= 2

            await drive(page, stop_when=two_committed)
            before = committed(db)
            mark = len(host.lines)
            await page.close()  # the participant closes the tab mid-study
            host.wait_line(f"{inv.participant}: program ended", after=mark)
            assert committed(db) == before, "a hang-up loses no committed trial"

            page = await browser.new_page(viewport={"width": 1000, "height": 700})
            await page.goto(host.url + "#" + inv.code)
            await wait_screen(page, lambda s: "Welcome back" in s or "Trial" in s)
            final = await drive(page)
            assert "The study is finished" in final, final
            await browser.close()
    finally:
        assert host.stop() == 0
    output = host.output()
    assert inv.code not in output and wrong not in output

    with sqlite3.connect(db) as conn:
        state, resumed, env_json = conn.execute(
            "SELECT state, resumed_count, environment FROM sessions"
        ).fetchone()
        plan_len = conn.execute("SELECT json_array_length(plan) FROM sessions").fetchone()[0]
    trials = committed(db)
    assert (state, resumed) == ("completed", 1)
    assert len({t for t, _ in trials}) == len(trials) >= plan_len, "every trial once"
    assert "abandoned" in {o for _, o in trials}, "the give-up is stored"
    env = json.loads(env_json)
    assert env["frame_cap_fps"] == 240
    assert env["browser"]["family"] == "Chromium (headless)"
    assert env["browser"]["display_hz"] > 0
    assert env["ssh"] is False
    # 4 ms gaps are below what any display shows: warned, stored, logged for the researcher
    assert env["browser"]["display_keeps_gaps"] is False
    assert any("display refreshes every" in w for w in env["timing_warnings"])
    assert f"{inv.participant}: timing warning: the participant's display refreshes" in output

    streamed, painted_trials = checked_paints(db)
    assert streamed, "the completed trials streamed chunks with flush times"
    assert streamed <= painted_trials, "every streamed trial has painted chunks"

    # The trial table carries the painted lateness beside handed and shown, per trial.
    from uxlab.store.export import read_tables

    columns, rows = read_tables(db)["trials"]
    assert {"late_painted_p99_ms", "display_hz", "browser", "n_painted"} <= set(columns)
    painted_rows = [r for r in rows if r["late_painted_p99_ms"] is not None]
    assert {r["trial_index"] for r in painted_rows} == streamed
    assert all(r["browser"] == "Chromium (headless)" for r in rows)

    # Withdrawing the participant deletes their painted times with their trials.
    from uxlab.store.invitations import withdraw_invited

    with Store.open(db) as store:
        withdraw_invited(store, inv.participant)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM browser_paints").fetchone() == (0,)
