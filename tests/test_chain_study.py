"""A chain study end to end: the study file, bad chain studies, the session path (simulated
participants, the store, the export with abandon_step and e2e_ms) and the multiplication
answer for both simulated truths."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest
from helpers.shared import built_once
from helpers.study_said import assert_said_at_key

from analysis.chains import MODELS, chain_judgements, fit_multiplication
from uxlab.kinds.chain import step_at_ms
from uxlab.simulate import PopulationTruth, simulate_cohort
from uxlab.store import Store
from uxlab.store.export import export_db
from uxlab.study import StudyError, load_study, parse_study

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "studies" / "agent-chain.toml"


def test_the_reference_chain_study_crosses_per_call_ttft_with_length() -> None:
    study = load_study(STUDY)
    assert study.kind.name == "chain" and sorted(study.kind.chains) == ["bugfix", "sales", "trip"]
    assert study.replay_ids == ["bugfix", "sales", "trip"]
    names = [f.name for f in study.factors]
    assert names == ["call_ttft_ms", "n_steps", "pause_ms"]
    assert len(study.conditions) == 5 * 4
    assert study.prompt_for("trip").startswith("Plan me a weekend in Porto")
    # each call's profile: the study profile with the per-call TTFT
    assert (
        study.profile_for({"call_ttft_ms": 600, "n_steps": 4, "pause_ms": 800}).to_table()["ttft"]
        == study.profile.with_factors({"ttft_ms": 600}).to_table()["ttft"]
    )


def _variant(old: str, new: str, source: Path = STUDY) -> str:
    text = source.read_text(encoding="utf-8")
    assert old in text, old
    return text.replace(old, new)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "n_steps = [1, 2, 4, 6]",
            "n_steps = [1, 2, 9]",
            "[factors].n_steps[2]: 9 model calls: chain 'sales' has only 6 (use 1..6)",
        ),
        (
            "n_steps = [1, 2, 4, 6]",
            "n_steps = [1, 2.5]",
            "[factors].n_steps[1]: 2.5 is not a whole number of model calls (1 or more)",
        ),
        (
            'chains = "../replays/chains"',
            'chains = "../replays/no-chains"',
            "[stimuli].chains: '../replays/no-chains' does not exist",
        ),
        (
            'chains = "../replays/chains"',
            'corpus = "../replays/chat"',
            '[stimuli].corpus: not used with kind = "chain": name the chain folder with '
            'chains = "..."',
        ),
        (
            "call_ttft_ms = [150,",
            "call_ttft = [150,",
            "[factors].call_ttft: not a profile parameter (did you mean 'call_ttft_ms'?)",
        ),
        (
            "pause_ms = [800]",
            "pause_ms = [-800]",
            "[factors].pause_ms[0]: -800 is negative",
        ),
    ],
)
def test_bad_chain_studies_name_the_key_and_the_fix(old, new, message) -> None:
    text = _variant(old, new)
    with pytest.raises(StudyError) as info:
        parse_study(text, STUDY)
    assert_said_at_key(info.value, STUDY, text, message)


def test_chain_factors_need_a_chain_study() -> None:
    source = ROOT / "studies" / "ttft-threshold.toml"
    text = _variant("[factors]\n", "[factors]\nn_steps = [1, 2]\n", source)
    with pytest.raises(StudyError) as info:
        parse_study(text, source)
    message = "[factors].n_steps[0]: 'n_steps' is a chain factor: use it with "
    assert_said_at_key(info.value, source, text, message + '[stimuli] kind = "chain"')


def test_a_broken_chain_file_is_named_in_the_study_error(tmp_path) -> None:
    chains = tmp_path / "chains"
    chains.mkdir()
    (chains / "x.chain.json").write_text('{"format": "uxlab.chain/1", "id": "x"}')
    study = tmp_path / "s.toml"
    study.write_text(_variant('"../replays/chains"', '"chains"'))
    with pytest.raises(
        StudyError,
        match=r"\[stimuli\]\.chains: does not load: .*x\.chain\.json: "
        r"prompt: must be a non-empty text",
    ):
        load_study(study)


def _simulate(tmp_path: Path, k: float, n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    study = load_study(STUDY)
    truth = dataclasses.replace(PopulationTruth(), threshold_ms=2400.0, chain_k=k)
    db = tmp_path / f"k{k:g}.sqlite"
    with Store.open(db, durable=False) as store:
        simulate_cohort(study, store, n, seed=3, truth=truth)
    out = export_db(db, tmp_path / f"k{k:g}")
    return pd.read_csv(out["trials"]), pd.read_csv(out["events"])


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    return built_once(
        tmp_path_factory, "chain-sim", lambda tmp: {k: _simulate(tmp, k, 8) for k in (1.0, 0.0)}
    )


@pytest.mark.slow
def test_export_keeps_the_step_given_up_in_and_the_end_to_end_time(simulated) -> None:
    trials, events = simulated[1.0]
    cols = list(trials.columns)
    assert cols[cols.index("scheduled_end_ms") + 1 : cols.index("scheduled_end_ms") + 3] == [
        "e2e_ms",
        "abandon_step",
    ]
    done = trials[trials["outcome"] == "completed"]
    assert (done["e2e_ms"] - done["scheduled_end_ms"]).abs().max() < 1e-6  # virtual clock
    assert done["abandon_step"].isna().all()
    gave_up = trials[trials["outcome"] == "abandoned"]
    assert len(gave_up) > 10 and gave_up["e2e_ms"].isna().all()
    steps = events[events["kind"] == "step"]
    for row in gave_up.itertuples():
        mine = steps[
            (steps["session_id"] == row.session_id) & (steps["trial_index"] == row.trial_index)
        ]
        timings = [json.loads(d) for d in mine["data"]]
        assert step_at_ms(timings, row.t_abandon_ms) == row.abandon_step
        assert timings[-1]["step"] == row.abandon_step  # no step begins after giving up
        assert timings[-1]["start_ms"] <= row.t_abandon_ms
    # per-step timings for every trial: calls carry their TTFT, pauses their tool
    first = [json.loads(d) for d in steps[steps["trial_index"] == 0]["data"]][:3]
    assert [t["step"] for t in first] == [0, 1, 2]
    call_ttfts = {t["ttft_ms"] for t in first if t["step_kind"] == "call"}
    assert call_ttfts == {float(trials.loc[0, "call_ttft_ms"])}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("k_true", "verdict", "preferred"),
    [(1.0, "multiplies", MODELS[1]), (0.0, "per-call", MODELS[2])],
)
def test_the_simulated_study_answers_the_multiplication_question(
    simulated, k_true, verdict, preferred
) -> None:
    trials, _ = simulated[k_true]
    fit = fit_multiplication(chain_judgements(trials), n_boot=300, seed=0)
    assert fit.k_ci_[0] <= k_true <= fit.k_ci_[1]
    assert fit.verdict() == verdict
    assert fit.preferred_ == preferred


@pytest.mark.slow
def test_the_report_section_reads_the_export(simulated) -> None:
    from analysis.chains import chain_section
    from analysis.report.chains_part import chain_blocks
    from analysis.report.render import render_markdown

    trials, _ = simulated[0.0]
    part = chain_section(trials, n_boot=100, seed=0)
    markdown = render_markdown(chain_blocks(part), "chains")
    assert "## Agent chains: does latency multiply?" in markdown
    assert "No, latency does not multiply" in markdown
    assert "| per-call (k = 0) |" in markdown
    assert chain_blocks(None) == []
