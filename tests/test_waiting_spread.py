"""The run's order: the tests that mostly wait are spread through it (`helpers.waiting_spread`)."""

from __future__ import annotations

from helpers.waiting_spread import WAITING_MODULES, spread


def test_waiting_tests_are_spread_evenly_and_each_group_keeps_its_order():
    items = [f"fast{k}" for k in range(9)] + ["wait0", "wait1", "wait2"]
    waiting = [name.startswith("wait") for name in items]
    out = spread(items, waiting)  # type: ignore[arg-type]
    assert sorted(out) == sorted(items)
    assert out == ["wait0", "fast0", "fast1", "fast2", "wait1", "fast3", "fast4", "fast5",
                   "wait2", "fast6", "fast7", "fast8"]  # fmt: skip


def test_nothing_to_spread_keeps_the_order():
    assert spread(["a", "b"], [False, False]) == ["a", "b"]  # type: ignore[arg-type]
    assert spread(["a", "b"], [True, True]) == ["a", "b"]  # type: ignore[arg-type]


def test_every_waiting_module_exists_and_has_no_module_scoped_fixture():
    """Moving a module's tests apart would set its module-scoped fixtures up again."""
    from pathlib import Path

    here = Path(__file__).parent
    for name in WAITING_MODULES:
        text = (here / f"{name}.py").read_text(encoding="utf-8")
        assert 'scope="module"' not in text and 'scope="class"' not in text, name


def test_the_run_order_spreads_them(request):
    """In this very run, when it holds waiting tests and others, the first waiting test
    comes within the first quarter of the collection, not where its file sorts."""
    items = request.session.items
    waiting = [k for k, it in enumerate(items) if it.path.stem in WAITING_MODULES]
    if waiting and len(waiting) < len(items):
        assert waiting[0] <= len(items) // 4
