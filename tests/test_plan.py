"""`uxlab plan`: grid and targets, the batched population threshold, observers' give-up
probability, session designs, the recommendation and a known-truth cell's power."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.population_batch import population_thresholds_batch
from analysis.small_sample_interval import population_threshold_small_n
from uxlab.plan.design import PlanError, session_design
from uxlab.plan.engine import LEVELS, PlanSpec, adaptive_median_figures, run_plan
from uxlab.plan.grid import Reference, parse_range, parse_target, reference_from
from uxlab.plan.simulate_cell import (
    adaptive_counts,
    adaptive_runs,
    draw_people,
    p_give_up,
)
from uxlab.plan.summarise import cell_table, recommend
from uxlab.plan.truth import truth_from_pilot
from uxlab.simulate.adaptive_truth import median_point_of
from uxlab.simulate.observers import Cues, Observer, PopulationTruth, pooled_thresholds_ms
from uxlab.study import load_study
from uxlab.study.adaptive import make_procedure

STUDIES = Path(__file__).resolve().parents[1] / "studies"
LEVELS_MS = np.array([100, 175, 300, 530, 920, 1600, 2800, 5000], dtype=float)


def _counts(n_studies: int, n_people: int, seed: int, per_level: int = 6):
    """Yes counts of an "acceptable?" question from the project's observers."""
    rng = np.random.default_rng(seed)
    truth = PopulationTruth()
    k = np.zeros((n_studies, n_people, LEVELS_MS.size))
    for s in range(n_studies):
        for p in range(n_people):
            obs = Observer.draw(truth, rng)
            p_slow = np.array([obs.p_too_slow(Cues(x, None, 0.0, x)) for x in LEVELS_MS])
            k[s, p] = rng.binomial(per_level, 1 - p_slow)
    return k, np.full_like(k, float(per_level))


def test_batch_equals_population_threshold_study_by_study():
    k, n = _counts(3, 6, seed=4)
    batch = population_thresholds_batch(LEVELS_MS, k, n, n_boot=150, seeds=[11, 12, 13])
    for s in range(3):
        rows = [
            (f"P{p:02d}", LEVELS_MS[j], y)
            for p in range(6)
            for j in range(LEVELS_MS.size)
            for y in [1] * int(k[s, p, j]) + [0] * int(n[s, p, j] - k[s, p, j])
        ]
        df = pd.DataFrame(rows, columns=["participant", "x", "y"])
        one = population_threshold_small_n(df, "x", "y", "participant", 150, 11 + s)
        np.testing.assert_allclose(batch.estimate_ms[s], one["estimate"], rtol=1e-6)
        np.testing.assert_allclose(batch.ci_low_ms[s], one["ci_low"], rtol=1e-6)
        np.testing.assert_allclose(batch.ci_high_ms[s], one["ci_high"], rtol=1e-6)
        assert batch.direction[s] == "falling"


def test_batch_leaves_out_participants_without_trials():
    k, n = _counts(1, 5, seed=2)
    k[0, 4] = n[0, 4] = 0.0
    batch = population_thresholds_batch(LEVELS_MS, k, n, n_boot=100, seeds=[1])
    alone = population_thresholds_batch(LEVELS_MS, k[:, :4], n[:, :4], n_boot=100, seeds=[1])
    assert batch.n_participants[0] == 4
    np.testing.assert_allclose(batch.ci_low_ms, alone.ci_low_ms)


def test_adaptive_cells_give_the_reports_median_and_its_interval_at_50_only():
    from analysis.report.adaptive_part import median_with_interval

    rng = np.random.default_rng(4)
    estimates = np.exp(rng.normal(np.log(800.0), 0.3, (3, 9)))
    estimates[1, :2] = np.nan  # two people left out: 7, under the interval's minimum of 8
    est, low, high = adaptive_median_figures(estimates, "quest")
    assert np.isnan(est[:, [0, 2]]).all() and np.isnan(low[:, [0, 2]]).all()
    for s in (0, 2):
        want = median_with_interval(estimates[s], "quest")
        np.testing.assert_allclose([est[s, 1], low[s, 1], high[s, 1]], want)
        assert low[s, 1] < est[s, 1] < high[s, 1]
    assert np.isfinite(est[1, 1]) and np.isnan(low[1, 1])
    _, low, _ = adaptive_median_figures(estimates, "staircase")  # measured to miss: none
    assert np.isnan(low).all()


