"""The run's order: the tests that mostly wait are spread through it (`helpers.waiting_spread`)."""

from __future__ import annotations

from helpers.waiting_spread import LONG_MODULES, WAITING_MODULES, by_module, spread


class _Item:
    def __init__(self, name: str) -> None:
        self.name, self.path = name, name.rstrip("0123456789")

    def __repr__(self) -> str:
        return self.name


def _names(items) -> list[str]:
    return [it.name for it in items]


def test_waiting_tests_are_spread_evenly_and_each_group_keeps_its_order():
    items = [_Item(f"fast{k}") for k in range(9)] + [_Item(f"wait{k}") for k in range(3)]
    for it in items[:9]:
        it.path = it.name  # every fast test its own module
    waiting = [it.name.startswith("wait") for it in items]
    out = _names(spread(items, waiting))  # type: ignore[arg-type]
    assert sorted(out) == sorted(_names(items))
    assert out == ["wait0", "fast0", "fast1", "fast2", "wait1", "fast3", "fast4", "fast5",
                   "wait2", "fast6", "fast7", "fast8"]  # fmt: skip


def test_a_waiting_test_never_goes_inside_another_module():
    items = [_Item(f"a{k}") for k in range(5)] + [_Item(f"b{k}") for k in range(5)]
    items += [_Item("wait0"), _Item("wait1"), _Item("wait2")]
    waiting = [it.name.startswith("wait") for it in items]
    out = _names(spread(items, waiting))  # type: ignore[arg-type]
    assert sorted(out) == sorted(_names(items))
    modules = [name.rstrip("0123456789") for name in out if not name.startswith("wait")]
    runs = [m for k, m in enumerate(modules) if k == 0 or m != modules[k - 1]]
    assert runs == ["a", "b"], out  # each module's tests stay together
    assert out[0] == "wait0" and out.index("wait1") == 6, out  # at the a|b boundary


def test_with_a_span_none_goes_into_the_last_part():
    items = [_Item(f"fast{k}") for k in range(8)] + [_Item(f"wait{k}") for k in range(2)]
    for it in items[:8]:
        it.path = it.name
    waiting = [it.name.startswith("wait") for it in items]
    out = _names(spread(items, waiting, span=0.5))  # type: ignore[arg-type]
    assert out == ["wait0", "fast0", "fast1", "wait1"] + [f"fast{k}" for k in range(2, 8)]


def test_named_modules_go_first_in_the_order_given_each_keeping_its_own_order():
    items = [_Item(n) for n in ("a1", "a2", "b1", "c1", "c2")]
    for it in items:
        it.path = f"tests/test_{it.name[0]}.py"
    out = _names(by_module(items, ("test_c", "test_b")))  # type: ignore[arg-type]
    assert out == ["c1", "c2", "b1", "a1", "a2"]


def test_nothing_to_spread_keeps_the_order():
    a, b = _Item("a"), _Item("b")
    assert spread([a, b], [False, False]) == [a, b]  # type: ignore[arg-type]
    assert spread([a, b], [True, True]) == [a, b]  # type: ignore[arg-type]


def test_every_waiting_module_exists_and_has_no_module_scoped_fixture():
    """Moving a module's tests apart would set its module-scoped fixtures up again."""
    from pathlib import Path

    here = Path(__file__).parent
    assert len(set(WAITING_MODULES)) == len(WAITING_MODULES)
    for name in WAITING_MODULES + LONG_MODULES:
        assert (here / f"{name}.py").is_file(), name
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
