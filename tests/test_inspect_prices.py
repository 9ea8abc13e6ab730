"""`uxlab inspect --prices`: each recording's cost, the pooled costs per source and the
agent tasks' cost per completed task, checked to the cent against an independent reckoning
(`cost_oracle`) on the bundled corpora; unpriced recordings named, never counted as 0."""

from __future__ import annotations

import json
import shutil
from decimal import Decimal
from pathlib import Path

import cost_oracle
import pytest

from uxlab.cli import main

ROOT = Path(__file__).resolve().parents[1]
SHEET = ROOT / "prices" / "example.toml"
CORPORA = [ROOT / "replays" / n for n in ("aiperf-gpt-oss-20b", "chat", "agent-tasks")]
CENT = Decimal("0.01")


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["inspect", *args])
    out, err = capsys.readouterr()
    return code, out, err


def records(out: str) -> tuple[list[dict], list[dict]]:
    lines = [json.loads(x) for x in out.splitlines()]
    return [x for x in lines if "summary" not in x], [x for x in lines if "summary" in x]


def test_every_cost_agrees_with_an_independent_reckoning_to_the_cent(capsys):
    code, out, err = run(capsys, *map(str, CORPORA), "--prices", str(SHEET), "--json")
    assert code == 0, err
    recs, summaries = records(out)
    prices = cost_oracle.sheet_prices(SHEET)
    paths = [p for c in CORPORA for p in sorted(c.rglob("*.jsonl"))]
    assert len(recs) == len(paths) == 96
    for rec in recs:
        want = cost_oracle.cost(Path(rec["path"]), prices)
        assert want is not None and rec["cost"] is not None, rec["path"]
        got = Decimal(str(rec["cost"]["total"]))
        assert abs(got - want) < Decimal("1e-12"), rec["path"]
        assert got.quantize(CENT) == want.quantize(CENT)
        assert rec["unpriced"] is None and rec["example_prices"] is True
    # The pooled costs per source: mean, p50 and p90 of the same independent costs.
    expected = cost_oracle.by_source(paths, prices)
    per_source = {s["source"]: s for s in summaries if s["summary"] == "cost_per_source"}
    assert set(per_source) == set(expected)
    for source, values in expected.items():
        s = per_source[source]
        assert s["n_priced"] == len(values) and s["currency"] == "USD"
        assert s["mean"] == pytest.approx(float(sum(values) / len(values)), rel=1e-12)
        assert s["p50"] == pytest.approx(cost_oracle.percentile(values, 50), rel=1e-12)
        assert s["p90"] == pytest.approx(cost_oracle.percentile(values, 90), rel=1e-12)
        assert s["total"] == pytest.approx(float(sum(values)), rel=1e-12)


def test_cost_per_completed_task_counts_the_failed_and_abandoned_attempts(capsys):
    folder = ROOT / "replays" / "agent-tasks"
    code, out, _ = run(capsys, str(folder), "--prices", str(SHEET), "--json")
    assert code == 0
    _, summaries = records(out)
    stacks = {s["stack"]: s for s in summaries if s["summary"] == "tasks_per_stack"}
    expected = cost_oracle.chain_tasks(folder, cost_oracle.sheet_prices(SHEET))
    assert set(stacks) == set(expected) == {"example/swift-mini", "example/deep-reasoner"}
    for stack, want in expected.items():
        got = stacks[stack]
        assert (got["n_tasks"], got["n_completed"]) == (want["tasks"], want["completed"])
        assert Decimal(str(got["spent"])).quantize(CENT) == want["spent"].quantize(CENT)
        assert got["cost_per_completed_task"] == pytest.approx(float(want["per_completed"]))
    each = cost_oracle.each_chain_task(folder, cost_oracle.sheet_prices(SHEET))
    tasks = {s["id"]: s for s in summaries if s["summary"] == "chain_task"}
    assert set(tasks) == set(each) and len(tasks) == 12
    for tid, want in each.items():
        assert Decimal(str(tasks[tid]["cost"])).quantize(CENT) == want["cost"].quantize(CENT)
        assert tasks[tid]["cost"] == pytest.approx(float(want["cost"]), rel=1e-12)
        assert tasks[tid]["e2e_ms"] == pytest.approx(float(want["e2e_ms"]), abs=1e-6)
    assert tasks["swift-mini-sales-2"]["outcome"] == "abandoned"
    assert tasks["swift-mini-trip-2"]["outcome_from"] == "the answer's stream"
    swift = stacks["example/swift-mini"]
    assert (swift["n_failed"], swift["n_abandoned"], swift["n_completed"]) == (1, 1, 4)
    # What an attempt that did not complete spent is in the numerator, not the count.
    assert swift["cost_per_completed_task"] > swift["spent"] / swift["n_tasks"]


