"""The chain kind: a chain study's stimuli (`[stimuli] chains`), its `[chain]` section and
factors, each trial's schedule, and the checks of a stored chain trial."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, ClassVar

import trial_table_spec as spec
from uxlab.clock import Clock
from uxlab.kinds.base import (
    KindRun,
    PlannedTrial,
    Problems,
    Q,
    Shaper,
    StimuliReader,
    TrialKind,
    read_stimuli_path,
    recording_sha256,
    step_response_id,
)
from uxlab.kinds.chain.files import load_chains
from uxlab.kinds.chain.held import split_at_steps
from uxlab.kinds.chain.run import ChainRun
from uxlab.kinds.chain.schedule import build_chain_schedule, chain_steps, chain_stimulus
from uxlab.kinds.chain.steps import CHAIN_FACTORS, Chain
from uxlab.kinds.checks import (
    ChunkEvents,
    StoredTrial,
    check_played_chunks,
    differ,
    number,
    show,
)
from uxlab.outcomes import EventKind
from uxlab.player import Schedule
from uxlab.reading import Text
from uxlab.shaping import Profile
from uxlab.streams.corpus import Corpus
from uxlab.streams.recording import Recording


class ChainKind(TrialKind):
    """An agent chain per trial: model calls and tool pauses on one timeline."""

    name = "chain"
    label = "chain"
    noun = "chain"
    view = "chain"
    keys = ("chains",)
    key_types: ClassVar[dict[str, Any]] = {"chains": Text}
    sections: ClassVar[dict[str, tuple[str, ...]]] = {"chain": ("ask_after_steps",)}
    descriptions: ClassVar[dict[str, str]] = {
        "chains": 'the folder of agent chains (*.chain.json) for kind = "chain", relative '
        "to the study file",
        "[chain]": "where in a chain the step questions are asked",
        "[chain].ask_after_steps": "the steps (0-based, tool pauses counted) after which "
        'the questions with when = "step" are asked',
    }
    factors = tuple(CHAIN_FACTORS)
    columns = spec.CHAIN
    asks_after_steps = True
    serve_problem = (
        'its trials are agent chains ([stimuli] kind = "chain"): steps, tool pauses and '
        "several model calls that one OpenAI/Anthropic chat stream cannot show; run it "
        "with `uxlab run`"
    )

    def __init__(self, chains: dict[str, Chain]) -> None:
        self.chains = chains
        """The chains by id (the corpus holds one stream per chain, `chain_stimulus`)."""

    # -- the study file --------------------------------------------------------------------
    @classmethod
    def refusal(cls, key: str) -> str | None:
        if key in ("corpus", "files"):
            return 'not used with kind = "chain": name the chain folder with chains = "..."'
        return None

    @classmethod
    def read(cls, r: StimuliReader, table: dict[str, Any]) -> tuple[TrialKind, Path, Corpus]:
        """`kind = "chain"`: the chains folder; the corpus holds one stream per chain."""
        missing = (
            'missing (required with kind = "chain"): a folder of *.chain.json files, '
            'relative to the study file (e.g. "../replays/chains")'
        )
        _, chains_path, chains = read_stimuli_path(r, table, "chains", missing, load_chains)
        paths = [c.path or chains_path for c in chains.values()]
        corpus = Corpus(chains_path, [chain_stimulus(c) for c in chains.values()], paths)
        return cls(chains), chains_path, corpus

    def check_level(self, r: StimuliReader, name: str, x: float, key: str) -> None:
        """`n_steps`: a whole number of model calls that every chain has."""
        if name == "n_steps":
            if not float(x).is_integer() or x < 1:
                raise r.err(key, f"{x} is not a whole number of model calls (1 or more)")
            short = min(self.chains.values(), key=lambda c: c.n_calls)
            if x > short.n_calls:
                raise r.err(
                    key,
                    f"{x:g} model calls: chain {short.id!r} has only {short.n_calls} "
                    f"(use 1..{short.n_calls})",
                )

    def profile_levels(self, levels: dict[str, float]) -> dict[str, float]:
        """The profile of each model call: `call_ttft_ms` is its TTFT; `n_steps` and
        `pause_ms` are not stream parameters."""
        out = {k: v for k, v in levels.items() if k not in CHAIN_FACTORS}
        if "call_ttft_ms" in levels:
            out["ttft_ms"] = levels["call_ttft_ms"]
        return out

    def read_sections(
        self, r: StimuliReader, doc: dict[str, Any], questions: list[Q]
    ) -> tuple[tuple[int, ...], list[Q]]:
        """`[chain] ask_after_steps` and the `when = "step"` questions asked there."""
        c = r.table(doc, "chain", required=False)
        step_qs = [i for i, q in enumerate(questions) if q.when == "step"]
        r.unknown(c, self.sections["chain"], "[chain]")
        where = "[chain].ask_after_steps"
        raw = r.get(c, "ask_after_steps", "[chain]", (list,), [], "a list of step numbers")
        last = max(len(ch.steps) for ch in self.chains.values()) - 2  # the last working step
        steps: list[int] = []
        for i, x in enumerate(raw):
            if isinstance(x, bool) or not isinstance(x, int) or x < 0:
                raise r.err(
                    f"{where}[{i}]",
                    f"{x!r} is not a step number (0, 1, ...: positions from 0, tool pauses "
                    "counted, as in abandon_step)",
                )
            if x in steps:
                raise r.err(f"{where}[{i}]", f"{x} repeats step {x}")
            if x > last:
                raise r.err(
                    f"{where}[{i}]",
                    f"{x}: no chain has a step {x} before its final answer (steps count from "
                    f"0, tool pauses included; use 0..{last})",
                )
            steps.append(x)
        if steps and not step_qs:
            raise r.err(where, 'no question to ask there: add [[questions]] with when = "step"')
        if step_qs and not steps:
            raise r.err(
                f"[[questions]][{step_qs[0]}].when",
                '"step" needs the steps to ask after: [chain] ask_after_steps = [2, 4]',
            )
        steps.sort()
        ids = {q.id for q in questions}
        for i in step_qs:
            for s in steps:
                rid = step_response_id(questions[i].id, s)
                if rid in ids:
                    raise r.err(
                        f"[[questions]][{i}].id",
                        f"{questions[i].id!r} asked after step {s} is stored as {rid!r}, the id "
                        "of another question (rename one)",
                    )
        out = [_asked_after(q, tuple(steps)) if q.when == "step" else q for q in questions]
        return tuple(steps), out

    def stimulus_files(self, corpus: Corpus) -> dict[Path, set[str]]:
        """Each chain file and the replay files its steps name, for the chain's id."""
        depends: dict[Path, set[str]] = {}
        for chain in self.chains.values():
            if chain.path is None:
                continue
            chain_path = Path(chain.path)
            depends.setdefault(chain_path.resolve(), set()).add(chain.id)
            for step in _chain_step_files(chain_path):
                depends.setdefault(step.resolve(), set()).add(chain.id)
        return depends

    # -- the schedule ----------------------------------------------------------------------
    def schedule(
        self, trial: PlannedTrial, source: Recording, base: Profile, shaper: Shaper
    ) -> Schedule:
        """The trial's chain laid out with its levels and seed, flattened to one schedule
        (`ChainSchedule.to_recording`)."""
        assert trial.replay_id is not None  # an attention check plays as a recorded trial
        chain = self.chains[trial.replay_id]
        return build_chain_schedule(chain, trial.levels, trial.seed, base.to_table()).to_recording()

    def stream_ms(
        self, source: Recording, levels: dict[str, float], seed: int, base: Profile, shaper: Shaper
    ) -> float:
        """The whole chain, laid out: from the send to the end of its answer."""
        return build_chain_schedule(self.chains[source.id], levels, seed, base.to_table()).e2e_ms

    def steps_in(self, schedule: Recording) -> int | None:
        steps = chain_steps(schedule)
        return None if steps is None else len(steps)

    def fingerprint(self, schedule: Schedule) -> str:
        return recording_sha256(schedule)

    # -- the play --------------------------------------------------------------------------
    def begin(self, schedule: Schedule, clock: Clock) -> KindRun:
        assert isinstance(schedule, Recording)  # what `schedule` returns
        return ChainRun(schedule, clock)

    # -- verification ----------------------------------------------------------------------
    def check_chunks(
        self,
        problems: Problems,
        schedule: Schedule,
        stored: StoredTrial,
        chunks: ChunkEvents,
        timeout_ms: float | None,
    ) -> None:
        """As a recorded trial's, with every step after a hold shifted by the stored
        hold's `offset_ms`, itself checked: the next step starts at the last answer."""
        assert isinstance(schedule, Recording)
        offsets, end_offset = _hold_offsets(problems, schedule, stored)
        check_played_chunks(problems, schedule, stored, chunks, timeout_ms, offsets, end_offset)


