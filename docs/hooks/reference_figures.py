"""mkdocs hook: the published-figures table is generated from analysis/reference_figures.toml.

`docs/explanation/published-figures.md` holds the marker `<!-- reference-figures -->`; at build
time it becomes one section per figure (what it measured, its judgement kind, the estimate
it is compared with, the evidence and its citation), so the page lists exactly the figures
the report uses.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

MARKER = "<!-- reference-figures -->"
SOURCE = Path(__file__).resolve().parents[2] / "analysis" / "reference_figures.toml"


def _value(fig: dict) -> str:
    unit = fig.get("unit", "")
    if "value" in fig:
        text = f"{fig['value']:g} {unit}"
        if "low" in fig and "high" in fig:
            text += f" ({fig['low']:g}-{fig['high']:g})"
        return text
    return f"{fig['low']:g}-{fig['high']:g} {unit}"


def render() -> str:
    """One subsection per figure of the TOML file, in its order."""
    figures = tomllib.loads(SOURCE.read_text(encoding="utf-8"))["figure"]
    out = [
        "| id | figure | judgement | compared with | people measured |",
        "|---|---|---|---|---|",
    ]
    for fig in figures:
        people = "yes" if fig.get("perception_study") else "no"
        out.append(
            f"| `{fig['id']}` | {_value(fig)} | {fig.get('judgement', '')} | "
            f"`{fig.get('compare_with', '')}` | {people} |"
        )
    for fig in figures:
        out.append(f"\n### {fig['label']}\n")
        out.append(f"`{fig['id']}`: {_value(fig)}, judgement **{fig.get('judgement', '')}**.\n")
        for key, title in (
            ("measured", "Measured"),
            ("compare_note", "Compared with our estimate"),
            ("evidence", "Evidence"),
            ("note", "Weight"),
        ):
            if fig.get(key):
                out.append(f"- *{title}:* {fig[key]}")
        cite = fig.get("citation", "")
        if fig.get("url"):
            cite += f" <{fig['url']}>"
        out.append(f"- *Source:* {cite}")
    return "\n".join(out) + "\n"


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER in markdown:
        return markdown.replace(MARKER, render())
    return markdown
