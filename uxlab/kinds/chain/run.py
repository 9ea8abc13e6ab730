"""One chain trial while it plays (`ChainRun`): held after the asked steps, and what it adds
to the stored trial (per-step timings, the end of the answer, the step given up in)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from uxlab.clock import Clock
from uxlab.kinds.base import AskAfter, Hold, KindRun, PlayedTrial
from uxlab.kinds.chain.held import ChainHold, HeldChainPlayer, offset_at_ms
from uxlab.kinds.chain.played import step_logs
from uxlab.kinds.chain.schedule import chain_steps, step_at_ms
from uxlab.outcomes import EventKind
from uxlab.phases import Phase
from uxlab.player import Playback, Player, Sink
from uxlab.streams.recording import Chunk, Recording


class ChainRun(KindRun):
    """A chain trial: `player` holds after the asked steps while `ask(step)` runs (without
    them it plays through); `add_to_record` adds the chain's timings and step events."""

    schedule: Recording

    def __init__(self, schedule: Recording, clock: Clock) -> None:
        super().__init__(schedule, clock)
        steps = chain_steps(schedule)
        if steps is None:
            raise ValueError(f"schedule {schedule.id!r} is not a chain's (no chain steps)")
        self.steps = steps
        self._held: HeldChainPlayer | None = None

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    @property
    def holds(self) -> Sequence[Hold]:
        return self.chain_holds

    @property
    def chain_holds(self) -> list[ChainHold]:
        return list(self._held.holds) if self._held is not None else []

    def player(
        self,
        sink: Sink,
        on_chunk: Callable[[Chunk], None],
        asks: Sequence[int] = (),
        ask: AskAfter | None = None,
    ) -> Playback:
        """A `HeldChainPlayer` when there are steps to ask after (the next step's clock
        restarts at the last answer), else the one `Player`."""
        if asks and ask is not None:
            self._held = HeldChainPlayer(
                self.schedule, sink, self.clock, asks, ask, on_chunk=on_chunk
            )
            return self._held
        return Player(self.schedule, sink, self.clock, on_chunk=on_chunk)

    def add_to_record(
        self, timings: dict[str, Any], events: list[dict[str, Any]], played: PlayedTrial
    ) -> None:
        """Add `e2e_ms` (when the answer ended, measured), `abandon_step` and one `step`
        event per step begun: `t_ms` when its marker was handed out, with the scheduled
        `start_ms`, `end_ms`, per-call `ttft_ms`, `step_kind`, `label` and `tool`."""
        log, steps = played.log, self.steps
        handed: dict[int, float] = {}
        if log is not None:  # markers handed out
            handed = {s.step: s.started_ms for s in step_logs(self.schedule, log)}
        t_abandon = timings["t_abandon_ms"]
        timings["e2e_ms"] = log.finished_ms if log is not None else None
        holds = self.chain_holds
        if t_abandon is None:
            timings["abandon_step"] = None
        elif played.abandoned_while == Phase.ASKING and holds:
            timings["abandon_step"] = holds[-1].step  # gave up at a hold: the step just done
        else:
            t_chain = t_abandon - offset_at_ms(holds, t_abandon)
            timings["abandon_step"] = step_at_ms(steps, t_chain)
        if played.asks_after_steps:  # mid-chain questions: the time they held the chain
            held = [h.held_ms if h.held_ms is not None else (t_abandon or 0.0) - h.asked_ms
                    for h in holds]  # fmt: skip
            timings["paused_ms"] = sum(held)  # a hold given up in counts up to the give-up
            offset = offset_at_ms(holds, float("inf"))
            if timings.get("scheduled_end_ms") is not None:  # the end moved with the holds
                timings["scheduled_end_ms"] += offset
            for h in holds:
                events.append({"kind": EventKind.HOLD, "t_ms": h.asked_ms, **h.to_dict()})
        for s in steps:
            if s["step"] not in handed:
                continue
            event = {
                "kind": EventKind.STEP,
                "t_ms": handed[s["step"]],
                **{("step_kind" if k == "kind" else k): v for k, v in s.items()},
            }
            if holds:  # the step as shifted by the holds before it (real time from the send)
                shift = offset_at_ms(holds, handed[s["step"]])
                event.update(
                    offset_ms=round(shift, 3),
                    shifted_start_ms=round(s["start_ms"] + shift, 3),
                    shifted_end_ms=round(s["end_ms"] + shift, 3),
                )
            events.append(event)
        events.sort(key=lambda e: float("inf") if e["t_ms"] is None else e["t_ms"])
