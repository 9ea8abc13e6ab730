"""A participant's trial list, made deterministically from the study, the participant and a seed.

`design_trials(study, participant, participant_number, seed)` returns the whole list:
practice trials first (block 0), then `blocks` main blocks in the study's order
(`random` with a maximum run of identical conditions, `fixed`, `latin-square` with the
participant's Williams row chosen by participant number, or `blocked` by one factor with the
block order counterbalanced by a Williams row), attention checks inserted after every N main
trials (never first in a block), and break marks every N main trials.

Randomness comes from one `numpy.random.default_rng([seed, participant key])`, where the
key is taken from the SHA-256 of the participant id, so the same inputs give the same list on
any machine. The store keeps the list it ran (`Trial.to_dict`), so a resumed session never
depends on recomputing it.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from uxlab.study.latin import williams_row
from uxlab.study.spec import Condition, Study, condition_id


@dataclass(frozen=True)
class AttentionCheck:
    """What an attention-check trial streams, and the answer it asks for."""

    text: str
    question: str
    answer: str


@dataclass(frozen=True)
class Trial:
    """One planned trial. `kind` is its trial kind's label (`uxlab.kinds`): "single" (one
    prompt, one stream, recorded or live), ..."""

    index: int
    block: int
    practice: bool
    condition_id: str
    levels: dict[str, float]
    """Every factor's level on this trial (within and between factors)."""
    replay_id: str | None
    """The recording to play; None on an attention check (its stream is `attention.text`)."""
    seed: int
    """The seed the schedule is shaped with."""
    prompt: str
    kind: str = "single"
    group: str | None = None
    attention: AttentionCheck | None = None
    break_before: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    """Room for a trial kind's own planned data; kept verbatim."""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if self.attention is None:
            d["attention"] = None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Trial:
        d = dict(d)
        if d.get("attention") is not None:
            d["attention"] = AttentionCheck(**d["attention"])
        return cls(**d)


def participant_key(participant: str) -> int:
    """A stable 64-bit number for a participant id (Python's hash() is salted per process)."""
    return int.from_bytes(hashlib.sha256(participant.encode()).digest()[:8], "big")


def design_trials(
    study: Study,
    participant: str,
    participant_number: int = 1,
    seed: int | None = None,
    group: Condition | None = None,
) -> list[Trial]:
    """The participant's full trial list (practice, main blocks, attention checks, breaks).

    `participant_number` (1, 2, ...) picks the Latin-square row; `seed` defaults to the
    study's seed; `group` is the between-participant cell (from `store.groups.allocate`).
    """
    seed = study.seed if seed is None else seed
    rng = np.random.default_rng([seed, participant_key(participant)])
    conditions = study.conditions
    main = _main_sequence(study, participant_number, rng)
    practice = _practice_conditions(study, rng)
    slots, breaks = _slots(study, main, practice)

    group_levels = dict(group.levels) if group else {}
    group_id = group.id if group else None
    att_levels = _attention_levels(study, conditions)
    assign = _Assigner(study, rng)
    trials = []
    for i, (what, block, cond) in enumerate(slots):
        trial_seed = int(rng.integers(0, 2**31 - 1))
        if what == "attention":
            assert study.attention is not None
            a = study.attention
            replay_for_prompt = assign.next_for_prompt()
            trials.append(
                Trial(
                    index=i,
                    block=block,
                    practice=False,
                    condition_id=condition_id(att_levels),
                    levels={**att_levels, **group_levels},
                    replay_id=None,
                    seed=trial_seed,
                    prompt=study.prompt_for(replay_for_prompt),
                    kind=study.kind.label,
                    group=group_id,
                    attention=AttentionCheck(a.text, a.question, a.answer),
                    break_before=i in breaks,
                )
            )
            continue
        assert cond is not None
        rid = assign.replay_for(cond, practice=what == "practice")
        trials.append(
            Trial(
                index=i,
                block=block,
                practice=what == "practice",
                condition_id=cond.id,
                levels={**cond.levels, **group_levels},
                replay_id=rid,
                seed=trial_seed,
                prompt=study.prompt_for(rid),
                kind=study.kind.label,
                group=group_id,
                break_before=i in breaks,
            )
        )
    return trials


def _main_sequence(
    study: Study, participant_number: int, rng: np.random.Generator
) -> list[tuple[int, Condition]]:
    """(block, condition) of every main trial, in the design's order."""
    conditions = study.conditions
    d = study.design
    main: list[tuple[int, Condition]] = []  # (block, condition)
    if d.order == "blocked":
        main = _blocked(study, conditions, participant_number, rng)
    else:
        tail: list[str] = []
        for b in range(1, d.blocks + 1):
            if d.order == "fixed":
                seq = [c for _ in range(d.repeats) for c in conditions]
            elif d.order == "latin-square":
                row = williams_row(len(conditions), participant_number)
                seq = [conditions[i] for _ in range(d.repeats) for i in row]
            else:
                seq = constrained_shuffle(conditions * d.repeats, d.max_run, rng, tail)
            tail = [c.id for c in seq]
            main += [(b, c) for c in seq]
    return main


def _practice_conditions(study: Study, rng: np.random.Generator) -> list[Condition]:
    """The practice trials' conditions: shuffled decks of all conditions, dealt in turn."""
    conditions = study.conditions
    d = study.design
    practice: list[Condition] = []
    if d.practice:
        deck: list[Condition] = []
        while len(practice) < d.practice:
            if not deck:
                deck = [conditions[i] for i in rng.permutation(len(conditions))]
            practice.append(deck.pop())
    return practice


