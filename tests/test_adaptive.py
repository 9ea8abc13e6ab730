"""Adaptive procedures: staircase rules, QUEST+ placement and posterior, rebuild from history,
the study-file options and their errors, and a small validation against constant stimuli."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from helpers.study_said import assert_said_at_key

from psychometric_function import psi as p_too_slow
from uxlab.study import StudyError, parse_study
from uxlab.study.adaptive import (
    AdaptivePlan,
    AdaptiveSpec,
    CommittedTrial,
    QuestPlus,
    Staircase,
    make_procedure,
    replay,
    staircase_target,
    stimulus_grid,
)

REPO = Path(__file__).resolve().parents[1]


def test_grid_is_log_spaced_between_the_bounds():
    grid = stimulus_grid(100, 6400, 7)
    assert grid.tolist() == [100, 200, 400, 800, 1600, 3200, 6400]


def test_one_up_two_down_steps_and_reversals_by_hand():
    spec = AdaptiveSpec("staircase", 100, 6400, grid_points=7, start_step=2)
    s = Staircase(spec, down=2)
    assert s.next_level() == 100
    s.update(100, False)
    assert s.next_level() == 100  # one acceptable answer: not yet
    s.update(100, False)
    assert s.next_level() == 400  # two in a row: up by the start step (2 grid steps)
    s.update(400, True)  # one "too slow": down, a reversal, the step halves to 1
    assert s.reversals == [400] and s.step == 1 and s.next_level() == 200
    s.update(200, False)
    s.update(200, False)
    assert s.reversals == [400, 200] and s.next_level() == 400
    s.update(400, True)
    s.update(200, True)  # down again: no reversal, clamps at the bottom eventually
    assert s.reversals == [400, 200, 400] and s.next_level() == 100
    s.update(100, True)
    assert s.next_level() == 100


def test_fixed_step_rule_never_halves():
    spec = AdaptiveSpec("staircase", 100, 6400, grid_points=7, step_rule="fixed")
    s = Staircase(spec, down=1)
    for answer in (False, True, False, True):
        s.update(s.next_level(), answer)
    assert s.step == 1 and len(s.reversals) == 3


def test_staircase_converges_on_its_target():
    """A 1-up/3-down staircase hovers where P(too slow) = 1 - 0.5**(1/3) (20.6%)."""
    rng = np.random.default_rng(3)
    m, w = math.log(900.0), 1.5
    ests = []
    for _ in range(20):
        s = Staircase(AdaptiveSpec("staircase", 100, 5000, down=3, max_reversals=40), down=3)
        for _ in range(120):
            x = s.next_level()
            s.update(x, bool(rng.random() < p_too_slow(x, m, w, 0.0, 0.0)))
        ests.append(math.log(s.estimate().threshold_ms))
    target = staircase_target(3)
    truth = math.exp(m + w * math.log(target / (1 - target)) / (2 * math.log(9)))
    assert abs(math.exp(np.mean(ests)) / truth - 1) < 0.12


def test_quest_places_trials_near_the_threshold_and_its_interval_covers_it():
    q = QuestPlus(AdaptiveSpec("quest", 100, 5000))
    first = q.next_level()
    assert 100 < first < 5000  # the flat prior's entropy is best split inside the range
    truth, covered, errors = 700.0, 0, []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        q = QuestPlus(AdaptiveSpec("quest", 100, 5000))
        levels = []
        for _ in range(60):
            x = q.next_level()
            levels.append(x)
            q.update(x, bool(rng.random() < p_too_slow(x, math.log(truth), 1.2, 0.02, 0.02)))
        est = q.estimate()
        covered += est.ci_low_ms < truth < est.ci_high_ms
        errors.append(math.log(est.threshold_ms / truth))
        assert abs(np.median(np.log(levels[30:])) - math.log(truth)) < 1.0
    assert covered >= 17  # a 95% credible interval: 19/20 expected
    assert abs(np.mean(errors)) < 0.08 and np.std(errors) < 0.2
    post = q.state()["posterior"]
    m_w = np.asarray(post["m_w"])
    assert m_w.shape == (len(post["m_log"]), len(post["w_log"]))
    assert m_w.sum() == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("procedure", ["quest", "staircase", "interleaved"])
def test_a_procedure_rebuilt_from_history_continues_identically(procedure):
    """Resume: replaying the committed responses gives the same next level as running on."""
    spec = AdaptiveSpec(procedure, 100, 5000)
    rng = np.random.default_rng(5)
    live = make_procedure(spec, seed=9)
    history = []
    for _ in range(25):
        x = live.next_level()
        r = bool(rng.random() < p_too_slow(x, math.log(600), 1.5, 0.02, 0.02))
        live.update(x, r)
        history.append((x, r))
        again = replay(spec, history, seed=9)
        assert again.next_level() == live.next_level()
    assert replay(spec, history, seed=9).state() == live.state()


def _study(tmp_path: Path, factor: str, questions: str = "") -> str:
    questions = questions or (
        '[[questions]]\nid = "ok"\ntype = "yesno"\ntext = "Acceptable?"\nyes_means = "acceptable"\n'
    )
    return f"""
