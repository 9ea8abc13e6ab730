"""Writing the report: one list of blocks rendered twice, to `report.html` and `report.md`.

`report.html` is self-contained (figures as base64 PNGs, inline CSS with print rules), so it
reads offline and prints well; `report.md` refers to the same figures saved as PNG files
beside it; `thresholds.csv` holds one row per estimate.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysis.report.blocks import (
    NO_LOWER_BOUND,
    NO_UPPER_BOUND,
    Block,
    Bullets,
    Figure,
    Heading,
    Para,
    Table,
)
from analysis.report.contents import build_blocks
from analysis.report.data import one_line_error
from analysis.report.md_escape import md_block, md_text
from analysis.report.support_section import support_blocks
from analysis.spreadsheet_cells import frame_rows, write_safe_csv
from number_text import table_cell

if TYPE_CHECKING:
    from analysis.report.data import ReportData


def _num(v: object) -> str:
    """A table cell (`number_text.table_cell`): numpy's scalars as Python's, an infinite
    end as the words that say the data do not bound it."""
    if isinstance(v, np.bool_):
        v = bool(v)
    elif isinstance(v, np.integer):
        v = int(v)
    elif isinstance(v, np.floating):
        v = float(v)
    return table_cell(v, above=NO_UPPER_BOUND, below=NO_LOWER_BOUND)


def _fmt_frame(frame: pd.DataFrame) -> list[list[str]]:
    return [[_num(v) for v in row] for row in frame.itertuples(index=False)]


CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;max-width:60rem;
margin:2rem auto;padding:0 1rem;color:#1a1a1a;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.25rem;margin-top:2rem;
border-bottom:1px solid #ccc;padding-bottom:.2rem}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.85rem;max-width:100%}
th,td{border:1px solid #d0d0d0;padding:.2rem .45rem;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f3f3f3}
p.cap{font-weight:600;font-size:.85rem;margin:1rem 0 .2rem;break-after:avoid}
figure{margin:1rem 0}figure img{max-width:100%;height:auto}
figcaption{font-size:.85rem;color:#444}.note{color:#8a4b00}
.summary li{margin:.25rem 0}.scroll{overflow-x:auto}
@media print{body{max-width:none;margin:0;font-size:10pt}h2{break-after:avoid}
figure,table{break-inside:avoid}.scroll{overflow:visible}a{color:inherit}}
"""


