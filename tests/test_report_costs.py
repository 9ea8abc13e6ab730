"""`uxlab report --score CORPUS --prices FILE`: cost per request, per completed task and per
satisfied user beside the scores, the speed-cost frontier in report.html (read by headless
Chromium), every figure checked against an independent reckoning (`cost_oracle`)."""

from __future__ import annotations

import asyncio
import math
import shutil
from decimal import Decimal
from pathlib import Path

import cost_oracle
import pandas as pd
import pytest
from analysis_fixtures import simulate_trial_table
from helpers.browser import launch_chromium
from helpers.shared import built_once
from playwright.async_api import async_playwright

from analysis.costs import pareto_front
from uxlab.cli import main

ROOT = Path(__file__).resolve().parents[1]
SHEET = ROOT / "prices" / "example.toml"
CORPORA = ("agent-tasks", "chat", "aiperf-gpt-oss-20b")
CENT = Decimal("0.01")


def _build(root: Path) -> dict:
    trials = root / "trials.csv"
    simulate_trial_table(n_participants=9, reps=2, seed=3).to_csv(trials, index=False)
    corpus = root / "corpus"
    for name in CORPORA:
        shutil.copytree(ROOT / "replays" / name, corpus / name)
    import contextlib
    import io

    out = io.StringIO()
    argv = ["report", str(trials), "-o", str(root / "r"), "--n-boot", "100", "--stimulus"]
    argv += ["ttft_ms", "--judgement", "q_acceptable", "-q", "--no-participant-fits"]
    argv += ["--score", str(corpus), "--prices", str(SHEET)]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(argv)
    return {"code": code, "out": out.getvalue(), "dir": root / "r", "corpus": corpus}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return built_once(tmp_path_factory, "report-costs", _build)


def _costs(report) -> pd.DataFrame:
    """costs.csv (numbers written to 6 significant digits, as every CSV of the report)."""
    return pd.read_csv(report["dir"] / "costs.csv").set_index("source")


def test_the_report_runs_and_prints_the_costs_per_source(report):
    assert report["code"] == 0, report["out"]
    out = report["out"]
    assert "costs (EXAMPLE prices: example.toml, USD, 2026-12-06):" in out
    assert "example/swift-mini: " in out and "per completed task (4 of 6 completed)" in out
    assert "On the speed-cost front: " in out
    assert "wrote " + str(report["dir"] / "costs.csv") in out


def test_cost_per_request_and_per_completed_task_agree_to_the_cent(report):
    costs = _costs(report)
    corpus = report["corpus"]
    prices = cost_oracle.sheet_prices(SHEET)
    paths = sorted(corpus.rglob("*.jsonl"))
    for source, values in cost_oracle.by_source(paths, prices).items():
        mean = sum(values) / len(values)
        got = costs.loc[source, "cost_per_request"]
        assert Decimal(str(got)).quantize(CENT) == mean.quantize(CENT)
        assert got == pytest.approx(float(mean), rel=1e-5), source
        assert costs.loc[source, "n_priced"] == len(values)
    # agent chains: every attempt's money over the completed attempts
    for stack, want in cost_oracle.chain_tasks(corpus / "agent-tasks", prices).items():
        got = costs.loc[stack]
        assert (got.n_tasks, got.n_completed) == (want["tasks"], want["completed"])
        assert got.spent == pytest.approx(float(want["spent"]), rel=1e-5)
        assert got.cost_per_completed_task == pytest.approx(float(want["per_completed"]), rel=1e-5)
    # single requests: each a task, completed unless it broke off (chat-midstream-error)
    chat = sorted((corpus / "chat").glob("*.jsonl"))
    synthetic = [
        p for p in chat if cost_oracle.label(cost_oracle.header_and_end(p)[0]) == "synthetic"
    ]
    spent = sum(cost_oracle.cost(p, prices) for p in synthetic)
    done = [p for p in synthetic if cost_oracle.header_and_end(p)[1]["finish_reason"] != "error"]
    assert len(done) == len(synthetic) - 1
    row = costs.loc["synthetic"]
    assert (row.n_tasks, row.n_completed, row.n_failed) == (len(synthetic), len(done), 1)
    assert row.cost_per_completed_task == pytest.approx(float(spent / len(done)), rel=1e-5)