def test_the_adaptive_medians_truth_counts_a_give_up_as_too_slow():
    study = load_study(STUDIES / "ttft-quest.toml")
    patient = median_point_of(study, PopulationTruth(patience_scale_ms=1e12))
    assert patient == pytest.approx(800.0, rel=0.02)  # the median person's own 50% point
    impatient = median_point_of(study, PopulationTruth(patience_scale_ms=3000.0))
    assert impatient < 0.97 * patient  # giving up makes "too slow" likelier at every level


def test_parse_range_log_spaced_and_lists():
    values = parse_range("4:40", 8)
    assert values[0] == 4 and values[-1] == 40 and len(values) == 8
    assert values == sorted(set(values))
    ratios = np.diff(np.log(values))
    assert ratios.max() < 2.5 * ratios.min()  # roughly even in log
    assert parse_range("2:20:3", 6) == [2, 6, 20]
    assert parse_range("16,8,32", 6) == [8, 16, 32]
    assert parse_range("12", 8) == [12]
    for bad in ("40:4", "a:b", "0:10", "4:"):
        with pytest.raises(PlanError, match=r"expected LOW:HIGH|at least 1"):
            parse_range(bad, 8)


def test_parse_target_and_reference():
    t = parse_target("ci_width<=200ms")
    assert (t.kind, t.level, t.max_ms) == ("ci_width", 0.5, 200.0)
    assert parse_target("ci_width@0.75 <= 300").level == 0.75
    e = parse_target("exclude=800ms", power=0.9)
    assert e.kind == "exclude" and e.reference == Reference("800 ms", 800.0, 800.0)
    assert e.power == 0.9
    rule = reference_from("rule-of-thumb-500-800ms")
    assert (rule.low_ms, rule.high_ms) == (500.0, 800.0)
    with pytest.raises(PlanError, match="ci_width<=200ms"):
        parse_target("width<200")
    with pytest.raises(PlanError, match="reference figure id"):
        reference_from("no-such-figure")
    with pytest.raises(PlanError, match="ms/token"):
        reference_from("rule-of-thumb-30ms-token")


def test_reference_excluded_range_needs_the_whole_range_out():
    ref = Reference("r", 500.0, 800.0)
    low, high = np.array([300, 600, 810, np.nan]), np.array([499, 900, 990, np.nan])
    assert ref.excluded(low, high).tolist() == [True, False, True, False]


def test_p_give_up_is_the_observers_give_up_rate():
    truth = PopulationTruth(patience_scale_ms=3000.0)
    obs = Observer(truth, 0.0, 0.0, 3000.0)
    rng = np.random.default_rng(0)
    for cues in (Cues(800.0, 30.0, 0.3, 2500.0), Cues(4000.0, 30.0, 0.3, 9000.0)):
        draws = [obs.give_up_ms(cues, rng) for _ in range(20000)]
        rate = np.mean([d is not None for d in draws])
        p = p_give_up(truth, np.array([3000.0]), np.array([cues.ttft_ms]), np.array([cues.end_ms]))
        assert abs(p[0, 0] - rate) < 0.015
    capped = p_give_up(truth, np.array([3000.0]), np.array([800.0]), np.array([9000.0]), 1000.0)
    longer = p_give_up(truth, np.array([3000.0]), np.array([800.0]), np.array([9000.0]))
    assert capped[0, 0] < longer[0, 0]


def test_session_design_follows_the_study():
    study = load_study(STUDIES / "ttft-threshold.toml")
    one, three = session_design(study, 1), session_design(study, 3)
    assert one.stimulus == "ttft_ms"
    assert sorted(c.stimulus_ms for c in one.conditions) == LEVELS_MS.tolist()
    blocks = study.design.blocks
    assert all(len(c.cues) == blocks for c in one.conditions)
    assert three.n_main_trials == 3 * blocks * 8
    assert len(three.attention) == three.n_main_trials // study.attention.every
    assert 0 < one.duration_s < three.duration_s
    assert all(c.judged.ttft_ms == c.stimulus_ms for c in three.conditions)


