"""The pre-session timing check: can this machine keep the study's shortest gaps right now?

A short test schedule (chunks at the study's shortest typical gap,
`uxlab.session.shortest_gap_ms`) is played through the real player and judged with
`judge_play`, against the same tolerance the study's trials are flagged by (`[timing]
max_late_p99_ms`), beside the machine's load and CPU steal. Where it is played says what
it can predict:

- *on screen* (`uxlab.tui.calibration`, what `uxlab run` and `uxlab check-timing` do): the
  study's own view and paint path, so the chunks' flushed lateness is measured exactly as a
  trial's is and judged as a trial's flag would be; with a glass probe (`--glass`), the
  lateness at the glass;
- *off-screen* (`check_timing`, where there is no terminal): the event loop's hand-off
  only; painting adds up to one frame at the frame cap, so the hand-off must leave that
  much of the tolerance free.

The researcher sees what it finds (never the participant).
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from number_text import ms
from uxlab.clock import Clock, MonotonicClock
from uxlab.fidelity import Tolerance, default_max_late_p99_ms, quantile, trial_fidelity
from uxlab.machine import CpuTimes, cpu_times, machine_state, steal_share
from uxlab.player import HeadlessSink, PlaybackLog, Player
from uxlab.streams.recording import Chunk, End, Header, Recording

TEST_DURATION_MS = 3000.0
"""How long the test schedule plays (ms): several hundred chunks at a 10 ms gap, so its
p99 is decided by more than one chunk, as a trial's is."""
MAX_CHECK_CHUNKS = 600
"""The most chunks the test plays: its p99 is then decided by six of them. A gap under 5 ms
would otherwise play more (1,490 at 2 ms), holding the participant and the CPU for the whole
`TEST_DURATION_MS` to learn nothing more; such a schedule plays for less."""
FALLBACK_GAP_MS = 30.0
"""The test gap for a study none of whose conditions streams two chunks (ms)."""
STEAL_WARN_SHARE = 0.05
"""CPU steal above this share during the test is a problem."""
OVERLOAD_PER_CPU = 2.0
"""A load average above this many times the CPUs is a problem even when the short test
kept time (the test is short; such load comes and goes); above 1x it is a caution."""


def check_schedule(gap_ms: float, duration_ms: float = TEST_DURATION_MS) -> Recording:
    """Chunks of one character every `gap_ms`, from 20 ms to `duration_ms` (at most
    `MAX_CHECK_CHUNKS` of them)."""
    n = max(10, min(MAX_CHECK_CHUNKS, int((duration_ms - 20.0) / gap_ms)))
    chunks = [Chunk(t_ms=round(20.0 + k * gap_ms, 3), text="x") for k in range(n)]
    end = End(t_ms=chunks[-1].t_ms)
    return Recording(Header(id="uxlab-timing-check"), list(chunks), end)


async def play_test(schedule: Recording, clock: Clock) -> PlaybackLog:
    """Play `schedule` into a headless sink from now on `clock`."""
    return await Player(schedule, HeadlessSink(), clock).play()


