"""Agent chains: a sequence of model calls and tool pauses laid on one timeline from the send.

A *chain* (one task an agent carries out) is a list of steps ending in the final answer:

- ``call``: a model call that streams text (planning, reading, writing, checking). It is
  an ordinary replay file (contract 1) shaped with its own profile;
- ``pause``: a tool or retrieval pause shown as agents show it, a status line such as
  "searching the web…" with a spinner, optionally with a tool call's JSON arguments;
- ``answer``: the final answer, a model call like the others, always the last step.

A chain file (``*.chain.json``, format ``uxlab.chain/1``) names its steps' replay files
relative to itself::

    {"format": "uxlab.chain/1", "id": "trip", "prompt": "...", "steps": [
      {"kind": "call", "label": "Planning", "replay": "trip-01-plan.jsonl"},
      {"kind": "pause", "label": "searching the web…", "ms": 1400,
       "tool": {"name": "web_search", "arguments": {"query": "..."}}},
      {"kind": "answer", "label": "Answer", "replay": "trip-09-answer.jsonl"}]}

`build_chain_schedule(chain, factor_levels, seed)` lays the steps end to end from the send
(time 0): each call is shaped by ``shape(replay, profile, derive_seed(seed, "<id>#<i>"))``
with ``i`` its position in the full chain, so dropping steps never changes the others.

Chain factors (`CHAIN_FACTORS`), any other factor goes to every call's profile:

- ``call_ttft_ms``: the TTFT of every model call (the shaping factor ``ttft_ms`` per call);
- ``pause_ms``: the duration of every tool pause;
- ``n_steps``: the number of model calls including the final answer. The chain is *cut*,
  never repeated: the steps before the n-th model call of the working part are kept (each
  kept call with the tool pauses that follow it), then the final answer. ``n_steps = 1`` is
  a plain chat answer; the largest value is the whole chain as written.

Playing a chain is playing one schedule: `ChainSchedule.to_recording()` flattens the steps
into one `Recording` (each step opened by an empty *step marker* chunk) that the one playback
path, `uxlab.player.Player`, plays to any sink on absolute deadlines and can abandon at any
point. `step_logs(schedule, log)` reads the per-step timings back from the player's log (when
each step began and ended, each call's TTFT as shown) and `abandon_step(schedule, log)` the
step given up in. No Textual here.

Questions after chosen steps: `HeldChainPlayer` plays the flattened schedule as consecutive
`Player`s, one per segment between holds, and *holds* after chosen steps while an
`ask(step)` coroutine runs (the participant answers). The clock of the next step restarts
when the last answer is given, as an agent UI that waits for its user would: every later
step is shifted by the time the hold took (`ChainHold.offset_ms`, real minus scheduled
time), while the schedule's own times, the timeout included, exclude the answering time.
Giving up works during a hold too. Its merged log reads back with `step_logs` like any.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from uxlab.clock import Clock
from uxlab.errors import UxlabError
from uxlab.player import ChunkTiming, PlaybackLog, Player, Sink
from uxlab.reading import MAX_JSON_FILE_BYTES, InputProblem, loads_json, read_bounded_text
from uxlab.shaping import Profile, derive_seed, shape
from uxlab.streams.recording import Chunk, End, Event, Header, Recording
from uxlab.streams.replay_file import ReplayFormatError, read_replay

CHAIN_FORMAT = "uxlab.chain/1"
CHAIN_SUFFIX = ".chain.json"
STEP_KINDS = ("call", "pause", "answer")
CHAIN_FACTORS: dict[str, str] = {
    "call_ttft_ms": "time to first token of every model call in the chain, ms",
    "pause_ms": "duration of every tool/retrieval pause in the chain, ms",
    "n_steps": "model calls including the final answer: the chain is cut after the first "
    "n_steps - 1 calls (with the pauses that follow them), then the final answer",
}

StepKind = Literal["call", "pause", "answer"]


class ChainFormatError(UxlabError, ValueError):
    """A chain file or chain factor that cannot be used: names the file, the key and the fix."""

    def __init__(self, where: str | Path, key: str | None, problem: str) -> None:
        self.where, self.key, self.problem = str(where), key, problem
        super().__init__(f"{where}: {key}: {problem}" if key else f"{where}: {problem}")


@dataclass(frozen=True)
class ChainStep:
    """One step of a chain as written: a model call, a tool pause, or the final answer."""

    kind: StepKind
    label: str
    replay: Recording | None = None
    """The call's stream (calls and the answer)."""
    profile: dict[str, Any] = field(default_factory=dict)
    """This call's own profile table, laid over the base profile."""
    pause_ms: float = 0.0
    """The pause's duration as written (pauses)."""
    tool: dict[str, Any] | None = None
    """A tool call shown during the pause: ``{"name": ..., "arguments": {...}}``."""


