"""An AIPerf run folder read as it is, and AIPerf's own summary checked against uxlab's.

AIPerf writes a run's artifacts into one folder: `profile_export.jsonl` (a record per
request), with `--export-level raw` also `profile_export_raw.jsonl`, and the run's summary
table `profile_export_aiperf.json`. `uxlab inspect FOLDER` reads such a folder directly: it
imports the records in memory (the raw export when there are no records) and, with the
summary beside them, recomputes every figure of AIPerf's table under AIPerf's definitions
(`peer_view`) and compares it with AIPerf's own at the precision AIPerf prints (two
decimals). A figure uxlab cannot recompute from the records is named with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: `uxlab inspect` asks `is_aiperf_run` of every path
    from uxlab.streams.importers.base import Skipped
    from uxlab.streams.peer_view import PeerView
    from uxlab.streams.recording import Recording

RECORDS = ("profile_export.jsonl", "profile_export_raw.jsonl")
SUMMARY = "profile_export_aiperf.json"
LEGACY_NAMES = {"ttft": "time_to_first_token", "ttst": "time_to_second_token"}
"""AIPerf's older metric names (its 2025 artifacts) and today's."""

PRINTED_DECIMALS = 2
"""AIPerf's console table prints its figures with two decimals."""

_NOT_RECOMPUTED = (
    ("http_req_", "HTTP phase timings AIPerf took itself (connection, sending, waiting, ...)"),
    ("usage_", "the server's usage per request compared with AIPerf's tokenizer"),
    ("total_usage_", "the server's usage per request compared with AIPerf's tokenizer"),
    ("osl_mismatch", "AIPerf's check of its tokenizer against the server's usage"),
    ("usage_discrepancy", "AIPerf's check of its tokenizer against the server's usage"),
    ("effective_", "concurrency over the run's timeline (AIPerf's scheduler)"),
    ("active_", "concurrency over the run's timeline (AIPerf's scheduler)"),
    ("tokens_in_flight", "concurrency over the run's timeline (AIPerf's scheduler)"),
    ("credit_to_start", "AIPerf's scheduler (credits), not the stream"),
    ("effective_latency", "AIPerf's scheduler (credits), not the stream"),
    ("min_request_timestamp", "a wall-clock instant, not a duration"),
    ("max_response_timestamp", "a wall-clock instant, not a duration"),
)


@dataclass
class AiperfRun:
    """The recordings of an AIPerf run folder, what was skipped, and AIPerf's summary."""

    folder: Path
    source: Path
    """The file the recordings were imported from."""
    recordings: list[Recording]
    skipped: list[Skipped]
    summary: dict[str, dict[str, Any]] | None
    """AIPerf's figures by (today's) metric name, or None without a summary file."""
    phase_s: float | None = None
    """The profiling phase's length, the summary's `start_time` to `end_time` (s), which
    AIPerf 0.13 divides its throughputs by."""


def is_aiperf_run(path: Path) -> bool:
    """Whether `path` is an AIPerf run folder (or its records file)."""
    if path.is_dir():
        return any((path / name).is_file() for name in RECORDS)
    return path.name in RECORDS


def load_aiperf_run(path: Path) -> AiperfRun:
    """Import the run at `path` (a folder, or one of its records files) in memory."""
    folder = path if path.is_dir() else path.parent
    source = path if path.is_file() else next(folder / n for n in RECORDS if (folder / n).is_file())
    from uxlab.streams.importers import import_source
    from uxlab.streams.importers.base import read_json

    result = import_source("aiperf", source)
    summary_path = folder / SUMMARY
    doc = read_json(summary_path) if summary_path.is_file() else None
    summary = _summary_figures(doc) if doc is not None else None
    run = AiperfRun(folder, source, result.recordings, result.skipped, summary)
    run.phase_s = _phase_s(doc)
    return run


def _phase_s(doc: Any) -> float | None:
    """`end_time - start_time` of a summary (ISO times), None when it has not both."""
    from datetime import datetime

    if not isinstance(doc, dict):
        return None
    try:
        start = datetime.fromisoformat(str(doc["start_time"]))
        end = datetime.fromisoformat(str(doc["end_time"]))
    except (KeyError, ValueError):
        return None
    return (end - start).total_seconds()


