"""Small wording of the report: `code` spans in HTML, rules no option changes."""

from __future__ import annotations

import pandas as pd

from analysis.exclusions import LOG_COLUMNS, ExclusionResult, rule_summary
from analysis.report.blocks import Para
from analysis.report.render import inline, render_html


def test_backtick_spans_render_as_code_in_html_and_are_escaped():
    page = render_html([Para("ask with `--estimand <x>` or `a&b`")], "t")
    assert "<code>--estimand &lt;x&gt;</code>" in page and "<code>a&amp;b</code>" in page
    assert "`" not in page.split("<body>")[1]
    assert inline("a lone ` tick") == "a lone ` tick"  # unpaired: shown as written


def test_a_rule_no_option_changes_says_so_rather_than_change_with_none():
    log = pd.DataFrame(
        [
            ["trial", "all", "attention-check trial", 4, "drop_attention_trials"],
            ["trial", "all", "practice", 2, "drop_practice"],
        ],
        columns=LOG_COLUMNS,
    )
    lines = rule_summary(ExclusionResult(kept=pd.DataFrame(), log=log))
    assert lines[0].endswith("; no option changes this (attention checks are not stimuli)")
    assert lines[1].endswith("; change with --keep-practice")
    assert not any("change with none" in line for line in lines)
