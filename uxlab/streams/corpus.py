"""Loading a corpus: a folder of replay files, keeping the good ones and reporting every bad one."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from uxlab.streams.recording import Recording
from uxlab.streams.replay_file import (
    ReplayFormatError,
    iter_replay_paths,
    paused_gc,
    read_replay,
)


@dataclass
class Corpus:
    """Recordings loaded from a file or folder, with the files that failed and why."""

    root: Path
    recordings: list[Recording] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    errors: list[ReplayFormatError] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.recordings)

    def by_id(self, rid: str) -> Recording:
        for rec in self.recordings:
            if rec.id == rid:
                return rec
        raise KeyError(f"{self.root}: no recording with id {rid!r}")

    def raise_if_errors(self) -> None:
        """Raise one error listing every bad file (for callers that need a clean corpus)."""
        if self.errors:
            listing = "\n  ".join(str(e) for e in self.errors)
            raise ReplayFormatError(
                self.root, None, None, f"{len(self.errors)} bad replay file(s):\n  {listing}"
            )


def load_corpus(path: str | Path, allow_truncated: bool = False) -> Corpus:
    """Load every replay file at `path`; bad files are collected in `errors`, not raised."""
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such file or folder")
    corpus = Corpus(root=root)
    with paused_gc():
        for p in iter_replay_paths(root):
            try:
                rec = read_replay(p, allow_truncated=allow_truncated)
            except ReplayFormatError as exc:
                corpus.errors.append(exc)
                continue
            corpus.recordings.append(rec)
            corpus.paths.append(p)
    return corpus
