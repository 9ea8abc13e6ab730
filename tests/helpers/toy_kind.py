"""A toy trial kind, defined outside uxlab as a new kind would be: `kind = "echo"`.

An echo trial plays its prompt back to the participant word by word, as if a model repeated
it: `[stimuli] prompts = [...]` and `words_per_chunk` are its own keys, `echo_ms` its own
factor (the time between chunks), `echo_words` its own trial-table column, `echo` its own
event, and `EchoView` (a chat stream with a label) the view its trials play in. It touches no
uxlab module: `register()` adds it to the kinds' registry and its view to the views'.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, ClassVar

import uxlab.kinds
import uxlab.tui.views
from trial_table_spec import Column
from uxlab.clock import Clock
from uxlab.kinds import (
    KindRun,
    PlannedTrial,
    PlayedTrial,
    Shaper,
    StimuliReader,
    StoredTrial,
    TrialKind,
    recording_sha256,
)
from uxlab.kinds.checks import ChunkEvents, check_played_chunks
from uxlab.player import Schedule
from uxlab.shaping import Profile
from uxlab.streams.corpus import Corpus
from uxlab.streams.recording import Chunk, End, Header, Recording
from uxlab.tui.stream_view import StreamView

TOY_STUDY = """
[study]
id = "echo"
title = "An echo study"
seed = 3

[texts]
consent = "You agree to take part."
instructions = "Press Enter to send; your words come back."

[stimuli]
kind = "echo"
prompts = ["say it back to me", "one two three four five six"]
words_per_chunk = 2

[profile]
ttft = "constant:40"

[factors]
echo_ms = [10, 80]

[design]
repeats = 1

[[questions]]
id = "fast"
type = "yesno"
text = "Was that fast enough?"
"""


class EchoKind(TrialKind):
    """Each trial echoes its prompt, `words_per_chunk` words every `echo_ms`."""

    name = "echo"
    label = "echo"
    noun = "echo"
    view = "echo"
    keys = ("prompts", "words_per_chunk")
    factors = ("echo_ms",)
    columns = (Column("echo_words", "number"),)

    def __init__(self, words_per_chunk: int) -> None:
        self.words_per_chunk = words_per_chunk

    @classmethod
    def read(cls, r: StimuliReader, table: dict[str, Any]) -> tuple[TrialKind, Path, Corpus]:
        prompts = r.get(table, "prompts", "[stimuli]", (list,), what="a list of prompts")
        per_chunk = r.get(table, "words_per_chunk", "[stimuli]", (int,), 1, "a whole number")
        if per_chunk < 1:
            raise r.err("[stimuli].words_per_chunk", f"{per_chunk} is not 1 or more")
        recordings = [_echo(f"echo-{i + 1}", p, per_chunk) for i, p in enumerate(prompts)]
        return (
            cls(per_chunk),
            r.path.parent,
            Corpus(r.path.parent, recordings, [r.path] * len(recordings)),
        )

    def check_level(self, r: StimuliReader, name: str, x: float, key: str) -> None:
        if x <= 0:
            raise r.err(key, f"{x} ms: an echo needs time between its chunks")

    def stimulus_files(self, corpus: Corpus) -> dict[Path, set[str]]:
        return {}  # the prompts are in the study file itself

    def schedule(
        self, trial: PlannedTrial, source: Recording, base: Profile, shaper: Shaper
    ) -> Schedule:
        shaped = shaper(source, self.trial_profile(base, trial.levels), trial.seed)
        gap_ms = trial.levels["echo_ms"]
        first = shaped.chunks[0].t_ms or 0.0
        chunks = [
            Chunk(t_ms=first + gap_ms * i, text=c.text, n_tokens=c.n_tokens)
            for i, c in enumerate(shaped.chunks)
        ]
        end = End(t_ms=chunks[-1].t_ms, finish_reason="stop")
        return Recording(shaped.header, chunks, end)

    def fingerprint(self, schedule: Schedule) -> str:
        return recording_sha256(schedule)

    def begin(self, schedule: Schedule, clock: Clock) -> KindRun:
        return EchoRun(schedule, clock)

    def check_chunks(
        self,
        problems: list[str],
        schedule: Schedule,
        stored: StoredTrial,
        chunks: ChunkEvents,
        timeout_ms: float | None,
    ) -> None:
        assert isinstance(schedule, Recording)
        check_played_chunks(problems, schedule, stored, chunks, timeout_ms)


class EchoRun(KindRun):
    def add_to_record(
        self, timings: dict[str, Any], events: list[dict[str, Any]], played: PlayedTrial
    ) -> None:
        words = sum(len(c.text.split()) for c in self.schedule.chunks)
        timings["echo_words"] = words
        events.append({"kind": "echo", "t_ms": 0.0, "words": words})


class EchoView(StreamView):
    """The echo's view: a chat stream that keeps the prompt box below it."""

    fills_screen: ClassVar[bool] = False


def _echo(rid: str, prompt: str, per_chunk: int) -> Recording:
    """The prompt's words, `per_chunk` at a time, 30 ms apart before shaping."""
    words = prompt.split()
    texts = [" ".join(words[i : i + per_chunk]) for i in range(0, len(words), per_chunk)]
    chunks = [
        Chunk(t_ms=30.0 * (i + 1), text=t if i == 0 else " " + t, n_tokens=len(t.split()))
        for i, t in enumerate(texts)
    ]
    digest = hashlib.sha256(prompt.encode()).hexdigest()[:8]
    header = Header(
        id=rid,
        source={"kind": "synthetic", "origin": f"echo {digest}"},
        request={"messages": [{"role": "user", "content": prompt}]},
        text_source="synthetic",
    )
    return Recording(header, chunks, End(t_ms=chunks[-1].t_ms, finish_reason="stop"))


def register() -> None:
    uxlab.kinds.register(EchoKind)
    uxlab.tui.views.register("echo", EchoView)


def unregister() -> None:
    uxlab.kinds.unregister("echo")
    uxlab.tui.views.unregister("echo")
