"""`uxlab inspect --as aiperf|vllm|guidellm`, and `uxlab inspect` on an AIPerf run folder.

`--as PEER` prints (or with `--json` writes) every figure under the peer's name and
definition (`uxlab.streams.peer_view`). An AIPerf run folder (with `profile_export.jsonl`)
is imported in memory; with its `profile_export_aiperf.json` beside it, every figure of
AIPerf's own table is checked against uxlab's at the precision AIPerf prints
(`uxlab.streams.aiperf_run`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from number_text import grouped
from uxlab.streams.recording import Recording

PEER_NAMES = {"aiperf": "AIPerf", "vllm": "vLLM bench serve", "guidellm": "guidellm"}
SHOWN_STATS = {
    "aiperf": ("avg", "p50", "p99"),
    "vllm": ("mean", "median", "p99"),
    "guidellm": ("mean", "median", "p99"),
}
"""The statistics the table shows (80 columns); `--json` has all of `peer_view.STATS`."""


@dataclass
class Source:
    """Recordings from one PATH: replay files, or an AIPerf run imported in memory."""

    label: str
    recordings: list[Recording] = field(default_factory=list)
    run: Any = None
    """The `AiperfRun` when PATH is an AIPerf run folder."""


RUN_UNITS = {
    "request_count": "requests",
    "error_request_count": "requests",
    "completed_request_count": "requests",
    "request_error_rate": "%",
    "total_osl": "tokens",
    "total_isl": "tokens",
    "total_reasoning_tokens": "tokens",
    "total_output_tokens": "tokens",
    "benchmark_duration": "s",
    "request_throughput": "requests/s",
    "output_token_throughput": "tokens/s",
}
"""The unit of each run-level figure (`peer_view.PeerView.run`): AIPerf's, said as it says it."""


def load_sources(paths: list[str], allow_truncated: bool, err: TextIO) -> list[Source]:
    """Each PATH's recordings; bad replay files are listed on `err` and left out."""
    from uxlab.streams.aiperf_run import is_aiperf_run, load_aiperf_run
    from uxlab.streams.replay_file import ReplayFormatError, iter_replay_paths, read_replay

    sources = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file or folder")
        if is_aiperf_run(path):
            run = load_aiperf_run(path)
            sources.append(Source(f"{raw} ({run.source.name})", run.recordings, run))
            continue
        source = Source(raw)
        for file in iter_replay_paths(path):
            try:
                source.recordings.append(read_replay(file, allow_truncated=allow_truncated))
            except ReplayFormatError as exc:
                print(f"  {exc}", file=err)
        sources.append(source)
    return sources


def inspect_as(
    paths: list[str],
    peer: str | None,
    *,
    as_json: bool = False,
    allow_truncated: bool = False,
    include_synthetic: bool = False,
    out: TextIO,
    err: TextIO,
    width: int = 80,
) -> int:
    """`--as PEER` (None: uxlab's own figures), or PATHs that hold an AIPerf run folder: the
    recordings are read whole. The exit status: 2 when there is no recording."""
    sources = load_sources(paths, allow_truncated, err)
    recs = [r for s in sources for r in s.recordings]
    if not recs:
        print(f"uxlab inspect: no recordings in {', '.join(paths)}", file=err)
        return 2
    if peer is None:
        _uxlab_table(recs, as_json, include_synthetic, out, width)
        for source in sources:
            if source.run is not None and source.run.summary is not None:
                write_checks(source, out, width, brief=True)
        return 0
    from uxlab.streams.peer_view import peer_view

    runs = [s.run for s in sources if s.run is not None]
    n_errors = sum(len(r.skipped) for r in runs) if runs else None
    view = peer_view(peer, recs, n_errors=n_errors)
    if as_json:
        _write_json(view, recs, sources, out)
        return 0
    _write_view(view, sources, out, width)
    for source in sources:
        if peer == "aiperf" and source.run is not None and source.run.summary is not None:
            write_checks(source, out, width, brief=False)
    return 0


def _uxlab_table(
    recs: list[Recording], as_json: bool, include_synthetic: bool, out: TextIO, width: int
) -> None:
    """uxlab's own table (or `--json` lines) of recordings read whole."""
    from uxlab.streams.inspect_table import rows, write_table
    from uxlab.streams.metrics import describe_columns, nest, pooled_summary
    from uxlab.streams.stream_arrays import StreamArrays

    arrays = StreamArrays.from_recordings(recs)
    table = describe_columns(arrays, include_synthetic)
    if as_json:
        for row in rows(table):
            out.write(json.dumps(nest(row, ndigits=3), ensure_ascii=False) + "\n")
        return
    gaps = arrays.measured_gaps(include_synthetic)[0]
    write_table(rows(table), pooled_summary(table, gaps, include_synthetic), out, width)