def test_adaptive_design_runs_the_studys_procedure():
    study = load_study(STUDIES / "ttft-quest.toml")
    design = session_design(study, 3)
    assert design.adaptive is not None and design.adaptive.spec.procedure == "quest"
    assert design.n_adaptive_trials == 3 * 2 and design.adaptive_grid_ms.size == 25
    people = draw_people(study, PopulationTruth(), 3, np.random.default_rng(1))
    runs = adaptive_runs(study, design, people, np.random.default_rng(2), estimates_at=(4, 6))
    where, answer = runs.where, runs.answer
    assert where.shape == answer.shape == (3, 6)
    assert len(np.unique(where)) > 1  # the procedure moves
    k, n = adaptive_counts(where, answer, 4, 25)
    assert n.sum() == (answer[:, :4] >= 0).sum() and (k <= n).all()
    # the estimate after 4 trials is the procedure's own after those 4 answers (a give-up,
    # -1, counts as too slow; "yes" means acceptable on this study)
    for i in range(3):
        proc = make_procedure(design.adaptive.spec)
        for t in range(4):
            proc.update(float(design.adaptive_grid_ms[where[i, t]]), answer[i, t] != 1)
        assert runs.estimates[4][i] == pytest.approx(proc.estimate().threshold_ms)
    assert not np.allclose(runs.estimates[4], runs.estimates[6])


def test_recommend_picks_the_cheapest_cell_meeting_the_target():
    table = pd.DataFrame(
        {
            "participants": [4, 8, 16, 8],
            "repeats": [2, 2, 2, 6],
            "participant_minutes": [40.0, 80.0, 160.0, 80.0],
            "meets_target": [False, True, True, True],
        }
    )
    best = recommend(table)
    assert (best["participants"], best["repeats"]) == (8, 2)  # a tie on cost: fewer repeats
    assert recommend(table.assign(meets_target=False)) is None
    assert recommend(table.assign(meets_target=None)) is None


@pytest.mark.slow
def test_known_truth_cell_power_is_sensible():
    """More people narrow the interval; a reference far from the truth is excluded almost
    always with 20 people, the true value itself only when the interval misses it; with
    fewer people than the report's minimum there is no interval, as in the report."""
    spec = PlanSpec(
        (STUDIES / "ttft-threshold.toml").resolve(),
        (3, 9, 20),
        (1,),
        (PopulationTruth(),),
        n_sims=16,
        n_boot=100,
        seed=3,
    )
    results = run_plan(spec, jobs=1)
    true_50 = pooled_thresholds_ms(800.0, 1.6, 0.25)["0.5"]
    far = cell_table(results, Reference("far", 3000.0, 3000.0), [parse_target("ci_width<=400")])
    at_truth = cell_table(results, Reference("truth", true_50, true_50), [])
    assert far.loc[0, "no_interval_share"] == 1.0 and np.isnan(far.loc[0, "ci_width_50_ms"])
    assert far.loc[0, "power"] == 0.0 and not far.loc[0, "meets_target"]
    assert far.loc[2, "ci_width_50_ms"] < far.loc[1, "ci_width_50_ms"]
    assert far.loc[2, "power"] >= 0.9
    assert (at_truth["power"] <= 0.35).all()
    missed = (1 - at_truth["coverage_50"]) * (1 - at_truth["no_interval_share"])
    assert (at_truth["power"][1:] - missed[1:]).abs().max() < 1e-9
    assert far["meets_target"].tolist()[1:] == [w <= 400 for w in far["ci_width_50_ms"][1:]]
    assert (far["participant_minutes"] == far["participants"] * far["minutes_each"]).all()
    other = run_plan(dataclasses.replace(spec, repeats=(2,), n_sims=4), jobs=1)
    assert set(other.cells) == {(3, 2), (9, 2), (20, 2)}  # a second plan in the same process


