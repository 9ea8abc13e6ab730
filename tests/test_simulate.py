"""Simulated participants: the observer model against hand computation, and whole sessions
through StudySession, the store and the export on a virtual clock (determinism, truth
record, abandonment, resume of an adaptive session)."""

from __future__ import annotations

import asyncio
import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from uxlab.simulate import (
    Cues,
    Observer,
    PopulationTruth,
    pooled_thresholds_ms,
    simulate_cohort,
    simulate_session,
    study_truth,
)
from uxlab.store import Store
from uxlab.store.export import export_db
from uxlab.study import load_study

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def threshold_study():
    return load_study(REPO / "studies" / "ttft-threshold.toml")


@pytest.fixture(scope="module")
def quest_study():
    return load_study(REPO / "studies" / "ttft-quest.toml")


def _observer(**kw) -> Observer:
    truth = PopulationTruth(**kw)
    return Observer(truth, math.log(truth.threshold_ms), math.log(70.0), truth.patience_scale_ms)


def test_judgement_is_the_psychometric_function_of_the_shown_ttft():
    obs = _observer(guess=0.1, lapse=0.05, width_log=2.0)
    at = Cues(ttft_ms=800.0, median_gap_ms=30.0, gap_cv=0.3, end_ms=3000.0)
    assert obs.p_too_slow(at) == pytest.approx(0.1 + 0.85 * 0.5)
    # F = 0.9 at threshold * exp(width / 2)
    far = Cues(ttft_ms=800.0 * math.exp(1.0), median_gap_ms=30.0, gap_cv=0.3, end_ms=3000.0)
    assert obs.core_too_slow(far) == pytest.approx(0.9)


def test_streaming_cue_joins_by_probability_summation():
    obs = _observer()
    obs.use_itl = True
    cues = Cues(ttft_ms=800.0, median_gap_ms=70.0, gap_cv=0.0, end_ms=3000.0)
    assert obs.core_too_slow(cues) == pytest.approx(1 - 0.5 * 0.5)


def test_patience_gives_up_while_waiting_or_mid_stream_as_the_hazard_says():
    obs = _observer(patience_scale_ms=1000.0, patience_shape=2.0, streaming_hazard_ratio=0.25)
    e = float(np.random.default_rng(1).exponential())
    slow = Cues(ttft_ms=10_000.0, median_gap_ms=30.0, gap_cv=0.0, end_ms=20_000.0)
    assert obs.give_up_ms(slow, np.random.default_rng(1)) == pytest.approx(1000 * math.sqrt(e))
    fast = Cues(ttft_ms=500.0, median_gap_ms=30.0, gap_cv=0.0, end_ms=50_000.0)
    h_wait = 0.25  # (500 / 1000) ** 2
    want = 1000 * math.sqrt(h_wait + (e - h_wait) / 0.25)
    assert obs.give_up_ms(fast, np.random.default_rng(1)) == pytest.approx(want)
    short = Cues(ttft_ms=500.0, median_gap_ms=30.0, gap_cv=0.0, end_ms=600.0)
    assert obs.give_up_ms(short, np.random.default_rng(1)) is None  # the answer ended first


def test_likert_rating_is_latent_logistic_around_the_cut_points():
    obs = _observer()
    at = Cues(ttft_ms=800.0, median_gap_ms=30.0, gap_cv=0.0, end_ms=3000.0)
    rng = np.random.default_rng(0)
    ratings = np.array([obs.rating(at, 5, rng) for _ in range(4000)])
    # latent = 0 + Logistic: P(rating >= 4) = P(L > 1) = 1 / (1 + e)
    assert (ratings >= 4).mean() == pytest.approx(1 / (1 + math.e), abs=0.025)