def _asked_after(q: Q, steps: tuple[int, ...]) -> Q:
    return dataclasses.replace(q, after_steps=steps)


def _chain_step_files(chain_path: Path) -> list[Path]:
    """The replay files a chain file's steps name (next to the chain file)."""
    doc = json.loads(chain_path.read_text(encoding="utf-8"))
    names = [s.get("replay") for s in doc.get("steps", []) if isinstance(s, dict)]
    return [chain_path.parent / n for n in names if isinstance(n, str)]


def _hold_offsets(
    problems: list[str], schedule: Recording, stored: StoredTrial
) -> tuple[list[float | None], float]:
    """Per chunk of `schedule`, the shift of its scheduled time by the holds before it
    (None: after a hold given up, so never shown); and the scheduled end's shift."""
    holds = [d for _, d in stored.of_kind(EventKind.HOLD)]
    n = len(schedule.chunks)
    if not holds:
        return [0.0] * n, 0.0
    if chain_steps(schedule) is None:
        problems.append(f"hold events: stored {len(holds)}, rebuilt 0 (not a chain)")
        return [0.0] * n, 0.0
    steps = [h.get("step") for h in holds]
    segments = split_at_steps(schedule, [s if isinstance(s, int) else -1 for s in steps])
    offsets: list[float | None] = []
    offset: float | None = 0.0
    for k, segment in enumerate(segments):
        if k > 0:
            hold = holds[k - 1]
            offset, resumed = number(hold.get("offset_ms")), number(hold.get("resumed_ms"))
            if offset is not None and resumed is not None:
                want = resumed - segment.start_ms  # the next step starts at the last answer
                if differ(offset, want):
                    problems.append(
                        f"hold after step {hold.get('step')} offset_ms: stored "
                        f"{show(offset)}, rebuilt {show(want)} (resumed at {show(resumed)})"
                    )
        offsets.extend([offset] * len(segment.schedule.chunks))
    resumed_offsets = [number(h.get("offset_ms")) for h in holds
                       if number(h.get("resumed_ms")) is not None]  # fmt: skip
    return offsets, next((o for o in reversed(resumed_offsets) if o is not None), 0.0)