def inline(text: str) -> str:
    """`text` escaped for HTML, each `quoted` span (as written for Markdown) as <code>."""
    parts = html.escape(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: shown as written
        return "`".join(parts)
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def render_html(blocks: list[Block], title: str) -> str:
    """One self-contained HTML page."""
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    first_bullets = True
    for b in blocks:
        if isinstance(b, Heading):
            out.append(f"<h{b.level}>{html.escape(b.text)}</h{b.level}>")
            if b.text == "Summary":  # the summary's list is styled as such, not the first one
                first_bullets = True
            elif first_bullets and b.text == "What this sample can support":
                first_bullets = False
        elif isinstance(b, Para):
            cls = ' class="note"' if b.kind == "note" else ""
            out.append(f"<p{cls}>{inline(b.text)}</p>")
        elif isinstance(b, Bullets):
            cls = ' class="summary"' if first_bullets else ""
            first_bullets = False
            items = "".join(f"<li>{inline(i)}</li>" for i in b.items)
            out.append(f"<ul{cls}>{items}</ul>")
        elif isinstance(b, Table):
            out.append(_html_table(b))
        elif isinstance(b, Figure):
            data = base64.b64encode(b.png).decode("ascii")
            out.append(
                f'<figure><img alt="{html.escape(b.caption)}" '
                f'src="data:image/png;base64,{data}"><figcaption>{html.escape(b.caption)}'
                "</figcaption></figure>"
            )
    out.append("</body></html>")
    return "\n".join(out)


def _html_table(t: Table) -> str:
    frame = t.frame
    head = "".join(f"<th>{inline(str(c))}</th>" for c in frame.columns)
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns]
    body = []
    for row in _fmt_frame(frame):
        cells = "".join(
            f'<td class="n">{inline(v)}</td>' if isnum else f"<td>{inline(v)}</td>"
            for v, isnum in zip(row, numeric, strict=True)
        )
        body.append(f"<tr>{cells}</tr>")
    cap = f'<p class="cap">{inline(t.caption)}</p>' if t.caption else ""
    return (
        f'{cap}<div class="scroll"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def render_markdown(blocks: list[Block], title: str, figure_dir: str = "figures") -> str:
    """Markdown with figures referenced as `figures/<name>.png`."""
    out = [f"# {md_text(title)}", ""]  # every text is literal (`md_escape`): no markup, no HTML
    for b in blocks:
        if isinstance(b, Heading):
            out += ["#" * b.level + " " + md_text(b.text), ""]
        elif isinstance(b, Para):
            out += [f"> {md_block(b.text)}" if b.kind == "note" else md_block(b.text), ""]
        elif isinstance(b, Bullets):
            out += [f"- {md_block(i)}" for i in b.items] + [""]
        elif isinstance(b, Table):
            if b.caption:
                out += [f"**{md_text(b.caption)}**", ""]
            cols = [str(c) or " " for c in b.frame.columns]
            out.append("| " + " | ".join(_md_cell(c) for c in cols) + " |")
            out.append("|" + "|".join("---" for _ in cols) + "|")
            for row in _fmt_frame(b.frame):
                out.append("| " + " | ".join(_md_cell(v) for v in row) + " |")
            out.append("")
        elif isinstance(b, Figure):
            cap = md_text(b.caption)
            out += [f"![{cap}]({figure_dir}/{b.name}.png)", "", f"*{cap}*", ""]
    return "\n".join(out)


def _md_cell(text: str) -> str:
    return md_text(text)  # pipes and line breaks included


def write_report(data: ReportData, out_dir: str | Path, raw_cells: bool = False) -> dict[str, Path]:
    """Write report.html, report.md (+ figures/*.png) and thresholds.csv into `out_dir`.

    The CSVs' cells are spreadsheet-safe unless `raw_cells` (`analysis.spreadsheet_cells`)."""
    out_dir = Path(out_dir)
    fig_dir = out_dir / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    study = data.study_info.get("study", "study")
    title = data.options.title or f"Impatience thresholds: {study}"
    title += _kind_suffix(data, title)
    try:
        blocks = build_blocks(data)
    except Exception as exc:
        data.failed_parts.append(("report body", one_line_error(exc)))
        blocks = support_blocks(data)
    for b in blocks:
        if isinstance(b, Figure):
            (fig_dir / f"{b.name}.png").write_bytes(b.png)
    paths = {
        "html": out_dir / "report.html",
        "markdown": out_dir / "report.md",
        "thresholds": out_dir / "thresholds.csv",
        "figures": fig_dir,
    }
    paths["html"].write_text(render_html(blocks, title), encoding="utf-8")
    paths["markdown"].write_text(render_markdown(blocks, title), encoding="utf-8")
    write_report_table(data.thresholds, paths["thresholds"], raw_cells)
    if data.score is not None:
        paths["score"] = out_dir / "score.csv"
        write_report_table(data.score, paths["score"], raw_cells)
    if data.costs is not None:
        paths["costs"] = out_dir / "costs.csv"
        write_report_table(data.costs.table, paths["costs"], raw_cells)
    return paths


def _kind_suffix(data: ReportData, title: str) -> str:
    """` (simulated participants)` for simulated data, ` (MIXED: real and simulated
    participants)` when both are analysed together; nothing for real data."""
    part = data.truth
    analysed = part.kinds.analysed_kind if part is not None else None
    if analysed == "mixed":
        return " (MIXED: real and simulated participants)"
    simulated = analysed == "simulated" or data.exclusions.simulated == "all"
    return " (simulated participants)" if simulated and "simulated" not in title.lower() else ""


def write_report_table(frame: pd.DataFrame, path: Path, raw_cells: bool = False) -> None:
    """CSV with spreadsheet-safe cells (participant ids, labels; numbers as `%.6g`), or with
    every text as it is when `raw_cells`."""
    write_safe_csv(path, [str(c) for c in frame.columns], frame_rows(frame, "%.6g"), raw=raw_cells)
