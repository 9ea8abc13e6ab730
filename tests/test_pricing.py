"""The pricing package: usage in every API's terms, the price sheet and its errors, costs, tasks."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pricing.cost import TextCounts, cost_of, price_recording
from pricing.money import format_money
from pricing.sheet import PriceChoice, PriceSheetError, load_price_sheet
from pricing.tasks import CallFacts, ChainPlan, chain_task, pool_tasks, request_task
from pricing.usage import MAX_USAGE_TOKENS, NO_USAGE, TokenUsage, read_usage

REPO = Path(__file__).resolve().parents[1]


# --- usage ---------------------------------------------------------------------------------

# (usage as the source reported it) -> (input, cached, cache write, output, reasoning)
DIALECTS = [
    pytest.param(
        {
            "prompt_tokens": 1000,
            "completion_tokens": 300,
            "prompt_tokens_details": {"cached_tokens": 800},
            "completion_tokens_details": {"reasoning_tokens": 200},
        },
        (200, 800, 0, 100, 200),
        id="openai-chat",
    ),
    pytest.param({"prompt_tokens": 20, "output_tokens": 30}, (20, 0, 0, 30, 0), id="guidellm"),
    pytest.param(
        {
            "input_tokens": 78,
            "input_tokens_details": {"cached_tokens": 8},
            "output_tokens": 37,
            "output_tokens_details": {"reasoning_tokens": 22},
            "total_tokens": 115,
        },
        (70, 8, 0, 15, 22),
        id="responses",
    ),
    pytest.param(
        {
            "input_tokens": 849,
            "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": 4000,
            "output_tokens": 47,
        },
        (849, 4000, 100, 47, 0),
        id="anthropic",
    ),
    pytest.param(
        {
            "input_tokens": 28,
            "output_tokens": 106,
            "output_tokens_details": {"thinking_tokens": 67},
        },
        (28, 0, 0, 39, 67),
        id="anthropic-thinking",
    ),
    pytest.param(
        {
            "promptTokenCount": 32,
            "cachedContentTokenCount": 12,
            "candidatesTokenCount": 25,
            "thoughtsTokenCount": 40,
            "toolUsePromptTokenCount": 4610,
            "totalTokenCount": 4707,
        },
        (20 + 4610, 12, 0, 25, 40),
        id="gemini",
    ),
    pytest.param(
        {"promptTokenCount": 34, "totalTokenCount": 821, "thoughtsTokenCount": 787},
        (34, 0, 0, 0, 787),
        id="gemini-thoughts-only",
    ),
    pytest.param(
        {
            "total_tokens": 469,
            "total_input_tokens": 52,
            "total_cached_tokens": 2,
            "total_output_tokens": 22,
            "total_tool_use_tokens": 0,
            "total_thought_tokens": 395,
        },
        (50, 2, 0, 22, 395),
        id="gemini-interactions",
    ),
    pytest.param(
        {"inputTokens": 10, "outputTokens": 5, "cacheReadInputTokens": 3},
        (10, 3, 0, 5, 0),
        id="bedrock",
    ),
    pytest.param(
        {
            "billed_units": {"input_tokens": 46, "output_tokens": 14},
            "tokens": {"input_tokens": 1445, "output_tokens": 43},
        },
        (46, 0, 0, 14, 0),
        id="cohere-billed",
    ),
    pytest.param(
        {"prompt_eval_count": 26, "eval_count": 290, "eval_duration": 1_000_000},
        (26, 0, 0, 290, 0),
        id="ollama",
    ),
    pytest.param(
        {
            "input_sequence_length": 550,
            "output_sequence_length": 211,
            "output_token_count": 43,
            "reasoning_token_count": 168,
        },
        (550, 0, 0, 43, 168),
        id="aiperf",
    ),
    pytest.param({"input_tokens": 13, "output_tokens": 87}, (13, 0, 0, 87, 0), id="plain"),
]


@pytest.mark.parametrize(("raw", "want"), DIALECTS)
def test_each_api_usage_is_read_into_billed_categories_without_double_counting(raw, want):
    usage = read_usage(raw).usage
    assert usage is not None, read_usage(raw).problem
    got = (
        usage.input_tokens,
        usage.cached_input_tokens,
        usage.cache_write_tokens,
        usage.output_tokens,
        usage.reasoning_tokens,
    )
    assert got == want
    assert usage.counted_by and not usage.estimated


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (None, NO_USAGE),
        ({}, NO_USAGE),
        ("12 tokens", "usage: '12 tokens' is not an object"),
        ({"prompt_tokens": "12", "completion_tokens": 3}, "usage.prompt_tokens: '12' is not a"),
        ({"prompt_tokens": -5, "completion_tokens": 3}, "usage.prompt_tokens: -5 is negative"),
        ({"input_tokens": 2.5, "output_tokens": 3}, "not a whole number"),
        ({"input_tokens": True, "output_tokens": 3}, "is not a number of tokens"),
        (
            {"input_tokens": MAX_USAGE_TOKENS + 1, "output_tokens": 3},
            "tokens is not plausible",
        ),
        (
            {
                "prompt_tokens": 10,
                "completion_tokens": 3,
                "prompt_tokens_details": {"cached_tokens": 11},
            },
            "cached_tokens (11) is larger than usage.prompt_tokens (10)",
        ),
        (
            {
                "prompt_tokens": 10,
                "completion_tokens": 3,
                "completion_tokens_details": {"reasoning_tokens": 4},
            },
            "reasoning_tokens (4) is larger than usage.completion_tokens (3)",
        ),
        ({"output_tokens": 8}, "usage has no input token count (its keys: output_tokens)"),
        ({"trafficType": "ON_DEMAND"}, "usage has no token counts uxlab knows"),
        ({"prompt_tokens": 3, "completion_tokens": 1, "prompt_tokens_details": 7}, "not an object"),
    ],
)
def test_usage_that_cannot_be_billed_says_why_and_is_never_zero(raw, problem):
    reading = read_usage(raw)
    assert reading.usage is None
    assert problem in (reading.problem or "")


# --- the sheet -----------------------------------------------------------------------------

GOOD = """\
[sheet]
currency = "USD"
date = 2026-12-01
source = "our contract"

