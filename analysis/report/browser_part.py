"""The report's table of painted times: for sessions hosted in a browser tab (`uxlab
host`) and terminal sessions timed at the glass (`uxlab run --glass`), how late chunks were
handed out, flushed and painted, per session.

Present when the trial table has `late_painted_p99_ms` values. One row per such session
over its trials with painted chunks: where it was painted (the browser family, or the
terminal emulator), the display refresh rate (a browser's), the median trial's p99 lateness
at each step (scheduled -> handed -> flushed -> painted), the worst trial's painted p99, and
the largest clock uncertainty of the painted times (a browser's; a terminal's glass probe
shares the player's clock).

The rule (`FLAG_RULE`): a browser session is flagged when its display refreshed less often
than the study's shortest gap needs (`display_keeps_gaps` = 0: chunks closer than one
refresh share an image), or when its median trial's painted p99 lateness exceeds one
refresh interval plus `PAINT_SLACK_MS` (the display's own quantisation allowed for); a
terminal session when its median trial's painted p99 exceeds its flushed p99 by more than
`PAINT_SLACK_MS` (the emulator added that much). Flagged sessions are named, not dropped:
the thresholds above still include them; compare with and without them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from analysis.report.blocks import Block

PAINT_SLACK_MS = 8.0
"""Beyond one refresh interval, the painted p99 a session may reach before it is flagged
(uxlab's own shown-time p99 target)."""
FLAG_RULE = (
    "a browser session is flagged when its display refreshed less often than the study's "
    "shortest gap (chunks closer than one refresh share an image), or when its median "
    f"trial's painted p99 lateness exceeds one refresh interval + {PAINT_SLACK_MS:g} ms"
)
TERMINAL_FLAG_RULE = (
    "a terminal session is flagged when its median trial's painted p99 lateness exceeds its "
    f"flushed p99 by more than {PAINT_SLACK_MS:g} ms (the emulator added that much)"
)
COLUMNS = [
    "participant",
    "session_id",
    "painted in",
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


def terminal_flag_reason(flushed_p99_ms: float, painted_p99_ms: float) -> str:
    """Why a terminal session is flagged by `TERMINAL_FLAG_RULE` ('' when it is not)."""
    if painted_p99_ms > flushed_p99_ms + PAINT_SLACK_MS:
        return "the terminal added more than the slack at p99"
    return ""


def _first(part: pd.DataFrame, column: str) -> str:
    values = part[column].dropna() if column in part.columns else pd.Series(dtype=object)
    return str(values.iloc[0]) if len(values) else ""


def browser_paint_table(trials: pd.DataFrame) -> pd.DataFrame | None:
    """One row per browser or glass-timed terminal session (see the module docstring); None
    without painted times."""
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
        median_flushed = _median(_num(part, "late_shown_p99_ms"))
        terminal = _first(part, "terminal_emulator")
        if terminal:
            reason = terminal_flag_reason(median_flushed, median_painted)
        else:
            keeps_min = float(keeps.min()) if len(keeps) else float("nan")
            reason = flag_reason(hz, keeps_min, median_painted)
        rows.append(
            {
                "participant": str(part["participant"].iloc[0]),
                "session_id": part["session_id"].iloc[0] if by == "session_id" else "",
                "painted in": f"terminal {terminal}" if terminal else _first(part, "browser"),
                "display (Hz)": hz,
                "trials painted": len(part),
                "p99 handed, median trial (ms)": _median(_num(part, "late_handed_p99_ms")),
                "p99 flushed, median trial (ms)": median_flushed,
                "p99 painted, median trial (ms)": median_painted,
                "p99 painted, worst trial (ms)": float(painted_p99.max()),
                "clock uncertainty, max (ms)": float(
                    _num(part, "paint_clock_uncertainty_ms").max()
                ),
                "flagged": reason or "no",
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def browser_blocks(table: pd.DataFrame | None) -> list[Block]:
    """Heading, what the times are, the rule, the table."""
    if table is None:
        return []
    from analysis.report.blocks import Heading, Para, Table

    n_flagged = int((table["flagged"] != "no").sum())
    terminal = table["painted in"].str.startswith("terminal ")
    parts, rules = [], []
    if (~terminal).any():
        parts.append(
            "Sessions hosted in a browser tab: lateness (time minus the scheduled time) where "
            "the player handed each chunk to the view, where the frame holding it was flushed "
            "to the host's pseudo-terminal, and where the page painted it (the animation frame "
            "in which the browser's terminal rendered it; the display shows it at its next "
            "refresh). Painted times are on the host's clock through a ping-based offset "
            "estimate, within the stated clock uncertainty."
        )
        rules.append(FLAG_RULE)
    if terminal.any():
        parts.append(
            "Terminal sessions timed at the glass (`uxlab run --glass`): painted is when the "
            "X server reported that the terminal window showed the frame holding the chunk "
            "(on the player's own clock; the monitor shows it at its next refresh)."
        )
        rules.append(TERMINAL_FLAG_RULE)
    text = (
        " ".join(parts)
        + f" Rule: {'; '.join(rules)}. {n_flagged} of {len(table)} sessions are flagged; "
        "they are kept in the analyses above."
    )
    heading = "Painted in the browser" if not terminal.any() else "Painted at the glass"
    return [
        Heading(heading),
        Para(text),
        Table(table, "Per session: handed, flushed and painted lateness"),
    ]
