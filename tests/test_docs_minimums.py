"""The docs state each part's minimum number of participants as the report applies it: a
sentence naming a claim and "from / below / needs N participants" must give that claim's
minimum from `analysis.report.support.MINIMUMS` (the reference page's table is generated
from it by docs/hooks/report_minimums.py)."""

from __future__ import annotations

import re
from pathlib import Path

from analysis.report.support import MINIMUMS

DOCS = Path(__file__).parents[1] / "docs"
# the words that name a claim in prose -> its key in MINIMUMS
CLAIMS = {
    r"verdict": "verdicts",
    r"\bMOS\b": "mos_interval",
    r"population (?:interval|threshold)": "population",
    r"mixed rating": "mixed_rating",
    r"per-condition|per condition|ratio between conditions": "per_condition",
}
MINIMUM = re.compile(
    r"(?:from|below|needs?|need at least|needs at least|withheld below|runs? from)\s+"
    r"\**(\d+)\**\s+participants"
)
# pages about simulations and plans, whose participant counts are designs, not minimums
NOT_MINIMUMS = ("validation.md", "plan-study.md", "small-samples.md")


def _sentences(text: str):
    text = re.sub(r"\s+", " ", text)
    return re.split(r"(?<=[.;:])\s", text)


def test_docs_state_the_minimums_the_report_applies():
    wrong = []
    for page in DOCS.rglob("*.md"):
        if page.name in NOT_MINIMUMS:
            continue
        for sentence in _sentences(page.read_text(encoding="utf-8")):
            numbers = {int(n) for n in MINIMUM.findall(sentence)}
            if not numbers:
                continue
            named = [key for pattern, key in CLAIMS.items() if re.search(pattern, sentence, re.I)]
            expected = {MINIMUMS[key].min_participants for key in named}
            # one number for claims with different minimums is wrong for some of them
            said = {int(d) for d in re.findall(r"\b\d+\b", sentence)}
            if named and (not numbers <= expected or not expected <= said):
                wrong.append(f"{page.relative_to(DOCS)}: {sentence[:160]} (minimums {expected})")
    assert not wrong, "\n".join(wrong)


def test_the_generated_table_lists_every_minimum():
    import importlib.util

    spec = importlib.util.spec_from_file_location("hook", DOCS / "hooks" / "report_minimums.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    table = hook.render()
    for m in MINIMUMS.values():
        assert f"| {m.part} | {m.min_participants} |" in table
    page = (DOCS / "reference" / "report.md").read_text(encoding="utf-8")
    assert hook.MARKER in page