def test_truth_from_pilot_recovers_a_known_population():
    truth = PopulationTruth(threshold_ms=1000.0, width_log=1.4, between_sd_log=0.3)
    rng = np.random.default_rng(5)
    rows = []
    for p in range(14):
        obs = Observer.draw(truth, rng)
        for x in LEVELS_MS:
            slow = rng.random(10) < obs.p_too_slow(Cues(x, None, 0.0, x))
            rows += [(f"P{p:02d}", x, "no" if s else "yes") for s in slow]
    df = pd.DataFrame(rows, columns=["participant", "ttft_ms", "q_acceptable"])
    pilot = truth_from_pilot(df, "ttft_ms", "q_acceptable", n_draws=50, source="pilot.csv")
    assert pilot.n_participants == 14 and len(pilot.draws) == 50
    assert 0.75 < pilot.point.threshold_ms / 1000.0 < 1.33
    assert 0.9 < pilot.point.width_log < 2.2
    assert 0.05 < pilot.point.between_sd_log < 0.6
    spread = [t.threshold_ms for t in pilot.draws]
    assert np.std(spread) > 0  # the uncertainty is carried
    assert "14 participants" in pilot.describe()
    with pytest.raises(PlanError, match="at least 3"):
        truth_from_pilot(df[df.participant < "P02"], "ttft_ms", "q_acceptable", source="x")