@dataclass
class TimingCheck:
    """What the check measured and what it means for the study."""

    gap_ms: float
    gap_source: str
    """"study" (its shortest gap) or "fallback" (no condition streams two chunks)."""
    tolerance: Tolerance
    frame_ms: float | None
    """One frame at the frame cap (ms); None when not known."""
    n_chunks: int
    late_p50_ms: float | None
    """Hand-off lateness (the event loop's punctuality), p50/p99/max."""
    late_p99_ms: float | None
    late_max_ms: float | None
    machine: dict[str, Any]
    steal_share: float | None
    """CPU steal during the test (None where /proc/stat is not readable)."""
    multiplexer: str | None = None
    measured: str = "handed"
    """Where lateness was measured: `handed` (off-screen), `flushed` (the study's paint
    path, on screen) or `painted` (at the glass of a terminal window)."""
    shown_p50_ms: float | None = None
    """Lateness where `measured` says (flushed or painted), p50/p99/max/SD; None off-screen."""
    shown_p99_ms: float | None = None
    shown_max_ms: float | None = None
    shown_sd_ms: float | None = None
    shared_share: float | None = None
    """Chunks that reached the screen in the same frame (or repaint) as the one before."""
    glass: dict[str, Any] | None = None
    """The glass probe's description when one measured (`uxlab.glass`)."""
    glass_note: str | None = None
    """Why the glass was asked for but not measured (then `measured` is `flushed`)."""
    problems: list[str] = field(default_factory=list)
    cautions: list[str] = field(default_factory=list)
    """Worth knowing, but the measured timing was kept."""
    advice: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def budget_ms(self) -> float:
        """The hand-off p99 this check allows: the tolerance less one frame."""
        return max(0.0, self.tolerance.max_late_p99_ms - (self.frame_ms or 0.0))

    def summary(self) -> str:
        """One line: what was measured against what."""
        load = self.machine.get("load_1m")
        cpus = self.machine.get("cpus_usable") or self.machine.get("cpus")
        if self.measured == "handed":
            late = "not measured" if self.late_p99_ms is None else f"{self.late_p99_ms:.1f} ms"
            text = (
                f"timing check: {self.n_chunks} chunks every {self.gap_ms:.1f} ms off-screen, "
                f"hand-off lateness p99 {late} (allowed {self.budget_ms:.1f} ms: tolerance "
                f"{self.tolerance.max_late_p99_ms:g} ms"
            )
            text += f" less one frame of {self.frame_ms:.1f} ms)" if self.frame_ms else ")"
        else:
            where = "at the glass" if self.measured == "painted" else "on screen (flushed)"
            emulator = (self.glass or {}).get("emulator")
            where += f" of {emulator}" if emulator and self.measured == "painted" else ""
            text = (
                f"timing check: {self.n_chunks} chunks every {self.gap_ms:.1f} ms, lateness "
                f"{where} p50 {ms(self.shown_p50_ms)} / p99 {ms(self.shown_p99_ms)} / max "
                f"{ms(self.shown_max_ms)} (allowed p99 {self.tolerance.max_late_p99_ms:g} ms); "
                f"hand-off p99 {ms(self.late_p99_ms)}"
            )
            if self.shared_share is not None:
                what = "repaint" if self.measured == "painted" else "frame"
                text += f"; {self.shared_share:.0%} shared a {what}"
        if load is not None:
            text += f"; load {load:g} on {cpus} CPUs"
        if self.steal_share is not None:
            text += f"; CPU steal {self.steal_share:.0%}"
        return text

    def warning(self) -> str | None:
        """The researcher's warning (None when the machine keeps the timing)."""
        if self.ok:
            return None
        return (
            "this machine cannot keep the study's shortest gaps right now: "
            + "; ".join(self.problems + self.cautions)
            + ". What to do: "
            + "; ".join(self.advice)
        )

    def to_environment(self) -> dict[str, Any]:
        """Kept with the session's environment (`env_timing_check_*` in runs.csv)."""
        return {
            "gap_ms": self.gap_ms,
            "n_chunks": self.n_chunks,
            "measured": self.measured,
            "late_p50_ms": self.late_p50_ms,
            "late_p99_ms": self.late_p99_ms,
            "late_max_ms": self.late_max_ms,
            "shown_p50_ms": self.shown_p50_ms,
            "shown_p99_ms": self.shown_p99_ms,
            "shown_max_ms": self.shown_max_ms,
            "shown_sd_ms": self.shown_sd_ms,
            "shared_share": self.shared_share,
            "allowed_p99_ms": round(
                self.budget_ms if self.measured == "handed" else self.tolerance.max_late_p99_ms, 3
            ),
            "steal_share": self.steal_share,
            "glass_emulator": (self.glass or {}).get("emulator"),
            "ok": self.ok,
            "problems": self.problems + self.cautions,
        }


def study_tolerance_for_check(study: Any) -> tuple[float, str, Tolerance]:
    """(the test gap, where it came from, the tolerance the trials are flagged by)."""
    from uxlab.session import shortest_gap_ms

    gap = shortest_gap_ms(study)
    gap_source = "study" if gap else "fallback"
    gap = gap or FALLBACK_GAP_MS
    limit = study.timing.max_late_p99_ms
    tolerance = Tolerance(
        limit if limit is not None else default_max_late_p99_ms(gap),
        study.timing.max_frame_shared_share,
        derived=limit is None,
    )
    return gap, gap_source, tolerance


