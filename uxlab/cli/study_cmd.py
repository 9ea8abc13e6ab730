"""`uxlab study check FILE [--participant P] [--number N]`: validate a study, print its design."""

from __future__ import annotations

import argparse

WIDTH = 80
EXAMPLE_PARTICIPANT = "P-EXAMPLE"
PREVIEW_ROWS = 12


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "study",
        help="check a study file and print its design",
        description="Study files: validate one and print its design.",
    )
    sub = parser.add_subparsers(dest="study_command", metavar="ACTION", required=True)
    check = sub.add_parser(
        "check",
        help="validate FILE, then print conditions, trial counts, duration and a trial list",
        description="Validate a study file (key paths, references, the corpus) and print its "
        "design: conditions, trials per participant, estimated duration from the corpus, and "
        "the exact trial list for a participant.",
    )
    check.add_argument("file", metavar="FILE", help="the study file (TOML)")
    check.add_argument(
        "--participant",
        metavar="P",
        help="print this participant's whole trial list (default: the first "
        f"{PREVIEW_ROWS} trials of {EXAMPLE_PARTICIPANT})",
    )
    check.add_argument(
        "--number",
        type=int,
        default=1,
        metavar="N",
        help="the participant's number (1, 2, ...: picks the Latin-square row; the store "
        "numbers participants in order of arrival); default 1",
    )
    check.add_argument(
        "--seed", type=int, metavar="S", help="the session seed (default: the study's seed)"
    )
    check.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from uxlab.store.store import check_participant_id
    from uxlab.study.design import design_trials
    from uxlab.study.estimate import condition_stream_ms, estimate_duration
    from uxlab.study.spec import load_study

    study = load_study(args.file)
    participant = args.participant or EXAMPLE_PARTICIPANT
    check_participant_id(participant)
    if args.number < 1:
        print("uxlab study: --number must be 1 or more", flush=True)
        return 2
    group = study.groups[(args.number - 1) % len(study.groups)] if study.groups else None
    trials = design_trials(study, participant, args.number, args.seed, group)
    stream_ms = condition_stream_ms(study)
    estimate = estimate_duration(study, trials)
    for line in describe(study, trials, stream_ms, estimate, participant, args, group):
        print(line)
    return 0


def describe(study, trials, stream_ms, estimate, participant, args, group) -> list[str]:
    """The report, as lines of at most WIDTH characters."""
    d = study.design
    out = [f"{study.path}: valid", ""]
    out.append(_clip(f"Study    {study.id} v{study.version}: {study.title}"))
    out.append(f"         seed {study.seed}, sha256 {study.sha256[:16]}")
    n_rec = len(study.corpus.recordings)
    prompt = "the recording's" if study.prompt is None else "the study's"
    out.append(
        _clip(f"Stimuli  {n_rec} recordings, assignment {study.assignment}; {prompt} prompt")
    )
    out.append(_clip(f"Profile  {study.profile.describe()}"))
    for f in study.factors:
        kind = "between" if f.between else "within"
        levels = ", ".join(_num(x) for x in f.levels)
        out.append(_clip(f"Factor   {f.name} ({kind}): {levels}"))
    out.append("")

    conds = study.conditions
    out.append(f"Conditions ({len(conds)})")
    names = [f.name for f in study.within_factors]
    head = "  #  " + "".join(f"{n:>14}" for n in names) + f"{'mean stream':>14}"
    out.append(_clip(head))
    for i, c in enumerate(conds, start=1):
        cells = "".join(f"{_num(c.levels[n]):>14}" for n in names)
        out.append(_clip(f"{i:>3}  {cells}{_secs(stream_ms[c.id] / 1000):>14}"))
    if study.groups:
        cap = study.counterbalance.group_cap
        out.append(
            _clip(
                f"Groups   {', '.join(g.id for g in study.groups)} "
                f"(cap {cap if cap else 'none'} each, allocated by the store)"
            )
        )
    out.append("")

    n_practice = sum(t.practice for t in trials)
    n_attention = sum(t.attention is not None for t in trials)
    n_main = len(trials) - n_practice - n_attention
    out.append(
        f"Trials per participant: {len(trials)} = {n_practice} practice + {n_main} main "
        f"+ {n_attention} attention"
    )
    order = d.order + (f" by {d.blocked_by}" if d.blocked_by else "")
    rules = [f"order {order}", f"{d.blocks} block(s) x {d.repeats} repeat(s)"]
    if d.max_run:
        rules.append(f"max run {d.max_run}")
    if d.break_every:
        rules.append(f"break every {d.break_every}")
    out.append(_clip("  " + ", ".join(rules)))
    qs = ", ".join(
        f"{q.id} ({q.type}{', end' if q.when == 'end' else ''})" for q in study.questions
    )
    out.append(_clip(f"  questions: {qs or 'none'}"))
    ab = study.abandon
    timeout = f"timeout {_num(ab.timeout_s)} s" if ab.timeout_s else "no timeout"
    after = "questions follow" if ab.ask_questions else "no questions after"
    out.append(_clip(f"  give up with {ab.key}, {timeout}, {after} an abandoned trial"))
    out.append("")
    out.append(
        f"Estimated duration: {estimate.total_s / 60:.1f} min "
        f"(streams {estimate.streams_s / 60:.1f}, questions {estimate.questions_s / 60:.1f}, "
    )
    out[-1] += f"other {(estimate.overhead_s + estimate.breaks_s) / 60:.1f})"
    out.append("")

    shown = trials if args.participant else trials[:PREVIEW_ROWS]
    who = f"Trial list for {participant} (number {args.number}"
    who += f", seed {args.seed if args.seed is not None else study.seed}"
    who += f", group {group.id})" if group else ")"
    out.append(_clip(who))
    out.append(
        f"{'idx':>4} {'blk':>3} {'kind':<9} {'condition':<24} {'recording':<22} {'seed':>11}"
    )
    for t in shown:
        kind = "practice" if t.practice else "attention" if t.attention else "main"
        rec = t.replay_id or "(check text)"
        mark = "  -- break --" if t.break_before else None
        if mark:
            out.append(mark)
        out.append(
            f"{t.index:>4} {t.block:>3} {kind:<9} {_cut(t.condition_id, 24):<24} "
            f"{_cut(rec, 22):<22} {t.seed:>11}"
        )
    if len(shown) < len(trials):
        out.append(f"  ... {len(trials) - len(shown)} more; --participant P prints them all")
    return out


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _secs(s: float) -> str:
    return f"{s:.1f} s"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _clip(line: str) -> str:
    return _cut(line, WIDTH)