def test_the_table_prints_costs_tasks_and_hidden_reasoning(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run(capsys, str(ROOT / "replays" / "agent-tasks"), "--prices", str(SHEET))
    assert code == 0
    head = out.splitlines()[0]
    assert "cost USD" in head and head.index("cost USD") < head.index("finish")
    assert "Costs in USD (EXAMPLE prices: example.toml, 2026-12-06" in out
    assert "example/deep-reasoner: 40 of 40 priced" in out
    assert "reasoning billed in 40 (hidden in 40, streamed as text in 0)" in out
    assert "first answer text p50" in out
    assert "example/swift-mini: 6 tasks, 4 completed, 1 failed, 1 abandoned" in out
    assert "per completed task" in out and "tok/s per USD/Mtok" in out
    assert "Chain tasks (12; e2e: every call to its end plus every tool pause" in out
    assert "example/swift-mini: abandoned (declared)" in out


def _copy(tmp_path: Path, names: list[str]) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name in names:
        shutil.copy(ROOT / "replays" / "chat" / name, folder / name)
    return folder


def _set_usage(path: Path, usage) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    end = json.loads(lines[-1])
    end["usage"] = usage
    lines[-1] = json.dumps(end)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_streams_without_usage_or_with_bad_usage_are_unpriced_and_named(tmp_path, capsys):
    folder = _copy(
        tmp_path, ["chat-one-liner.jsonl", "chat-clarifying.jsonl", "chat-reasoning.jsonl"]
    )
    _set_usage(folder / "chat-one-liner.jsonl", None)
    _set_usage(folder / "chat-clarifying.jsonl", {"input_tokens": "nine", "output_tokens": 16})
    code, out, err = run(capsys, str(folder), "--prices", str(SHEET))
    assert code == 0, err  # a recording's usage is not a bad file: the others go on
    assert "unpriced" in out and "Unpriced (2; never counted as 0):" in out
    assert "chat-one-liner: no usage in the recording (--estimate-usage" in out
    assert "chat-clarifying: usage.input_tokens: 'nine' is not a number of tokens" in out
    assert "synthetic: 1 of 3 priced" in out
    code, out, _ = run(capsys, str(folder), "--prices", str(SHEET), "--json")
    recs, summaries = records(out)
    by_id = {r["id"]: r for r in recs}
    assert by_id["chat-one-liner"]["cost"] is None
    assert by_id["chat-one-liner"]["unpriced"].startswith("no usage in the recording")
    source, tasks = summaries  # no chain file here: no chain_task records
    assert source["n_priced"] == 1 and sum(source["unpriced"].values()) == 2
    assert source["mean"] == pytest.approx(by_id["chat-reasoning"]["cost"]["total"])
    # each recording outside a chain is a task of one request; unpriced ones are left out
    assert (tasks["summary"], tasks["n_tasks"], tasks["n_priced"]) == ("tasks_per_stack", 3, 1)
    assert tasks["spent"] == pytest.approx(source["total"])


def test_an_estimate_from_the_text_is_marked_in_every_output(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    folder = _copy(tmp_path, ["chat-one-liner.jsonl"])
    _set_usage(folder / "chat-one-liner.jsonl", None)
    code, out, _ = run(capsys, str(folder), "--prices", str(SHEET), "--estimate-usage")
    assert code == 0
    row = next(line for line in out.splitlines() if line.startswith("chat-one-liner"))
    assert " ~0.0000" in row
    assert "1 of 1 priced, 1 estimated" in out
    code, out, _ = run(capsys, str(folder), "--prices", str(SHEET), "--estimate-usage", "--json")
    (rec,), (summary, _tasks) = records(out)
    assert rec["estimated"] is True and rec["usage"]["estimated"] is True
    assert rec["usage"]["output_tokens"] == 20  # the chunks carry n_tokens: their sum
    assert summary["n_estimated"] == 1


def test_price_as_prices_a_source_the_sheet_does_not_name(tmp_path, capsys):
    folder = _copy(tmp_path, ["chat-fast-small-model.jsonl"])
    code, out, _ = run(
        capsys,
        str(folder),
        "--prices",
        str(SHEET),
        "--price-as",
        "synthetic-small=synthetic",
        "--json",
    )
    assert code == 0
    (rec,), _ = records(out)
    assert rec["price"] == "synthetic" and rec["price_chosen_by"] == "--price-as"
    assert rec["cost"]["total"] == pytest.approx((15 * 0.50 + 23 * 1.50) / 1e6)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--price-as", "x"], "--price-as needs --prices FILE"),
        (["--estimate-usage"], "--estimate-usage needs --prices FILE"),
        (["--prices", "SHEET", "--as", "vllm"], "--prices shows uxlab's own view"),
        (["--prices", "SHEET", "--price-as", "a=nothing"], "--price-as: no entry 'nothing'"),
    ],
)
def test_price_options_misused_exit_2_with_one_line(capsys, args, message):
    args = [a.replace("SHEET", str(SHEET)) for a in args]
    code, out, err = run(capsys, str(ROOT / "replays" / "chat"), *args)
    assert code == 2 and message in err and "Traceback" not in err
    assert out == ""


