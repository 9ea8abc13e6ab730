"""Painted times of chunks shown in a browser tab (`uxlab host`), one row per chunk; and
the export's one view of *painted*, whichever front end measured it.

A terminal session run with a glass probe (`uxlab run --glass`) knows its painted times when
the trial is stored, so they are kept in the trial's chunk events (`painted_ms`); a browser
tab reports them later, from another process, into the table below. `add_painted` gives
both the same columns and the same `painted_ms` in events.csv.

The page times each paint mark (`uxlab.paint_marks`) on its own clock: when its terminal
parsed the mark and the next animation frame after it (when xterm.js has rendered the frame
that holds the chunk and the browser is about to paint it). The host stores:

- `painted_ms`: that animation frame on the player's clock, relative to the trial's send
  (as `handed_ms` and `flushed_ms` are). The page's clock is mapped to the host's by the
  ping exchange with the smallest round trip (offset = host midpoint - page time), so it
  is an estimate within +- `clock_uncertainty_ms` (half that round trip);
- `parse_to_paint_ms`: from the mark's parse to that animation frame, on the page's clock
  alone (no clock mapping: exact to the page timer's resolution).

Paints are written through the store (`record_paints(store, ...)`): the same SQL on SQLite
and PostgreSQL, in one of the store's write transactions (on PostgreSQL under its advisory
write lock). Rows go with their session (`ON DELETE
CASCADE`), so a withdrawal deletes them. No address, token or user agent string is stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trial_table_spec as spec
from uxlab.store.backend import Connection

if TYPE_CHECKING:
    from uxlab.store.store import Store


@dataclass(frozen=True)
class ChunkPaint:
    """When one chunk was painted in the participant's browser (see the module docstring)."""

    session_id: str
    trial_index: int
    chunk_index: int
    painted_ms: float
    clock_uncertainty_ms: float
    parse_to_paint_ms: float


def record_paints(store: Store, paints: Iterable[ChunkPaint]) -> int:
    """Store `paints` in one write transaction (a chunk painted again replaces its row);
    the count stored. Rows of a session that is not (or no longer) stored are dropped."""
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
    sessions = sorted({r[0] for r in rows})
    with store.db.write_transaction() as conn:
        known = {
            r[0]
            for r in conn.execute(
                f"SELECT session_id FROM sessions WHERE session_id IN "
                f"({','.join('?' * len(sessions))})",
                sessions,
            )
        }
        kept = [r for r in rows if r[0] in known]
        conn.executemany(
            "INSERT INTO browser_paints (session_id, trial_index, chunk_index, painted_ms, "
            "clock_uncertainty_ms, parse_to_paint_ms) VALUES (?,?,?,?,?,?) "
            "ON CONFLICT (session_id, trial_index, chunk_index) DO UPDATE SET "
            "painted_ms = excluded.painted_ms, "
            "clock_uncertainty_ms = excluded.clock_uncertainty_ms, "
            "parse_to_paint_ms = excluded.parse_to_paint_ms",
            kept,
        )
    return len(kept)


def read_paints(conn: Connection) -> dict[tuple[str, int], dict[int, ChunkPaint]]:
    """Every stored paint: (session, trial) -> chunk index -> paint."""
    out: dict[tuple[str, int], dict[int, ChunkPaint]] = {}
    for row in conn.execute(
        "SELECT session_id, trial_index, chunk_index, painted_ms, clock_uncertainty_ms, "
        "parse_to_paint_ms FROM browser_paints"
    ):
        paint = ChunkPaint(*row)
        out.setdefault((paint.session_id, paint.trial_index), {})[paint.chunk_index] = paint
    return out


PAINTED_COLUMNS = spec.names(spec.BROWSER)
"""Trial-table columns of a database with painted times (`uxlab export`): chunks with a
painted time, painted lateness (painted - scheduled, over chunks with text) p50/p99/max, the
largest clock uncertainty of those paints (a browser's; a terminal's glass probe shares the
player's clock), the session's browser family, display refresh rate and whether that
refresh was no longer than the study's shortest gap (1/0), and the terminal emulator whose
window a glass probe timed."""


def _quantile(values: list[float], q: float) -> float:
    xs = sorted(values)
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _table(env: dict[str, Any], key: str) -> dict[str, Any]:
    value = env.get(key)
    return value if isinstance(value, dict) else {}


def add_painted(
    conn: Connection,
    trial_columns: list[str],
    trial_rows: list[dict[str, Any]],
    event_rows: list[dict[str, Any]],
) -> list[str]:
    """Add `PAINTED_COLUMNS` to the trial rows and `painted_ms` to the chunk events' data
    (in place) when the database has painted times (a browser tab's, or a terminal's at the
    glass); returns the trial table's columns."""
    paints = read_paints(conn)
    environments: dict[str, dict[str, Any]] = {}
    for sid, env in conn.execute("SELECT session_id, environment FROM sessions"):
        loaded = json.loads(env) if env else None
        environments[sid] = loaded if isinstance(loaded, dict) else {}
    glass_sessions = {
        sid for sid, env in environments.items() if isinstance(env.get("glass"), dict)
    }
    if not paints and not glass_sessions:
        return trial_columns
    late: dict[tuple[str, int], list[float]] = {}
    counted: dict[tuple[str, int], int] = {}
    for event in event_rows:
        key = (event["session_id"], event["trial_index"])
        if event["kind"] != "chunk" or (key not in paints and key[0] not in glass_sessions):
            continue
        data = json.loads(event["data"])
        paint = paints.get(key, {}).get(data.get("index"))
        if paint is not None:
            data["painted_ms"] = paint.painted_ms
            event["data"] = json.dumps(data, sort_keys=True, separators=(",", ":"))
        painted = data.get("painted_ms")
        if painted is None:
            continue
        counted[key] = counted.get(key, 0) + 1
        if data.get("n_chars") and data.get("scheduled_ms") is not None:
            late.setdefault(key, []).append(painted - data["scheduled_ms"])
    for row in trial_rows:
        key = (row["session_id"], row["trial_index"])
        chunk_paints = paints.get(key, {})
        values = late.get(key, [])
        env = environments.get(row["session_id"], {})
        browser = _table(env, "browser")
        glass = _table(env, "glass")
        keeps = browser.get("display_keeps_gaps")
        row.update(
            {
                "n_painted": counted.get(key, 0) if (browser or glass) else None,
                "late_painted_p50_ms": round(_quantile(values, 0.5), 3) if values else None,
                "late_painted_p99_ms": round(_quantile(values, 0.99), 3) if values else None,
                "late_painted_max_ms": round(max(values), 3) if values else None,
                "paint_clock_uncertainty_ms": (
                    max(p.clock_uncertainty_ms for p in chunk_paints.values())
                    if chunk_paints
                    else None
                ),
                "browser": browser.get("family"),
                "display_hz": browser.get("display_hz"),
                "display_keeps_gaps": None if keeps is None else int(bool(keeps)),
                "terminal_emulator": glass.get("emulator"),
            }
        )
    return [*trial_columns, *PAINTED_COLUMNS]
