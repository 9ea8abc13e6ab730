"""What a chain is: its steps as written, the chain factors, and the chain-file error."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from uxlab.reading import LocatedError
from uxlab.streams.recording import Recording

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


class ChainFormatError(LocatedError):
    """A chain file or chain factor that cannot be used: names the file, the key and the fix."""

    def __init__(self, where: str | Path, key: str | None, problem: str) -> None:
        super().__init__(where, None, key, problem)
        self.where, self.key = str(where), key

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.where, self.key, self.problem))


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
