"""The trial screen's layout with the real app: the whole prompt is on screen before it is
sent (80x24 and 60x20), and the answer column stays readable on a wide terminal."""

from __future__ import annotations

import pytest
from helpers.pilot import OneScreen, settle, trial_screen
from helpers.studies import LONG_PROMPT, long_prompt_study
from rich.console import Console
from rich.text import Text

from uxlab.store import Store
from uxlab.study import load_study
from uxlab.tui.stream_view import StreamView
from uxlab.tui.trial_screen import TrialScreen


def app_for(tmp_path) -> OneScreen:
    store = Store.open(tmp_path / "layout.sqlite")
    return OneScreen(trial_screen, load_study(long_prompt_study(tmp_path)), store)


@pytest.mark.parametrize("size", [(80, 24), (60, 20)], ids=["80x24", "60x20"])
async def test_the_whole_prompt_is_on_screen_before_it_is_sent(tmp_path, size):
    app = app_for(tmp_path)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, lambda: isinstance(app.screen, TrialScreen))
        text = app.screen.query_one("#composer-text")
        box = app.screen.query_one("#composer")
        width = text.content_region.width
        lines = Text(LONG_PROMPT).wrap(Console(width=width), width)
        assert len(lines) >= 3  # it needs several lines at this width ...
        assert text.content_region.height == len(lines)  # ... and gets every one of them
        assert box.content_region.contains_region(text.content_region)  # none clipped
        assert app.screen.region.contains_region(box.region)


async def test_the_answer_column_is_capped_on_a_wide_terminal(tmp_path):
    app = app_for(tmp_path)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot, lambda: isinstance(app.screen, TrialScreen))
        screen = app.screen
        for part in ("#chat", "#composer", "#trial-hint", "#trial-questions"):
            assert screen.query_one(part).outer_size.width <= 100, part
        await pilot.press("enter")
        await settle(pilot, lambda: screen.run.phase == "over" and screen.query("QuestionPanel"))
        assert screen.query_one(StreamView).size.width <= 100
        assert screen.query_one("#trial-questions").outer_size.width <= 100


async def test_a_prompt_longer_than_its_box_scrolls_and_says_so(tmp_path):
    long = " ".join([LONG_PROMPT] * 4)
    store = Store.open(tmp_path / "layout.sqlite")
    app = OneScreen(trial_screen, load_study(long_prompt_study(tmp_path, long)), store)
    async with app.run_test(size=(60, 20)) as pilot:
        await settle(pilot, lambda: isinstance(app.screen, TrialScreen))
        screen = app.screen
        box = screen.query_one("#composer")
        await settle(pilot, lambda: app.focused is box)
        assert box.outer_size.height <= 10 and box.max_scroll_y > 0  # half of 20 rows
        assert "read it all" in str(screen.query_one("#trial-hint").render())
        await pilot.press("pagedown", "pagedown", "pagedown")
        await settle(pilot, lambda: box.scroll_y == box.max_scroll_y)  # the end is reachable
        await pilot.press("enter")
        await settle(pilot, lambda: screen.run.phase != "ready")
        assert app.focused is not box  # the answer (or its questions) has it now