def _say(out: TextIO, text: str, width: int, indent: str = "") -> None:
    """`text` wrapped to `width`, later lines indented by two more spaces."""
    import textwrap

    lines = textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + "    ")
    out.write("\n".join(lines) + "\n")


def _write_view(view: Any, sources: list[Source], out: TextIO, width: int) -> None:
    from uxlab.streams.peer_view import METRICS

    stats = SHOWN_STATS[view.peer]
    n = len(view.per_recording)
    where = "; ".join(s.label for s in sources)
    _say(
        out,
        f"As {PEER_NAMES[view.peer]} names and defines them: {n} recording(s) from {where}",
        width,
    )
    out.write("metric".ljust(33) + "".join(s.rjust(10) for s in stats) + "  unit\n")
    for m in METRICS[view.peer]:
        figure = view.summary.get(m.name)
        if figure is None:
            continue
        cells = "".join(grouped(figure.get(s)).rjust(10) for s in stats)
        out.write(f"{m.name:<33}{cells}  {m.unit}\n")
    if view.run:
        parts = []
        for k, v in view.run.items():
            unit = RUN_UNITS.get(k, "")
            number = f"{int(v):,}" if v == int(v) else f"{v:,.2f}"
            space = "" if unit in ("", "%") else " "
            parts.append(f"{k} {number}{space}{unit}")
        _say(out, "run: " + ", ".join(parts), width)
    out.write("\nDefinitions:\n")
    for m in METRICS[view.peer]:
        note = view.notes.get(m.name)
        _say(out, f"{m.name}: {m.definition}" + (f" [{note}]" if note else ""), width, "  ")
    for name, note in view.notes.items():
        if name not in {m.name for m in METRICS[view.peer]}:
            _say(out, f"{name}: {note}", width, "  ")


def write_checks(source: Source, out: TextIO, width: int, brief: bool) -> None:
    """AIPerf's own summary of `source` checked against uxlab's figures (`brief`: the
    counts and what differs)."""
    from uxlab.streams.aiperf_run import SUMMARY, check_summary

    _, checks = check_summary(source.run)
    by_status: dict[str, list[Any]] = {}
    for check in checks:
        by_status.setdefault(check.status, []).append(check)
    counts = ", ".join(f"{len(v)} {k}" for k, v in by_status.items())
    out.write("\n")
    _say(
        out,
        f"AIPerf's own summary ({source.run.folder / SUMMARY}) against uxlab's figures "
        f"under AIPerf's definitions, to the 2 decimals AIPerf prints: {counts}.",
        width,
    )
    for check in by_status.get("differs", []):
        _say(out, f"differs: {check.metric}: {check.detail}", width, "  ")
    if brief:
        hint = "`uxlab inspect --as aiperf` lists every figure and why any is not computed"
        _say(out, hint, width, "  ")
        return
    equal = [f"{c.metric} ({c.detail})" for c in by_status.get("equal", [])]
    if equal:
        _say(out, "equal: " + ", ".join(equal), width, "  ")
    reasons: dict[str, list[str]] = {}
    for check in by_status.get("not computed", []):
        reasons.setdefault(check.detail, []).append(check.metric)
    for reason, names in reasons.items():
        _say(out, f"not computed: {', '.join(names)}: {reason}", width, "  ")


def _write_json(view: Any, recs: list[Recording], sources: list[Source], out: TextIO) -> None:
    from uxlab.streams.aiperf_run import check_summary
    from uxlab.streams.peer_view import METRICS

    units = {m.name: m.unit for m in METRICS[view.peer]}
    for rec, row in zip(recs, view.per_recording, strict=True):
        metrics = {k: {"value": v, "unit": units[k]} for k, v in row.items() if v is not None}
        out.write(json.dumps({"id": rec.id, "as": view.peer, "metrics": metrics}) + "\n")
    final: dict[str, Any] = {
        "as": view.peer,
        "summary": view.summary,
        "run": view.run,
        "definitions": {m.name: m.definition for m in METRICS[view.peer]},
        "notes": view.notes,
    }
    checks = [
        {"metric": c.metric, "status": c.status, "detail": c.detail}
        for s in sources
        if view.peer == "aiperf" and s.run is not None and s.run.summary is not None
        for c in check_summary(s.run)[1]
    ]
    if checks:
        final["aiperf_summary_checks"] = checks
    out.write(json.dumps(final) + "\n")
