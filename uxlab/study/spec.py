"""The typed study model: everything needed to rerun a study, as the loader checked it.

A study file is TOML with these sections (see `studies/quickstart.toml` for a commented
example): `[study]` (id, title, version, seed), `[texts]` (consent, instructions, debrief),
`[stimuli]` (the trial kind's stimuli, assignment, prompt), `[profile]` (the base shaping
profile), `[factors]` (each factor a list of levels, or a table with `levels` and
`between`), `[design]`, `[counterbalance]`, `[[questions]]`, `[abandon]`, `[attention]`,
`[timing]` (the playback-fidelity tolerance), `[session]` and the trial kind's own sections
(`uxlab.kinds`: the questions asked after steps, `Study.ask_after_steps`).

`uxlab.study.loading` reads and validates a file into this model (`load_study`,
`parse_study`), so the rest of uxlab can trust a `Study`; `StudyError` is its error.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from number_text import level
from uxlab.kinds import TrialKind
from uxlab.kinds import step_response_id as step_response_id  # an answer after a step
from uxlab.reading import LocatedError
from uxlab.shaping import Profile
from uxlab.streams.corpus import Corpus
from uxlab.study.questions import REGISTRY, question_type

ORDERS = ("random", "fixed", "latin-square", "blocked")
ASSIGNMENTS = ("cycle", "random", "by_condition")
QUESTION_TYPES = tuple(REGISTRY)
"""Every question type (`uxlab.study.questions`: one module per type)."""
QUESTION_WHEN = ("trial", "end", "step")
"""trial: after each trial; end: once at the end; step: after the steps its trial kind
holds for (`Study.ask_after_steps`; answers go to `q_<id>_s<step>`)."""
PROCEDURES = ("fixed", "quest", "staircase", "interleaved")
"""How a factor's level is chosen: "fixed" (the design's list) or adaptively (study/adaptive)."""
# Factors whose levels must be whole numbers.
INTEGER_FACTORS = ("chunk_tokens", "error_at_token")
ANSWER_S = {name: t.answer_s for name, t in REGISTRY.items()}
"""Seconds a participant needs to answer one question of each type (duration estimates)."""


class StudyError(LocatedError):
    """A study file that is not valid: names the file, the key path and the problem."""

    def __init__(self, path: str | Path, key: str | None, problem: str, line: int | None = None):
        super().__init__(path, line, key, problem)
        self.key = key
        """The key path at fault (`[abandon].key`); `line` is its line when the loader found it."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.key, self.problem, self.line))


# --- the model ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Factor:
    """A profile parameter varied by the study, with its levels in the file's order."""

    name: str
    levels: tuple[float, ...]
    between: bool = False
    """True: each participant sees one level (a group allocated by the store)."""
    procedure: str = "fixed"
    down: int = 2
    """staircase: acceptable answers in a row before the latency goes up (1-up/n-down)."""
    grid: int = 25
    """Adaptive: how many log-spaced levels between the lowest and highest level."""

    @property
    def adaptive(self) -> bool:
        return self.procedure != "fixed"


@dataclass(frozen=True)
class Condition:
    """One design cell: a level of every within-participant factor."""

    id: str
    levels: dict[str, float]


@dataclass(frozen=True)
class Question:
    """A question asked after each trial (`when="trial"`) or once at the end."""

    id: str
    type: str
    text: str
    when: str = "trial"
    scale: int | None = None
    labels: tuple[str, ...] = ()
    acceptable_at: int | None = None
    """likert: the lowest point that counts as acceptable (for the analysis)."""
    yes_means: str | None = None
    """yesno: what a "yes" says, `acceptable` or `too_slow` (the direction of the curve)."""
    options: tuple[str, ...] = ()
    min: float | None = None
    max: float | None = None
    after_steps: tuple[int, ...] = ()
    """when = "step": the steps (0-based positions) after which it is asked."""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "type": self.type, "text": self.text}
        d["when"] = self.when
        if self.when == "step":
            d["after_steps"] = list(self.after_steps)
        d.update(question_type(self.type).fields(self))
        return d


@dataclass(frozen=True)
class Design:
    repeats: int = 1
    """How often each condition appears in each block."""
    blocks: int = 1
    order: str = "random"
    blocked_by: str | None = None
    max_run: int | None = None
    """The longest run of identical conditions allowed (random and blocked orders)."""
    practice: int = 0
    break_every: int | None = None
    """A break screen after every N main trials (None: no breaks)."""


@dataclass(frozen=True)
class Counterbalance:
    group_cap: int | None = None
    """The most participants per between-group (completed plus live sessions)."""
    stale_after_min: float = 120.0
    """A live session not seen for this long gives its group slot back."""


@dataclass(frozen=True)
class Abandon:
    key: str = "escape"
    timeout_s: float | None = None
    ask_questions: bool = False
    """Whether the per-trial questions follow an abandoned trial."""


@dataclass(frozen=True)
class Timing:
    """`[timing]`: how faithfully trials must be shown (`uxlab.fidelity`)."""

    max_late_p99_ms: float | None = None
    """A trial whose chunks' p99 lateness exceeds this is flagged (None: derived from the
    study's shortest gap, `uxlab.fidelity.default_max_late_p99_ms`)."""
    max_frame_shared_share: float | None = None
    """Also flag a trial when more than this share of its chunks shared a frame."""
    requeue_flagged: bool = False
    """Run a flagged main trial again at the end of the session."""
    max_requeued: int = 5
    """At most this many re-runs per session."""


