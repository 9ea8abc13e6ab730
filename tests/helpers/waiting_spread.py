"""Spread the tests that mostly wait through the run, so that two cores stay busy.

Some tests spend most of their time waiting: on a participant typing into a real terminal
(tmux, xterm), a browser, a server, a study played on the real clock. pytest-xdist hands
each worker consecutive tests of the collection, so in file order these tests come in
clumps (`test_host_browser*`, `test_run_*_tmux`, ...): three or four workers then wait at
once and the cores idle, while at other times four CPU-bound tests share two cores. This
plugin moves the tests of `WAITING_MODULES` (none of which has a module-scoped fixture,
so moving them costs no extra set-up) to even intervals through the first three quarters
of the collection, the longest first and the first at the start, and runs `LONG_MODULES`
before the other tests: the end of the run is left to short tests, which the workers share
evenly (a 56 s tmux walk that started at 77% of the run kept one worker going 25 s after
the others had finished). Which tests run, and how each runs, is unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

WAITING_MODULES: tuple[str, ...] = (
    "test_readme_path_variants_tmux",
    "test_docs_commands",
    "test_durability_torture",
    "test_readme_path_tmux",
    "test_host_browser",
    "test_host_browser_postgres",
    "test_glass_xterm",
    "test_host_browser_proxy",
    "test_demo",
    "test_several_hosts",
    "test_host_ssh",
    "test_run_tmux",
    "test_adaptive_tui",
    "test_quit_walk_tmux",
    "test_run_signals_tmux",
    "test_run_refusals_tmux",
    "test_host_browser_fit",
    "test_check_screen",
)
"""Modules whose tests mostly wait (measured: wall time several times their CPU time),
longest test first: they are spread in this order."""

LONG_MODULES: tuple[str, ...] = ("test_through_ui", "test_study_app")
"""Modules of long CPU-bound tests (30 s and 14 s alone on the 2-core machine), run first:
started near the end, one kept a worker busy after the others had finished."""

SPAN = 0.75
"""The share of the other tests over which the waiting ones are spread: none starts in the
last quarter, where a long wait would keep one worker going after the rest are done."""


def spread(items: list[pytest.Item], waiting: list[bool], span: float = 1.0) -> list[pytest.Item]:
    """`items` with those marked in `waiting` at about even intervals among the others (the
    first waiting one first) over the first `span` of them; each group keeps its own order,
    and a waiting test goes in only between two modules, never inside one (whose
    module-scoped fixtures would be set up again after it)."""
    slow = [it for it, w in zip(items, waiting, strict=True) if w]
    rest = [it for it, w in zip(items, waiting, strict=True) if not w]
    if not slow or not rest:
        return list(items)
    boundaries = [0] + [
        k for k in range(1, len(rest)) if rest[k].path != rest[k - 1].path
    ] + [len(rest)]  # fmt: skip
    out: list[pytest.Item] = []
    step = span * len(rest) / len(slow)
    taken = 0
    for k, item in enumerate(slow):
        target = round(k * step)
        upto = max(taken, min(boundaries, key=lambda b: abs(b - target)))
        out.extend(rest[taken:upto])
        taken = upto
        out.append(item)
    out.extend(rest[taken:])
    return out


def by_module(items: list[pytest.Item], order: tuple[str, ...]) -> list[pytest.Item]:
    """The items of the modules in `order` first, in that order (each module's own order
    kept), then every other item as it was."""
    rank = {name: k for k, name in enumerate(order)}
    return sorted(items, key=lambda it: rank.get(Path(str(it.path)).stem, len(order)))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ordered = by_module(items, WAITING_MODULES + LONG_MODULES)
    waiting = [Path(str(it.path)).stem in WAITING_MODULES for it in ordered]
    items[:] = spread(ordered, waiting, SPAN)
