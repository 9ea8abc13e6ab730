"""Spread the tests that mostly wait through the run, so that two cores stay busy.

Some tests spend most of their time waiting: on a participant typing into a real terminal
(tmux, xterm), a browser, a server, a study played on the real clock. pytest-xdist hands
each worker consecutive tests of the collection, so in file order these tests come in
clumps (`test_host_browser*`, `test_run_*_tmux`, ...): three or four workers then wait at
once and the cores idle, while at other times four CPU-bound tests share two cores. This
plugin moves the tests of `WAITING_MODULES` (none of which has a module-scoped fixture,
so moving them costs no extra set-up) to even intervals through the collection, the first
at the start. Which tests run, and how each runs, is unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

WAITING_MODULES = frozenset(
    {
        "test_readme_path_variants_tmux",
        "test_readme_path_tmux",
        "test_run_tmux",
        "test_run_signals_tmux",
        "test_run_refusals_tmux",
        "test_quit_walk_tmux",
        "test_glass_xterm",
        "test_host_browser",
        "test_host_browser_fit",
        "test_host_browser_postgres",
        "test_host_browser_proxy",
        "test_host_ssh",
        "test_several_hosts",
        "test_durability_torture",
        "test_check_screen",
        "test_adaptive_tui",
        "test_demo",
        "test_docs_commands",
    }
)
"""Modules whose tests mostly wait (measured: wall time several times their CPU time)."""


def spread(items: list[pytest.Item], waiting: list[bool]) -> list[pytest.Item]:
    """`items` with those marked in `waiting` at about even intervals among the others (the
    first waiting one first); each group keeps its own order, and a waiting test goes in
    only between two modules, never inside one (whose module-scoped fixtures would be set
    up again after it)."""
    slow = [it for it, w in zip(items, waiting, strict=True) if w]
    rest = [it for it, w in zip(items, waiting, strict=True) if not w]
    if not slow or not rest:
        return list(items)
    boundaries = [0] + [
        k for k in range(1, len(rest)) if rest[k].path != rest[k - 1].path
    ] + [len(rest)]  # fmt: skip
    out: list[pytest.Item] = []
    step = len(rest) / len(slow)
    taken = 0
    for k, item in enumerate(slow):
        target = round(k * step)
        upto = max(taken, min(boundaries, key=lambda b: abs(b - target)))
        out.extend(rest[taken:upto])
        taken = upto
        out.append(item)
    out.extend(rest[taken:])
    return out


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    waiting = [Path(str(it.path)).stem in WAITING_MODULES for it in items]
    items[:] = spread(items, waiting)
