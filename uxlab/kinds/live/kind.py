"""The live kind: its stimuli (`[stimuli] live`), schedule, request and checks."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import trial_table_spec as spec
from uxlab.clock import Clock
from uxlab.kinds.base import (
    KindRun,
    PlannedTrial,
    PlayedTrial,
    Problems,
    Shaper,
    StimuliReader,
    TrialKind,
)
from uxlab.kinds.checks import ChunkEvents, StoredTrial, check_indexes, differ, number, show
from uxlab.kinds.live.stimuli import LiveStimuli, live_corpus, parse_live
from uxlab.live.clients import DEFAULT_KEY_ENV
from uxlab.live.live_schedule import TEMPLATE_UNITS, LiveSchedule, live_profile_problem, unit_times
from uxlab.player import Schedule
from uxlab.shaping import Profile
from uxlab.streams.corpus import Corpus
from uxlab.streams.recording import Recording

if TYPE_CHECKING:  # imported when a live trial begins: httpx is not every command's
    from uxlab.live.live_request import LiveRun

LIVE_TIMES = ("due_ms", "arrival_ms", "scheduled_ms")
"""What a live trial's chunk event stores of its timing (`LiveRun.add_to_record`)."""


class LiveKind(TrialKind):
    """A live model's answer per trial (see the package)."""

    name = "live"
    label = "single"
    noun = "live"
    view = "stream"
    keys = ("live",)
    descriptions: ClassVar[dict[str, str]] = {
        "live": "a live model answers each trial instead of a recording: a table of api, "
        "url, model, prompts and its other keys ([stimuli.live])",
    }
    columns = spec.LIVE
    judged = False
    learnt = True
    reads_prompt = False
    serve_problem = (
        "its trials are a live model's answers ([stimuli.live]), not recordings: there "
        "is nothing recorded to serve; run it with `uxlab run` (it can use a running "
        "`uxlab serve CORPUS` as its model)"
    )
    simulate_problem = (
        "its trials send prompts to a live model ([stimuli.live]); simulated participants "
        "play on a virtual (or, with --through-ui, sped-up) clock, so real requests would be "
        "timed on simulated time. Simulate a copy of the study over a recorded corpus instead "
        "(the same [profile] and [factors], with [stimuli] corpus = a folder of recordings)"
    )
    plan_problem = (
        "a live study plays a model's real answers, whose timing the planner cannot know in "
        "advance; plan with a study file on a corpus"
    )

    def __init__(self, stimuli: LiveStimuli) -> None:
        self.stimuli = stimuli

    @classmethod
    def chooses(cls, table: dict[str, Any]) -> bool:
        return "live" in table

    @classmethod
    def refusal(cls, key: str) -> str | None:
        return "not used with live = {...} (remove one)" if key in ("corpus", "files") else None

    @classmethod
    def elsewhere(cls, key: str, label: str) -> str:
        return f'a live model answers single-stream trials: not with kind = "{label}"'

    @classmethod
    def read(cls, r: StimuliReader, table: dict[str, Any]) -> tuple[TrialKind, Path, Corpus]:
        live = parse_live(table["live"], r.err)
        return cls(live), r.path.parent, live_corpus(live, r.path.parent)

    def check_study(self, r: StimuliReader, base: Profile, levels: dict[str, float]) -> None:
        """A live study's profile must draw its timing (a live stream has none to keep)."""
        problem = live_profile_problem(base.with_factors(levels))
        if problem is not None:
            raise r.err("[profile]", f"{problem} (a live study)")

    def stimulus_files(self, corpus: Corpus) -> dict[Path, set[str]]:
        return {}  # the answers come from the model: no file to fingerprint

    def describe(self, n_recordings: int, assignment: str, prompt: str | None) -> str:
        e, prompts = self.stimuli.endpoint, self.stimuli.prompts
        asks = "the participant types" if prompts is None else f"{len(prompts)} prompts"
        return f"live {e.api}:{e.model} {e.url}; {asks}; {assignment}"

    @property
    def prompt_typed(self) -> bool:
        return self.stimuli.prompts is None

    @property
    def key_variables(self) -> tuple[str, ...]:
        e = self.stimuli.endpoint
        return (e.api_key_env or DEFAULT_KEY_ENV[e.api],)

    def schedule(
        self, trial: PlannedTrial, source: Recording, base: Profile, shaper: Shaper
    ) -> Schedule:
        return LiveSchedule(self.trial_profile(base, trial.levels), trial.seed, source.header)

    def timed_schedule(
        self, trial: PlannedTrial, source: Recording, base: Profile, shaper: Shaper
    ) -> Recording:
        """The prompt's placeholder shaped (150 tokens): a stand-in for planning."""
        return shaper(source, self.trial_profile(base, trial.levels), trial.seed)

    def fingerprint(self, schedule: Schedule) -> str:
        """Of what uxlab draws only (its text comes from the model): profile, seed, source."""
        assert isinstance(schedule, LiveSchedule)  # what `schedule` returns
        text = json.dumps(schedule.header.retime, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def begin(self, schedule: Schedule, clock: Clock) -> KindRun:
        from uxlab.live.live_request import LiveRun

        assert isinstance(schedule, LiveSchedule)
        return LiveKindRun(schedule, clock, LiveRun(schedule, self.stimuli.endpoint, clock))

    def check_chunks(
        self,
        problems: Problems,
        schedule: Schedule,
        stored: StoredTrial,
        chunks: ChunkEvents,
        timeout_ms: float | None,
    ) -> None:
        """Each chunk was shown at max(due, arrival, the previous chunk), and without a
        re-chunking profile each chunk's due time is the rebuilt one. The scheduled end is
        when the model's answer ended: not rebuilt."""
        assert isinstance(schedule, LiveSchedule)
        by_index = check_indexes(problems, chunks, None)
        due_ms = None
        if by_index and schedule.profile.chunk is None:  # one live chunk, one unit
            n_units = max(max(by_index) + 1, TEMPLATE_UNITS)
            due_ms = unit_times(schedule.profile, schedule.seed, n_units).due_ms
        for k, (_t, data) in sorted(by_index.items()):
            due, arrival, shown = (number(data.get(name)) for name in LIVE_TIMES)
            if due is None or arrival is None or shown is None:
                problems.append(f"chunk {k}: no due_ms, arrival_ms or scheduled_ms stored (live)")
                continue
            before = number(by_index.get(k - 1, (None, {}))[1].get("scheduled_ms"))
            want = max(due, arrival, before or 0.0)
            if differ(shown, want):
                problems.append(
                    f"chunk {k} scheduled_ms: stored {show(shown)}, rebuilt {show(want)} "
                    "(the latest of its due and arrival times and the chunk before)"
                )
            if due_ms is not None:
                rebuilt = round(max(float(due_ms[k]), 0.0), 3)
                if differ(due, rebuilt):
                    problems.append(
                        f"chunk {k} due_ms: stored {show(due)}, rebuilt {show(rebuilt)}"
                    )


class LiveKindRun(KindRun):
    """One live trial: the request goes out at the send, before any repaint, and is stopped
    or awaited after the play; its violations, arrivals and request go into the record."""

    def __init__(self, schedule: LiveSchedule, clock: Clock, request: LiveRun) -> None:
        super().__init__(schedule, clock)
        self.request = request

    def send(self, prompt: str, t0_ms: float) -> None:
        self.request.start(prompt, t0_ms)

    async def finish(self) -> None:
        await self.request.finish()

    def add_to_record(
        self, timings: dict[str, Any], events: list[dict[str, Any]], played: PlayedTrial
    ) -> None:
        """Violations, arrivals, due/arrival per chunk, the request."""
        self.request.add_to_record(timings, events)