def test_a_bad_sheet_exits_2_naming_file_line_and_field(tmp_path, capsys):
    bad = tmp_path / "prices.toml"
    bad.write_text(
        SHEET.read_text(encoding="utf-8").replace("output = 0.20", "output = -0.20", 1),
        encoding="utf-8",
    )
    code, out, err = run(capsys, str(ROOT / "replays" / "chat"), "--prices", str(bad))
    line = bad.read_text().splitlines().index("output = -0.20") + 1
    assert code == 2 and out == ""
    assert err.strip() == f"uxlab inspect: {bad}:{line}: [[price]] #1.output: -0.2 is negative"


BENCHMARK_EXPORTS = [
    ("aiperf", "aiperf-0.13.0/profile_export.jsonl"),
    ("genai-perf", "genai-perf/profile_export.json"),
    ("guidellm", "guidellm-0.8.1/benchmarks.json"),
    ("vllm-bench", "vllm-0.33.0/result.json"),
    ("llmperf", "llmperf/meta-llama-Llama-2-7b-chat-hf_550_150_individual_responses.json"),
    ("ollama", "ollama/generate_thinking.ndjson"),
]


@pytest.mark.parametrize(("fmt", "name"), BENCHMARK_EXPORTS, ids=[f for f, _ in BENCHMARK_EXPORTS])
def test_benchmark_exports_with_token_counts_are_priced(tmp_path, capsys, fmt, name):
    out = tmp_path / "imported"
    assert main(["import", "--from", fmt, str(ROOT / "tests" / "data" / name), "-o", str(out)]) in (
        0,
        1,
    )
    capsys.readouterr()
    args = [str(out), "--prices", str(SHEET), "--price-as", "synthetic", "--json"]
    code, text, _ = run(capsys, *args)
    assert code == 0
    recs, _ = records(text)
    assert recs and all(r["cost"] is not None for r in recs), [r["unpriced"] for r in recs]
    assert all(r["cost"]["total"] > 0 and not r["estimated"] for r in recs)


def test_a_stack_with_nothing_priced_says_so_not_none_completed(tmp_path, capsys):
    """An Ollama recording the sheet does not price: it read "1 tasks, 1 completed, ...;
    spent - USD; none completed USD per completed task"."""
    folder = tmp_path / "ollama"
    src = ROOT / "tests" / "data" / "ollama" / "chat_tool_call.ndjson"
    assert main(["import", "--from", "ollama", str(src), "-o", str(folder)]) == 0
    capsys.readouterr()
    code, out, err = run(capsys, str(folder), "--prices", str(SHEET))
    assert code == 0, err
    words = " ".join(out.split())  # the lines as wrapped, joined
    assert (
        "ollama/llama3.2: 1 task, 1 completed, 0 failed, 0 abandoned; none priced, so no "
        "spend or cost per completed task; task e2e p50"
    ) in words
    assert "none completed" not in words and "spent - " not in words


def test_a_source_priced_under_its_own_name_does_not_repeat_it(tmp_path, capsys):
    """vLLM's bench export of Qwen/Qwen2.5-7B-Instruct, priced by the entry of that name,
    read "3 of 3 priced (as Qwen/Qwen2.5-7B-Instruct)"."""
    src = ROOT / "tests" / "data" / "vllm-bench"
    export = next(src.glob("*.json"))
    assert main(["import", "--from", "vllm-bench", str(export), "-o", str(tmp_path / "v")]) == 0
    capsys.readouterr()
    code, out, err = run(capsys, str(tmp_path / "v"), "--prices", str(SHEET))
    assert code == 0, err
    words = " ".join(out.split())
    assert "Qwen/Qwen2.5-7B-Instruct: 3 of 3 priced per request" in words
