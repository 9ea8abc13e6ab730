"""The machine's state while a study runs: load, CPUs, CPU steal and the process's niceness.

Readings are best effort: a value the system does not offer is None, never a guess. Steal
(time a virtual machine's CPU spent running other guests) comes from the `cpu` line of
`/proc/stat` (Linux); `steal_share` is the share of CPU time stolen between two readings,
`steal_share_since_boot` the share since the machine started. `raise_priority(by)` is the
one write: it lowers the process's niceness (`uxlab run --nice N`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROC_STAT = Path("/proc/stat")


@dataclass(frozen=True)
class CpuTimes:
    """Cumulative CPU time of all CPUs (clock ticks): the steal part and the total."""

    steal: int
    total: int


def load_1m() -> float | None:
    """The 1-minute load average (None where the system does not offer it)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def cpu_times(proc_stat: Path = PROC_STAT) -> CpuTimes | None:
    """The `cpu` line of /proc/stat (None where it cannot be read or has no steal field)."""
    try:
        with open(proc_stat, encoding="ascii") as fh:
            first = fh.readline().split()
    except OSError:
        return None
    if len(first) < 9 or first[0] != "cpu":
        return None
    try:
        ticks = [int(x) for x in first[1:]]
    except ValueError:
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice]; guest time is
    # already counted in user and nice.
    return CpuTimes(steal=ticks[7], total=sum(ticks[:8]))


def steal_share(before: CpuTimes | None, after: CpuTimes | None) -> float | None:
    """Share of CPU time stolen between two readings (None when unknown or no time passed)."""
    if before is None or after is None or after.total <= before.total:
        return None
    return round((after.steal - before.steal) / (after.total - before.total), 4)


def machine_state(proc_stat: Path = PROC_STAT) -> dict[str, Any]:
    """Load averages, CPU count (and how many this process may use), steal since boot."""
    try:
        loads: list[float | None] = [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        loads = [None, None, None]
    try:
        usable: int | None = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = None
    times = cpu_times(proc_stat)
    return {
        "load_1m": loads[0],
        "load_5m": loads[1],
        "load_15m": loads[2],
        "cpus": os.cpu_count(),
        "cpus_usable": usable,
        "steal_share_since_boot": steal_share(CpuTimes(0, 0), times),
        "nice": niceness(),
    }


def niceness() -> int | None:
    """This process's scheduling niceness (-20 most favoured .. 19; None where unknown)."""
    try:
        return os.getpriority(os.PRIO_PROCESS, 0)
    except (AttributeError, OSError):
        return None


def raise_priority(by: int, setpriority: Callable[[int, int, int], None] | None = None) -> int:
    """Lower this process's niceness by `by` (a higher scheduling priority); returns the new
    niceness. Needs privileges (root, or CAP_SYS_NICE): PermissionError otherwise."""
    if by < 0:
        raise ValueError(f"raise the priority by 0 or more, got {by}")
    current = niceness()
    if current is None:
        raise PermissionError("this system does not offer process priorities")
    target = max(-20, current - by)
    (setpriority or os.setpriority)(os.PRIO_PROCESS, 0, target)
    return target