@dataclass(frozen=True)
class Chain:
    """A task as an agent runs it: the prompt and its steps, the last being the answer."""

    id: str
    prompt: str
    steps: tuple[ChainStep, ...]
    title: str = ""
    path: Path | None = None

    @property
    def n_calls(self) -> int:
        """Model calls including the final answer (the largest `n_steps`)."""
        return sum(s.kind != "pause" for s in self.steps)


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
            marker = {"position": step.position, "kind": step.kind, "label": step.label}
            if step.tool is not None:
                marker["tool"] = step.tool
            events.append(Chunk(t_ms=round(step.start_ms, 3), text="", extra={STEP_MARKER: marker}))
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


def step_marker(chunk: Chunk) -> dict[str, Any] | None:
    """The step a marker chunk starts (None for ordinary chunks)."""
    return chunk.extra.get(STEP_MARKER) if chunk.extra else None


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


# -- reading chain files ----------------------------------------------------------------------
def _number(value: Any, where: Path, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ChainFormatError(where, key, f"must be a number of ms, got {value!r}")
    if value < 0:
        raise ChainFormatError(where, key, f"must not be negative, got {value!r}")
    return float(value)


def _step(raw: Any, i: int, path: Path) -> ChainStep:
    key = f"steps[{i}]"
    if not isinstance(raw, dict):
        raise ChainFormatError(path, key, "must be an object with a 'kind'")
    kind = raw.get("kind")
    if kind not in STEP_KINDS:
        raise ChainFormatError(path, f"{key}.kind", f"{kind!r}: use one of {', '.join(STEP_KINDS)}")
    label = raw.get("label", "Answer" if kind == "answer" else "")
    if not isinstance(label, str) or not label:
        raise ChainFormatError(path, f"{key}.label", "must be a non-empty text")
    if kind == "pause":
        tool = raw.get("tool")
        if tool is not None and not (
            isinstance(tool, dict)
            and isinstance(tool.get("name"), str)
            and isinstance(tool.get("arguments", {}), dict)
        ):
            raise ChainFormatError(
                path, f"{key}.tool", 'use {"name": "...", "arguments": {...}} (a JSON object)'
            )
        return ChainStep(
            "pause", label, pause_ms=_number(raw.get("ms"), path, f"{key}.ms"), tool=tool
        )
    name = raw.get("replay")
    if not isinstance(name, str) or not name:
        raise ChainFormatError(path, f"{key}.replay", "must name a replay file next to the chain")
    replay_path = path.parent / name
    try:
        found = replay_path.is_file()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        found = False
    if not found:
        raise ChainFormatError(path, f"{key}.replay", f"{name!r} does not exist next to the chain")
    try:
        replay = read_replay(replay_path)
    except ReplayFormatError as exc:
        raise ChainFormatError(path, f"{key}.replay", str(exc)) from None
    profile = raw.get("profile", {})
    if not isinstance(profile, dict):
        raise ChainFormatError(path, f"{key}.profile", "must be a table of profile keys")
    try:
        Profile.from_table(profile, where=f"{path}: {key}.profile")
    except UxlabError as exc:
        raise ChainFormatError(path, f"{key}.profile", str(exc)) from None
    return ChainStep(kind, label, replay=replay, profile=dict(profile))


def load_chain(path: str | Path) -> Chain:
    """Read one ``*.chain.json`` file and the replay files it names."""
    path = Path(path)
    try:
        raw = loads_json(read_bounded_text(path, MAX_JSON_FILE_BYTES, "chain file"))
    except OSError as exc:
        raise ChainFormatError(path, None, f"cannot read: {exc.strerror}") from None
    except InputProblem as exc:
        raise ChainFormatError(path, exc.field, exc.problem) from None
    if not isinstance(raw, dict):
        raise ChainFormatError(path, None, "must be a JSON object")
    if raw.get("format") != CHAIN_FORMAT:
        raise ChainFormatError(path, "format", f"{raw.get('format')!r}: use {CHAIN_FORMAT!r}")
    for key in ("id", "prompt"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise ChainFormatError(path, key, "must be a non-empty text")
    steps_raw = raw.get("steps")
    if not isinstance(steps_raw, list) or not steps_raw:
        raise ChainFormatError(path, "steps", "must be a non-empty list of steps")
    steps = tuple(_step(s, i, path) for i, s in enumerate(steps_raw))
    answers = [i for i, s in enumerate(steps) if s.kind == "answer"]
    if answers != [len(steps) - 1]:
        raise ChainFormatError(
            path, "steps", "the last step, and only it, must be the final answer (kind 'answer')"
        )
    return Chain(raw["id"], raw["prompt"], steps, title=str(raw.get("title", "")), path=path)


def load_chains(folder: str | Path) -> dict[str, Chain]:
    """Every ``*.chain.json`` below `folder`, by chain id (sorted by path)."""
    folder = Path(folder)
    paths = sorted(folder.rglob(f"*{CHAIN_SUFFIX}")) if folder.is_dir() else [folder]
    if not paths:
        raise ChainFormatError(folder, None, f"no *{CHAIN_SUFFIX} files found")
    chains: dict[str, Chain] = {}
    for path in paths:
        chain = load_chain(path)
        if chain.id in chains:
            raise ChainFormatError(path, "id", f"{chain.id!r} is used twice in {folder}")
        chains[chain.id] = chain
    return chains


# -- laying a chain out in time ---------------------------------------------------------------
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


def _first_text_ms(schedule: Recording) -> float | None:
    for chunk in schedule.chunks:
        if chunk.text and chunk.t_ms is not None:
            return chunk.t_ms
    return None


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
        pause_ms = _number(pause_ms, Path(str(where)), "pause_ms")
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
                ttft_ms=_first_text_ms(schedule),
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


# -- reading a played chain back --------------------------------------------------------------
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
        """A call's first text as shown, ms after the step began (None: no text shown)."""
        shown = next((r.shown_ms for r in self.records if r.n_chars > 0), None)
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
                int(marker["position"]),
                str(marker["kind"]),
                str(marker["label"]),
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


# -- holding a chain for questions after chosen steps ------------------------------------------
@dataclass(frozen=True)
class ChainSegment:
    """The steps played between two holds, as a schedule on the chain's own timeline."""

    first_step: int
    start_ms: float
    """The first step's scheduled start, ms from the send (schedule time)."""
    schedule: Recording
    """The segment's events at their chain times; its end is the held step's end."""
    hold_after: int | None
    """The step after which the chain holds (None: the last segment, ending the chain)."""


def split_at_steps(schedule: Recording, after_steps: Sequence[int]) -> list[ChainSegment]:
    """Cut a chain's flattened schedule (`ChainSchedule.to_recording`) after `after_steps`.

    Steps that are not working steps of this schedule (its final answer, or beyond it) are
    ignored; without any, the one segment is the whole schedule.
    """
    steps = chain_steps(schedule)
    if steps is None:
        raise ChainFormatError(schedule.id, None, "not a chain schedule (no chain steps)")
    holds = sorted({int(s) for s in after_steps if 0 <= int(s) < len(steps) - 1})
    groups: list[list[Event]] = [[] for _ in range(len(holds) + 1)]
    position = 0
    for event in schedule.events:
        marker = step_marker(event) if isinstance(event, Chunk) else None
        if marker is not None:
            position = int(marker["position"])
        groups[sum(position > h for h in holds)].append(event)
    firsts = [0, *(h + 1 for h in holds)]
    out: list[ChainSegment] = []
    for k, (first, events) in enumerate(zip(firsts, groups, strict=True)):
        hold = holds[k] if k < len(holds) else None
        end = schedule.end
        if hold is not None:
            end = End(t_ms=float(steps[hold]["end_ms"]), finish_reason="hold")
        part = Recording(dataclasses.replace(schedule.header), events, end)
        out.append(ChainSegment(first, float(steps[first]["start_ms"]), part, hold))
    return out


@dataclass
class ChainHold:
    """One hold of a chain for questions; times are ms from the send (real time)."""

    step: int
    """The step (position) after which the chain held."""
    asked_ms: float
    """The held step was over and the questions were put."""
    resumed_ms: float | None = None
    """The last answer was given: the next step's clock restarted here (None if given up)."""
    offset_ms: float | None = None
    """Real minus scheduled time of every later step (the hold's time and any lateness)."""

    @property
    def held_ms(self) -> float | None:
        """How long the participant took over the questions."""
        return None if self.resumed_ms is None else self.resumed_ms - self.asked_ms

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "asked_ms": round(self.asked_ms, 3),
            "resumed_ms": None if self.resumed_ms is None else round(self.resumed_ms, 3),
            "held_ms": None if self.held_ms is None else round(self.held_ms, 3),
            "offset_ms": None if self.offset_ms is None else round(self.offset_ms, 3),
        }


def offset_at_ms(holds: Sequence[ChainHold], t_ms: float) -> float:
    """Real minus scheduled time at `t_ms` (ms from the send) given the holds before it."""
    offset = 0.0
    for hold in holds:
        if hold.resumed_ms is not None and hold.offset_ms is not None and hold.resumed_ms <= t_ms:
            offset = hold.offset_ms
    return offset


class _SegmentSink:
    """One segment's sink: chunk indices continue over segments; a hold is not an end."""

    def __init__(self, sink: Sink, base: int, final: bool) -> None:
        self.sink, self.base, self.final = sink, base, final

    def apply(self, index: int, chunk: Chunk) -> None:
        self.sink.apply(index + self.base, chunk)

    def finish(self, end: Any, error: Any) -> None:
        if self.final or error is not None:
            self.sink.finish(end, error)

    def cancel(self) -> None:
        self.sink.cancel()

    def __getattr__(self, name: str) -> Any:  # paint reporting, with the indices shifted
        inner = getattr(self.sink, name)
        base = self.base
        if name == "paint_times_ms":
            return lambda: {k - base: v for k, v in inner().items() if k >= base}
        if name == "wait_painted":
            return lambda index, timeout_ms: inner(index + base, timeout_ms)
        return inner


AskStep = Callable[[int], Awaitable[None]]


class HeldChainPlayer:
    """Plays a chain's flattened schedule, holding after `after_steps` while `ask(step)` runs.

    The same surface as `uxlab.player.Player` (`play`, `cancel`, `log`): one merged log with
    times from the send in real time (records' `scheduled_ms` shifted by the holds), and
    `holds` saying when each hold began and ended. `stop_at_ms` (the trial timeout) is on the
    chain's own timeline: answering time does not count.
    """

    def __init__(
        self,
        schedule: Recording,
        sink: Sink,
        clock: Clock,
        after_steps: Sequence[int],
        ask: AskStep,
        paint_timeout_ms: float = 500.0,
    ) -> None:
        self.schedule = schedule
        self.sink = sink
        self.clock = clock
        self.ask = ask
        self.paint_timeout_ms = paint_timeout_ms
        self.segments = split_at_steps(schedule, after_steps)
        self.holds: list[ChainHold] = []
        self.log: PlaybackLog | None = None
        self._player: Player | None = None
        self._ask_task: asyncio.Future[Any] | None = None
        self._cancelled_abs_ms: float | None = None
        self._done = False

    @property
    def holding(self) -> bool:
        """The chain is held for questions now."""
        return self._ask_task is not None

    def cancel(self) -> None:
        """Give up now, while a step plays or during a hold."""
        if self._cancelled_abs_ms is not None or self._done:
            return
        self._cancelled_abs_ms = self.clock.now_ms()
        if self._player is not None:
            self._player.cancel()
        elif self.log is not None:
            self.sink.cancel()
            if self._ask_task is not None:
                self._ask_task.cancel()

    async def play(
        self, t0_ms: float | None = None, stop_at_ms: float | None = None
    ) -> PlaybackLog:
        """Play every segment, holding between them (see the class docstring)."""
        if self.log is not None:
            raise UxlabError(f"recording {self.schedule.id!r}: a player plays only once")
        clock = self.clock
        t0 = clock.now_ms() if t0_ms is None else float(t0_ms)
        end = self.schedule.end
        log = PlaybackLog(self.schedule.id, t0, type(clock).__name__)
        log.scheduled_end_ms = end.t_ms if end is not None else None
        self.log = log
        if self._cancelled_abs_ms is not None:
            log.cancelled_at_ms = 0.0
            self._done = True
            return log
        seg_t0 = t0  # the absolute instant of schedule time 0 for the running segment
        try:
            for k, seg in enumerate(self.segments):
                offset = seg_t0 - t0
                sink = _SegmentSink(self.sink, len(log.records), seg.hold_after is None)
                player = Player(seg.schedule, sink, clock, self.paint_timeout_ms)
                self._player = player
                if self._cancelled_abs_ms is not None:
                    player.cancel()
                part = await player.play(seg_t0, stop_at_ms=stop_at_ms)
                self._player = None
                base = len(log.records)
                log.records.extend(_shifted_timing(r, offset, base) for r in part.records)
                if end is not None and end.t_ms is not None:
                    log.scheduled_end_ms = end.t_ms + offset
                if part.error_at_ms is not None:
                    log.error_at_ms, log.error = part.error_at_ms + offset, part.error
                    break
                if part.cancelled_at_ms is not None:
                    log.cancelled_at_ms = part.cancelled_at_ms + offset
                    break
                if seg.hold_after is None:
                    if part.finished_ms is not None:
                        log.finished_ms = part.finished_ms + offset
                    break
                hold = ChainHold(seg.hold_after, clock.now_ms() - t0)
                self.holds.append(hold)
                task = asyncio.ensure_future(self.ask(seg.hold_after))
                self._ask_task = task
                try:
                    await asyncio.wait({task})
                finally:
                    if not task.done():
                        task.cancel()
                    self._ask_task = None
                if self._cancelled_abs_ms is not None or task.cancelled():
                    at_ms = self._cancelled_abs_ms
                    log.cancelled_at_ms = (clock.now_ms() if at_ms is None else at_ms) - t0
                    break
                error = task.exception()
                if error is not None:
                    raise error
                now = clock.now_ms()
                seg_t0 = now - self.segments[k + 1].start_ms  # the next step starts now
                hold.resumed_ms, hold.offset_ms = now - t0, seg_t0 - t0
        finally:
            self._done = True
            self._player = None
        return log


def _shifted_timing(r: ChunkTiming, offset_ms: float, base: int) -> ChunkTiming:
    def move(t: float | None) -> float | None:
        return None if t is None else t + offset_ms

    return dataclasses.replace(
        r,
        index=r.index + base,
        scheduled_ms=r.scheduled_ms + offset_ms,
        handed_ms=r.handed_ms + offset_ms,
        queued_ms=move(r.queued_ms),
        flushed_ms=move(r.flushed_ms),
    )
