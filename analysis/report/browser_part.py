"""The report's "Painted in the browser" table: for sessions hosted in a browser tab
(`uxlab host`), how late chunks were handed out, flushed and painted, per session.

Present when the trial table has `late_painted_p99_ms` values. One row per browser session
over its trials with painted chunks: the browser family and display refresh rate, the
median trial's p99 lateness at each step (scheduled -> handed -> flushed -> painted), the
worst trial's painted p99, and the largest clock uncertainty of the painted times.

The rule (`FLAG_RULE`): a session is flagged when its display refreshed less often than the
study's shortest gap needs (`display_keeps_gaps` = 0: chunks closer than one refresh share
an image), or when its median trial's painted p99 lateness exceeds one refresh interval plus
`PAINT_SLACK_MS` (the display's own quantisation allowed for). Flagged sessions are named,
not dropped: the thresholds above still include them; compare with and without them.
"""

from __future__ import annotations

import pandas as pd

PAINT_SLACK_MS = 8.0
"""Beyond one refresh interval, the painted p99 a session may reach before it is flagged
(uxlab's own shown-time p99 target)."""
FLAG_RULE = (
    "a session is flagged when its display refreshed less often than the study's shortest "
    "gap (chunks closer than one refresh share an image), or when its median trial's "
    f"painted p99 lateness exceeds one refresh interval + {PAINT_SLACK_MS:g} ms"
)
COLUMNS = [
    "participant",
    "session_id",
    "browser",
    "display (Hz)",
    "trials painted",
    "p99 handed, median trial (ms)",
    "p99 flushed, median trial (ms)",
    "p99 painted, median trial (ms)",
    "p99 painted, worst trial (ms)",
    "clock uncertainty, max (ms)",
    "flagged",
]


def _num(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame.columns:
        return pd.Series(float("nan"), index=frame.index)
    return pd.to_numeric(frame[column], errors="coerce")


def _median(values: pd.Series) -> float:
    values = values.dropna()
    return float(values.median()) if len(values) else float("nan")


def flag_reason(display_hz: float, keeps_gaps: float, painted_p99_ms: float) -> str:
    """Why a session is flagged by `FLAG_RULE` ('' when it is not)."""
    reasons = []
    if keeps_gaps == 0:
        reasons.append("display slower than the shortest gap")
    if display_hz > 0 and painted_p99_ms > 1000.0 / display_hz + PAINT_SLACK_MS:
        reasons.append("painted p99 beyond one refresh + slack")
    return "; ".join(reasons)


def browser_paint_table(trials: pd.DataFrame) -> pd.DataFrame | None:
    """One row per browser session (see the module docstring); None without painted times."""
    painted = _num(trials, "late_painted_p99_ms")
    if painted.notna().sum() == 0 or "participant" not in trials.columns:
        return None
    measured = trials[painted.notna()]
    by = "session_id" if "session_id" in measured.columns else "participant"
    rows = []
    for _, part in measured.groupby(by, sort=False, dropna=False):
        hz = _median(_num(part, "display_hz"))
        keeps = _num(part, "display_keeps_gaps").dropna()
        painted_p99 = _num(part, "late_painted_p99_ms")
        median_painted = _median(painted_p99)
        reason = flag_reason(hz, float(keeps.min()) if len(keeps) else float("nan"), median_painted)
        browser = part["browser"].dropna() if "browser" in part.columns else pd.Series()
        rows.append(
            {
                "participant": str(part["participant"].iloc[0]),
                "session_id": part["session_id"].iloc[0] if by == "session_id" else "",
                "browser": str(browser.iloc[0]) if len(browser) else "",
                "display (Hz)": hz,
                "trials painted": len(part),
                "p99 handed, median trial (ms)": _median(_num(part, "late_handed_p99_ms")),
                "p99 flushed, median trial (ms)": _median(_num(part, "late_shown_p99_ms")),
                "p99 painted, median trial (ms)": median_painted,
                "p99 painted, worst trial (ms)": float(painted_p99.max()),
                "clock uncertainty, max (ms)": float(
                    _num(part, "paint_clock_uncertainty_ms").max()
                ),
                "flagged": reason or "no",
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def browser_blocks(table: pd.DataFrame | None) -> list:
    """Heading, what the times are, the rule, the table."""
    if table is None:
        return []
    from analysis.report.blocks import Heading, Para, Table

    n_flagged = int((table["flagged"] != "no").sum())
    text = (
        "Sessions hosted in a browser tab: lateness (time minus the scheduled time) where the "
        "player handed each chunk to the view, where the frame holding it was flushed to the "
        "host's pseudo-terminal, and where the page painted it (the animation frame in which the "
        "browser's terminal rendered it; the display shows it at its next refresh). Painted "
        "times are on the host's clock through a ping-based offset estimate, within the "
        f"stated clock uncertainty. Rule: {FLAG_RULE}. {n_flagged} of {len(table)} sessions "
        "are flagged; they are kept in the analyses above."
    )
    return [
        Heading("Painted in the browser"),
        Para(text),
        Table(table, "Per browser session: handed, flushed and painted lateness"),
    ]
