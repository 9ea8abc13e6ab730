"""Trial design: Williams squares, order constraints, attention checks, reproducibility."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest

from uxlab.study import Trial, design_trials, load_study
from uxlab.study.design import run_lengths
from uxlab.study.latin import williams_row, williams_rows

CORPUS = Path(__file__).parent / "data" / "bad_studies" / "corpus"


def make_study(tmp_path: Path, factors: str, design: str, extra: str = "", stimuli: str = ""):
    text = f"""
[study]
id = "t"
title = "test"
seed = 5

[texts]
consent = "ok"
instructions = "go"

[stimuli]
corpus = "{CORPUS.as_posix()}"
{stimuli}

[factors]
{factors}

[design]
{design}

[[questions]]
id = "acceptable"
type = "yesno"
text = "Acceptable?"
{extra}
"""
    path = tmp_path / "study.toml"
    path.write_text(text)
    return load_study(path)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7, 8])
def test_williams_square_balances_positions_and_carry_over(n):
    rows = williams_rows(n)
    assert len(rows) == (n if n % 2 == 0 else 2 * n)
    per_position = len(rows) // n
    for pos in range(n):
        assert Counter(r[pos] for r in rows) == {c: per_position for c in range(n)}
    pairs = Counter((r[i], r[i + 1]) for r in rows for i in range(n - 1))
    expected = {(a, b) for a, b in itertools.permutations(range(n), 2)}
    assert set(pairs) == expected
    assert len(set(pairs.values())) == 1  # every ordered pair equally often


def test_latin_square_order_rotates_rows_by_participant_number(tmp_path):
    study = make_study(
        tmp_path, "ttft_ms = [100, 200, 400, 800]", 'order = "latin-square"\nrepeats = 1'
    )
    ids = [c.id for c in study.conditions]
    lists = [
        [t.condition_id for t in design_trials(study, f"P{k}", participant_number=k)]
        for k in range(1, 5)
    ]
    for k, seq in enumerate(lists, start=1):
        assert seq == [ids[i] for i in williams_row(4, k)]
    for pos in range(4):  # each condition once per position across the square
        assert sorted(seq[pos] for seq in lists) == sorted(ids)


def test_random_order_keeps_max_run_across_blocks_and_counts(tmp_path):
    study = make_study(
        tmp_path,
        "ttft_ms = [100, 800]\nitl_ms = [10, 50]",
        'order = "random"\nrepeats = 5\nblocks = 3\nmax_run = 1',
    )
    for k in range(1, 31):
        trials = design_trials(study, f"P-{k:03d}", participant_number=k)
        ids = [t.condition_id for t in trials]
        assert max(run_lengths(ids)) <= 1
        for b in (1, 2, 3):
            counts = Counter(t.condition_id for t in trials if t.block == b)
            assert counts == {c.id: 5 for c in study.conditions}


def test_same_inputs_same_list_and_other_inputs_differ(tmp_path):
    study = make_study(tmp_path, "ttft_ms = [100, 200, 400, 800]", "repeats = 4\nmax_run = 2")
    a = [t.to_dict() for t in design_trials(study, "P-AAAAA", 3)]
    b = [t.to_dict() for t in design_trials(study, "P-AAAAA", 3)]
    assert a == b
    assert a != [t.to_dict() for t in design_trials(study, "P-BBBBB", 3)]
    assert a != [t.to_dict() for t in design_trials(study, "P-AAAAA", 3, seed=6)]


def test_fixed_order_repeats_the_file_order(tmp_path):
    study = make_study(tmp_path, "ttft_ms = [300, 100, 200]", 'order = "fixed"\nrepeats = 2')
    ids = [t.condition_id for t in design_trials(study, "P1")]
    assert ids == ["ttft_ms=300", "ttft_ms=100", "ttft_ms=200"] * 2


def test_blocked_order_groups_one_level_per_block_counterbalanced(tmp_path):
    study = make_study(
        tmp_path,
        "itl_ms = [10, 30, 90]\nttft_ms = [200, 800]",
        'order = "blocked"\nblocked_by = "itl_ms"\nrepeats = 2',
    )
    first_levels = []
    for k in range(1, 7):
        trials = design_trials(study, f"P{k}", participant_number=k)
        by_block: dict[int, set[float]] = {}
        for t in trials:
            by_block.setdefault(t.block, set()).add(t.levels["itl_ms"])
        assert sorted(by_block) == [1, 2, 3]
        assert all(len(levels) == 1 for levels in by_block.values())
        assert len(trials) == 3 * 2 * 2
        first_levels.append(next(iter(by_block[1])))
    assert Counter(first_levels) == {10: 2, 30: 2, 90: 2}  # 6 participants, 3 levels


def test_attention_checks_every_n_never_first_in_a_block(tmp_path):
    attention = """
[attention]
every = 4
text = "Please answer 'No' to the next question."
question = "acceptable"
answer = "no"
"""
    study = make_study(
        tmp_path, "ttft_ms = [100, 400, 1600]", "repeats = 4\nblocks = 2\npractice = 3", attention
    )
    trials = design_trials(study, "P-CHECK", 2)
    main = [t for t in trials if not t.practice and t.attention is None]
    checks = [t for t in trials if t.attention is not None]
    assert len(main) == 24 and len(checks) == 24 // 4
    assert [t.index for t in trials] == list(range(len(trials)))
    assert all(t.practice and t.block == 0 for t in trials[:3])
    for t in checks:
        prev = trials[t.index - 1]
        assert prev.block == t.block and not prev.practice  # never first in its block
        assert t.replay_id is None and t.attention.answer == "no"
    # one check after every 4th main trial
    count = 0
    for t in trials:
        if t.attention is None and not t.practice:
            count += 1
        elif t.attention is not None:
            assert count % 4 == 0


def test_breaks_every_n_main_trials(tmp_path):
    study = make_study(tmp_path, "ttft_ms = [100, 400]", "repeats = 5\nbreak_every = 4")
    trials = design_trials(study, "P1")
    main_before = [sum(1 for u in trials[: t.index]) for t in trials if t.break_before]
    assert main_before == [4, 8]


@pytest.mark.parametrize("mode", ["cycle", "random", "by_condition"])
def test_recording_assignment(tmp_path, mode):
    study = make_study(
        tmp_path, "ttft_ms = [100, 400]", "repeats = 3", stimuli=f'assignment = "{mode}"'
    )
    trials = design_trials(study, "P-ASSIGN")
    ids = study.replay_ids
    rids = [t.replay_id for t in trials]
    if mode == "by_condition":
        per_cond = {
            c.id: [t.replay_id for t in trials if t.condition_id == c.id] for c in study.conditions
        }
        sets = [sorted(v) for v in per_cond.values()]
        assert sets[0] == sets[1] == sorted(ids)  # both conditions see the same recordings
    else:
        assert Counter(rids[:3]) == Counter(ids)  # all three used before any repeats
        if mode == "cycle":
            start = ids.index(rids[0])
            assert rids == [ids[(start + k) % 3] for k in range(len(rids))]
    assert all(t.prompt for t in trials)


def test_trial_round_trips_through_a_dict(tmp_path):
    study = make_study(tmp_path, "ttft_ms = [100, 400]", "repeats = 2")
    for t in design_trials(study, "P1"):
        assert Trial.from_dict(t.to_dict()) == t
