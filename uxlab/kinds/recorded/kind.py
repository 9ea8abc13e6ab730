"""The recorded kind: its stimuli (`[stimuli] corpus`, `files`), schedule and checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from uxlab.clock import Clock
from uxlab.kinds.base import (
    KindRun,
    PlannedTrial,
    Problems,
    Shaper,
    StimuliReader,
    TrialKind,
    read_stimuli_path,
    recording_sha256,
)
from uxlab.kinds.checks import ChunkEvents, StoredTrial, check_played_chunks
from uxlab.outcomes import EventKind
from uxlab.player import Schedule
from uxlab.reading import Text
from uxlab.shaping import Profile
from uxlab.streams.corpus import Corpus, load_corpus
from uxlab.streams.recording import Recording


class RecordedKind(TrialKind):
    """One recorded stream per trial, shaped from the trial's seed (see the package)."""

    name = "recorded"
    label = "single"
    noun = "recorded"
    view = "stream"
    keys = ("corpus", "files")
    key_types: ClassVar[dict[str, Any]] = {"corpus": Text}
    descriptions: ClassVar[dict[str, str]] = {
        "corpus": "the folder of replay files (*.jsonl) the trials play, relative to the "
        "study file",
        "files": "the replay files of the corpus to play, by file name (default: every file)",
    }

    @classmethod
    def chooses(cls, table: dict[str, Any]) -> bool:
        return "live" not in table  # a live model's answers are single streams too

    @classmethod
    def read(cls, r: StimuliReader, table: dict[str, Any]) -> tuple[TrialKind, Path, Corpus]:
        s = table
        missing = "missing (required): a replay folder or file, relative to the study file"
        rel, corpus_path, corpus = read_stimuli_path(r, s, "corpus", missing, load_corpus)
        if corpus.errors:
            raise r.err(
                "[stimuli].corpus",
                f"{len(corpus.errors)} replay file(s) do not load; first: {corpus.errors[0]}",
            )
        if "files" in s:
            files = r.get(s, "files", "[stimuli]", (list,), what="a list of file names")
            keep = []
            for i, name in enumerate(files):
                if not isinstance(name, str):
                    raise r.err(f"[stimuli].files[{i}]", f"{name!r} is not a file name")
                target = (corpus_path / name).resolve()
                if target not in corpus.paths:
                    raise r.err(
                        f"[stimuli].files[{i}]", f"{name!r} is not a replay file in {rel!r}"
                    )
                keep.append(corpus.paths.index(target))
            corpus = Corpus(
                corpus.root, [corpus.recordings[k] for k in keep], [corpus.paths[k] for k in keep]
            )
        if not corpus.recordings:
            raise r.err("[stimuli].corpus", f"{rel!r} holds no replay files (*.jsonl)")
        ids = [rec.id for rec in corpus.recordings]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise r.err("[stimuli].corpus", f"recording id {dup[0]!r} appears twice")
        return cls(), corpus_path, corpus

    def schedule(
        self, trial: PlannedTrial, source: Recording, base: Profile, shaper: Shaper
    ) -> Schedule:
        return shaper(source, self.trial_profile(base, trial.levels), trial.seed)

    def fingerprint(self, schedule: Schedule) -> str:
        return recording_sha256(schedule)

    def begin(self, schedule: Schedule, clock: Clock) -> KindRun:
        return KindRun(schedule, clock)

    def check_chunks(
        self,
        problems: Problems,
        schedule: Schedule,
        stored: StoredTrial,
        chunks: ChunkEvents,
        timeout_ms: float | None,
    ) -> None:
        holds = stored.of_kind(EventKind.HOLD)
        if holds:
            problems.append(
                f"hold events: stored {len(holds)}, rebuilt 0 (its trials have no steps)"
            )
        assert isinstance(schedule, Recording)  # what `schedule` returns
        check_played_chunks(problems, schedule, stored, chunks, timeout_ms)