@pytest.mark.slow
def test_plan_command_writes_table_figure_and_recommendation(tmp_path, capsys):
    from uxlab.cli import main

    out = tmp_path / "plan"
    argv = ["plan", str(STUDIES / "ttft-threshold.toml"), "--participants", "3,12"]
    argv += ["--repeats", "1", "--sims", "10", "--n-boot", "50", "--jobs", "1", "-q"]
    argv += ["--target", "ci_width<=2000ms", "--target", "ci_width<=2000ms@50%", "-o", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    table = pd.read_csv(out / "plan.csv")
    assert table["assurance[ci_width_50<=2000ms]"].tolist()[0] == 0.0  # no interval: a miss
    assert "P(CI50<=2000)" in text and "assurance_se[ci_width_50<=2000ms]" in table
    assert table[["participants", "repeats"]].values.tolist() == [[3, 1], [12, 1]]
    assert table["no_interval_share"].tolist() == [1.0, 0.0]
    assert {"ci_width_25_ms", "ci_width_50_ms", "ci_width_75_ms", "coverage_50", "power"} <= set(
        table.columns
    )
    assert (out / "plan.png").stat().st_size > 0 and (out / "plan.md").is_file()
    assert "recommended: 12 participants x repeats 1" in text
    assert "1 cell(s) show no width" in text  # 3 people: the report gives no interval
    # the short headers are said in full: a width is not an end, nor a median
    (columns,) = [line for line in text.splitlines() if line.startswith("columns: ")]
    row_mean = table.loc[table.participants == 12, "ci_width_50_ms"].iloc[0]
    assert "CI25/CI50/CI75 ms, the mean width of the 95% interval" in columns
    assert f"{row_mean:.0f}" in text.split(columns, 1)[1]  # the column is that mean


def test_plan_command_refuses_bad_input_with_one_line(tmp_path, capsys):
    from uxlab.cli import main

    study = str(STUDIES / "ttft-threshold.toml")
    assert main(["plan", study, "--target", "width<3", "-o", str(tmp_path)]) == 2
    assert "expected ci_width<=200ms" in capsys.readouterr().err
    assert main(["plan", study, "--participants", "1:4", "-o", str(tmp_path)]) == 2
    assert "at least 2" in capsys.readouterr().err
    assert main(["plan", study, "--truth", "width=-1", "-o", str(tmp_path)]) == 2
    assert "--truth width=-1: must be > 0" in capsys.readouterr().err
    assert main(["plan", str(STUDIES / "live-openai.toml"), "-o", str(tmp_path)]) == 2
    assert "live study" in capsys.readouterr().err


@pytest.mark.slow
def test_plan_truth_from_a_pilot_export(tmp_path, capsys):
    """A pilot run through the real path (simulated sessions, export) gives the truth."""
    from uxlab.cli import main
    from uxlab.simulate import simulate_cohort
    from uxlab.store import Store
    from uxlab.store.export import export_db

    study = load_study(STUDIES / "ttft-threshold.toml")
    db = tmp_path / "pilot.sqlite"
    with Store.open(db, durable=False) as store:
        simulate_cohort(study, store, 6, seed=9, truth=PopulationTruth(threshold_ms=1200.0))
    export_db(db, tmp_path / "export")
    argv = ["plan", str(study.path), "--truth-from", str(tmp_path / "export"), "-q"]
    argv += ["--participants", "4,8", "--repeats", "1", "--sims", "10", "--n-boot", "50"]
    argv += ["--jobs", "1", "--no-figure", "-o", str(tmp_path / "plan")]
    assert main(argv) == 0
    text = capsys.readouterr().out
    m = re.search(r"\(6 participants, \d+ answered trials\): threshold (\d+)", text)
    assert m and 700 < int(m.group(1)) < 2000
    assert re.search(r"between-participant SD [0-9.]+ ln ms \[[0-9.]+, [0-9.]+\]", text)


@pytest.mark.slow
def test_more_participants_narrow_the_projected_interval():
    from uxlab.plan.more_people import describe, width_with_more_people

    rng = np.random.default_rng(8)
    rows = []
    for p in range(6):
        obs = Observer.draw(PopulationTruth(), rng)
        for x in LEVELS_MS:
            slow = rng.random(6) < obs.p_too_slow(Cues(x, None, 0.0, x))
            rows += [(f"P{p:02d}", x, "no" if s else "yes") for s in slow]
    df = pd.DataFrame(rows, columns=["participant", "ttft_ms", "q_acceptable"])
    result = width_with_more_people(df, "ttft_ms", "q_acceptable", 18, sims=20, n_boot=100)
    assert result.n_now == 6 and result.added == 18
    assert result.width_more_ms < 0.8 * result.width_now_ms
    line = describe(result, 400.0)
    assert "with 18 more participants (24)" in line and "measured 400 ms" in line


def test_default_reference_follows_the_stimulus():
    from uxlab.plan.grid import default_reference

    assert default_reference("ttft_ms").low_ms == 1000.0
    itl = default_reference("itl_ms")
    assert itl is not None and itl.low_ms == 30.0  # the 30 ms/token rule of thumb
    assert default_reference("call_ttft_ms") is None


def test_parse_width_targets_mean_median_and_assurance():
    mean = parse_target("ci_width<=200ms")
    assert (mean.statistic, mean.assurance) == ("mean", None)
    median = parse_target("ci_width_median@0.25<=150")
    assert (median.statistic, median.level, median.max_ms) == ("median", 0.25, 150.0)
    sure = parse_target("ci_width<=200ms@80%")
    assert (sure.statistic, sure.level, sure.max_ms, sure.assurance) == (
        "assurance",
        0.5,
        200.0,
        0.8,
    )
    both = parse_target(" ci_width@0.75 <= 300 ms @ 90.5% ")
    assert (both.level, both.max_ms, both.assurance) == (0.75, 300.0, 0.905)
    assert both.assurance_column == "assurance[ci_width_75<=300ms]"
    for bad, says in [
        ("ci_width<=200ms@0.8", "expected ci_width<=200ms"),  # a share needs its %
        ("ci_width<=200ms@80", "expected ci_width<=200ms"),
        ("ci_width@80%<=200ms", "expected ci_width<=200ms"),
        ("ci_width<=200ms@100%", "between 0% and 100%"),
        ("ci_width<=200ms@0%", "between 0% and 100%"),
        ("ci_width_median<=200ms@80%", "goes with ci_width, not ci_width_median"),
        ("ci_width@0.6<=200ms@80%", "0.25, 0.5 or 0.75"),
    ]:
        with pytest.raises(PlanError, match=re.escape(says)) as err:
            parse_target(bad)
        assert "\n" not in str(err.value)
    with pytest.raises(PlanError, match=re.escape("ci_width<=200ms@80% (assurance")):
        parse_target("assurance>=80%")


def _width_results(widths_by_people: dict[int, np.ndarray], kept: dict[int, int] | None = None):
    """A plan's results whose 50% (and 25%, 75%) intervals have the given widths, one cell
    per number of people, on ttft-threshold.toml's real design at repeats 1."""
    from uxlab.plan.engine import CellResults, PlanResults

    study = load_study(STUDIES / "ttft-threshold.toml")
    n_sims = {w.size for w in widths_by_people.values()}.pop()
    spec = PlanSpec(study.path, tuple(sorted(widths_by_people)), (1,), (PopulationTruth(),), n_sims)
    results = PlanResults(spec, {1: session_design(study, 1)}, seconds=1.0)
    for p, widths in widths_by_people.items():
        s = widths.size
        low = np.full((s, 3), 700.0)
        high = low + widths[:, None]
        n_kept = np.full(s, (kept or {}).get(p, p))
        est = low + widths[:, None] / 2
        results.cells[(p, 1)] = CellResults(est, low, high, n_kept, np.full((s, 3), 800.0))
    return study, results


def test_assurance_is_the_share_of_all_studies_at_most_the_width():
    rng = np.random.default_rng(3)
    widths = rng.lognormal(np.log(250.0), 0.4, 60)
    widths[[0, 5]] = np.nan  # no interval: counts as failing
    _study, results = _width_results({12: widths, 16: widths * 0.7, 9: widths}, kept={9: 3})
    target = parse_target("ci_width<=250ms@70%")
    table = cell_table(results, None, [target]).set_index("participants")
    for p, w in ((12, widths), (16, widths * 0.7)):
        by_hand = np.sum(w <= 250.0) / 60  # NaN <= 250 is False
        assert table.loc[p, target.assurance_column] == pytest.approx(by_hand)
        se = table.loc[p, "assurance_se[ci_width_50<=250ms]"]
        assert se == pytest.approx(np.sqrt(by_hand * (1 - by_hand) / 60))
        assert table.loc[p, "meets_target"] == (by_hand >= 0.7)
    assert table.loc[12, "meets_target"] != table.loc[16, "meets_target"]  # ~0.47 vs ~0.8
    # 3 people kept: the report gives no interval, so no study meets the width
    assert table.loc[9, target.assurance_column] == 0.0 and not table.loc[9, "meets_target"]
    median = cell_table(results, None, [parse_target("ci_width_median<=240")])
    median = median.set_index("participants")
    assert median.loc[12, "ci_width_50_median_ms"] == pytest.approx(np.nanmedian(widths))
    assert median["meets_target"].tolist() == [
        bool(m <= 240) for m in median["ci_width_50_median_ms"].fillna(np.inf)
    ]


def test_plan_names_heavy_tailed_cells_and_prints_the_assurance():
    from uxlab.plan.rendering import render_plan
    from uxlab.plan.summarise import heavy_tailed_cells

    rng = np.random.default_rng(4)
    light = rng.lognormal(np.log(300.0), 0.3, 50)
    heavy = light.copy()
    heavy[:3] = 20_000.0  # a few enormous intervals: the mean runs away, the median stays
    study, results = _width_results({10: heavy, 20: light})
    targets = [parse_target("ci_width<=400ms@80%")]
    table = cell_table(results, None, targets)
    ratio = table["ci_width_50_ms"] / table["ci_width_50_median_ms"]
    assert ratio[0] > 1.5 > 1.2 > ratio[1]
    assert heavy_tailed_cells(table)["participants"].tolist() == [10]
    text = render_plan(results, study, None, targets, "truth: test")
    note = [line for line in text.splitlines() if "very wide intervals" in line]
    assert len(note) == 1 and "(people x repeats: 10x1)" in note[0]
    assert "20x1" not in note[0] and "ci_width_median<=400ms)" in note[0]
    assert "P(CI50<=400)" in text and "Monte-Carlo SE sqrt(p (1 - p) / sims): 0.057 at 80%" in text
    share = table.loc[1, targets[0].assurance_column]
    assert re.search(rf"recommended: 20 participants .*assurance {share:.2f} \(SE", text)
    se = table.loc[1, "assurance_se[ci_width_50<=400ms]"]
    assert ("within 2 SE of 80%" in text) == (share - 0.8 < 2 * se)
    calm = render_plan(*_width_results({20: light})[::-1], None, [], "truth: test")
    assert "very wide intervals" not in calm and "P(CI50" not in calm


def _one_study(answers: int, people: int, separated: int = 0) -> tuple[np.ndarray, ...]:
    """Counts [1, P, L] over 7 levels: each person says "too slow" more often as the level
    rises; the first `separated` people switch cleanly between levels 3 and 4."""
    levels = np.geomspace(200.0, 3200.0, 7)
    share = np.array([0.05, 0.15, 0.3, 0.5, 0.7, 0.85, 0.95])
    n = np.full((1, people, levels.size), float(answers))
    k = np.round(n * share)
    k[0, :separated] = np.where(np.arange(levels.size) <= 3, 0.0, answers)
    return levels, k, n


@pytest.mark.parametrize(
    ("answers", "people", "separated", "tails"),
    [(6, 8, 0, True), (4, 8, 0, False), (6, 4, 0, False), (6, 12, 1, True), (6, 8, 1, False)],
)
def test_the_plan_withholds_the_tails_where_the_report_does(answers, people, separated, tails):
    """The plan's CI25 / CI75 count only studies whose report prints those points: 8 people,
    6 answers a person gives each level, fewer than one in eight of them separating."""
    from uxlab.plan.engine import withhold_tails_as_the_report

    levels, k, n = _one_study(answers, people, separated)
    fit = population_thresholds_batch(levels, k, n, n_boot=20, seeds=[1], levels=LEVELS)
    assert np.isfinite(fit.ci_low_ms[0]).all()
    withhold_tails_as_the_report(fit, k, n)
    assert np.isfinite(fit.estimate_ms[0, 1]) and np.isfinite(fit.ci_high_ms[0, 1])
    assert np.isfinite(fit.ci_low_ms[0, [0, 2]]).all() == tails
    assert np.isfinite(fit.estimate_ms[0, [0, 2]]).all() == tails


def test_a_plan_on_an_adaptive_design_prints_only_what_the_report_prints():
    from uxlab.plan.rendering import render_plan

    study = load_study(STUDIES / "ttft-quest.toml")
    spec = PlanSpec(study.path.resolve(), (6, 9), (5,), (PopulationTruth(),), n_sims=6)
    results = run_plan(spec, jobs=1)
    text = render_plan(results, study, None, [], "truth: test")
    assert "the median of the sessions' own estimates with the sign test's" in text
    rows = [line.split() for line in text.splitlines() if line.startswith(("      6", "      9"))]
    assert [row[4] for row in rows] == ["-", "-"] and [row[6] for row in rows] == ["-", "-"]
    assert rows[0][5] == "-" and rows[1][5] != "-"  # the median's interval needs 8 people
    assert "gives the median of the sessions' own estimates no interval with fewer than 8" in text


def test_a_persons_adaptive_point_is_their_own_where_they_never_give_up():
    from uxlab.simulate.adaptive_truth import own_points_ms, study_adaptive_grid

    study = load_study(STUDIES / "ttft-quest.toml")
    grid = study_adaptive_grid(study)
    assert grid is not None and grid.factor == "ttft_ms" and grid.target == 0.5
    args = (grid.grid_ms, grid.cues, grid.target, grid.cap_ms)
    rng = np.random.default_rng(3)
    patient = Observer.draw(PopulationTruth(patience_scale_ms=1e12), rng, study)
    own = patient.own()["threshold_ms"]  # guess = lapse: the 50% point is the threshold
    assert own_points_ms([patient], *args)[0] == pytest.approx(own, rel=0.01)
    hasty = dataclasses.replace(patient, patience_scale_ms=2000.0)
    assert own_points_ms([hasty], *args)[0] < 0.97 * own


def test_a_simulated_adaptive_session_stores_what_its_estimate_estimates():
    from uxlab.simulate.driver import simulated_environment

    truth = PopulationTruth()
    quest, fixed = (
        load_study(STUDIES / "ttft-quest.toml"),
        load_study(STUDIES / "ttft-threshold.toml"),
    )
    person = Observer.draw(truth, np.random.default_rng(1), quest)
    record = simulated_environment(quest, truth, person, 0)["simulated_truth"]
    assert set(record["adaptive_point_ms"]) == {"ttft_ms"}
    assert 0.9 * 800.0 < record["adaptive_point_ms"]["ttft_ms"] < 800.0  # give-ups count
    assert record["participant"]["adaptive_point_ms"] < record["participant"]["threshold_ms"]
    plain = simulated_environment(fixed, truth, person, 0)["simulated_truth"]
    assert "adaptive_point_ms" not in plain and "adaptive_point_ms" not in plain["participant"]
