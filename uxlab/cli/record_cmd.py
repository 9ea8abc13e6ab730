"""`uxlab record`: record live streaming responses into replay files (one per response)."""

from __future__ import annotations

import argparse
import sys

from uxlab.cli.places import add_out_option
from uxlab.live.clients import APIS


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "record",
        help="record live streaming responses with per-event arrival times",
        description="Send streaming requests and write one replay file (plus a raw .sse "
        "capture) per response. Keys come from the environment, never from a flag.",
    )
    p.add_argument(
        "--api",
        required=True,
        choices=APIS,
        help="wire format: OpenAI Chat (and compatible servers), OpenAI "
        "Responses, Anthropic Messages, Gemini alt=sse",
    )
    p.add_argument(
        "--url",
        help="base URL, e.g. http://127.0.0.1:8000/v1 (default: the vendor's public endpoint)",
    )
    p.add_argument(
        "--model", action="append", required=True, help="model name (repeat to compare models)"
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--prompt", metavar="TEXT", help="one user prompt")
    src.add_argument(
        "--prompts",
        metavar="FILE",
        help='JSONL prompts file: {"prompt": ...} or {"messages": [...]} per line',
    )
    p.add_argument("--system", metavar="TEXT", help="system prompt for every request")
    add_out_option(p, "output folder", metavar="DIR", required=True)
    p.add_argument(
        "--repeats", metavar="N", type=int, default=1, help="requests per prompt (default 1)"
    )
    p.add_argument(
        "--concurrency", metavar="C", type=int, default=1, help="requests in flight (default 1)"
    )
    p.add_argument("--rate", type=float, metavar="R", help="at most R request starts per second")
    p.add_argument("--max-tokens", metavar="N", type=int, help="max_tokens / maxOutputTokens")
    p.add_argument("--temperature", metavar="T", type=float)
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="extra body parameter, e.g. --param top_p=0.9 (repeatable)",
    )
    p.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="environment variable holding the "
        "key (default OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY)",
    )
    p.add_argument(
        "--retries",
        metavar="N",
        type=int,
        default=0,
        help="retry 429/5xx this many times, honouring retry-after (default 0)",
    )
    p.add_argument(
        "--timeout-s",
        metavar="S",
        type=float,
        default=60.0,
        help="read timeout: longest silence mid-stream (default 60)",
    )
    p.add_argument("--connect-timeout-s", metavar="S", type=float, default=10.0)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from uxlab.cli import CliError
    from uxlab.live.clients import (
        DEFAULT_KEY_ENV,
        DEFAULT_URLS,
        Prompt,
        api_key_from_env,
        request_params,
    )
    from uxlab.live.record import RecordOptions
    from uxlab.live.workload import load_prompts, run_workload, summary_table

    for name in ("repeats", "concurrency"):
        if getattr(args, name) < 1:
            raise CliError(f"--{name}: must be at least 1, got {getattr(args, name)}")
    if args.rate is not None and args.rate <= 0:
        raise CliError(f"--rate: must be a positive number of requests per second, got {args.rate}")
    url = args.url or DEFAULT_URLS[args.api]
    key = api_key_from_env(args.api, args.api_key_env)
    env_name = args.api_key_env or DEFAULT_KEY_ENV[args.api]
    if key is None:
        if args.url is None:
            raise CliError(
                f"no API key: set {env_name} (or name another variable with "
                "--api-key-env) to call the vendor's endpoint"
            )
        print(f"note: {env_name} is not set; sending requests without a key", file=sys.stderr)
    if args.prompts:
        prompts = load_prompts(args.prompts)
    else:
        prompts = [Prompt(messages=[{"role": "user", "content": args.prompt}])]
    if args.system:
        for p in prompts:
            p.system = p.system or args.system
    options = RecordOptions(
        retries=args.retries,
        read_timeout_s=args.timeout_s,
        connect_timeout_s=args.connect_timeout_s,
        params=request_params(args.api, args.max_tokens, args.temperature, args.param),
    )
    result = asyncio.run(
        run_workload(
            args.api,
            url,
            args.model,
            prompts,
            args.out,
            key,
            repeats=args.repeats,
            concurrency=args.concurrency,
            rate_per_s=args.rate,
            options=options,
        )
    )
    print(summary_table(result.stats))
    print(
        f"wrote {len(result.paths)} replay file(s) to {args.out}"
        + (f"; {result.errors} with errors (kept, see the warnings above)" if result.errors else "")
    )
    return 1 if result.errors else 0
