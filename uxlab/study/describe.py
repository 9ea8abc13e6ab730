"""`uxlab study check`: a study's design in lines of at most 80 characters.

The study, its stimuli, profile, timing and factors; its conditions (or adaptive tracks)
with their mean stream; the trial counts, order, questions and rules; the estimated
duration (over an adaptive factor's range too); and one participant's trial list.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from number_text import level, seconds
from uxlab.wrapping import WIDTH, wrap_labelled

if TYPE_CHECKING:
    from uxlab.study.design import Trial
    from uxlab.study.estimate import DurationEstimate
    from uxlab.study.spec import Condition, Factor, Question, Study


@dataclass(frozen=True)
class Who:
    """Whose trial list is shown: the participant, their number (the Latin-square row), the
    session seed (None: the study's), and how many of their trials (None: all)."""

    participant: str
    number: int = 1
    seed: int | None = None
    rows: int | None = None


def study_design_lines(
    study: Study, who: Who, shortest_gap_ms: Callable[[], float | None]
) -> list[str]:
    """The design of `study` as printed by `uxlab study check` (`shortest_gap_ms()`: the
    study's shortest gap between shown chunks, asked only for a derived tolerance)."""
    from uxlab.study.design import design_trials
    from uxlab.study.estimate import condition_stream_ms, estimate_duration

    group = study.groups[(who.number - 1) % len(study.groups)] if study.groups else None
    trials = design_trials(study, who.participant, who.number, who.seed, group)
    stream_ms = condition_stream_ms(study)
    adaptive = next((f for f in study.within_factors if f.adaptive), None)
    range_s = None
    if adaptive is None:
        estimate = estimate_duration(study, trials)
    else:  # the level is chosen while the session runs: its middle, and both ends
        lo, hi = min(adaptive.levels), max(adaptive.levels)
        estimate = estimate_duration(study, at_level(trials, adaptive.name, math.sqrt(lo * hi)))
        low_s, high_s = (
            estimate_duration(study, at_level(trials, adaptive.name, x)).total_s for x in (lo, hi)
        )
        range_s = (low_s, high_s)
    return describe(study, trials, stream_ms, estimate, who, group, range_s, shortest_gap_ms)


def at_level(trials: list[Trial], factor: str, level_ms: float) -> list[Trial]:
    """The main trials with the adaptive `factor` at `level_ms` (practice and attention-check
    trials play their planned levels)."""
    return [
        t
        if t.practice or t.attention is not None
        else dataclasses.replace(t, levels={**t.levels, factor: level_ms})
        for t in trials
    ]


def timing_text(study: Study, shortest_gap_ms: Callable[[], float | None]) -> str:
    """The `[timing]` tolerance in force and what happens to a trial outside it
    (`shortest_gap_ms()`: the study's shortest gap, asked only for a derived tolerance)."""
    from uxlab.fidelity import Tolerance, default_max_late_p99_ms

    t = study.timing
    limit = t.max_late_p99_ms
    if limit is None:
        limit = default_max_late_p99_ms(shortest_gap_ms())
    tol = Tolerance(limit, t.max_frame_shared_share, derived=t.max_late_p99_ms is None)
    fate = f"re-run (at most {t.max_requeued})" if t.requeue_flagged else "marked"
    return f"{tol.describe()}; a trial outside it is {fate}"


def adaptive_text(f: Factor) -> str:
    """`QUEST+ on 25 log levels 100-5000 ms` (the procedure and its log-spaced grid)."""
    name = {"quest": "QUEST+", "interleaved": "interleaved staircases"}.get(f.procedure)
    if f.procedure == "staircase":
        name = f"1-up/{f.down}-down staircase"
    lo, hi = min(f.levels), max(f.levels)
    return f"{name} on {f.grid} log levels {level(lo)}-{level(hi)} ms"


def describe(
    study: Study,
    trials: list[Trial],
    stream_ms: dict[str, float],
    estimate: DurationEstimate,
    who: Who,
    group: Condition | None,
    range_s: tuple[float, float] | None = None,
    shortest_gap_ms: Callable[[], float | None] | None = None,
) -> list[str]:
    """The report, as lines of at most WIDTH characters.

    With an adaptive factor, `range_s` is the duration with every main trial at its lowest
    and at its highest level (`estimate` is at the geometric middle of the range).
    """
    adaptive = next((f for f in study.within_factors if f.adaptive), None)
    return [
        f"{study.path}: valid",
        "",
        *_study_lines(study, shortest_gap_ms or (lambda: None)),
        "",
        *_condition_lines(study, adaptive, stream_ms),
        "",
        *_trial_rule_lines(study, trials, adaptive),
        "",
        *_duration_lines(estimate, adaptive, range_s),
        "",
        *_trial_list_lines(study, trials, adaptive, who, group),
    ]


def _study_lines(study: Study, shortest_gap_ms: Callable[[], float | None]) -> list[str]:
    """The study, its stimuli, profile, timing and factors."""
    out = wrap_labelled("Study    ", [f"{study.id} v{study.version}: {study.title}"])
    out.append(f"         seed {study.seed}, sha256 {study.sha256[:16]}")
    n_rec = len(study.corpus.recordings)  # (live: stream lengths assume a 150-token answer)
    stimuli = [study.kind.describe(n_rec, study.assignment, study.prompt)]
    out += wrap_labelled("Stimuli  ", stimuli)
    out += wrap_labelled("Profile  ", [study.profile.describe()])
    out += wrap_labelled("Timing   ", [timing_text(study, shortest_gap_ms)])
    for f in study.factors:
        kind = "between" if f.between else "within"
        levels = ", ".join(level(x) for x in f.levels)
        if f.adaptive:
            kind, levels = "adaptive", adaptive_text(f)
        out += wrap_labelled("Factor   ", [f"{f.name} ({kind}): {levels}"])
    return out


def _condition_lines(
    study: Study, adaptive: Factor | None, stream_ms: dict[str, float]
) -> list[str]:
    """The within conditions with their mean stream, and the groups."""
    conds = study.conditions
    names = [f.name for f in study.within_factors]
    out: list[str] = []
    if adaptive is None:
        out.append(f"Conditions ({len(conds)})")
        head = "  #  " + "".join(f"{n:>14}" for n in names) + f"{'mean stream':>14}"
        out.append(_clip(head))
        for i, c in enumerate(conds, start=1):
            cells = "".join(f"{level(c.levels[n]):>14}" for n in names)
            out.append(_clip(f"{i:>3}  {cells}{seconds(stream_ms[c.id] / 1000):>14}"))
    else:
        out.extend(_adaptive_conditions(study, adaptive, names, stream_ms))
    if study.groups:
        cap = study.counterbalance.group_cap
        groups = [g.id for g in study.groups]
        groups[-1] += f" (cap {cap if cap else 'none'} each, allocated by the store)"
        out += wrap_labelled("Groups   ", groups)
    return out


def _trial_rule_lines(study: Study, trials: list[Trial], adaptive: Factor | None) -> list[str]:
    """How many trials of each kind, their order, the questions, giving up, the adaptive rule."""
    d = study.design
    n_practice = sum(t.practice for t in trials)
    n_attention = sum(t.attention is not None for t in trials)
    n_main = len(trials) - n_practice - n_attention
    out = [
        f"Trials per participant: {len(trials)} = {n_practice} practice + {n_main} main "
        f"+ {n_attention} attention"
    ]
    order = d.order + (f" by {d.blocked_by}" if d.blocked_by else "")
    rules = [f"order {order}", f"{d.blocks} block(s) x {d.repeats} repeat(s)"]
    if d.max_run:
        rules.append(f"max run {d.max_run}")
    if d.break_every:
        rules.append(f"break every {d.break_every}")
    out += wrap_labelled("  ", rules)
    out += wrap_labelled("  questions: ", [_question_text(q) for q in study.questions] or ["none"])
    ab = study.abandon
    timeout = f"timeout {level(ab.timeout_s)} s" if ab.timeout_s else "no timeout"
    after = "questions follow" if ab.ask_questions else "no questions after"
    out += wrap_labelled("  ", [f"give up with {ab.key}", timeout, f"{after} an abandoned trial"])
    rerun = "run again at the end" if study.session.rerun_interrupted else "not run again"
    out += wrap_labelled("  ", [f"interrupted trials: {rerun} ([session] rerun_interrupted)"])
    if adaptive is not None:
        n_tracks = len({_track(c.levels, adaptive.name) for c in study.conditions})
        tracks = f"{n_tracks} tracks of {n_main // n_tracks}" if n_tracks > 1 else "1 track"
        how = adaptive_text(adaptive).split(" on ")[0]
        question = _adaptive_question(study)
        out += wrap_labelled(
            "  ", [f"adaptive: {adaptive.name} by {how} from the '{question}' answers"]
        )
        out += wrap_labelled("  ", [f"on the {n_main} main trials ({tracks})"])
        out.append("  practice trials play their planned levels; attention checks have no stream")
    return out


def _duration_lines(
    estimate: DurationEstimate, adaptive: Factor | None, range_s: tuple[float, float] | None
) -> list[str]:
    """The estimated session length (and its range over an adaptive factor's levels)."""
    out = [
        f"Estimated duration: {estimate.total_s / 60:.1f} min "
        f"(streams {estimate.streams_s / 60:.1f}, questions {estimate.questions_s / 60:.1f}, "
        f"other {(estimate.overhead_s + estimate.breaks_s) / 60:.1f})"
    ]
    if adaptive is not None and range_s is not None:
        lo, hi = min(adaptive.levels), max(adaptive.levels)
        low_s, high_s = range_s
        mid = f"with {adaptive.name} at {level(round(math.sqrt(lo * hi)))} ms (mid-range);"
        ends = f"{low_s / 60:.1f} min if all at {level(lo)}, {high_s / 60:.1f} at {level(hi)}"
        out += wrap_labelled("  ", [f"{mid} {ends}"])
    return out


def _trial_list_lines(
    study: Study, trials: list[Trial], adaptive: Factor | None, who: Who, group: Condition | None
) -> list[str]:
    """One participant's trial list (its first `who.rows` trials, or all)."""
    shown = trials if who.rows is None else trials[: who.rows]
    title = f"Trial list for {who.participant} (number {who.number}"
    title += f", seed {who.seed if who.seed is not None else study.seed}"
    title += f", group {group.id})" if group else ")"
    out = wrap_labelled("", [title])
    if adaptive is not None:
        out.append(f"({adaptive.name}=? : chosen by the procedure when the trial runs)")
    out.append(
        f"{'idx':>4} {'blk':>3} {'kind':<9} {'condition':<24} {'recording':<22} {'seed':>11}"
    )
    for t in shown:
        kind = "practice" if t.practice else "attention" if t.attention else "main"
        rec = t.replay_id or "(check text)"
        if t.break_before:
            out.append("  -- break --")
        condition = t.condition_id
        if adaptive is not None and kind == "main":  # the level is chosen when it runs
            levels: dict[str, float | str] = {**t.levels, adaptive.name: "?"}
            condition = "&".join(
                f"{k}={v if isinstance(v, str) else level(v)}" for k, v in levels.items()
            )
        out.append(
            f"{t.index:>4} {t.block:>3} {kind:<9} {_cut(condition, 24):<24} "
            f"{_cut(rec, 22):<22} {t.seed:>11}"
        )
    if len(shown) < len(trials):
        out.append(f"  ... {len(trials) - len(shown)} more; --participant P prints them all")
    return out


def _question_text(q: Question) -> str:
    """`id (type)`, with `, end` or `, after steps 2, 4` when it is not asked per trial."""
    when = ""
    if q.when == "end":
        when = ", end"
    elif q.when == "step":
        when = ", after step" + ("s " if len(q.after_steps) > 1 else " ")
        when += ", ".join(map(str, q.after_steps))
    return f"{q.id} ({q.type}{when})"


def _track(levels: dict[str, float], adaptive: str) -> str:
    """The other within factors' levels: one adaptive track each ("all" when there are none)."""
    return ", ".join(f"{k}={level(v)}" for k, v in levels.items() if k != adaptive) or "all"


def _adaptive_question(study: Study) -> str:
    question = study.judgement_question
    assert question is not None, "an adaptive factor needs a judgement question (checked on load)"
    return question.id


def _adaptive_conditions(
    study: Study, adaptive: Factor, names: list[str], stream_ms: dict[str, float]
) -> list[str]:
    """One row per adaptive track: the other factors' levels, the stream at either end."""
    others = [n for n in names if n != adaptive.name]
    tracks: dict[str, list[float]] = {}
    for c in study.conditions:
        tracks.setdefault(_track(c.levels, adaptive.name), []).append(stream_ms[c.id])
    out = [f"Adaptive tracks ({len(tracks)}): {adaptive.name} is chosen trial by trial"]
    first = {_track(c.levels, adaptive.name): c for c in study.conditions}
    head = "  #  " + "".join(f"{n:>14}" for n in [*others, adaptive.name]) + f"{'stream':>16}"
    out.append(_clip(head))
    for i, (track, streams) in enumerate(tracks.items(), start=1):
        cells = "".join(f"{level(first[track].levels[n]):>14}" for n in others)
        span = f"{min(streams) / 1000:.1f}-{max(streams) / 1000:.1f} s"
        out.append(_clip(f"{i:>3}  {cells}{'adaptive':>14}{span:>16}"))
    lo, hi = min(adaptive.levels), max(adaptive.levels)
    out += wrap_labelled("  ", [f"stream: mean length at {level(lo)} and at {level(hi)} ms"])
    return out


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _clip(line: str) -> str:
    return _cut(line, WIDTH)
