"""mkdocs hook: the CLI reference page is generated from uxlab's own argparse parsers.

`docs/reference/cli.md` holds the marker `<!-- cli-reference -->`; at build time it is
replaced with `uxlab --help` and every subcommand's `--help`, as the command prints them
(at a fixed width), so the page cannot drift from the parsers. `tests/test_docs.py` checks
the built page against `uxlab <command> --help`.
"""

from __future__ import annotations

import argparse
import os

MARKER = "<!-- cli-reference -->"
WIDTH = "100"


def _subparsers(
    parser: argparse.ArgumentParser, prefix: str
) -> list[tuple[str, argparse.ArgumentParser]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found.append((f"{prefix} {name}", child))
                found += _subparsers(child, f"{prefix} {name}")
    return found


def cli_help_pages() -> list[tuple[str, str]]:
    """(command, its --help text) for `uxlab` and every subcommand, in `uxlab --help` order."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH  # argparse reads the width from here
    try:
        from uxlab.cli import build_parser

        parser = build_parser()
        pages = [("uxlab", parser.format_help())]
        pages += [(name, child.format_help()) for name, child in _subparsers(parser, "uxlab")]
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return pages


def render() -> str:
    """The generated part of the CLI reference, as Markdown."""
    out = []
    for name, text in cli_help_pages():
        level = "##" if name.count(" ") <= 1 else "###"
        out.append(f"{level} `{name}`\n\n```text\n{text.rstrip()}\n```\n")
    return "\n".join(out)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER in markdown:
        return markdown.replace(MARKER, render())
    return markdown
