"""`uxlab shape IN -o OUT [profile options] [--seed N]`: write re-timed schedules.

IN is a replay file or a folder of them; OUT is a file (for one input) or a folder. A single
file is shaped with `--seed` itself; in a folder every recording gets its own seed,
`derive_seed(seed, recording id)` (the first 4 bytes of SHA-256 of "<seed>:<id>"), so adding
or removing files never changes the schedules of the others.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from uxlab.cli.places import add_out_option
    from uxlab.cli.profile_options import add_profile_arguments

    p = subparsers.add_parser(
        "shape",
        help="re-time recordings with a TTFT/jitter profile (deterministic from a seed)",
        description="Re-time a replay file or folder with a shaping profile and write the "
        "schedules. Example: uxlab shape replays/ -o shaped/ --ttft 800 "
        "--itl lognormal:median=30,sigma=0.5 --seed 7",
    )
    p.add_argument("input", metavar="IN", help="a replay file (*.jsonl) or a folder of them")
    add_out_option(p, "output file (one input) or folder", required=True, old_spelling=True)
    p.add_argument(
        "--truncated", action="store_true", help="also accept recordings without an end event"
    )
    add_profile_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from uxlab.cli import CliError
    from uxlab.cli.profile_options import profile_from_args
    from uxlab.shaping import derive_seed, shape
    from uxlab.shaping.summary import summarise
    from uxlab.streams.replay_file import (
        ReplayFormatError,
        iter_replay_paths,
        read_replay,
        safe_filename,
        write_replay,
    )
    from uxlab.wrapping import WIDTH, wrap_parts

    profile = profile_from_args(args)
    if args.seed < 0:
        raise CliError(f"--seed: {args.seed} is negative (use a whole number >= 0)")
    src = Path(args.input)
    out = Path(args.out)
    if not src.exists():
        raise CliError(f"{src}: no such file or folder")
    folder = src.is_dir()
    paths = list(iter_replay_paths(src))
    if folder and not paths:
        raise CliError(f"{src}: no *.jsonl replay files in this folder")
    if folder and out.exists() and not out.is_dir():
        raise CliError(f"-o {out}: is a file, but IN is a folder (give a folder)")
    if out.resolve() == src.resolve():
        raise CliError(f"-o {out}: would overwrite the input; choose another path")

    print("\n".join(wrap_parts([f"profile: {profile.describe()}"], WIDTH, indent="  ")))
    print("\n".join(wrap_parts([f"writing to {out}"], WIDTH, indent="  ")))
    failures = 0
    for path in paths:
        try:
            rec = read_replay(path, allow_truncated=args.truncated)
        except ReplayFormatError as exc:
            print(f"skipped {exc}")
            failures += 1
            continue
        seed = derive_seed(args.seed, rec.id) if folder else args.seed
        schedule = shape(rec, profile, seed=seed)
        if folder:
            rel = path.relative_to(src).parent
            target = out / rel / f"{safe_filename(schedule.id)}.jsonl"
        elif out.is_dir() or args.out.endswith(("/", "\\")):
            target = out / f"{safe_filename(schedule.id)}.jsonl"
        else:
            target = out
        written = write_replay(schedule, target)
        summary = summarise(rec, schedule, profile)
        # The file, seed and chunk count, then the timings indented below (80 columns).
        head = wrap_parts([f"{written.name} (seed {seed}): {summary.n_events} chunks"], WIDTH)
        timings = wrap_parts(summary.timing_parts(), WIDTH, indent="  ", first_indent="  ")
        print("\n".join(head + timings))
    if failures:
        print(f"{failures} file(s) skipped (see above)")
        return 2 if failures == len(paths) else 1  # nothing shaped: an input error
    return 0
