"""`uxlab serve --study` refuses studies it cannot play: agent chains and live studies."""

from __future__ import annotations

from pathlib import Path

import pytest

from uxlab.cli import main
from uxlab.errors import UxlabError
from uxlab.live.serve import ServeError
from uxlab.study import design_trials, load_study
from uxlab.study.serve_picker import serve_study_problem, study_picker

STUDIES = Path(__file__).resolve().parents[1] / "studies"


@pytest.mark.parametrize(
    ("name", "why"),
    [("agent-chain.toml", "agent chains"), ("live-openai.toml", "live model's answers")],
)
def test_chain_and_live_studies_are_refused_naming_the_file(name, why):
    study = load_study(STUDIES / name)
    trials = design_trials(study, "p-test", 1)
    with pytest.raises(ServeError) as info:
        study_picker(study, trials)
    assert isinstance(info.value, UxlabError)
    message = str(info.value)
    assert message.startswith(f"{study.path}: cannot serve study {study.id!r}: ")
    assert why in message and "uxlab run" in message


def test_a_single_stream_study_is_served():
    study = load_study(STUDIES / "quickstart.toml")
    assert serve_study_problem(study) is None
    pick = study_picker(study, design_trials(study, "p-test", 1))
    assert pick(0, None).schedule.chunks


@pytest.mark.parametrize("name", ["agent-chain.toml", "live-openai.toml"])
def test_the_serve_command_refuses_before_listening(name, capsys):
    path = STUDIES / name
    assert main(["serve", "--study", str(path), "--participant", "p", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: cannot serve study" in err and "serving" not in err
