"""Reading a played chain back: per-step timings from the player's log."""

from __future__ import annotations

from dataclasses import dataclass, field

from uxlab.kinds.chain.schedule import step_marker
from uxlab.player import ChunkTiming, PlaybackLog
from uxlab.streams.metrics import is_output
from uxlab.streams.recording import Recording


@dataclass
class StepLog:
    """One step of a chain as played, read from the player's log; ms from the send."""

    step: int
    """The step's position in the schedule (as in `abandon_step`)."""
    kind: str
    label: str
    scheduled_start_ms: float
    started_ms: float
    """When its step marker was handed to the sink: the step began on screen."""
    ended_ms: float | None
    """When the next step began (or the chain finished); None for a step given up in, cut
    by an error, or still running."""
    records: list[ChunkTiming] = field(default_factory=list)
    """The step's own chunks (the marker left out)."""

    @property
    def ttft_ms(self) -> float | None:
        """A call's TTFT as shown: its first output chunk (`uxlab.streams.metrics.is_output`),
        ms after the step began (None: no output shown)."""
        shown = next((r.shown_ms for r in self.records if is_output(r.channel, r.n_chars)), None)
        return None if shown is None else shown - self.started_ms


def step_logs(schedule: Recording, log: PlaybackLog) -> list[StepLog]:
    """Per-step timings of a chain's flattened schedule from the log of its play.

    A log record's `index` is the chunk's position in `schedule.chunks` (the player hands
    chunks in order; `HeldChainPlayer` keeps that numbering over its segments), so a step
    begins at its marker's record, whatever empty chunks the calls themselves hold.
    """
    chunks = schedule.chunks
    out: list[StepLog] = []
    for record in log.records:
        marker = step_marker(chunks[record.index]) if record.index < len(chunks) else None
        if marker is None:
            if out:
                out[-1].records.append(record)
            continue
        if out:
            out[-1].ended_ms = record.handed_ms
        out.append(
            StepLog(
                marker.position,
                marker.kind,
                marker.label,
                record.scheduled_ms,
                record.handed_ms,
                None,
            )
        )
    if out and log.finished_ms is not None:
        out[-1].ended_ms = log.finished_ms
    return out


def abandon_step(schedule: Recording, log: PlaybackLog) -> int | None:
    """The step running when the play was given up or stopped (None when it was not)."""
    if log.cancelled_at_ms is None:
        return None
    begun = step_logs(schedule, log)
    return begun[-1].step if begun else None
