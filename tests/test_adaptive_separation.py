"""Adaptive designs: the random-intercept logit's thresholds are withheld when the answers
separate by latency or the fit has no finite maximum or does not converge, and the report
(markdown, HTML, thresholds.csv) says why and which levels bracket the switch.

With few people and trials the yes/no answers of an adaptive study can separate: pooled (all
acceptable at or below one level, none at or above the next) or within every person at
their own level. The logit's slope then has no finite maximum; the fit stopped somewhere
steep and the report printed a threshold with a sliver of an interval, or "found no falling
curve" when the fit broke down.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.ratings import (
    MixedAcceptabilityFit,
    fit_mixed_acceptability,
    fit_mixed_cells,
    maximise_mixed,
    person_level_cells,
)
from analysis.separation import find_people_separation, find_separation, yes_no_words
from analysis.small_sample_interval import (
    NOT_CONVERGED,
    WithheldFit,
    adaptive_mixed_thresholds,
    mixed_threshold_counts,
    withheld_reason,
)
from uxlab.cli import main

FITS = Path(__file__).parent / "data" / "adaptive_fits"

# per person: the levels a staircase chose; everyone accepts below 750 ms and refuses above
LEVELS = {
    "P1": [400, 500, 600, 750, 900, 750, 600, 750],
    "P2": [500, 600, 750, 900, 750, 600, 750, 900],
    "P3": [300, 400, 500, 600, 750, 900, 750, 600],
    "P4": [600, 750, 900, 1200, 900, 750, 600, 750],
}
REFUSED_AT_750 = {"P1": {1}, "P2": {0, 2}, "P3": {0}, "P4": {1}}  # which visits to 750 ms


def separated_trials() -> pd.DataFrame:
    """4 people x 8 trials: "acceptable" at or below 600 ms, not at or above 900 ms, both
    only at 750 ms (5 of 11 refused there)."""
    rows = []
    for person, levels in LEVELS.items():
        visits = 0
        for i, x in enumerate(levels):
            ok = int(x < 750)
            if x == 750:
                ok = int(visits not in REFUSED_AT_750[person])
                visits += 1
            rows.append(
                {
                    "participant": person,
                    "session_id": f"S-{person}",
                    "trial_index": i,
                    "practice": 0,
                    "ttft_ms": x,
                    "outcome": "completed",
                    "q_acceptable": ok,
                }
            )
    return pd.DataFrame(rows)


def test_pooled_separation_is_found_and_bracketed():
    df = separated_trials()
    sep = find_separation(df["ttft_ms"], df["q_acceptable"])
    assert sep is not None and (sep.all_ok_ms, sep.none_ok_ms) == (600, 900)
    text = sep.explain(yes_no_words("acceptable", rising=False), "ttft_ms")
    assert 'every answer at or below 600 ms was "yes" (acceptable)' in text
    assert 'every answer at or above 900 ms was "no"' in text
    assert "only at 750 ms were both given (45% of 11" in text
    assert "between 600 ms and 900 ms" in text
    table, why = adaptive_mixed_thresholds(
        df.rename(columns={"q_acceptable": "ok"}), "ok", "ttft_ms"
    )
    assert why == sep
    assert table[["estimate", "ci_low", "ci_high"]].isna().all().all()
    assert table["n_participants"].tolist() == [4, 4, 4]


def test_overlapping_answers_keep_a_finite_fit_and_their_thresholds():
    df = separated_trials()
    df.loc[(df["participant"] == "P4") & (df["ttft_ms"] == 900), "q_acceptable"] = 1
    df.loc[(df["participant"] == "P3") & (df["ttft_ms"] == 500), "q_acceptable"] = 0
    assert find_separation(df["ttft_ms"], df["q_acceptable"]) is None
    assert find_people_separation(df["participant"], df["ttft_ms"], df["q_acceptable"]) is None
    fit = fit_mixed_cells(*person_level_cells(df, "q_acceptable", "ttft_ms", "participant"), 0, 0)
    assert fit.converged and not fit.unbounded
    table, why = adaptive_mixed_thresholds(df, "q_acceptable", "ttft_ms")
    assert why is None
    assert np.isfinite(table[["estimate", "ci_low", "ci_high"]].to_numpy()).all()
    assert 300 < table["estimate"].iloc[1] < 1200


def test_each_person_separated_at_their_own_level_has_no_finite_fit():
    df = pd.read_csv(FITS / "separated_within_people.csv")
    assert find_separation(df["x"], df["ok"]) is None  # the pooled answers overlap
    fit = fit_mixed_cells(*person_level_cells(df, "ok", "x", "participant"), 0, 0)
    assert fit.unbounded  # the likelihood still rises as curves steepen and spread widens
    table, why = adaptive_mixed_thresholds(df, "ok", "x")
    assert table["estimate"].isna().all()
    assert why is not None and not isinstance(why, str)
    assert [who for who, _, _ in why.people] == ["p0", "p1", "p2", "p3"]
    low, high = why.people_bracket()
    assert low < high
    text = why.explain(yes_no_words("acceptable", rising=False), "x")
    assert "Every participant's own answers separate by x" in text
    assert "no threshold and no interval are given" in text


def test_a_fit_stuck_at_a_saddle_goes_on_to_the_maximum():
    df = pd.read_csv(FITS / "stuck_at_a_saddle.csv")
    person, u, k, n = person_level_cells(df, "ok", "x", "participant")
    starts = np.flatnonzero(np.r_[True, person[1:] != person[:-1]])
    uc = u - np.average(u, weights=n)
    share = k.sum() / n.sum()
    first = np.array([[np.log(share / (1 - share)), -1.0, 0.5]])  # the fit's own start
    _, ll_stuck, ok = maximise_mixed(first, starts, uc, k, n, np.ones((1, 4)))
    assert not ok[0]
    fit = fit_mixed_cells(person, u, k, n, 0, 0)
    assert fit.converged and not fit.unbounded and fit.loglik > ll_stuck[0] + 1.0
    table, why = adaptive_mixed_thresholds(df, "ok", "x")
    assert why is None and np.isfinite(table["estimate"]).all()


def test_a_fit_that_did_not_converge_is_withheld_with_its_reason():
    df = separated_trials()
    df.loc[(df["participant"] == "P4") & (df["ttft_ms"] == 900), "q_acceptable"] = 1
    cells = person_level_cells(df, "q_acceptable", "ttft_ms", "participant")
    person, u, k, n = cells
    starts = np.flatnonzero(np.r_[True, person[1:] != person[:-1]])
    start = np.array([[0.0, -1.0, 0.5]])
    theta, ll, ok = maximise_mixed(start, starts, u - u.mean(), k, n, np.ones((1, 4)), max_iter=1)
    assert not ok[0]  # stopped after one step
    a, b, s = theta[0]
    stopped = MixedAcceptabilityFit(a, b, s, ll[0], np.empty((0, 3)), 32, 4, converged=False)
    assert withheld_reason(stopped, *cells) == NOT_CONVERGED
    finished = fit_mixed_cells(*cells, 0, 0)
    assert withheld_reason(finished, *cells) is None


def test_the_planner_path_from_counts_refuses_separated_answers_as_the_report_does():
    df = separated_trials()
    levels = np.sort(df["ttft_ms"].unique())
    people = sorted(LEVELS)
    k = np.zeros((len(people), levels.size))
    n = np.zeros_like(k)
    for r in df.itertuples():
        i, j = people.index(r.participant), int(np.searchsorted(levels, r.ttft_ms))
        k[i, j] += r.q_acceptable
        n[i, j] += 1
    try:
        mixed_threshold_counts(levels, k, n)
    except WithheldFit as exc:
        assert exc.why is not None
    else:
        raise AssertionError("separated counts gave a threshold")


def test_report_cli_withholds_the_adaptive_threshold_and_names_the_bracket(tmp_path: Path):
    data = tmp_path / "separated"
    data.mkdir()
    separated_trials().to_csv(data / "trials.csv", index=False)
    study = {
        "factors": [{"name": "ttft_ms", "levels": [100, 5000], "procedure": "staircase"}],
        "questions": [
            {"id": "acceptable", "type": "yesno", "when": "trial", "yes_means": "acceptable"}
        ],
    }
    (data / "study.json").write_text(json.dumps(study))
    out = tmp_path / "report"
    argv = ["report", str(data), "-o", str(out), "--n-boot", "50", "--no-participant-fits"]
    assert main([*argv, "-q"]) == 0
    md = (out / "report.md").read_text()
    assert "The answers separate by ttft_ms" in md
    assert 'every answer at or below 600 ms was "yes" (acceptable)' in md
    assert "between 600 ms and 900 ms" in md
    assert "found no falling curve" not in md and " nan " not in md.lower()
    assert "the population's 50% threshold cannot be estimated" in md
    html = (out / "report.html").read_text()
    assert "The answers separate by ttft_ms" in html
    rows = pd.read_csv(out / "thresholds.csv")
    pooled = rows[(rows["measure"] == "psychometric") & (rows["group"] == "pooled")]
    assert len(pooled) == 3
    assert pooled[["estimate", "ci_low", "ci_high"]].isna().all().all()
    assert pooled["withheld"].str.startswith("separated: ").all()
    assert pooled["withheld"].str.contains("at or below 600 ms").all()
    assert pooled["withheld"].str.contains("at or above 900 ms").all()


def test_ratings_separated_within_every_person_give_no_rating_threshold():
    """The rating threshold's random-intercept fit has the same check."""
    df = pd.read_csv(FITS / "separated_within_people.csv").assign(
        rating=lambda d: np.where(d["ok"] == 1, 5, 1)
    )
    fit = fit_mixed_acceptability(df, "rating", "x", 4, n_boot=20)
    assert fit.unbounded and fit.separation is not None and fit.separation.people
    assert fit.thresholds()[["estimate", "ci_low", "ci_high"]].isna().all().all()
    assert "Every participant's own ratings separate by x" in fit.separation.describe(4, "x")
