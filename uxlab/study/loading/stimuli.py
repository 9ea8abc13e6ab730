"""`[stimuli]`: what the trials play, read by the study's trial kind (`uxlab.kinds`).

`kind` (default `single`) and the table's own keys choose the kind (`uxlab.kinds.choose`):
a recorded corpus by default; a kind's own keys and label choose another. A key of
another kind is refused in the words of the kind that refuses it, or of the kind it
belongs to; the kind then reads its own keys. `assignment` and `prompt` are every kind's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uxlab import kinds
from uxlab.kinds import TrialKind
from uxlab.streams.corpus import Corpus
from uxlab.study.loading.reader import StudyReader


@dataclass(frozen=True)
class Stimuli:
    """What `[stimuli]` names, checked and loaded."""

    corpus_path: Path
    corpus: Corpus
    assignment: str
    prompt: str | None
    kind: TrialKind
    """The trial kind, loaded with its stimuli."""


def read_stimuli(r: StudyReader, s: dict[str, Any]) -> Stimuli:
    """`[stimuli]` as written (its keys and the common ones' values checked by the model):
    the trial kind's stimuli, the assignment and the prompt."""
    label = s.get("kind", "single")
    chosen = kinds.choose(label, s)
    for key in s:
        owner = kinds.owner_of_key(key)
        if owner is not None and key not in chosen.keys:
            problem = chosen.refusal(key) or owner.elsewhere(key, label)
            raise r.err(f"[stimuli].{key}", problem)
    kind, corpus_path, corpus = chosen.read(r, s)
    assignment = s.get("assignment", "cycle")
    prompt = s.get("prompt") if chosen.reads_prompt else None
    return Stimuli(corpus_path, corpus, assignment, prompt, kind)
