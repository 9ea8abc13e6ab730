"""Malformed study files: each gets one exact message naming the file, key path and problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from uxlab.errors import UxlabError
from uxlab.study import StudyError, load_study, parse_study

BAD = Path(__file__).parent / "data" / "bad_studies"

# file (without .toml) -> the message after "<path>:": the line of the key at fault (its
# table's header when the key is missing), then the key path and the problem
EXPECTED = {
    "negative_level": "19: [factors].ttft_ms[2]: -5 is negative",
    "unknown_section": "12: [stimulus]: unknown section (did you mean [stimuli]?)",
    "unknown_key_design": "25: [design].max_runs: unknown key (did you mean 'max_run'?)",
    "unknown_factor": "19: [factors].ttft: not a profile parameter (did you mean 'ttft_ms'?)",
    "missing_corpus": "13: [stimuli].corpus: 'no-such-folder' does not exist "
    "(looked for {bad}/no-such-folder)",
    "bad_order": "24: [design].order: 'latin' is not allowed (did you mean 'latin-square'?)",
    "blocked_without_factor": '21: [design].blocked_by: missing: order = "blocked" needs the '
    "factor to block by",
    "repeated_level": "19: [factors].ttft_ms[2]: 400 repeats level 1",
    "level_not_number": "19: [factors].ttft_ms[1]: 'fast' is not a number",
    "empty_levels": "19: [factors].ttft_ms: has no levels",
    "likert_scale_too_small": "39: [[questions]][1].scale: 1 must be at least 2",
    "acceptable_outside_scale": "41: [[questions]][1].acceptable_at: 7 is outside the scale 1..5",
    "bad_question_type": "31: [[questions]][0].type: 'yes-no' is not allowed "
    "(did you mean 'yesno'?)",
    "duplicate_question_id": "36: [[questions]][1].id: 'acceptable' is used by another question",
    "attention_unknown_question": "57: [attention].question: 'acceptible' is not a per-trial "
    "question (did you mean 'acceptable'?)",
    "attention_bad_answer": "58: [attention].answer: 'nope' is not an answer to 'acceptable'; "
    "expected one of: yes, no",
    "missing_texts_consent": "8: [texts].consent: missing (required)",
    "seed_not_integer": "6: [study].seed: 'eleven' is not a whole number",
    "not_toml": "21: not valid TOML: Expected ']' at the end of a table declaration (column 8)",
    "bad_profile_key": "17: [profile].ttfft: unknown key (did you mean 'ttft'?)",
    "bad_assignment": "14: [stimuli].assignment: 'cyclic' is not allowed (did you mean 'cycle'?)",
    "timeout_negative": "51: [abandon].timeout_s: -1 must be positive (or leave it out)",
    "labels_wrong_count": "40: [[questions]][1].labels: needs 2 strings (the two end labels), "
    "got ['Very slow']",
    "yes_means_wrong": "33: [[questions]][0].yes_means: 'good' is not allowed "
    "(one of 'acceptable', 'too_slow')",
    "unknown_question_key": "33: [[questions]][0].scale: not used by a yesno question",
    "chunk_tokens_fraction": "20: [factors].chunk_tokens[1]: 2.5 is not a whole number",
    "study_id_spaces": "3: [study].id: 'my study' may hold only letters, digits, '-', '_', '.'",
    "max_run_zero": "25: [design].max_run: 0 must be at least 1",
    "rho_out_of_range": "20: [factors].rho[1]: 1.5 is not a valid level: 1.5 is out of range "
    "(-1 < rho < 1)",
}


def test_every_bad_file_has_an_expected_message():
    files = {p.stem for p in BAD.glob("*.toml")} - {"good"}
    assert files == set(EXPECTED)
    assert len(files) >= 20


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_study_message(name):
    path = BAD / f"{name}.toml"
    with pytest.raises(StudyError) as info:
        load_study(path)
    expected = EXPECTED[name].format(bad=BAD.resolve())
    assert str(info.value) == f"{path}:{expected}"
    assert isinstance(info.value, UxlabError)


def test_the_good_file_loads():
    study = load_study(BAD / "good.toml")
    assert [c.id for c in study.conditions] == [
        "ttft_ms=100", "ttft_ms=400", "ttft_ms=1600", "ttft_ms=3200",
    ]  # fmt: skip
    assert study.replay_ids == ["tiny-a", "tiny-b", "tiny-c"]
    assert study.prompt_for("tiny-b") == "Name three colours."
    assert [q.id for q in study.trial_questions] == ["acceptable", "speed"]
    assert study.end_questions[0].id == "comments"


def test_missing_file_and_corpus_with_a_bad_replay(tmp_path):
    with pytest.raises(StudyError, match="no such study file"):
        load_study(tmp_path / "nope.toml")
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "broken.jsonl").write_text('{"type": "chunk"}\n')
    text = (BAD / "good.toml").read_text().replace('corpus = "corpus"', 'corpus = "c"')
    with pytest.raises(StudyError, match=r"\[stimuli\].corpus: 1 replay file\(s\) do not load"):
        parse_study(text, tmp_path / "s.toml")


def test_stimuli_files_pick_recordings_and_must_exist(tmp_path):
    text = (
        (BAD / "good.toml")
        .read_text()
        .replace(
            'corpus = "corpus"',
            f'corpus = "{(BAD / "corpus").as_posix()}"\nfiles = ["tiny-c.jsonl"]',
        )
    )
    assert parse_study(text, tmp_path / "s.toml").replay_ids == ["tiny-c"]
    with pytest.raises(StudyError, match=r"\[stimuli\].files\[0\]: 'x.jsonl' is not a replay"):
        parse_study(text.replace("tiny-c.jsonl", "x.jsonl"), tmp_path / "s.toml")
