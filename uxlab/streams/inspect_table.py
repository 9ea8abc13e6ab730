"""The table `uxlab inspect` prints: one row per recording, a pooled summary, a legend."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TextIO

from number_text import ms_figure

LEGEND_TTFO = (
    "TTFO: first output of any kind, a tool call's start or arguments included (shown "
    "when a turn only calls tools). "
)
LEGEND = (
    "Times in ms from the request. chunks: all chunk events. "
    "TTFT: first non-empty content/reasoning chunk (a role "
    "prelude does not count). ITL: gaps between consecutive content/reasoning chunks "
    "(p50, p99; TTFT is not a gap). stalls: such gaps over 250 ms / over 1000 ms. "
    "e2e: the end event. finish: the finish reason, or !type of a mid-stream error. "
    "synth: the importer made up the times between TTFT and the end (llmperf, guidellm), so "
    "ITL and stalls are left out (--include-synthetic pools them, marked ~)."
)


def rows(table: dict[str, Any]) -> list[dict[str, Any]]:
    """One dict per recording from the columns (plain Python numbers, NaN where undefined)."""
    names = list(table)
    values = [v.tolist() if hasattr(v, "tolist") else list(v) for v in table.values()]
    return [dict(zip(names, row, strict=True)) for row in zip(*values, strict=True)]


# --- the table --------------------------------------------------------------------------

# (header, width) of the columns after the id; the id column takes the rest of the line.
_COLUMNS: tuple[tuple[str, int], ...] = (
    ("chunks", 6),
    ("TTFT", 6),
    ("ITL p50", 7),
    ("ITL p99", 7),
    ("stalls", 6),
    ("e2e", 7),
    ("finish", 11),
)
_MIN_ID = 12


def _fit(text: str, width: int) -> str:
    """Cut `text` to `width` characters with an ellipsis in the middle (ids keep both ends)."""
    if len(text) <= width:
        return text
    if width < 5:
        return text[:width]
    head = (width - 1) // 2
    tail = width - 1 - head
    return text[:head] + "…" + text[len(text) - tail :]


def _finish(row: dict[str, Any]) -> str:
    if row["error"]:
        return "!" + str(row["error"]).removesuffix("_error")
    if row["truncated"]:
        return "(truncated)"
    return str(row["finish_reason"] or "-")


def _synthetic(row: dict[str, Any]) -> bool:
    return row.get("timing") == "synthetic"


def _itl_cells(row: dict[str, Any]) -> tuple[str, str]:
    """ITL p50 and p99, `synth` where made-up gaps are left out, `~` where they are pooled."""
    p50, p99 = row["itl_p50_ms"], row["itl_p99_ms"]
    if not _synthetic(row) or row["n_output_chunks"] < 2:  # no gap at all: nothing left out
        return ms_figure(p50, 1), ms_figure(p99, 1)
    if p50 != p50:  # NaN: left out
        return "synth", "synth"
    return "~" + ms_figure(p50, 1), "~" + ms_figure(p99, 1)


def _stalls(row: dict[str, Any]) -> str:
    over_250, over_1000 = row["stalls_over_250"], row["stalls_over_1000"]
    if over_250 != over_250:  # NaN: no timing, or made-up gaps left out
        return "synth" if _synthetic(row) and row["n_output_chunks"] >= 2 else "-"
    return f"{int(over_250)}/{int(over_1000)}"


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent)


def _ttfo_only(row: dict[str, Any]) -> bool:
    """Whether a recording has a TTFO but no TTFT (a turn that only calls tools)."""
    ttft, ttfo = row.get("ttft_ms"), row.get("ttfo_ms")
    known = ttfo is not None and ttfo == ttfo  # not NaN
    return known and (ttft is None or ttft != ttft)


def write_table(
    rows: Sequence[dict[str, Any]],
    summary: dict[str, Any],
    out: TextIO,
    width: int = 80,
    costs: tuple[str, Sequence[str]] | None = None,
    after_summary: Sequence[str] = (),
    legend_extra: str = "",
) -> None:
    """Write the per-recording table, the pooled summary and the legend, fitted to `width`.

    A TTFO column follows TTFT when some recording has output but no TTFT (an agent's
    turn that only calls tools). `costs` is (header, one cell per row) of a cost column
    shown before the finish (`inspect --prices`); `after_summary` lines follow the pooled
    summary and `legend_extra` ends the legend."""
    width = max(width, 60)
    with_ttfo = any(_ttfo_only(r) for r in rows)
    columns = (*_COLUMNS[:2], ("TTFO", 6), *_COLUMNS[2:]) if with_ttfo else _COLUMNS
    if costs is not None:
        columns = (*columns[:-1], (costs[0], max(9, len(costs[0]))), columns[-1])
    fixed = sum(w + 1 for _, w in columns)
    longest = max([len(str(r["id"])) for r in rows] + [2])
    id_width = max(_MIN_ID, min(longest, width - fixed))
    head = "id".ljust(id_width) + "".join(" " + h.rjust(w) for h, w in columns[:-1])
    head += " " + columns[-1][0].ljust(columns[-1][1])
    out.write(head.rstrip() + "\n")
    for i, row in enumerate(rows):
        ttft = ms_figure(row["ttft_ms"])
        times = (ttft, ms_figure(row["ttfo_ms"])) if with_ttfo else (ttft,)
        cells: tuple[str, ...] = (
            str(int(row["n_chunks"])),
            *times,
            *_itl_cells(row),
            _stalls(row),
            ms_figure(row["e2e_ms"]),
        )
        if costs is not None:
            cells = (*cells, costs[1][i])
        line = _fit(str(row["id"]), id_width).ljust(id_width)
        line += "".join(" " + c.rjust(w) for c, (_, w) in zip(cells, columns, strict=False))
        line += " " + _finish(row)
        out.write(line.rstrip() + "\n")
    out.write("\n")
    for line in summary_lines(summary, width):
        out.write(line + "\n")
    out.write("\n")
    if after_summary:
        for line in after_summary:
            out.write(line + "\n")
        out.write("\n")
    for line in _wrap((LEGEND_TTFO if with_ttfo else "") + LEGEND + legend_extra, width):
        out.write(line + "\n")


def summary_lines(summary: dict[str, Any], width: int = 80) -> list[str]:
    """The pooled summary as short lines (ITL and stalls pool every gap of every recording)."""
    n = summary["n_recordings"]
    itl, ttft, e2e, stalls = (summary[k] for k in ("itl_ms", "ttft_ms", "e2e_ms", "stalls"))
    lines = _wrap(
        f"Pooled over {n} recording{'s' if n != 1 else ''} (ITL and stalls pool all "
        f"{summary['n_gaps']:,} gaps; TTFT and e2e are spread across recordings):",
        width,
    )
    lines.append(
        f"  TTFT  p50 {ms_figure(ttft['p50'])}  p90 {ms_figure(ttft['p90'])}  "
        f"max {ms_figure(ttft['max'])} ms"
    )
    n_calls = summary.get("tool_calls", 0)
    if n_calls:
        ttfo = summary["ttfo_ms"]
        lines.append(
            f"  TTFO  p50 {ms_figure(ttfo['p50'])}  p90 {ms_figure(ttfo['p90'])}  "
            f"max {ms_figure(ttfo['max'])} ms"
        )
        lines.extend(
            _wrap(
                f"tool calls {n_calls:,}, {summary.get('incomplete_tool_calls', 0)} never "
                f"completed; {summary.get('ttfo_only', 0)} turn(s) with tool calls only (no "
                "TTFT)",
                width,
                "  ",
            )
        )
    lines.append(
        f"  ITL   p50 {ms_figure(itl['p50'], 1)}  p90 {ms_figure(itl['p90'], 1)}  "
        f"p99 {ms_figure(itl['p99'], 1)}  max {ms_figure(itl['max'], 1)} ms"
    )
    lines.append(
        f"  e2e   p50 {ms_figure(e2e['p50'])}  p90 {ms_figure(e2e['p90'])}  "
        f"max {ms_figure(e2e['max'])} ms"
    )
    lines.append(
        f"  stalls  {stalls['over_250']} over 250 ms in {stalls['recordings_with_stall']} "
        f"recording(s), {stalls['over_1000']} over 1000 ms; "
        f"longest {ms_figure(stalls['longest_ms'])} ms"
    )
    lines.append(
        f"  mid-stream errors {summary['errors']}  truncated {summary['truncated']}  "
        f"without timing {summary['without_timing']}"
    )
    n_synthetic = summary.get("synthetic_timing", 0)
    if n_synthetic:
        how = "pooled (~)" if summary.get("synthetic_gaps_pooled") else "left out of ITL/stalls"
        lines.append(f"  synthetic gaps in {n_synthetic} recording(s): {how}")
    return lines