def _summary_figures(doc: Any) -> dict[str, dict[str, Any]]:
    """AIPerf's figures in either summary layout: today's (each metric at the top level) or
    the older one (under `records`, with legacy names)."""
    table = doc.get("records") if isinstance(doc, dict) and "records" in doc else doc
    if not isinstance(table, dict):
        from uxlab.streams.importers import ImportFormatError

        raise ImportFormatError(SUMMARY, None, None, "expected a JSON object of metrics")
    out: dict[str, dict[str, Any]] = {}
    for name, figure in table.items():
        if isinstance(figure, dict) and "unit" in figure and "avg" in figure:
            out[LEGACY_NAMES.get(str(name), str(name))] = figure
    return out


@dataclass
class Check:
    """One figure of AIPerf's summary against uxlab's: `equal`, `differs` or `not computed`."""

    metric: str
    status: str
    detail: str = ""
    stats: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Per statistic: (AIPerf's, uxlab's)."""


def check_summary(run: AiperfRun) -> tuple[PeerView, list[Check]]:
    """uxlab's AIPerf figures of the run and each of AIPerf's figures checked against them."""
    from uxlab.streams.peer_view import peer_view

    view = peer_view("aiperf", run.recordings, n_errors=len(run.skipped))
    checks: list[Check] = []
    for name, figure in (run.summary or {}).items():
        if name in _THROUGHPUTS:
            checks.append(_throughput(name, figure, view, run.phase_s))
            continue
        ours = view.summary.get(name)
        if ours is None and name in view.run:
            ours = {"avg": view.run[name]}
        if ours is None:
            why = view.notes.get(name) or next(
                (reason for prefix, reason in _NOT_RECOMPUTED if name.startswith(prefix)),
                "not among the figures uxlab recomputes",
            )
            checks.append(Check(name, "not computed", why))
            continue
        pairs = {
            stat: (float(theirs), float(ours[stat]))
            for stat, theirs in figure.items()
            if stat in ours and stat != "count" and isinstance(theirs, int | float)
        }
        off = {s: p for s, p in pairs.items() if not _same_printed(*p)}
        if off:
            worst = ", ".join(f"{s} {a:,.2f} vs {b:,.2f}" for s, (a, b) in list(off.items())[:3])
            checks.append(Check(name, "differs", worst, pairs))
        else:
            checks.append(Check(name, "equal", f"{len(pairs)} statistic(s)", pairs))
    return view, checks


_THROUGHPUTS: dict[str, tuple[str, ...]] = {
    "request_throughput": ("request_count",),
    "output_token_throughput": ("total_osl",),
    "input_token_throughput": ("total_isl",),
    "total_token_throughput": ("total_isl", "total_osl"),
}
"""Run throughputs: the run totals they divide by the run's length."""


def _throughput(name: str, figure: dict[str, Any], view: PeerView, phase_s: float | None) -> Check:
    """A run throughput, checked over both spans AIPerf has used: the requests' (first
    request to last response: `benchmark_duration`, AIPerf's 2025 artifacts) and the
    profiling phase's (the summary's `start_time` to `end_time`, AIPerf 0.13)."""
    theirs = figure.get("avg")
    parts = [view.run.get(key) for key in _THROUGHPUTS[name]]
    if not isinstance(theirs, int | float) or any(p is None for p in parts):
        return Check(name, "not computed", "needs the run's token totals and its length")
    total = sum(p for p in parts if p is not None)
    spans = {"the requests' span": view.run.get("benchmark_duration"), "AIPerf's phase": phase_s}
    ours = {span: total / s for span, s in spans.items() if s}
    for span, value in ours.items():
        if abs(theirs - value) <= 1e-6 * max(1.0, abs(theirs)):
            return Check(name, "equal", f"over {span}", {"avg": (float(theirs), value)})
    for span, value in ours.items():
        if _same_printed(float(theirs), value):
            return Check(name, "equal", f"over {span} (to 2 decimals)", {"avg": (theirs, value)})
    shown = ", ".join(f"{v:,.2f} over {span}" for span, v in ours.items())
    return Check(name, "differs", f"AIPerf {theirs:,.2f}; uxlab {shown}")


def _same_printed(theirs: float, ours: float) -> bool:
    """Equal at the precision AIPerf prints (or equal up to float rounding)."""
    if round(theirs, PRINTED_DECIMALS) == round(ours, PRINTED_DECIMALS):
        return True
    return abs(theirs - ours) <= 1e-9 * max(1.0, abs(theirs))
