"""What every trial kind says about itself (`TrialKind`), and what it keeps of one trial
while the trial plays (`KindRun`).

A study's trials are all of one kind, chosen by its `[stimuli]` table. A kind is asked for
every part of a trial's life:

- the study file: whether a `[stimuli]` table chooses it (`label`, `chooses`), its own keys
  there (`keys`) and its own sections (`sections`), reading its stimuli (`read`: the kind
  loaded with them, and the corpus the design assigns from), its own factors (`factors`,
  `check_level`, `profile_levels`), checks on the whole study (`check_study`,
  `read_sections`), and the files its stimuli were read from (`stimulus_files`);
- the schedule a trial plays (`schedule`), its fingerprint (`fingerprint`), and what a
  planner can know of it in advance (`timed_schedule`, `stream_ms`);
- the play (`begin` -> a `KindRun`): the send, the player, the end of the play and what
  the kind adds to the trial's stored timings and events;
- verification: what a stored trial's chunk events must agree with (`check_chunks`);
- the trial table: its own columns (`columns`, a group of contract 2);
- the terminal view its trials play in (`view`, a name `uxlab.tui.views` registers), and
  what other commands say of it (`serve_problem`, `simulate_problem`, `plan_problem`,
  `describe`).

Nothing here imports the study model: a kind sees a planned trial, a study-file reader and
the study's questions through the small protocols below, so `uxlab.study` can read a study
file by asking its kind.
"""

from __future__ import annotations

import dataclasses
import hashlib
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

from trial_table_spec import Column
from uxlab.clock import Clock
from uxlab.errors import UxlabError
from uxlab.kinds.checks import ChunkEvents, StoredTrial
from uxlab.phases import Phase
from uxlab.player import Playback, PlaybackLog, Player, Schedule, Sink
from uxlab.shaping import Profile
from uxlab.streams.corpus import Corpus
from uxlab.streams.recording import Chunk, Recording
from uxlab.streams.replay_file import dumps_recording

Shaper = Callable[[Recording, Any, int], Recording]
"""(recording, profile, seed) -> the shaped schedule (`uxlab.shaping.shape`, or a test's)."""
AskAfter = Callable[[int], Awaitable[None]]
"""Puts the questions asked after a step and returns once they are answered."""
Problems = list[str]
"""`field: stored X, rebuilt Y` lines a verification appends to."""


def schedule_end_ms(schedule: Recording) -> float:
    """When the schedule's stream ends, ms from the send."""
    if schedule.end is not None and schedule.end.t_ms is not None:
        return float(schedule.end.t_ms)
    times = [c.t_ms for c in schedule.chunks if c.t_ms is not None]
    return float(max(times)) if times else 0.0


def recording_sha256(schedule: Schedule) -> str:
    """SHA-256 of the canonical replay-file text of a schedule known in advance."""
    if not isinstance(schedule, Recording):
        raise TypeError(f"schedule {schedule.id!r} is learnt while it plays: no replay text")
    return hashlib.sha256(dumps_recording(schedule).encode()).hexdigest()


def step_response_id(question_id: str, step: int) -> str:
    """The response id of an answer given after a step: `progress_ok_s2` (column
    `q_progress_ok_s2`)."""
    return f"{question_id}_s{step}"


class PlannedTrial(Protocol):
    """What a kind reads of a planned trial (`uxlab.study.design.Trial`)."""

    @property
    def index(self) -> int: ...
    @property
    def replay_id(self) -> str | None: ...
    @property
    def levels(self) -> dict[str, float]: ...
    @property
    def seed(self) -> int: ...


