"""The study file's typed model (`uxlab.study.loading.model`) says its problems as the hand
-written reader did: at the study-file key path, in the words users know, a factor's name
judged before its value, and a level finite. Each case is the bundled quickstart study with
one line changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from uxlab.study import StudyError, parse_study

QUICKSTART = Path(__file__).resolve().parents[1] / "studies" / "quickstart.toml"
LEVELS = "ttft_ms = [200, 1000, 3000]"


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        (LEVELS, '"ttft.ms" = [1, "x"]', "[factors].ttft.ms: not a profile parameter"),
        (LEVELS, 'practise = "x"', "[factors].practise: not a profile parameter"),
        (LEVELS, "ttft_ms = [200, inf]", "[factors].ttft_ms[1]: inf is not a finite number"),
        (LEVELS, "ttft_ms = [nan]", "[factors].ttft_ms[0]: nan is not a finite number"),
        (LEVELS, 'ttft_ms = [200, "x"]', "[factors].ttft_ms[1]: 'x' is not a number"),
        (LEVELS, "ttft_ms = []", "[factors].ttft_ms: has no levels"),
        (LEVELS, "ttft_ms = {levels = [1, true]}", "[factors.ttft_ms].levels[1]: True is not"),
        (LEVELS, "ttft_ms = {levels = [1], down = 9}", "[factors.ttft_ms].down: only used with"),
        (
            LEVELS,
            'ttft_ms = {levels = [1, 2], procedure = "staircase", down = 9}',
            "[factors.ttft_ms].down: 9 is too many (1 to 4)",
        ),
        ("repeats = 5", "repeats = 0", "[design].repeats: 0 must be at least 1"),
        ("repeats = 5", "repeats = 1.5", "[design].repeats: 1.5 is not a whole number"),
        ('order = "random"', "order = 3", "[design].order: 3 is not a string"),
        ("max_run = 2", "max_runs = 2", "[design].max_runs: unknown key (did you mean"),
        ('id = "quickstart"', 'id = "  "', "[study].id: is empty"),
        ("seed = 20260101", "seed = -1", "[study].seed: -1 is negative"),
        ('type = "yesno"', 'type = "yes"', "[[questions]][0].type: 'yes' is not allowed"),
        ("every = 6", "every = 1", "[attention].every: 1 must be at least 2"),
        ('key = "escape"', "timeout_s = 7200", "[abandon].timeout_s: 7200 s is not plausible"),
    ],
)
def test_a_problem_is_said_at_its_key_in_the_readers_words(old: str, new: str, said: str) -> None:
    text = QUICKSTART.read_text(encoding="utf-8")
    assert old in text
    variant = text.replace(old, new, 1)
    with pytest.raises(StudyError) as info:
        parse_study(variant, QUICKSTART)
    line = variant[: variant.index(new)].count("\n") + 1  # the changed line
    assert str(info.value).startswith(f"{QUICKSTART}:{line}: {said}"), str(info.value)


def test_a_huge_value_is_cut_short_in_the_message() -> None:
    text = QUICKSTART.read_text(encoding="utf-8").replace(
        "repeats = 5", f"repeats = '{'x' * 5000}'"
    )
    with pytest.raises(StudyError) as info:
        parse_study(text, QUICKSTART)
    assert len(str(info.value)) < len(str(QUICKSTART)) + 120
    assert "... is not a whole number" in str(info.value)


def test_a_missing_factors_section_is_a_missing_section() -> None:
    text = QUICKSTART.read_text(encoding="utf-8").replace("[factors]\n" + LEVELS, "")
    with pytest.raises(StudyError) as info:
        parse_study(text, QUICKSTART)
    assert str(info.value) == f"{QUICKSTART}: [factors]: missing section"