def test_cost_per_satisfied_user_divides_by_the_scored_share_with_its_interval(report):
    costs = _costs(report)
    score = pd.read_csv(report["dir"] / "score.csv").set_index("source")
    checked = 0
    for source, row in costs.iterrows():
        share = score.loc[source, "p_satisfied"]
        low, high = score.loc[source, ["p_satisfied_ci_low", "p_satisfied_ci_high"]]
        assert low <= share <= high
        per_task = row.cost_per_completed_task
        if share > 0:
            assert row.cost_per_satisfied_user == pytest.approx(per_task / share, rel=1e-5)
            assert row.cost_per_satisfied_user_ci_low == pytest.approx(per_task / high, rel=1e-5)
            checked += 1
        else:
            assert math.isinf(row.cost_per_satisfied_user)
    assert checked >= 2
    # satisfied = within the threshold and not abandoned: at most either share allows
    for source in costs.index:
        s = score.loc[source]
        assert s.p_satisfied <= 1 - s.share_past_threshold + 0.1
        assert s.p_satisfied <= 1 - s.p_abandon + 0.1


def test_the_front_is_the_sources_no_other_beats_on_both(report):
    costs = _costs(report).reset_index()
    points = costs[["source", "cost_per_completed_task", "p_satisfied"]].dropna()
    independent = []
    for p in points.itertuples():
        beaten = any(
            q.cost_per_completed_task <= p.cost_per_completed_task
            and q.p_satisfied >= p.p_satisfied
            and (q.cost_per_completed_task, q.p_satisfied)
            != (p.cost_per_completed_task, p.p_satisfied)
            for q in points.itertuples()
        )
        if not beaten:
            independent.append(p.source)
    assert sorted(independent) == sorted(costs.loc[costs.on_front, "source"])
    assert sorted(pareto_front(costs)) == sorted(independent)
    md = (report["dir"] / "report.md").read_text(encoding="utf-8")
    front_line = next(x for x in md.splitlines() if x.startswith("On the speed-cost front:"))
    for name in independent:
        assert name in front_line


def test_the_frontier_figure_shows_in_chromium(report):
    html = report["dir"] / "report.html"

    async def look() -> dict:
        async with async_playwright() as pw:
            browser = await launch_chromium(pw)
            page = await browser.new_page(viewport={"width": 1100, "height": 900})
            await page.goto(html.as_uri())
            found = await page.evaluate(
                """() => {
                  const img = [...document.images].find(i => i.alt.startsWith('Speed-cost'));
                  const h = [...document.querySelectorAll('h2')].find(
                    e => e.textContent.startsWith('Cost: per request'));
                  return {w: img ? img.naturalWidth : 0, h: img ? img.naturalHeight : 0,
                          heading: !!h, text: document.body.innerText};
                }"""
            )
            await browser.close()
            return found

    found = asyncio.run(look())
    assert found["heading"] and found["w"] > 400 and found["h"] > 250
    assert "These are EXAMPLE prices (example.toml, 2026-12-06)" in found["text"]
    assert "cost per satisfied user (USD) [95% CI]" in found["text"]
    assert "request(s) billed hidden reasoning tokens" in found["text"]
    assert "Agent tasks (chain files): end-to-end time" in found["text"]
    assert "failed (the answer's stream)" in found["text"]


def test_prices_without_a_corpus_or_a_bad_sheet_exit_2(tmp_path, capsys):
    trials = tmp_path / "t.csv"
    simulate_trial_table(n_participants=3, reps=1, seed=3).to_csv(trials, index=False)
    assert main(["report", str(trials), "--prices", str(SHEET)]) == 2
    assert "--prices prices the recordings of --score CORPUS" in capsys.readouterr().err
    bad = tmp_path / "p.toml"
    bad.write_text(SHEET.read_text().replace('currency = "USD"', 'currency = "usd"'), "utf-8")
    code = main(
        ["report", str(trials), "--score", str(ROOT / "replays" / "chat"), "--prices", str(bad)]
    )
    err = capsys.readouterr().err
    assert code == 2 and f"{bad}:16: [sheet].currency: 'usd' is not a currency code" in err
