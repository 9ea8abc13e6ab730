"""Laying a chain out in time: its steps on one timeline from the send, and flattened
into one `Recording` whose steps each begin with an empty *step marker* chunk."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from functools import partial
from typing import Any

from uxlab.kinds.chain.steps import Chain, ChainFormatError, StepKind
from uxlab.reading import as_ms
from uxlab.shaping import Profile, derive_seed, shape
from uxlab.streams.metrics import ttft_of
from uxlab.streams.recording import Chunk, End, Event, Header, Recording


@dataclass(frozen=True)
class ScheduledStep:
    """A step placed on the chain's timeline; times are ms from the send."""

    index: int
    """Position in the full chain as written (stable when the chain is cut)."""
    position: int
    """Position in this schedule (0-based): the step number a participant sees."""
    kind: StepKind
    label: str
    start_ms: float
    end_ms: float
    schedule: Recording | None = None
    """The shaped call, times from this step's start (calls and the answer)."""
    ttft_ms: float | None = None
    """First text of the call, ms from the step's start."""
    seed: int | None = None
    tool: dict[str, Any] | None = None

    @property
    def duration_ms(self) -> float:
        return self.end_ms - self.start_ms

    def to_dict(self) -> dict[str, Any]:
        """The step's timing as a flat JSON-able dict (no stream)."""
        return {
            "step": self.position,
            "index": self.index,
            "kind": self.kind,
            "label": self.label,
            "start_ms": round(self.start_ms, 3),
            "end_ms": round(self.end_ms, 3),
            "ttft_ms": None if self.ttft_ms is None else round(self.ttft_ms, 3),
            "replay_id": None if self.schedule is None else self.schedule.id,
            "tool": None if self.tool is None else self.tool.get("name"),
        }


@dataclass(frozen=True)
class ChainSchedule:
    """A chain laid out in time for one trial (see `build_chain_schedule`)."""

    chain_id: str
    prompt: str
    seed: int
    factor_levels: dict[str, Any]
    steps: tuple[ScheduledStep, ...]

    @property
    def e2e_ms(self) -> float:
        """When the final answer ends, ms from the send."""
        return self.steps[-1].end_ms

    @property
    def n_calls(self) -> int:
        return sum(s.kind != "pause" for s in self.steps)

    def timings(self) -> list[dict[str, Any]]:
        """One dict per step (for events and tests)."""
        return [s.to_dict() for s in self.steps]

    def to_recording(self) -> Recording:
        """The whole chain as one schedule for the one playback path (`Player`, the store).

        Calls' events are moved to their place on the timeline; every step begins with an
        empty *step marker* chunk (``extra = {"chain_step": {...}}``: position, kind, label,
        tool) that a chain view turns into the step list and that the player logs with its
        handed and flushed times; the answer's end is the end. The header's ``retime``
        names the chain, seed and levels, and ``chain`` holds the step timings.
        """
        events: list[Event] = []
        for step in self.steps:
            marker = StepStart(step.position, step.kind, step.label, step.tool)
            events.append(marker.chunk(step.start_ms))
            if step.schedule is not None:
                events.extend(_shifted(e, step.start_ms) for e in step.schedule.events)
        last = self.steps[-1]
        src_end = last.schedule.end if last.schedule is not None else None
        end = End(
            t_ms=round(self.e2e_ms, 3),
            finish_reason=src_end.finish_reason if src_end is not None else "stop",
            usage=src_end.usage if src_end is not None else None,
        )
        digest = hashlib.sha256(
            json.dumps([self.chain_id, self.seed, self.factor_levels], sort_keys=True).encode()
        ).hexdigest()[:8]
        header = Header(
            id=f"chain-{self.chain_id}~{digest}",
            source={"kind": "synthetic", "origin": f"uxlab.chain {self.chain_id}"},
            request={"messages": [{"role": "user", "content": self.prompt}]},
            text_source="synthetic",
            retime={
                "from": self.chain_id,
                "seed": self.seed,
                "profile": {"chain": dict(self.factor_levels)},
            },
            extra={"chain": {"id": self.chain_id, "steps": self.timings()}},
        )
        return Recording(header, events, end)


STEP_MARKER = "chain_step"
"""The `Chunk.extra` key of a step marker in a chain's flattened schedule."""


def _shifted(event: Event, offset_ms: float) -> Event:
    t_ms = None if event.t_ms is None else round(event.t_ms + offset_ms, 3)
    return dataclasses.replace(event, t_ms=t_ms)


@dataclass(frozen=True)
class StepStart:
    """What a step marker says: the step it begins (see `ChainSchedule.to_recording`).

    In the flattened schedule (a replay file like any) it travels as an empty chunk whose
    ``extra`` holds it under `STEP_MARKER`, so the player hands and logs it like any chunk.
    """

    position: int
    """The step's position in the schedule (0-based)."""
    kind: StepKind
    label: str
    tool: dict[str, Any] | None = None

    def chunk(self, t_ms: float) -> Chunk:
        """The marker chunk beginning this step at `t_ms` (ms from the send)."""
        marker: dict[str, Any] = {"position": self.position, "kind": self.kind, "label": self.label}
        if self.tool is not None:
            marker["tool"] = self.tool
        return Chunk(t_ms=round(t_ms, 3), text="", extra={STEP_MARKER: marker})


