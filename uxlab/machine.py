"""The machine's state while a study runs: load, CPUs and CPU steal, read where readable.

Everything here is a best-effort reading: a value the system does not offer is None, never
a guess. Steal (time a virtual machine's CPU spent running other guests) comes from the
`cpu` line of `/proc/stat` (Linux); `steal_share` is the share of CPU time stolen between
two readings, `steal_share_since_boot` the share since the machine started.
"""

from __future__ import annotations

import os
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
    }