[study]
id = "a"
title = "A"
seed = 1
[texts]
consent = "c"
instructions = "i"
[stimuli]
corpus = "{REPO / "replays" / "chat"}"
files = ["chat-one-liner.jsonl"]
{factor}
{questions}
"""


def test_study_file_declares_a_procedure_per_factor(tmp_path):
    text = _study(
        tmp_path,
        '[factors.ttft_ms]\nlevels = [100, 5000]\nprocedure = "staircase"\ndown = 3\ngrid = 31\n'
        "[factors.itl_ms]\nlevels = [20, 40]",
    )
    study = parse_study(text, tmp_path / "a.toml")
    plan = AdaptivePlan.for_study(study)
    assert plan is not None and plan.factor == "ttft_ms" and plan.other_factors == ("itl_ms",)
    assert plan.spec.down == 3 and plan.spec.grid_points == 31 and plan.question == "ok"
    assert plan.track({"ttft_ms": 100, "itl_ms": 40}) == "itl_ms=40"
    done = [
        CommittedTrial(0, True, False, {"ttft_ms": 100, "itl_ms": 40}, "completed", {"ok": "no"}),
        CommittedTrial(1, False, False, {"ttft_ms": 200, "itl_ms": 40}, "abandoned", {}),
        CommittedTrial(2, False, False, {"ttft_ms": 300, "itl_ms": 20}, "completed", {"ok": "no"}),
        CommittedTrial(3, False, True, {"ttft_ms": 800, "itl_ms": 40}, "completed", {"ok": "no"}),
        CommittedTrial(4, False, False, {"ttft_ms": 400, "itl_ms": 40}, "completed", {"ok": "yes"}),
    ]
    # practice and attention checks feed nothing; a give-up counts as too slow; per track
    assert plan.history(done, "itl_ms=40") == [(200.0, True), (400.0, False)]
    assert plan.history(done, "itl_ms=20") == [(300.0, True)]


@pytest.mark.parametrize(
    ("factor", "questions", "message"),
    [
        (
            '[factors.ttft_ms]\nlevels = [100, 5000]\nprocedure = "quest"',
            '[[questions]]\nid = "s"\ntype = "likert"\ntext = "t"\nscale = 5\n',
            "[factors.ttft_ms].procedure: 'quest' needs a per-trial yes/no question",
        ),
        (
            '[factors.ttft_ms]\nlevels = [100, 5000]\nprocedure = "qest"',
            "",
            "[factors.ttft_ms].procedure: 'qest' is not allowed (did you mean 'quest'?)",
        ),
        (
            "[factors.ttft_ms]\nlevels = [100, 5000]\ndown = 3",
            "",
            "[factors.ttft_ms].down: only used with an adaptive procedure",
        ),
        (
            '[factors.ttft_ms]\nlevels = [100, 5000]\nprocedure = "quest"\ndown = 3',
            "",
            "[factors.ttft_ms].down: only used with procedure = 'staircase', not 'quest'",
        ),
        (
            '[factors.ttft_ms]\nlevels = [800]\nprocedure = "quest"',
            "",
            "[factors.ttft_ms].levels: procedure 'quest' needs at least two levels above 0",
        ),
        (
            '[factors.ttft_ms]\nlevels = [100, 5000]\nprocedure = "quest"\n'
            '[factors.itl_ms]\nlevels = [10, 90]\nprocedure = "staircase"',
            "",
            "[factors.itl_ms].procedure: only one factor may be adaptive; 'ttft_ms' already is",
        ),
        (
            '[factors.rho]\nlevels = [0.1, 0.5]\nprocedure = "quest"',
            "",
            "[factors.rho].procedure: adaptive procedures search a latency in ms",
        ),
        (
            '[factors.ttft_ms]\nlevels = [100, 5000]\nprocedure = "quest"\nbetween = true',
            "",
            "[factors.ttft_ms].procedure: an adaptive factor varies within a participant",
        ),
    ],
)
def test_bad_adaptive_declarations_name_the_key(tmp_path, factor, questions, message):
    text = _study(tmp_path, factor, questions)
    with pytest.raises(StudyError) as err:
        parse_study(text, tmp_path / "a.toml")
    assert_said_at_key(err.value, tmp_path / "a.toml", text, message)


def test_the_bundled_adaptive_study_loads():
    from uxlab.study import load_study

    study = load_study(REPO / "studies" / "ttft-quest.toml")
    plan = AdaptivePlan.for_study(study)
    assert plan is not None and plan.spec.procedure == "quest"


def test_validation_quest_beats_constant_stimuli_at_the_same_budget():
    """Small version of benchmarks/adaptive_validation.py: 30 observers, 40 trials each."""
    from benchmarks.support.adaptive_validation import draw_observers, shares_within

    observers = draw_observers(30, seed=1)
    quest = shares_within("quest", [40], observers, seed=1)[40]
    constant = shares_within("constant", [40], observers, seed=1)[40]
    assert quest > constant
    assert quest >= 0.5
