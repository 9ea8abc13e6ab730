"""Per-participant tables of mixed data (real and simulated sessions) mark each simulated
participant, so no such table is read as people only (`SessionKinds` in `truth_part`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from analysis.report.data import ReportData


def mark_simulated(
    frame: pd.DataFrame, data: ReportData | None, column: str = "participant"
) -> pd.DataFrame:
    """In a report of mixed data, each simulated participant's row says so (`P-003
    (simulated)`), so a per-participant table is never read as people only (`data` None:
    no report's data to ask, nothing marked)."""
    if data is None or data.truth is None or column not in frame.columns:
        return frame
    kinds = data.truth.kinds
    if kinds.kind != "mixed":
        return frame
    out = frame.copy()
    ids = kinds.simulated_ids
    out[column] = [f"{p} (simulated)" if str(p) in ids else p for p in out[column]]
    return out