[[price]]
vendor = "openai"
model = "gpt-oss-20b"
aliases = ["gpt-oss-20b-hosted"]
input = 0.05
cached_input = 0.025
output = 0.20

[[price]]
model = "tiny"
input = 1
output = 2
reasoning = 3
date = "2026-11-02"
source = "a quote"
"""


def sheet(tmp_path: Path, text: str = GOOD, name: str = "prices.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return load_price_sheet(path)


def test_a_good_sheet_reads_with_defaults_dates_and_sources(tmp_path):
    s = sheet(tmp_path)
    oss, tiny = s.prices
    assert (s.currency, s.date, s.source, s.example) == ("USD", "2026-12-01", "our contract", False)
    assert oss.name == "openai/gpt-oss-20b" and oss.line == 6
    assert oss.rate("cached_input") == 0.025 and oss.rate("reasoning") == 0.20
    assert oss.rate("cache_write") == 0.05  # the input price when not given
    assert (tiny.date, tiny.source, tiny.rate("reasoning")) == ("2026-11-02", "a quote", 3.0)


def test_matching_by_vendor_and_model_and_the_vendor_model_name(tmp_path):
    s = sheet(tmp_path)
    assert s.find("openai", "gpt-oss-20b").name == "openai/gpt-oss-20b"
    assert s.find("OpenAI", "GPT-OSS-20B-hosted").name == "openai/gpt-oss-20b"
    assert s.find(None, "openai/gpt-oss-20b").name == "openai/gpt-oss-20b"  # AIPerf's naming
    assert s.find(None, "gpt-oss-20b") is None  # a vendor-less name does not guess the vendor
    assert s.find("groq", "gpt-oss-20b") is None
    assert s.find("anyone", "tiny").name == "tiny"
    assert s.find(None, None) is None


def test_price_as_overrides_one_source_or_all_and_refuses_an_unknown_entry(tmp_path):
    s = sheet(tmp_path)
    choice = PriceChoice.from_options(s, ["synthetic=tiny"])
    assert choice.price_for(None, "synthetic") == (s.prices[1], "--price-as")
    price, why = choice.price_for("groq", "gpt-oss-20b")
    assert price is None and "no price for 'groq/gpt-oss-20b' in prices.toml" in why
    everything = PriceChoice.from_options(s, ["openai/gpt-oss-20b"])
    assert everything.price_for("x", "y")[0] is s.prices[0]
    with pytest.raises(PriceSheetError, match=r"--price-as: no entry 'tiy' .*did you mean 'tiny'"):
        PriceChoice.from_options(s, ["synthetic=tiy"])


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        (
            ("output = 0.20", "ouput = 0.20"),
            ":12: [[price]] #1.ouput: unknown key (did you mean 'output'?)",
        ),
        (("input = 1\n", "input = -1\n"), ":16: [[price]] #2.input: -1 is negative"),
        (("input = 1\n", "input = nan\n"), ":16: [[price]] #2.input: nan is not a finite price"),
        (("input = 1\n", "input = inf\n"), ":16: [[price]] #2.input: inf is not a finite price"),
        (("input = 1\n", 'input = "1"\n'), ":16: [[price]] #2.input: '1' is not a price"),
        (("input = 1\n", "input = 150000\n"), ":16: [[price]] #2.input: 150000 per million"),
        (
            ('source = "a quote"', 'source = "a quote"\ncurrency = "EUR"'),
            ":21: [[price]] #2.currency: EUR differs from the sheet's USD",
        ),
        (
            ('currency = "USD"', 'currency = "dollars"'),
            ":2: [sheet].currency: 'dollars' is not a currency code",
        ),
        (("date = 2026-12-01", "date = 2026-13-01"), ":3: not TOML"),
        (
            ('date = "2026-11-02"', 'date = "last week"'),
            ":19: [[price]] #2.date: 'last week' is not a date",
        ),
        (("date = 2026-12-01\n", ""), ":1: [sheet]: 'date' is missing"),
        (
            ('model = "tiny"', 'model = "gpt-oss-20b-hosted"\nvendor = "openai"'),
            ":15: [[price]] #2.model: 'gpt-oss-20b-hosted' is also priced by [[price]] #1 "
            "(openai/gpt-oss-20b, line 6)",
        ),
        (
            ('model = "tiny"', 'model = "openai/gpt-oss-20b"'),
            "[[price]] #2.model: 'openai/gpt-oss-20b' is also priced by [[price]] #1",
        ),
        (('model = "tiny"\n', ""), ":14: [[price]] #2: 'model' is missing (required)"),
        (("[sheet]", "[sheets]"), ":1: sheets: unknown table or key (did you mean 'sheet'?)"),
    ],
)
def test_a_bad_sheet_names_file_line_and_field(tmp_path, edit, where):
    old, new = edit
    assert old in GOOD
    with pytest.raises(PriceSheetError) as err:
        sheet(tmp_path, GOOD.replace(old, new, 1))
    message = str(err.value)
    assert message.startswith(str(tmp_path / "prices.toml")), message
    assert where in message, message


def test_a_sheet_without_prices_or_not_utf8_or_missing_is_refused(tmp_path):
    with pytest.raises(PriceSheetError, match=r"\[\[price\]\]: no prices"):
        sheet(tmp_path, GOOD.split("[[price]]")[0])
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe")
    with pytest.raises(PriceSheetError, match="not UTF-8"):
        load_price_sheet(tmp_path / "bin.toml")
    with pytest.raises(PriceSheetError, match="cannot read"):
        load_price_sheet(tmp_path / "nowhere.toml")


def test_the_example_sheet_says_it_is_an_example_with_a_date():
    example = load_price_sheet(REPO / "prices" / "example.toml")
    assert example.example and example.date == "2026-12-06"
    assert "EXAMPLE prices" in example.describe()
    text = (REPO / "prices" / "example.toml").read_text()
    assert "EXAMPLES" in text and "not fetched from anywhere" in text.replace("\n# ", " ")


# --- cost ----------------------------------------------------------------------------------


def test_cost_bills_each_kind_of_token_at_its_own_price(tmp_path):
    s = sheet(tmp_path)
    usage = TokenUsage(
        input_tokens=1_000_000,
        cached_input_tokens=2_000_000,
        cache_write_tokens=1_000_000,
        output_tokens=500_000,
        reasoning_tokens=250_000,
    )
    cost = cost_of(usage, s.prices[0])
    assert cost.input == pytest.approx(0.05)
    assert cost.cached_input == pytest.approx(0.05)  # 2M x 0.025
    assert cost.cache_write == pytest.approx(0.05)  # at the input price
    assert cost.output == pytest.approx(0.10)
    assert cost.reasoning == pytest.approx(0.05)  # at the output price
    assert cost.total == pytest.approx(0.30)


def test_an_unpriced_recording_has_a_reason_and_no_cost(tmp_path):
    choice = PriceChoice(sheet(tmp_path))
    none = price_recording(choice, None, "tiny", None)
    assert none.cost is None and none.total is None
    assert none.unpriced.startswith(NO_USAGE) and "--estimate-usage" in none.unpriced
    stranger = price_recording(choice, None, "mystery", {"input_tokens": 1, "output_tokens": 1})
    assert stranger.cost is None and "no price for 'mystery'" in stranger.unpriced


def test_an_estimate_is_marked_and_needs_the_request_text(tmp_path):
    choice = PriceChoice(sheet(tmp_path))
    text = TextCounts(request_chars=400, output_chars=81, reasoning_chars=0)
    est = price_recording(choice, None, "tiny", None, text, estimate=True)
    assert est.estimated and est.usage.input_tokens == 100 and est.usage.output_tokens == 21
    assert est.total == pytest.approx((100 * 1 + 21 * 2) / 1e6)
    blind = price_recording(choice, None, "tiny", None, TextCounts(None, 81), estimate=True)
    assert blind.cost is None and "no request text" in blind.unpriced
    # usage present: never replaced by an estimate
    real = price_recording(
        choice, None, "tiny", {"input_tokens": 1, "output_tokens": 1}, text, True
    )
    assert not real.estimated


def test_money_keeps_three_significant_digits_and_never_rounds_to_zero():
    assert format_money(0.0000697) == "0.0000697"
    assert format_money(0.00133) == "0.00133"
    assert format_money(12.3456) == "12.35"
    assert format_money(None) == "-" and format_money(math.nan) == "-"
    assert format_money(0.5, estimated=True) == "~0.500"


# --- tasks ---------------------------------------------------------------------------------


def test_cost_per_completed_task_counts_every_attempt_and_leaves_unpriced_ones_out(tmp_path):
    choice = PriceChoice(sheet(tmp_path))

    def call(cost_in: int, failed: bool = False, usage: bool = True) -> CallFacts:
        raw = {"input_tokens": cost_in, "output_tokens": 0} if usage else None
        return CallFacts("tiny", 100.0, failed, price_recording(choice, None, "tiny", raw))

    a, b, c = (tmp_path / n for n in ("a.jsonl", "b.jsonl", "c.jsonl"))
    calls = {
        a.resolve(): call(1_000_000),
        b.resolve(): call(2_000_000),
        c.resolve(): call(3_000_000),
    }
    done = ChainPlan(tmp_path / "x", "done", (("call", a), ("pause", 50.0), ("answer", b)))
    broke = ChainPlan(tmp_path / "y", "broke", (("call", c),), outcome="abandoned")
    t_done, t_broke = chain_task(done, calls), chain_task(broke, calls)
    assert (t_done.outcome, t_done.cost, t_done.e2e_ms) == ("completed", 3.0, 250.0)
    assert (t_broke.outcome, t_broke.outcome_from, t_broke.cost) == ("abandoned", "declared", 3.0)
    failed = request_task("f.jsonl", call(4_000_000, failed=True))
    unpriced = request_task("u.jsonl", call(0, usage=False))
    (stack,) = pool_tasks([t_done, t_broke, failed, unpriced])
    assert (stack.n_tasks, stack.n_completed, stack.n_priced) == (4, 2, 3)
    assert stack.n_completed_priced == 1
    assert stack.spent == pytest.approx(10.0)  # 3 + 3 + 4: the failed attempts cost money too
    assert stack.cost_per_completed_task == pytest.approx(10.0)
    assert list(stack.unpriced.values()) == [1]


def test_a_chain_whose_answer_broke_failed_and_a_missing_call_makes_it_unpriced(tmp_path):
    choice = PriceChoice(sheet(tmp_path))
    raw = {"input_tokens": 1, "output_tokens": 1}
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    broke = CallFacts("tiny", 10.0, True, price_recording(choice, None, "tiny", raw))
    plan = ChainPlan(tmp_path / "c", "c", (("call", a), ("answer", b)))
    task = chain_task(plan, {b.resolve(): broke})
    assert task.outcome == "failed" and task.outcome_from == "the answer's stream"
    assert task.cost is None and "a.jsonl is not a usable replay file" in task.unpriced
    assert math.isnan(task.e2e_ms)
