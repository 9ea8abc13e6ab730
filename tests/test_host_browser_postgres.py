"""`uxlab host` in the browser on a PostgreSQL study database, end to end: the server started
by the tests (`helpers.postgres`), real host processes, real headless Chromium.

An invited participant consents on the first host, answers, gives up on a slow answer and
closes the tab mid-study (a clean quit); they open their link again on a second host sharing
the database and finish there. `uxlab export` and `uxlab verify` then run on the database's
URL: the trial table holds every trial and every answer once, and the painted times of the
streamed chunks, from both hosts, as the SQLite browser test (test_host_browser) finds them.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers.browser import WebHost, checked_paints, drive, launch_chromium, open_link, wait_screen
from helpers.postgres import query, wait_until
from helpers.studies import tiny_study
from playwright.async_api import async_playwright
from test_several_hosts import committed

from uxlab.cli import main
from uxlab.store import Store
from uxlab.store.invitations import create_invitations

pytestmark = pytest.mark.slow


async def test_a_browser_participant_on_postgresql_resumed_on_a_second_host(
    tmp_path, postgres_cluster, capsys
):
    db = postgres_cluster.database()
    study = tiny_study(
        tmp_path, levels="20, 40, 60, 30000", itl=4, repeats=1, practice=0, attention=False
    )  # one give-up; whichever trials it comes between, each host streams one at least
    with Store.open(db) as store:
        (inv,) = create_invitations(store, "tiny", 1)
    hosts = [WebHost(study, db)]
    try:
        async with async_playwright() as pw:
            browser = await launch_chromium(pw)
            page = await open_link(browser, hosts[0], inv.code)
            await wait_screen(page, lambda s: "Press a if you agree" in s)

            await drive(page, stop_when=lambda s: "Trial 3 of 4" in s and "to send." in s)
            wait_until(lambda: len(committed(db)) == 2)  # stored off the UI loop
            before = committed(db)
            mark = len(hosts[0].lines)
            await page.close()  # the participant closes the tab mid-study
            hosts[0].wait_line(f"{inv.participant}: program ended", after=mark)
            assert committed(db) == before, "a hang-up loses no committed trial"

            hosts.append(WebHost(study, db))  # the same database, another process
            page = await open_link(browser, hosts[1], inv.code)
            await wait_screen(page, lambda s: "Welcome back" in s or "Trial" in s)
            final = await drive(page)
            assert "The study is finished" in final, final
            await browser.close()
    finally:
        assert [host.stop() for host in hosts] == [0] * len(hosts)
    assert all(inv.code not in host.output() for host in hosts)

    assert query(db, "SELECT state, resumed_count FROM sessions") == [("completed", 1)]
    assert query(db, "SELECT run, kind FROM session_runs ORDER BY run") == [
        (0, "start"),
        (1, "resume"),
    ]
    trials = committed(db)
    assert [t for t, _ in trials] == [0, 1, 2, 3], "every trial once"
    assert trials[: len(before)] == before, "nothing the first host committed is lost"
    assert "abandoned" in {o for _, o in trials}, "the give-up is stored"
    streamed, painted = checked_paints(db)  # each paint checked against its chunk
    assert streamed and streamed <= painted, "every streamed trial has painted chunks"
    assert any(t < len(before) for t in painted) and any(t >= len(before) for t in painted)

    assert main(["verify", db, "--study", str(study)]) == 0, capsys.readouterr().out
    assert main(["export", db, "-o", str(tmp_path / "export")]) == 0
    rows, (session,) = (read_csv(tmp_path / "export" / f"{t}.csv") for t in ("trials", "sessions"))
    assert [(int(r["trial_index"]), r["outcome"]) for r in rows] == trials, "each trial once"
    for row in rows:
        answered = row["outcome"] == "completed"
        assert (row["q_acceptable"], row["q_speed"]) == (("1", "4") if answered else ("", ""))
        assert (row["late_painted_p99_ms"] != "") == (int(row["trial_index"]) in streamed)
        assert row["browser"] == "Chromium (headless)"
    assert session["q_comments"] == "ok"


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))