def test_pooled_thresholds_of_a_population():
    no_spread = pooled_thresholds_ms(800, 2 * math.log(9) / 2, 0.0)
    assert no_spread["0.5"] == pytest.approx(800, rel=1e-3)
    assert no_spread["0.75"] == pytest.approx(800 * 3**0.5, rel=1e-3)  # logit(.75)=ln 3
    spread = pooled_thresholds_ms(800, 1.6, 0.4)
    assert spread["0.5"] == pytest.approx(800, rel=1e-3)
    assert spread["0.75"] > pooled_thresholds_ms(800, 1.6, 0.0)["0.75"]


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_a_cohort_goes_through_the_store_and_export_like_people(tmp_path, threshold_study):
    study = threshold_study
    with Store.open(tmp_path / "a.sqlite", durable=False) as store:
        done = simulate_cohort(study, store, 3, seed=4)
    assert [s.participant for s in done] == ["SIM-s4-001", "SIM-s4-002", "SIM-s4-003"]
    out = export_db(tmp_path / "a.sqlite", tmp_path / "export")
    trials, sessions = _rows(out["trials"]), _rows(out["sessions"])
    assert len(trials) == sum(s.n_trials for s in done) == 3 * 54
    assert {r["simulated"] for r in trials} == {"1"} and {r["state"] for r in sessions} == {
        "completed"
    }
    truth = sessions[0]["env_simulated_truth_pooled_thresholds_ms_ttft_ms_0.5"]
    assert float(truth) == pytest.approx(study_truth(study, PopulationTruth())[
        "pooled_thresholds_ms"]["ttft_ms"]["0.5"])  # fmt: skip
    for r in trials:
        if r["attention_check"] == "1":  # its own screen: no level, nothing streamed
            assert r["ttft_ms"] == r["shown_first_ms"] == "" and r["outcome"] == "completed"
        elif r["outcome"] == "abandoned":
            assert r["q_acceptable"] == "" and float(r["t_abandon_ms"]) > 0
            if r["shown_first_ms"]:
                assert float(r["shown_first_ms"]) <= float(r["t_abandon_ms"])  # mid-stream
            else:
                assert float(r["t_abandon_ms"]) < float(r["ttft_ms"]) + 60  # while waiting
        elif r["outcome"] == "completed":
            # on the virtual clock, what was shown is the schedule: the TTFT is the level
            assert float(r["shown_first_ms"]) == pytest.approx(float(r["ttft_ms"]), abs=1e-6)
            assert r["q_acceptable"] in ("0", "1")
    attention = [r for r in trials if r["attention_check"] == "1"]
    assert attention and sum(r["attention_ok"] == "1" for r in attention) >= len(attention) - 2
    assert sum(r["outcome"] == "abandoned" for r in trials) > 0
    # the judgement follows the truth: faster trials are acceptable more often
    judged = [r for r in trials if r["q_acceptable"] and r["ttft_ms"]]  # checks have no level
    fast = [int(r["q_acceptable"]) for r in judged if float(r["ttft_ms"]) < 400]
    slow = [int(r["q_acceptable"]) for r in judged if float(r["ttft_ms"]) > 1500]
    assert np.mean(fast) > 0.8 > 0.3 > np.mean(slow)


def test_same_seed_same_data(tmp_path, threshold_study):
    tables = []
    for name in ("a", "b"):
        with Store.open(tmp_path / f"{name}.sqlite", durable=False) as store:
            simulate_cohort(threshold_study, store, 1, seed=2)
        rows = _rows(export_db(tmp_path / f"{name}.sqlite", tmp_path / name)["trials"])
        tables.append([{k: v for k, v in r.items() if k != "session_id"} for r in rows])
    assert tables[0] == tables[1]


def test_an_adaptive_session_resumes_with_the_same_procedure(tmp_path, quest_study):
    db = tmp_path / "q.sqlite"
    with Store.open(db) as store:
        first = asyncio.run(simulate_session(quest_study, store, 1, seed=3, stop_after=12))
        assert first.n_trials == 12  # trial 12 is left in flight, as after a kill
    with Store.open(db) as store:  # a new process: the procedure comes from the store
        again = asyncio.run(simulate_session(quest_study, store, 1, seed=3))
        state = store.sessions.adaptive_state(again.session_id)
        rows = store.db.conn.execute(
            "SELECT trial_index, practice, attention, levels, outcome FROM trials ORDER BY 1"
        ).fetchall()
    by_index = {i: (p, a, json.loads(lv)["ttft_ms"], o) for i, p, a, lv, o in rows}
    assert by_index[12][3] == "interrupted"
    # the interrupted trial fed nothing, so the next main trial gets the level it had
    nxt = next(i for i in range(13, len(rows)) if not by_index[i][0] and not by_index[i][1])
    assert by_index[nxt][2] == by_index[12][2]
    track = state["tracks"]["all"]
    assert track["procedure"] == "quest" and track["n_trials"] >= 30
    assert track["ci_low_ms"] < track["threshold_ms"] < track["ci_high_ms"]
    levels = {lv for p, a, lv, o in by_index.values() if not p and not a}
    assert len(levels) > 5 and all(100 <= x <= 5000 for x in levels)
