"""What the store hands back: sessions as the runner sees them, and the state names."""

from __future__ import annotations

from dataclasses import dataclass, field

from uxlab.outcomes import FINISHED
from uxlab.study.design import Trial
from uxlab.study.progress import TrialCounts
from uxlab.study.spec import Study

OUTCOMES = tuple(FINISHED)
LIVE_STATES = ("created", "consented", "running")
"""Session states that hold a group slot while the session was seen recently."""
TRANSITIONS: dict[str, tuple[str, ...]] = {
    "created": ("consented", "interrupted", "withdrawn"),
    "consented": ("running", "interrupted", "withdrawn"),
    "running": ("completed", "interrupted", "withdrawn"),
    "interrupted": ("consented", "running", "withdrawn"),
    "completed": ("withdrawn",),
}
TIMING_COLUMNS = ("t_abandon_ms", "shown_first_ms", "shown_last_ms", "scheduled_end_ms")
END_INDEX = -1  # trial_index of end-of-study responses


@dataclass
class SessionRecord:
    """A participant's run through a study, as the runner sees it."""

    id: str
    participant: str
    participant_number: int
    study: Study = field(repr=False)
    seed: int
    trials: list[Trial] = field(repr=False)
    next_index: int
    """The first trial not yet begun (the runner continues here)."""
    state: str
    resumed: bool = False
    resumed_count: int = 0
    interrupted: list[int] = field(default_factory=list)
    """Trials found in flight when this session was resumed (now stored as `interrupted`)."""
    group: str | None = None
    pilot: bool = False
    simulated: bool = False
    reruns: dict[int, tuple[int, str]] = field(default_factory=dict)
    """Re-runs queued at the end (`Sessions.requeue_trial`): their trial_index -> (the index
    of the attempt they replace, why). `trials` holds them after the planned list."""
    n_planned: int | None = None
    """The planned list's length (`trials` beyond it are re-runs); None: all of `trials`."""


@dataclass(frozen=True)
class InUse:
    """A live process holding a session's lease (`uxlab.store.lease`): where, since when."""

    host: str
    pid: int
    held_s: float
    """Seconds since the holder took the lease (started or resumed the session)."""
    other_host: bool = False
    """Held on another host: its process cannot be checked, so the lease counts as held
    until the session was idle for the study's `stale_after_min`."""
    idle_s: float = 0.0
    """(Another host) seconds since the session's last activity."""
    stale_after_s: float = 0.0
    """(Another host) idle seconds after which the lease counts as given up."""


@dataclass(frozen=True)
class UnfinishedSession:
    """A session not finished, as the first screen of `uxlab run` lists it: resumable,
    unless `in_use` says a live process holds it now."""

    session_id: str
    participant: str
    state: str
    """`interrupted`: paused by a quit; `running` (or earlier): the program ended without
    a quit, or is still running elsewhere (then `in_use` says where)."""
    n_done: int
    """Main trials done, counted as the participant's screen counts them on resuming
    (`uxlab.study.progress`: a cut-off trial shown again later is not done)."""
    n_trials: int
    """Main trials as planned (the participant's "of N"; practice, checks, re-runs apart)."""
    updated_at: str
    """Last activity (ISO 8601, UTC)."""
    last_seen_s: float
    """Last activity (wall-clock seconds)."""
    pilot: bool
    in_use: InUse | None = None
    """The live process holding the session now (resuming it here would be refused), or
    None: no lease, the holder is gone (a stale lease, taken over), or it is this process."""
    counts: TrialCounts | None = None
    """Practice, attention checks and re-runs beside the main trials (the list's second line)."""