class StimuliReader(Protocol):
    """What a kind needs of the study file reader (`uxlab.study.loading.reader`)."""

    @property
    def path(self) -> Path: ...
    def err(self, key: str | None, problem: str) -> Exception: ...
    def table(self, doc: dict[str, Any], name: str, required: bool = True) -> dict[str, Any]: ...
    def unknown(self, table: dict[str, Any], allowed: tuple[str, ...], where: str) -> None: ...
    def get(
        self,
        table: dict[str, Any],
        key: str,
        where: str,
        types: tuple[type, ...],
        default: Any = ...,
        what: str | None = None,
    ) -> Any: ...
    def text(self, table: dict[str, Any], key: str, where: str, default: Any = ...) -> Any: ...


class AskedQuestion(Protocol):
    """What a kind reads of a study question (`uxlab.study.spec.Question`, a dataclass)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def id(self) -> str: ...
    @property
    def when(self) -> str: ...


Q = TypeVar("Q", bound=AskedQuestion)


class Hold(Protocol):
    """A trial held after a step while its questions were asked."""

    @property
    def step(self) -> int:
        """The step (position) after which the trial held."""
        ...

    @property
    def resumed_ms(self) -> float | None:
        """When the last answer was given and the trial went on, ms from the send (None:
        not yet, or given up meanwhile)."""
        ...

    @property
    def held_ms(self) -> float | None:
        """How long the participant took over the questions (None: not over)."""
        ...


@dataclasses.dataclass(frozen=True)
class PlayedTrial:
    """What a kind reads of a trial run when it adds to the trial's record."""

    log: PlaybackLog | None
    abandoned_while: Phase | None
    """The phase the participant gave up in, None if they did not."""
    asks_after_steps: bool
    """The study asks questions after steps (`when = "step"`)."""


T = TypeVar("T")


def read_stimuli_path(
    r: StimuliReader, table: dict[str, Any], key: str, missing: str, load: Callable[[Path], T]
) -> tuple[str, Path, T]:
    """`[stimuli].key`: a path relative to the study file, required (`missing` says what it
    names), that exists and loads (`load` raises `UxlabError`); returns it as written, its
    resolved path and what it loaded."""
    where = f"[stimuli].{key}"
    if key not in table:
        raise r.err(where, missing)
    rel = r.text(table, key, "[stimuli]")
    path = (r.path.parent / rel).resolve()
    if not path.exists():
        raise r.err(where, f"{rel!r} does not exist (looked for {path})")
    try:
        loaded = load(path)
    except UxlabError as exc:
        raise r.err(where, f"does not load: {exc}") from None
    return rel, path, loaded


class KindRun:
    """What a kind keeps of one trial while it plays; this base plays one stream.

    Made when the trial is shown (`TrialKind.begin`); `send` at the send key press, then
    `player` plays the schedule, `finish` after the play, and `add_to_record` when the trial
    is stored (after the common timings and events are made).
    """

    def __init__(self, schedule: Schedule, clock: Clock) -> None:
        self.schedule = schedule
        self.clock = clock

    @property
    def n_steps(self) -> int | None:
        """How many steps the trial's schedule has (None: one stream, no steps)."""
        return None

    @property
    def holds(self) -> Sequence[Hold]:
        """The holds for questions after steps so far (none for one stream)."""
        return ()

    def send(self, prompt: str, t0_ms: float) -> None:
        """The participant sent `prompt` at `t0_ms` (absolute, on the clock)."""

    def player(
        self,
        sink: Sink,
        on_chunk: Callable[[Chunk], None],
        asks: Sequence[int] = (),
        ask: AskAfter | None = None,
    ) -> Playback:
        """The player of this trial's schedule into `sink`; `asks` are the steps to hold
        after while `ask(step)` runs (one stream has none)."""
        return Player(self.schedule, sink, self.clock, on_chunk=on_chunk)

    async def finish(self) -> None:
        """The play is over (completed, given up, timed out or failed)."""

    def add_to_record(
        self, timings: dict[str, Any], events: list[dict[str, Any]], played: PlayedTrial
    ) -> None:
        """Add the kind's own timings (its trial-table columns) and events."""


