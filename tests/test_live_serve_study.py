"""`uxlab serve --study`: request i plays trial i of a participant's list."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from live_servers import serve_in_thread

from uxlab.cli import main
from uxlab.clock import VirtualClock
from uxlab.live.serve import ServeConfig, build_app
from uxlab.study import design_trials, load_study
from uxlab.study.serve_picker import study_picker
from uxlab.study.stimulus import trial_schedule

QUICKSTART = Path(__file__).resolve().parents[1] / "studies" / "quickstart.toml"


def study_config(study, trials) -> ServeConfig:
    """Serving the trial list on a virtual clock: answers come at once, the schedules are
    still the trials' own."""
    return ServeConfig(
        list(study.corpus.recordings),
        lambda r, s: r,
        picker=study_picker(study, trials),
        clock=VirtualClock(),
    )


def test_requests_walk_the_participant_trial_list():
    study = load_study(QUICKSTART)
    trials = design_trials(study, "p-test", 2)
    config = study_config(study, trials)
    with serve_in_thread(build_app(config)) as base, httpx.Client(base_url=base) as http:
        for trial in trials[:3]:
            r = http.post(
                "/v1/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "anything"}]},
            )
            assert r.status_code == 200
            assert r.headers["x-uxlab-trial-index"] == str(trial.index)
            assert r.headers["x-uxlab-condition"] == trial.condition_id
            assert int(r.headers["x-uxlab-seed"]) == trial.seed
            expected = trial_schedule(study, trial)
            assert r.json()["choices"][0]["message"]["content"] == expected.text
    served = list(config.served)
    assert [s.schedule.header.retime for s in served] == [
        trial_schedule(study, t).header.retime for t in trials[:3]
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["replays", "--study", str(QUICKSTART), "--participant", "p"], "not both"),
        (
            ["--study", str(QUICKSTART), "--participant", "p", "--ttft", "300"],
            "--ttft: with --study",
        ),
        (["--study", str(QUICKSTART)], "needs --participant"),
        ([], "give a CORPUS"),
    ],
)
def test_serve_option_errors(argv, message, capsys):
    assert main(["serve", *argv]) == 2
    assert message in capsys.readouterr().err


def test_attention_checks_are_served_as_their_text_and_marked():
    study = load_study(QUICKSTART)
    trials = design_trials(study, "p-test", 2)
    checks = [t for t in trials if t.attention is not None]
    assert checks, "the quickstart has attention checks"
    config = study_config(study, trials)
    with serve_in_thread(build_app(config)) as base, httpx.Client(base_url=base) as http:
        for trial in trials[: checks[0].index + 1]:
            r = http.post(
                "/v1/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "anything"}]},
            )
            assert r.status_code == 200
            is_check = trial.attention is not None
            assert r.headers["x-uxlab-attention-check"] == ("1" if is_check else "0")
            if is_check:
                assert r.headers["x-uxlab-replay-id"] == "attention-check"
                text = r.json()["choices"][0]["message"]["content"]
                assert text == trial_schedule(study, trial).text and text.strip()
