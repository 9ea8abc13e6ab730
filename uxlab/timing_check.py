"""The pre-session timing check: can this machine keep the study's shortest gaps right now?

`check_timing(study)` plays a short test schedule (chunks at the study's shortest typical
gap, `uxlab.session.shortest_gap_ms`) off-screen through the real player on the session's
clock, measures when each chunk was handed out, and reads the machine's load and CPU
steal meanwhile. Off-screen means the event loop's punctuality only: painting adds up to
one frame at the frame cap, so the hand-off must leave that much of the study's tolerance
(`[timing] max_late_p99_ms`) free. `uxlab run` runs it before the first trial and shows
what it finds to the researcher (never the participant); `uxlab check-timing STUDY` runs
it alone, before recruiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from uxlab.clock import Clock, MonotonicClock
from uxlab.fidelity import Tolerance, default_max_late_p99_ms, trial_fidelity
from uxlab.machine import CpuTimes, cpu_times, machine_state, steal_share
from uxlab.player import HeadlessSink, PlaybackLog, Player
from uxlab.streams.recording import Chunk, End, Header, Recording

TEST_DURATION_MS = 1500.0
"""How long the test schedule plays (ms)."""
FALLBACK_GAP_MS = 30.0
"""The test gap for a study none of whose conditions streams two chunks (ms)."""
STEAL_WARN_SHARE = 0.05
"""CPU steal above this share during the test is a problem."""
OVERLOAD_PER_CPU = 2.0
"""A load average above this many times the CPUs is a problem even when the short test
kept time (the test is short; such load comes and goes); above 1x it is a caution."""


def check_schedule(gap_ms: float, duration_ms: float = TEST_DURATION_MS) -> Recording:
    """Chunks of one character every `gap_ms`, from 20 ms to `duration_ms`."""
    n = max(10, min(2000, int((duration_ms - 20.0) / gap_ms)))
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
    late_p99_ms: float | None
    late_max_ms: float | None
    machine: dict[str, Any]
    steal_share: float | None
    """CPU steal during the test (None where /proc/stat is not readable)."""
    multiplexer: str | None = None
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
        late = "not measured" if self.late_p99_ms is None else f"{self.late_p99_ms:.1f} ms"
        load = self.machine.get("load_1m")
        cpus = self.machine.get("cpus_usable") or self.machine.get("cpus")
        text = (
            f"timing check: {self.n_chunks} chunks every {self.gap_ms:.1f} ms off-screen, "
            f"hand-off lateness p99 {late} (allowed {self.budget_ms:.1f} ms: tolerance "
            f"{self.tolerance.max_late_p99_ms:g} ms"
        )
        text += f" less one frame of {self.frame_ms:.1f} ms)" if self.frame_ms else ")"
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
            "late_p50_ms": self.late_p50_ms,
            "late_p99_ms": self.late_p99_ms,
            "late_max_ms": self.late_max_ms,
            "allowed_p99_ms": round(self.budget_ms, 3),
            "steal_share": self.steal_share,
            "ok": self.ok,
            "problems": self.problems + self.cautions,
        }


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
    """Play the test schedule now and judge it against the study's tolerance.

    Runs its own event loop (call it before the app starts); `clock` defaults to the
    session's real clock.
    """
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
    before = cpu_times_fn()
    log = asyncio.run(play_test(check_schedule(gap, duration_ms), clock or MonotonicClock()))
    stolen = steal_share(before, cpu_times_fn())
    fid = trial_fidelity(log.records)
    check = TimingCheck(
        gap_ms=round(gap, 3),
        gap_source=gap_source,
        tolerance=tolerance,
        frame_ms=1000.0 / frame_cap_fps if frame_cap_fps else None,
        n_chunks=int(fid["n_chunks"] or 0),
        late_p50_ms=fid["late_handed_p50_ms"],
        late_p99_ms=fid["late_handed_p99_ms"],
        late_max_ms=fid["late_handed_max_ms"],
        machine=machine_fn(),
        steal_share=stolen,
        multiplexer=multiplexer,
    )
    _judge(check)
    return check


def _judge(check: TimingCheck) -> None:
    """Fill `problems` and `advice`."""
    load = check.machine.get("load_1m")
    cpus = check.machine.get("cpus_usable") or check.machine.get("cpus")
    busy = overloaded = False
    if load is not None and cpus:
        busy = load >= cpus
        overloaded = busy and load > OVERLOAD_PER_CPU * cpus
    late = check.late_p99_ms is not None and check.late_p99_ms > check.budget_ms
    if late:
        check.problems.append(
            f"chunks were handed out {check.late_p99_ms:.1f} ms late at p99 (allowed "
            f"{check.budget_ms:.1f} ms for a {check.gap_ms:.1f} ms gap)"
        )
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