class TrialKind(ABC):
    """One kind of trial, loaded with a study's stimuli (`read`); see the module docstring.

    The class says what the kind is (its class variables); an instance is the kind with one
    study's stimuli, kept as the study's `kind`.
    """

    name: ClassVar[str]
    """The registry's name of the kind (`recorded`, `live`, ...)."""
    label: ClassVar[str]
    """`[stimuli] kind = ...` in a study file, and the `kind` of its trials in the stored
    trial list (`single` for one stream per trial, recorded or live)."""
    noun: ClassVar[str]
    """What its studies are called in messages (`a {noun} study`)."""
    view: ClassVar[str]
    """The terminal view its trials play in (registered in `uxlab.tui.views`)."""
    keys: ClassVar[tuple[str, ...]]
    """Its own keys in `[stimuli]` (beyond `kind`, `assignment`, `prompt`)."""
    key_types: ClassVar[dict[str, Any]] = {}
    """The type of each of its own keys in the study file's model and JSON Schema
    (`uxlab.study.loading.model`: a `msgspec` type, or a Struct of its own); a key left out is
    `Any` there, read by `read` alone."""
    sections: ClassVar[dict[str, tuple[str, ...]]] = {}
    """Its own sections of a study file, with their keys."""
    descriptions: ClassVar[dict[str, str]] = {}
    """What its keys mean, for the study file's JSON Schema (editor completion): a
    `[stimuli]` key by name, a section as `[name]`, a section's key as `[name].key`."""
    factors: ClassVar[tuple[str, ...]] = ()
    """Its own factors, beyond the shaping profile's parameters."""
    columns: ClassVar[tuple[Column, ...]] = ()
    """Its own trial-table columns (a group of `trial_table_spec`), from its timings."""
    judged: ClassVar[bool] = True
    """Its playback lateness is judged against the study's `[timing]` tolerance (a live
    trial's is mostly the model's: measured, not judged)."""
    learnt: ClassVar[bool] = False
    """Its stream is learnt while it plays (a live model's answer): only what uxlab drew is
    fingerprinted and verified, not the text and its chunking."""
    asks_after_steps: ClassVar[bool] = False
    """Its trials have steps, after which questions (`when = "step"`) can be asked."""
    reads_prompt: ClassVar[bool] = True
    """`[stimuli] prompt` overrides the recordings' prompts."""
    serve_problem: ClassVar[str | None] = None
    """Why `uxlab serve --study` cannot play its studies (None: it can)."""
    simulate_problem: ClassVar[str | None] = None
    """Why simulated participants cannot take its studies (None: they can)."""
    plan_problem: ClassVar[str | None] = None
    """Why `uxlab plan` cannot simulate its studies (None: it can)."""

    # -- the study file --------------------------------------------------------------------
    @classmethod
    def chooses(cls, table: dict[str, Any]) -> bool:
        """Whether a `[stimuli]` table with this kind's `label` means this kind."""
        return True

    @classmethod
    @abstractmethod
    def read(cls, r: StimuliReader, table: dict[str, Any]) -> tuple[TrialKind, Path, Corpus]:
        """The kind loaded with the stimuli `[stimuli]` names, the corpus the design assigns
        from (one stream per stimulus) and its path; errors name the key."""

    @classmethod
    def refusal(cls, key: str) -> str | None:
        """Why `[stimuli].key`, another kind's key, is refused here (None: its owner says)."""
        return None

    @classmethod
    def elsewhere(cls, key: str, label: str) -> str:
        """Why this kind's `[stimuli].key` is refused in a study of kind `label`."""
        return f'only with kind = "{cls.label}" (add it, or remove this)'

    def check_level(self, r: StimuliReader, name: str, x: float, key: str) -> None:
        """Check one level of one of the kind's own `factors`."""
        return None

    def profile_levels(self, levels: dict[str, float]) -> dict[str, float]:
        """A condition's levels as shaping factors (own factors mapped or left out)."""
        return {k: v for k, v in levels.items() if k not in self.factors}

    def check_study(self, r: StimuliReader, base: Profile, levels: dict[str, float]) -> None:
        """Check the study as a whole: its `base` profile, and every factor's first level."""
        return None

    def read_sections(
        self, r: StimuliReader, doc: dict[str, Any], questions: list[Q]
    ) -> tuple[tuple[int, ...], list[Q]]:
        """The kind's own sections: the steps to ask after, and the questions with theirs."""
        return (), questions

    def stimulus_files(self, corpus: Corpus) -> dict[Path, set[str]]:
        """Every file the stimuli were read from (resolved) -> the trial `replay_id`s that
        depend on it; {} when there is none (a live model's answers)."""
        depends: dict[Path, set[str]] = {}
        for path, rec in zip(corpus.paths, corpus.recordings, strict=True):
            depends.setdefault(Path(path).resolve(), set()).add(rec.id)
        return depends

    def describe(self, n_recordings: int, assignment: str, prompt: str | None) -> str:
        """The stimuli in one line (`uxlab study`)."""
        whose = "the recording's" if prompt is None else "the study's"
        return f"{n_recordings} recordings, assignment {assignment}; {whose} prompt"

    @property
    def prompt_typed(self) -> bool:
        """The participant types each prompt (else it is given)."""
        return False

    @property
    def key_variables(self) -> tuple[str, ...]:
        """Environment variables a participant's program needs to play the trials (a live
        model's key variable); a host passes them on and no others."""
        return ()

    # -- the schedule ----------------------------------------------------------------------
    def trial_profile(self, base: Profile, levels: dict[str, float]) -> Profile:
        """The study's base profile with a condition's levels applied (`profile_levels`)."""
        shaping = self.profile_levels(levels)
        return base.with_factors(shaping) if shaping else base

    @abstractmethod
    def schedule(
        self, trial: PlannedTrial, source: Recording, base: Profile, shaper: Shaper
    ) -> Schedule:
        """What `trial` plays: from its `source` (its stimulus in the corpus), the study's
        `base` profile with the trial's levels, and the trial's seed."""

    def timed_schedule(
        self, trial: PlannedTrial, source: Recording, base: Profile, shaper: Shaper
    ) -> Recording:
        """The schedule with every time known before it plays (planning, serving, duration
        estimates); a kind that learns its stream while it plays gives a stand-in."""
        schedule = self.schedule(trial, source, base, shaper)
        if not isinstance(schedule, Recording):
            raise TypeError(f"{self.name}: its schedule is learnt while it plays")
        return schedule

    def stream_ms(
        self, source: Recording, levels: dict[str, float], seed: int, base: Profile, shaper: Shaper
    ) -> float:
        """How long `source` streams under `levels` from `seed`, ms from the send to its end."""
        return schedule_end_ms(shaper(source, self.trial_profile(base, levels), seed))

    def steps_in(self, schedule: Recording) -> int | None:
        """How many steps a schedule of this kind has (None: one stream, no steps)."""
        return None

    @abstractmethod
    def fingerprint(self, schedule: Schedule) -> str:
        """The SHA-256 stored when a trial begins, that `uxlab verify` rebuilds."""

    # -- the play --------------------------------------------------------------------------
    @abstractmethod
    def begin(self, schedule: Schedule, clock: Clock) -> KindRun:
        """What the kind keeps of one trial of `schedule` while it plays."""

    # -- verification ----------------------------------------------------------------------
    @abstractmethod
    def check_chunks(
        self,
        problems: Problems,
        schedule: Schedule,
        stored: StoredTrial,
        chunks: ChunkEvents,
        timeout_ms: float | None,
    ) -> None:
        """Every way the stored chunk events (in chunk order) and the schedule's timings
        disagree with `schedule` (as it played until `timeout_ms`), into `problems`."""
