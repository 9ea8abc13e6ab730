"""The bundled agent-task cost corpus (`replays/agent-tasks`): rebuilt byte for byte, its
calls clean replay files with usage, its completed attempts playable as chains, and its
three mishaps read as the README says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pricing.tasks import find_chain_plans
from uxlab.kinds.chain.files import load_chain
from uxlab.kinds.chain.steps import ChainFormatError
from uxlab.streams import load_corpus

TASKS = Path(__file__).resolve().parents[1] / "replays" / "agent-tasks"


def test_rebuilding_the_agent_task_corpus_gives_the_same_bytes(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(TASKS / "build_agent_tasks.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    built = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    bundled = sorted(
        p.relative_to(TASKS)
        for p in TASKS.rglob("*")
        if p.is_file() and p.suffix in (".jsonl", ".json")
    )
    assert built == bundled and len(built) == 88
    for rel in built:
        assert (tmp_path / rel).read_bytes() == (TASKS / rel).read_bytes(), rel


def test_every_call_is_a_clean_replay_with_usage_and_the_outcomes_are_as_documented() -> None:
    corpus = load_corpus(TASKS)
    assert corpus.errors == [] and len(corpus) == 76
    assert all(r.end is not None and r.end.usage for r in corpus.recordings)
    plans, errors = find_chain_plans([TASKS])
    assert errors == [] and len(plans) == 12
    declared = {p.id: p.outcome for p in plans if p.outcome}
    assert declared == {"swift-mini-sales-2": "abandoned", "deep-reasoner-bugfix-2": "failed"}
    playable = []
    for plan in plans:
        try:
            playable.append(load_chain(plan.path).id)
        except ChainFormatError as exc:  # the abandoned attempt has no answer to play
            assert plan.id == "swift-mini-sales-2" and "final answer" in str(exc)
    assert len(playable) == 11
