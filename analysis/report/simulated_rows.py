"""Per-participant tables of mixed data (real and simulated sessions) mark each simulated
participant, so no such table is read as people only (`SessionKinds` in `truth_part`)."""

from __future__ import annotations

from typing import Any

import pandas as pd


def mark_simulated(frame: pd.DataFrame, data: Any, column: str = "participant") -> pd.DataFrame:
    """In a report of mixed data, each simulated participant's row says so (`P-003
    (simulated)`), so a per-participant table is never read as people only."""
    kinds = getattr(getattr(data, "truth", None), "kinds", None)
    if kinds is None or kinds.kind != "mixed" or column not in frame.columns:
        return frame
    out = frame.copy()
    ids = kinds.simulated_ids
    out[column] = [f"{p} (simulated)" if str(p) in ids else p for p in out[column]]
    return out
