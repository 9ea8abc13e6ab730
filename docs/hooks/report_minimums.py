"""mkdocs hook: the table of minimum sample sizes is generated from the report's own table.

`docs/reference/report.md` holds the marker `<!-- report-minimums -->`; at build time it
becomes the claims that need several participants, each with its minimum N and basis, from
`analysis.report.support.MINIMUMS`: the same rows the report's "What this sample can
support" section prints, so the docs cannot state another minimum than the report applies
(tests/test_docs_minimums.py checks the prose that names one).
"""

from __future__ import annotations

MARKER = "<!-- report-minimums -->"


def render() -> str:
    """The minimums as a Markdown table."""
    from analysis.report.support import MINIMUMS

    out = ["| claim | minimum N | basis |", "|---|---:|---|"]
    for m in MINIMUMS.values():
        out.append(f"| {m.part} | {m.min_participants} | {m.why} |")
    return "\n".join(out) + "\n"


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER in markdown:
        return markdown.replace(MARKER, render())
    return markdown