def step_marker(chunk: Chunk) -> StepStart | None:
    """The step a marker chunk begins (None for ordinary chunks)."""
    marker = chunk.extra.get(STEP_MARKER) if chunk.extra else None
    if marker is None:
        return None
    return StepStart(
        int(marker["position"]), marker["kind"], str(marker["label"]), marker.get("tool")
    )


def chain_steps(schedule: Recording) -> list[dict[str, Any]] | None:
    """The step timings of a chain's flattened schedule (None for a single stream)."""
    chain = schedule.header.extra.get("chain")
    return list(chain["steps"]) if isinstance(chain, dict) else None


def step_at_ms(steps: list[dict[str, Any]], t_ms: float) -> int:
    """The position of the step running at `t_ms` (from `chain_steps`)."""
    for step in steps:
        if t_ms < step["end_ms"]:
            return int(step["step"])
    return int(steps[-1]["step"])


def cut_steps(chain: Chain, n_steps: int | None) -> list[int]:
    """Indices of the steps kept for `n_steps` model calls (None: the whole chain)."""
    if n_steps is None:
        return list(range(len(chain.steps)))
    if int(n_steps) != n_steps or not 1 <= n_steps <= chain.n_calls:
        raise ChainFormatError(
            chain.path or chain.id,
            "n_steps",
            f"{n_steps!r}: chain {chain.id!r} has {chain.n_calls} model calls; "
            f"use 1..{chain.n_calls}",
        )
    kept: list[int] = []
    calls = 0
    for i, step in enumerate(chain.steps[:-1]):
        if step.kind == "call":
            calls += 1
            if calls >= n_steps:
                break
        kept.append(i)
    return [*kept, len(chain.steps) - 1]


def build_chain_schedule(
    chain: Chain,
    factor_levels: dict[str, Any] | None = None,
    seed: int = 0,
    base_profile: dict[str, Any] | None = None,
) -> ChainSchedule:
    """Lay `chain` on one timeline from the send, with the trial's factor levels and seed.

    `base_profile` is the study's ``[profile]`` table; each call's own ``profile`` is laid
    over it, then the factors (`CHAIN_FACTORS`, and any shaping factor for every call).
    Deterministic: the same arguments give the same schedule.
    """
    levels = dict(factor_levels or {})
    where = chain.path or chain.id
    n_steps = levels.pop("n_steps", None)
    pause_ms = levels.pop("pause_ms", None)
    call_ttft_ms = levels.pop("call_ttft_ms", None)
    if pause_ms is not None:
        pause_ms = as_ms(pause_ms, "pause_ms", error=partial(ChainFormatError, where))
    call_factors = dict(levels)
    if call_ttft_ms is not None:
        call_factors["ttft_ms"] = call_ttft_ms
    steps: list[ScheduledStep] = []
    t_ms = 0.0
    for position, index in enumerate(cut_steps(chain, n_steps)):
        step = chain.steps[index]
        if step.kind == "pause":
            duration_ms = step.pause_ms if pause_ms is None else pause_ms
            steps.append(
                ScheduledStep(
                    index, position, "pause", step.label, t_ms, t_ms + duration_ms, tool=step.tool
                )
            )
            t_ms += duration_ms
            continue
        if step.replay is None:  # `load_chain` gives every call and the answer its stream
            raise ChainFormatError(where, f"steps[{index}].replay", "a model call needs a stream")
        table = {**(base_profile or {}), **step.profile}
        profile = Profile.from_table(table, where=f"{where}: steps[{index}].profile")
        profile = profile.with_factors(call_factors) if call_factors else profile
        step_seed = derive_seed(seed, f"{chain.id}#{index}")
        schedule = shape(step.replay, profile, seed=step_seed)
        end = schedule.end
        last_ms = max((c.t_ms for c in schedule.chunks if c.t_ms is not None), default=0.0)
        duration_ms = end.t_ms if end is not None and end.t_ms is not None else last_ms
        steps.append(
            ScheduledStep(
                index,
                position,
                step.kind,
                step.label,
                t_ms,
                t_ms + duration_ms,
                schedule=schedule,
                ttft_ms=ttft_of(schedule),
                seed=step_seed,
            )
        )
        t_ms += duration_ms
    factors = dict(factor_levels or {})
    return ChainSchedule(chain.id, chain.prompt, seed, factors, tuple(steps))


def chain_stimulus(chain: Chain) -> Recording:
    """The whole chain as recorded (no factors) as one stream whose id is the chain's id:
    what a chain study's corpus holds, so the design assigns chains like recordings."""
    flat = build_chain_schedule(chain, {}, seed=0).to_recording()
    flat.header = dataclasses.replace(flat.header, id=chain.id, retime=None)
    return flat