def judge_play(
    study: Any,
    log: PlaybackLog,
    *,
    frame_cap_fps: int | None,
    machine: dict[str, Any],
    steal: float | None,
    multiplexer: str | None = None,
    glass: dict[str, Any] | None = None,
    glass_note: str | None = None,
) -> TimingCheck:
    """Judge a played test schedule: at the glass when every shown chunk has a painted
    time, else on screen when each has a flushed one, else by its hand-off."""
    gap, gap_source, tolerance = study_tolerance_for_check(study)
    fid = trial_fidelity(log.records)
    visible = [r for r in log.records if r.n_chars > 0]
    measured, late = "handed", []
    if visible and all(r.painted_ms is not None for r in visible):
        measured = "painted"
        late = [r.painted_ms - r.scheduled_ms for r in visible if r.painted_ms is not None]
    elif visible and all(r.flushed_ms is not None for r in visible):
        measured = "flushed"
        late = [r.flushed_ms - r.scheduled_ms for r in visible if r.flushed_ms is not None]
    shared = None
    if measured == "painted" and len(visible) > 1:
        shared = sum(bool(r.shared_repaint) for r in visible[:-1]) / (len(visible) - 1)
    elif measured == "flushed":
        shared = fid["frame_shared_share"]
    check = TimingCheck(
        gap_ms=round(gap, 3),
        gap_source=gap_source,
        tolerance=tolerance,
        frame_ms=1000.0 / frame_cap_fps if frame_cap_fps else None,
        n_chunks=int(fid["n_chunks"] or 0),
        late_p50_ms=fid["late_handed_p50_ms"],
        late_p99_ms=fid["late_handed_p99_ms"],
        late_max_ms=fid["late_handed_max_ms"],
        machine=machine,
        steal_share=steal,
        multiplexer=multiplexer,
        measured=measured,
        shown_p50_ms=_round(quantile(late, 0.5)) if late else None,
        shown_p99_ms=_round(quantile(late, 0.99)) if late else None,
        shown_max_ms=_round(max(late)) if late else None,
        shown_sd_ms=_round(statistics.pstdev(late)) if len(late) > 1 else None,
        shared_share=None if shared is None else round(shared, 4),
        glass=glass if measured == "painted" else None,
        glass_note=glass_note,
    )
    _judge(check)
    return check


def check_timing(
    study: Any,
    *,
    frame_cap_fps: int | None = None,
    clock: Clock | None = None,
    duration_ms: float = TEST_DURATION_MS,
    multiplexer: str | None = None,
    machine_fn: Callable[[], dict[str, Any]] = machine_state,
    cpu_times_fn: Callable[[], CpuTimes | None] = cpu_times,
) -> TimingCheck:
    """Play the test schedule off-screen now and judge its hand-off (no terminal needed).

    Runs its own event loop (call it before any app starts); `clock` defaults to the
    session's real clock. With a terminal, `uxlab.tui.calibration` plays it on screen.
    """
    gap, _, _ = study_tolerance_for_check(study)
    before = cpu_times_fn()
    log = asyncio.run(play_test(check_schedule(gap, duration_ms), clock or MonotonicClock()))
    stolen = steal_share(before, cpu_times_fn())
    return judge_play(
        study,
        log,
        frame_cap_fps=frame_cap_fps,
        machine=machine_fn(),
        steal=stolen,
        multiplexer=multiplexer,
    )


def _round(x: float) -> float:
    return round(x, 3)


def _judge(check: TimingCheck) -> None:
    """Fill `problems` and `advice`."""
    load = check.machine.get("load_1m")
    cpus = check.machine.get("cpus_usable") or check.machine.get("cpus")
    busy = overloaded = False
    if load is not None and cpus:
        busy = load >= cpus
        overloaded = busy and load > OVERLOAD_PER_CPU * cpus
    if check.measured == "handed":
        late = check.late_p99_ms is not None and check.late_p99_ms > check.budget_ms
        if late:
            check.problems.append(
                f"chunks were handed out {check.late_p99_ms:.1f} ms late at p99 (allowed "
                f"{check.budget_ms:.1f} ms for a {check.gap_ms:.1f} ms gap)"
            )
    else:
        limit = check.tolerance.max_late_p99_ms
        late = check.shown_p99_ms is not None and check.shown_p99_ms > limit
        where = "at the glass" if check.measured == "painted" else "as flushed to the terminal"
        if late:
            check.problems.append(
                f"chunks reached the screen {check.shown_p99_ms:.1f} ms late at p99, {where} "
                f"(allowed {limit:g} ms for a {check.gap_ms:.1f} ms gap: trials like this are "
                "flagged)"
            )
        share_limit = check.tolerance.max_frame_shared_share
        if share_limit is not None and (check.shared_share or 0.0) > share_limit:
            check.problems.append(
                f"{check.shared_share:.0%} of chunks shared a frame (allowed {share_limit:.0%})"
            )
            late = True
    if overloaded:
        check.problems.append(f"load average {load:g} on {cpus} CPUs")
    elif busy:
        check.cautions.append(f"load average {load:g} on {cpus} CPUs")
    if check.steal_share is not None and check.steal_share > STEAL_WARN_SHARE:
        check.problems.append(f"{check.steal_share:.0%} of CPU time stolen by other guests")
    if not check.problems:
        return
    if busy or late:
        check.advice.append("close other programs (and wait for the load to settle)")
    if check.multiplexer:
        check.advice.append(f"run outside {check.multiplexer}")
    if check.steal_share is not None and check.steal_share > STEAL_WARN_SHARE:
        check.advice.append("use a machine that is not a shared virtual machine")
    check.advice.append(
        "raise the runner's priority (`uxlab run --nice 10` as root, or "
        "`sudo nice -n -10 uxlab run ...`)"
    )
    check.advice.append(
        "then check again with `uxlab check-timing STUDY`; trials shown too late are "
        "marked (fidelity_flag) whatever you choose"
    )
