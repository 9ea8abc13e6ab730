"""Painted times of a browser session (`uxlab.store.browser_paints`) on both backends: written
through the store, exported beside the chunks, deleted with a withdrawal."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.postgres import query

from uxlab.store import Store, read_tables
from uxlab.store.browser_paints import ChunkPaint, record_paints
from uxlab.study import load_study

GOOD = Path(__file__).parent / "data" / "bad_studies" / "good.toml"
BROWSER = {"family": "Chromium (headless)", "display_hz": 60.0, "display_keeps_gaps": True}


def browser_session(store: Store, participant: str = "P-PAINT1"):
    """A browser participant's session with its first trial committed: 3 chunks, 100 ms apart."""
    session = store.sessions.start_or_resume(
        load_study(GOOD), participant, environment={"term": "xterm", "browser": BROWSER}
    )
    store.sessions.set_state(session, "consented")
    store.sessions.set_state(session, "running")
    store.trials.begin(session, 0)
    chunks = [
        {"kind": "chunk", "t_ms": 100.0 * k, "index": k, "scheduled_ms": 100.0 * k, "n_chars": 4}
        for k in range(3)
    ]
    store.trials.commit(
        session, 0, "completed", {"shown_first_ms": 1.0}, {"acceptable": ("yes", 900.0)}, chunks
    )
    return session


def test_paints_are_stored_exported_and_withdrawn_on_both_backends(db, tmp_path):
    with Store.open(db) as store:
        session = browser_session(store)
        paints = [ChunkPaint(session.id, 0, k, 100.0 * k + 12.0 + k, 0.5, 3.0) for k in range(3)]
        gone = ChunkPaint("S-no-such-session", 0, 0, 1.0, 0.5, 1.0)
        assert record_paints(store, [*paints, gone]) == 3, "an unknown session's row is dropped"
        # a chunk painted again (a resent report) replaces its row
        assert record_paints(store, [ChunkPaint(session.id, 0, 2, 216.0, 0.25, 2.0)]) == 1
        assert not store.db.conn.in_transaction
        actions = [e["action"] for e in store.audit.entries()]

    columns, rows = read_tables(db)["trials"]
    assert {"n_painted", "late_painted_p99_ms", "paint_clock_uncertainty_ms"} <= set(columns)
    (trial,) = [r for r in rows if r["trial_index"] == 0]
    assert trial["n_painted"] == 3
    assert trial["late_painted_max_ms"] == 16.0  # chunk 2: painted 216 ms, scheduled 200 ms
    assert trial["late_painted_p50_ms"] == 13.0
    assert trial["paint_clock_uncertainty_ms"] == 0.5
    assert (trial["browser"], trial["display_hz"], trial["display_keeps_gaps"]) == (
        "Chromium (headless)",
        60.0,
        1,
    )
    _, events = read_tables(db)["events"]
    painted = {
        json.loads(e["data"])["index"]: json.loads(e["data"]).get("painted_ms")
        for e in events
        if e["kind"] == "chunk" and e["trial_index"] == 0
    }
    assert painted == {0: 12.0, 1: 113.0, 2: 216.0}

    with Store.open(db) as store:
        store.withdrawal.withdraw("P-PAINT1")
        assert [e["action"] for e in store.audit.entries()][: len(actions)] == actions
    assert query(db, "SELECT count(*) FROM browser_paints") == [(0,)]


def test_the_web_hosts_paint_writer_stores_on_either_backend(db):
    import asyncio

    from uxlab.host.web_server import PaintWriter

    with Store.open(db) as store:
        session = browser_session(store)
    writer = PaintWriter(db)  # what `uxlab host --db PATH|URL` gives its connections
    try:
        stored = asyncio.run(writer.write([ChunkPaint(session.id, 0, 1, 113.0, 0.5, 2.0)]))
    finally:
        writer.close()
    assert stored == 1
    assert query(db, "SELECT chunk_index, painted_ms FROM browser_paints") == [(1, 113.0)]