def _slots(
    study: Study, main: list[tuple[int, Condition]], practice: list[Condition]
) -> tuple[list[tuple[str, int, Condition | None]], set[int]]:
    """(kind, block, condition) of every trial, practice first and an attention check after
    every N main trials; and the slot indexes a break comes before."""
    d = study.design
    # The sequence with attention checks placed after every N main trials.
    slots: list[tuple[str, int, Condition | None]] = [("practice", 0, c) for c in practice]
    breaks: set[int] = set()
    for n, (block, cond) in enumerate(main, start=1):
        slots.append(("main", block, cond))
        if study.attention and n % study.attention.every == 0:
            slots.append(("attention", block, None))
        if d.break_every and n % d.break_every == 0 and n < len(main):
            breaks.add(len(slots))
    return slots, breaks


def constrained_shuffle(
    items: list[Condition],
    max_run: int | None,
    rng: np.random.Generator,
    before: list[str] | None = None,
) -> list[Condition]:
    """A random order of `items` with no run of identical conditions longer than `max_run`.

    `before` is the ids of what came just before (the previous block), so runs are limited
    across block boundaries too. Draws condition by condition, weighted by how many of each
    are left, restarting on a dead end; deterministic for a given `rng` state.
    """
    if not max_run:
        return [items[i] for i in rng.permutation(len(items))]
    for _ in range(1000):
        remaining: dict[str, list[Condition]] = {}
        for c in items:
            remaining.setdefault(c.id, []).append(c)
        out: list[Condition] = []
        history = list(before or [])[-max_run:]
        while remaining:
            blocked = (
                history[-1]
                if len(history) >= max_run and len(set(history[-max_run:])) == 1
                else None
            )
            ids = sorted(k for k in remaining if k != blocked)
            if not ids:
                break
            weights = np.array([len(remaining[k]) for k in ids], dtype=float)
            k = ids[int(rng.choice(len(ids), p=weights / weights.sum()))]
            out.append(remaining[k].pop())
            if not remaining[k]:
                del remaining[k]
            history.append(k)
        if len(out) == len(items):
            return out
    raise ValueError(f"no order of these conditions keeps runs to at most {max_run}")


def run_lengths(ids: list[str]) -> list[int]:
    """Lengths of the runs of identical consecutive ids."""
    runs: list[int] = []
    for i, x in enumerate(ids):
        if i and ids[i - 1] == x:
            runs[-1] += 1
        else:
            runs.append(1)
    return runs


def _blocked(
    study: Study, conditions: list[Condition], participant_number: int, rng: np.random.Generator
) -> list[tuple[int, Condition]]:
    d = study.design
    factor = next(f for f in study.within_factors if f.name == d.blocked_by)
    order = williams_row(len(factor.levels), participant_number)
    out: list[tuple[int, Condition]] = []
    block = 0
    tail: list[str] = []
    for _ in range(d.blocks):
        for li in order:
            block += 1
            level = factor.levels[li]
            cells = [c for c in conditions if c.levels[factor.name] == level]
            seq = constrained_shuffle(
                cells * d.repeats, d.max_run if len(cells) > 1 else None, rng, tail
            )
            tail = [c.id for c in seq]
            out += [(block, c) for c in seq]
    return out


def _attention_levels(study: Study, conditions: list[Condition]) -> dict[str, float]:
    if study.attention and study.attention.levels is not None:
        base = dict(conditions[len(conditions) // 2].levels)
        base.update(study.attention.levels)
        return base
    return dict(conditions[len(conditions) // 2].levels)


class _Assigner:
    """Hands out recordings to trials: `cycle`, `random` or `by_condition`.

    by_condition: the r-th occurrence of condition k plays recording (offset + r + k) mod N,
    so over N occurrences every condition sees every recording once, and at any round the
    conditions play different recordings. Practice trials cycle on their own, leaving the
    main trials' assignment untouched.
    """

    def __init__(self, study: Study, rng: np.random.Generator):
        self.ids = study.replay_ids
        self.mode = study.assignment
        self.cond_index = {c.id: k for k, c in enumerate(study.conditions)}
        self.offset = int(rng.integers(0, len(self.ids)))
        self.rng = rng
        self.k = 0
        self.k_practice = 0
        self.deck: list[str] = []
        self.seen: dict[str, int] = {}

    def replay_for(self, cond: Condition, practice: bool = False) -> str:
        n = len(self.ids)
        if practice:
            self.k_practice += 1
            return self.ids[(self.offset + n // 2 + self.k_practice - 1) % n]
        if self.mode == "by_condition":
            r = self.seen.get(cond.id, 0)
            self.seen[cond.id] = r + 1
            return self.ids[(self.offset + r + self.cond_index[cond.id]) % n]
        if self.mode == "random":
            if not self.deck:
                self.deck = [self.ids[i] for i in self.rng.permutation(n)]
            return self.deck.pop()
        rid = self.ids[(self.offset + self.k) % n]
        self.k += 1
        return rid

    def next_for_prompt(self) -> str:
        """A recording whose prompt an attention check shows (does not consume a stimulus)."""
        return self.ids[(self.offset + self.k + len(self.seen)) % len(self.ids)]