@dataclass(frozen=True)
class SessionOptions:
    """`[session]`: how a participant's session treats trials that did not run cleanly."""

    rerun_interrupted: bool = True
    """A trial interrupted (the program stopped or quit mid-stream) is run again at the end
    of the session; the interrupted attempt stays stored, marked (`Sessions.requeue_trial`)."""


@dataclass(frozen=True)
class Attention:
    every: int
    """One known-answer trial after every N main trials (never first in a block)."""
    text: str
    """The response streamed on an attention-check trial: it tells the participant the answer."""
    question: str
    answer: str
    levels: dict[str, float] | None = None
    """The factor levels of the check's stream (default: the middle condition)."""


@dataclass
class Study:
    """A validated study file."""

    path: Path
    text: str
    sha256: str
    id: str
    title: str
    version: str
    seed: int
    texts: dict[str, str]
    corpus_path: Path
    assignment: str
    prompt: str | None
    kind: TrialKind
    """The trial kind, loaded with the study's stimuli (`uxlab.kinds`)."""
    profile: Profile
    factors: list[Factor]
    design: Design
    counterbalance: Counterbalance
    questions: list[Question]
    abandon: Abandon
    attention: Attention | None
    corpus: Corpus = field(repr=False)
    """One stream per stimulus, the design assigns from (a stand-in, for a kind whose
    stimuli are not streams)."""
    ask_after_steps: tuple[int, ...] = ()
    """A trial holds after these steps (0-based positions, read by the trial kind from its
    own section) and asks the `when = "step"` questions; a step that is a trial's last, or
    beyond it, is skipped."""
    timing: Timing = field(default_factory=Timing)
    """`[timing]`: the playback-fidelity tolerance and whether flagged trials run again."""
    session: SessionOptions = field(default_factory=SessionOptions)
    """`[session]`: e.g. whether interrupted trials are run again at the end."""

    @property
    def within_factors(self) -> list[Factor]:
        return [f for f in self.factors if not f.between]

    @property
    def between_factors(self) -> list[Factor]:
        return [f for f in self.factors if f.between]

    @property
    def conditions(self) -> list[Condition]:
        """Every cell of the within-participant factors, first factor varying slowest."""
        return make_conditions(self.within_factors)

    @property
    def groups(self) -> list[Condition]:
        """Between-participant groups (cells of the between factors); [] if none."""
        return make_conditions(self.between_factors) if self.between_factors else []

    @property
    def trial_questions(self) -> list[Question]:
        return [q for q in self.questions if q.when == "trial"]

    @property
    def end_questions(self) -> list[Question]:
        return [q for q in self.questions if q.when == "end"]

    @property
    def judgement_question(self) -> Question | None:
        """The first per-trial yes/no question: the judgement an adaptive procedure adapts to
        and the threshold is fitted to (None when the study asks none)."""
        return next((q for q in self.trial_questions if q.type == "yesno"), None)

    @property
    def step_questions(self) -> list[Question]:
        """Questions asked after each of `ask_after_steps`, while the trial is held."""
        return [q for q in self.questions if q.when == "step"]

    @property
    def trial_response_questions(self) -> list[Question]:
        """Every answer a trial row may hold: the per-trial questions, then each step
        question once per step asked after, with the id `<id>_s<step>`."""
        steps = [
            dataclasses.replace(q, id=step_response_id(q.id, s))
            for s in self.ask_after_steps
            for q in self.step_questions
        ]
        return [*self.trial_questions, *steps]

    def asks_in(self, n_steps: int) -> list[int]:
        """The steps to hold after in a trial of `n_steps` steps (never after the last)."""
        return [s for s in self.ask_after_steps if s < n_steps - 1]

    @property
    def replay_ids(self) -> list[str]:
        """The corpus' recording ids, sorted (the order assignment uses)."""
        return sorted(r.id for r in self.corpus.recordings)

    def question(self, qid: str) -> Question:
        for q in self.questions:
            if q.id == qid:
                return q
        raise KeyError(qid)

    def profile_for(self, levels: dict[str, float]) -> Profile:
        """The base profile with a condition's factor levels applied.

        The study's kind maps its own factors (`TrialKind.profile_levels`).
        """
        return self.kind.trial_profile(self.profile, levels)

    def prompt_for(self, replay_id: str) -> str:
        """The prompt shown for a recording: the study's override, else the recording's."""
        if self.prompt is not None:
            return self.prompt
        return recording_prompt(self.corpus.by_id(replay_id).header.request)


def condition_id(levels: dict[str, float]) -> str:
    """`ttft_ms=800`, or `ttft_ms=800&itl_ms=30` for several factors."""
    return "&".join(f"{k}={level(v)}" for k, v in levels.items()) or "base"


def make_conditions(factors: list[Factor]) -> list[Condition]:
    if not factors:
        return [Condition("base", {})]
    out = []
    for combo in itertools.product(*(f.levels for f in factors)):
        levels = {f.name: v for f, v in zip(factors, combo, strict=True)}
        out.append(Condition(condition_id(levels), levels))
    return out


def recording_prompt(request: dict[str, Any]) -> str:
    """The last user message of a request (`messages`, OpenAI or Anthropic style)."""
    messages = request.get("messages") or []
    for msg in reversed(messages):
        if isinstance(msg, dict) and msg.get("role", "user") == "user":
            content = msg.get("content", "")
            if isinstance(content, list):  # content blocks
                return "".join(b.get("text", "") for b in content if isinstance(b, dict)).strip()
            return str(content).strip()
    return str(request.get("prompt", "")).strip()
