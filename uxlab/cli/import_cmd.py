"""`uxlab import`: turn a vendor capture or a benchmark export into replay files."""

from __future__ import annotations

import argparse
from pathlib import Path

from uxlab.cli.places import add_out_option

FORMATS = (
    "openai-sse",
    "openai-responses-sse",
    "anthropic-sse",
    "gemini-sse",
    "gemini-interactions-sse",
    "cohere-sse",
    "ollama",
    "genai-perf",
    "aiperf",
    "vllm-bench",
    "llmperf",
    "guidellm",
    "har",
    "cdp",
    "json-chunks",
    "otel",
    "langfuse",
    "bedrock",
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "import",
        help="import captures or benchmark exports as replay files",
        description="Import a foreign recording as replay files (one per stream) into OUTDIR. "
        "Timing-only sources (aiperf profile_export.jsonl, vllm-bench, llmperf) get a text "
        "laid over their chunks: --text FILE, or the bundled neutral text.",
    )
    p.add_argument(
        "--from",
        dest="fmt",
        required=True,
        choices=FORMATS,
        metavar="FORMAT",
        help=f"source format: {', '.join(FORMATS)}",
    )
    p.add_argument(
        "src",
        type=Path,
        metavar="SRC",
        help="the source file (or, for *-sse, a folder of capture files)",
    )
    add_out_option(
        p,
        "folder to write the replay files into (created if missing)",
        metavar="OUTDIR",
        type=Path,
        required=True,
    )
    p.add_argument(
        "--text",
        type=Path,
        metavar="FILE",
        help="UTF-8 text to lay over timing-only sources (default: bundled neutral text)",
    )
    p.add_argument("--limit", type=int, metavar="N", help="write at most N streams")
    p.add_argument(
        "--select",
        metavar="I,J,...",
        help="only these request indices (the numbers in source.origin)",
    )
    p.add_argument(
        "--prefix",
        metavar="NAME",
        help="start of each recording id and file name (default: the source file's name)",
    )
    p.add_argument(
        "--tolerant",
        action="store_true",
        help="*-sse, json-chunks, bedrock: keep an event that cannot be read (or is of a type "
        "uxlab does not map) as a malformed_event meta event, as uxlab record does, and say "
        "how many, instead of stopping with an error naming its line",
    )
    p.set_defaults(func=run)


def _parse_select(value: str | None) -> list[int] | None:
    from uxlab.cli import CliError

    if value is None:
        return None
    try:
        return [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise CliError(f"--select: expected comma-separated whole numbers, got {value!r}") from None


def run(args: argparse.Namespace) -> int:
    from uxlab.cli import CliError
    from uxlab.streams.importers import ImportOptions, import_source
    from uxlab.streams.replay_file import write_replay

    if args.limit is not None and args.limit < 1:
        raise CliError(f"--limit: expected a positive number, got {args.limit}")
    text = None
    if args.text is not None:
        try:
            text = args.text.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise CliError(f"--text {args.text}: not UTF-8 ({exc.reason})") from None
        if not text.strip():
            raise CliError(f"--text {args.text}: the file is empty")
    options = ImportOptions(
        text=text,
        text_name=args.text.name if args.text is not None else None,
        limit=args.limit,
        select=_parse_select(args.select),
        id_prefix=args.prefix,
        tolerant=args.tolerant,
    )
    if not args.src.exists():
        raise FileNotFoundError(f"{args.src}: no such file or folder")
    result = import_source(args.fmt, args.src, options)
    args.out.mkdir(parents=True, exist_ok=True)
    for rec in result.recordings:
        write_replay(rec, args.out)
    for warning in result.warnings:
        print(f"warning: {warning}")
    summary = f"imported {len(result.recordings)} stream(s) from {args.src.name} into {args.out}"
    if result.skipped:
        reasons = "; ".join(f"{n} {reason}" for reason, n in result.skipped_by_reason().items())
        summary += f"; skipped {len(result.skipped)}: {reasons}"
    else:
        summary += "; skipped 0"
    print(summary)
    return 0 if result.recordings or not result.skipped else 1
