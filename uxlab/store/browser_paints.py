"""Painted times of chunks shown in a browser tab (`uxlab host`), one row per chunk.

The page times each paint mark (`uxlab.paint_marks`) on its own clock: when its terminal
parsed the mark and the next animation frame after it (when xterm.js has rendered the frame
that holds the chunk and the browser is about to paint it). The host stores:

- `painted_ms`: that animation frame on the player's clock, relative to the trial's send
  (as `handed_ms` and `flushed_ms` are). The page's clock is mapped to the host's by the
  ping exchange with the smallest round trip (offset = host midpoint - page time), so it
  is an estimate within +- `clock_uncertainty_ms` (half that round trip);
- `parse_to_paint_ms`: from the mark's parse to that animation frame, on the page's clock
  alone (no clock mapping: exact to the page timer's resolution).

The table is created on first use (not part of the versioned schema: a database without a
browser session has none); its rows go with their session (`ON DELETE CASCADE`), so a
withdrawal deletes them. No address, token or user agent string is stored here.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

_TABLE = """
CREATE TABLE IF NOT EXISTS browser_paints (
    session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    trial_index INTEGER NOT NULL,
    chunk_index INTEGER NOT NULL,
    painted_ms REAL NOT NULL,
    clock_uncertainty_ms REAL NOT NULL,
    parse_to_paint_ms REAL NOT NULL,
    PRIMARY KEY (session_id, trial_index, chunk_index)
)
"""


@dataclass(frozen=True)
class ChunkPaint:
    """When one chunk was painted in the participant's browser (see the module docstring)."""

    session_id: str
    trial_index: int
    chunk_index: int
    painted_ms: float
    clock_uncertainty_ms: float
    parse_to_paint_ms: float


def ensure_table(conn: sqlite3.Connection) -> None:
    """Create `browser_paints` when it is missing."""
    conn.execute(_TABLE)


def record_paints(conn: sqlite3.Connection, paints: Iterable[ChunkPaint]) -> int:
    """Store `paints` in one transaction (a chunk painted again replaces its row); the count.

    Rows of a session that is not (or no longer) stored are dropped.
    """
    ensure_table(conn)
    rows = [
        (
            p.session_id,
            p.trial_index,
            p.chunk_index,
            round(p.painted_ms, 3),
            round(p.clock_uncertainty_ms, 3),
            round(p.parse_to_paint_ms, 3),
        )
        for p in paints
    ]
    if not rows:
        return 0
    with conn:
        known = {
            r[0]
            for r in conn.execute(
                f"SELECT session_id FROM sessions WHERE session_id IN "
                f"({','.join('?' * len({r[0] for r in rows}))})",
                sorted({r[0] for r in rows}),
            )
        }
        kept = [r for r in rows if r[0] in known]
        conn.executemany(
            "INSERT OR REPLACE INTO browser_paints (session_id, trial_index, chunk_index, "
            "painted_ms, clock_uncertainty_ms, parse_to_paint_ms) VALUES (?,?,?,?,?,?)",
            kept,
        )
    return len(kept)


def read_paints(conn: sqlite3.Connection) -> dict[tuple[str, int], dict[int, ChunkPaint]]:
    """Every stored paint: (session, trial) -> chunk index -> paint; empty without the table."""
    has = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'browser_paints'"
    ).fetchone()
    if not has:
        return {}
    out: dict[tuple[str, int], dict[int, ChunkPaint]] = {}
    for row in conn.execute(
        "SELECT session_id, trial_index, chunk_index, painted_ms, clock_uncertainty_ms, "
        "parse_to_paint_ms FROM browser_paints"
    ):
        paint = ChunkPaint(*row)
        out.setdefault((paint.session_id, paint.trial_index), {})[paint.chunk_index] = paint
    return out
