"""`uxlab study check` and the shipped study files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from uxlab.cli import main
from uxlab.study import design_trials, load_study
from uxlab.study.estimate import estimate_duration
from uxlab.study.stimulus import trial_schedule

ROOT = Path(__file__).parent.parent
STUDIES = ROOT / "studies"
GOOD = Path(__file__).parent / "data" / "bad_studies" / "good.toml"


@pytest.mark.parametrize("name", ["quickstart", "ttft-threshold", "itl-smoothness"])
def test_shipped_studies_check_at_80_columns(name, capsys):
    assert main(["study", "check", str(STUDIES / f"{name}.toml")]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{STUDIES / name}.toml: valid")
    for section in ("Conditions (", "Trials per participant:", "Estimated duration:",
                    "Trial list for P-EXAMPLE"):  # fmt: skip
        assert section in out
    # the file path line may be long on a deep checkout; everything else fits 80 columns
    assert all(len(line) <= 80 for line in out.splitlines()[1:])


def test_shipped_study_designs():
    ttft = load_study(STUDIES / "ttft-threshold.toml")
    levels = np.array(ttft.factors[0].levels)
    assert ttft.factors[0].name == "ttft_ms" and levels[0] <= 100 and levels[-1] >= 5000
    ratios = levels[1:] / levels[:-1]
    assert ratios.max() / ratios.min() < 1.1  # log-spaced
    assert any(150 <= x <= 250 for x in levels) and any(500 <= x <= 950 for x in levels)

    itl = load_study(STUDIES / "itl-smoothness.toml")
    levels = itl.factors[0].levels
    assert itl.factors[0].name == "itl_ms" and levels[0] <= 5 and levels[-1] >= 150
    assert 30 in levels and itl.design.order == "latin-square"

    quick = load_study(STUDIES / "quickstart.toml")
    minutes = estimate_duration(quick, design_trials(quick, "P-X")).total_s / 60
    assert 3 <= minutes <= 7


def test_check_prints_the_whole_list_for_a_participant(capsys):
    assert main(["study", "check", str(GOOD), "--participant", "P-7K3QX", "--number", "2"]) == 0
    out = capsys.readouterr().out
    study = load_study(GOOD)
    trials = design_trials(study, "P-7K3QX", 2)
    assert "Trial list for P-7K3QX (number 2, seed 11)" in out
    assert "Trials per participant: 21 = 2 practice + 16 main + 3 attention" in out
    listing = out.split("Trial list for")[1].splitlines()
    rows = [line for line in listing if line[:4].strip().isdigit()]
    assert len(rows) == len(trials)
    for row, t in zip(rows, trials, strict=True):
        assert row.split()[0] == str(t.index) and row.split()[-1] == str(t.seed)
    assert "more; --participant P" not in out


def test_check_reports_a_bad_file_and_a_bad_participant(capsys):
    bad = GOOD.parent / "negative_level.toml"
    assert main(["study", "check", str(bad)]) == 2
    assert "[factors].ttft_ms[2]: -5 is negative" in capsys.readouterr().err
    assert main(["study", "check", str(GOOD), "--participant", "Jane Doe"]) == 2
    assert "never a name" in capsys.readouterr().err


def test_trial_schedule_is_the_shaped_recording_with_the_trial_seed():
    study = load_study(GOOD)
    trials = design_trials(study, "P-SHAPE")
    main_trial = next(t for t in trials if t.attention is None and not t.practice)
    schedule = trial_schedule(study, main_trial)
    assert schedule.header.retime["seed"] == main_trial.seed
    assert schedule.header.retime["from"] == main_trial.replay_id
    first = next(c.t_ms for c in schedule.chunks if c.text.strip())
    assert first == pytest.approx(main_trial.levels["ttft_ms"], abs=1.0)
    check = next(t for t in trials if t.attention is not None)
    assert trial_schedule(study, check).text == study.attention.text


def test_check_wraps_long_lines_at_80_columns_and_keeps_the_mid_chain_steps(tmp_path, capsys):
    from test_chain_questions import study_file

    asked = """
[chain]
ask_after_steps = [1, 2, 3, 4, 5]

[[questions]]
id = "progress_is_acceptable_so_far"
type = "yesno"
text = "Is the assistant getting on well so far?"
when = "step"

[[questions]]
id = "overall_comments_on_the_assistant"
type = "text"
text = "Anything else?"
when = "end"
"""
    path = study_file(tmp_path, n_steps="6", ttft="150, 300", extra=asked)
    text = path.read_text(encoding="utf-8").replace(
        'title = "Mid-chain questions"',
        'title = "Mid-chain questions: how long may each step of a long agent task take?"',
    )
    path.write_text(text, encoding="utf-8")
    assert main(["study", "check", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]  # the path line may be long
    assert all(len(line) <= 80 for line in lines), "\n".join(lines)
    head = lines[: lines.index(next(x for x in lines if x.startswith("Trial list for")))]
    assert not any("…" in line for line in head)  # wrapped, not cut
    joined = " ".join(line.strip() for line in head)
    assert (
        "questions: too_slow (yesno), progress_is_acceptable_so_far (yesno, after steps "
        "1, 2, 3, 4, 5), overall_comments_on_the_assistant (text, end)"
    ) in joined
    assert "how long may each step of a long agent task take?" in joined
    # A continuation starts under the first question, not at the margin.
    at = next(i for i, x in enumerate(lines) if x.startswith("  questions: "))
    assert lines[at + 1].startswith(" " * len("  questions: ")) and lines[at + 1][13] != " "
