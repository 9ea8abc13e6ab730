"""Only the store touches its connection: everything else uses its parts.

`Store` is a facade over parts that share one connection (`store.db`): `store.sessions`,
`store.trials`, `store.groups`, `store.withdrawal`, ... A product module (the rest of
`uxlab`, `analysis`, `benchmarks`) that reads `store.db` or a connection (`.conn`) reaches past
them, and one that runs a `PRAGMA` changes how the database behaves behind the store's back
(`Store.open(path, durable=False)` says it instead). Tests may read stored rows through
`store.db.conn`: that is what they check.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE_THE_STORE = ("uxlab", "analysis", "benchmarks")
PRAGMA = re.compile(r"\bPRAGMA\b", re.IGNORECASE)


def _names_a_store(node: ast.expr) -> bool:
    """`store`, `self.store`, `app.store.sessions`, `first_store`: an expression that is a
    store or one of its parts (a name in its chain says "store")."""
    while isinstance(node, ast.Attribute):
        if "store" in node.attr.lower():
            return True
        node = node.value
    return isinstance(node, ast.Name) and "store" in node.id.lower()


def reach_ins(path: Path, pragmas: bool) -> list[tuple[int, str]]:
    """(line, what) of every reach past the store's parts in one file: `<store>.db`,
    `<store>.conn`, `<anything>.db.conn` and (with `pragmas`) a PRAGMA in a string."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("db", "conn"):
            if _names_a_store(node.value):
                found.append((node.lineno, f".{node.attr} of a store"))
            elif node.attr == "conn" and getattr(node.value, "attr", "") == "db":
                found.append((node.lineno, ".db.conn"))
        elif pragmas and isinstance(node, ast.Constant) and PRAGMA.search(str(node.value)):
            found.append((node.lineno, "a PRAGMA"))
    return sorted(found)


def _product_files() -> list[Path]:
    files = [p for pkg in OUTSIDE_THE_STORE for p in sorted((ROOT / pkg).rglob("*.py"))]
    return [p for p in files if not p.is_relative_to(ROOT / "uxlab" / "store")]


def test_no_module_outside_the_store_touches_its_connection() -> None:
    files = _product_files()
    assert any(p.name == "study_session.py" for p in files), "the scan lost the product"
    found = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in files
        # a benchmark may measure a SQLite file with its own connection and pragmas
        for line, what in reach_ins(path, pragmas=path.is_relative_to(ROOT / "uxlab"))
    ]
    assert not found, "modules reach past the store's parts:\n" + "\n".join(found)


def test_the_check_finds_a_reach_in(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "def f(store, app, args):\n"
        "    store.conn.execute('SELECT 1')\n"
        "    app.store.db.write_transaction()\n"
        "    args.db\n"
        "    store.sessions.latest_state(1, 2)\n"
        "    self.store.trials.conn\n"
        "    x = 'PRAGMA synchronous = NORMAL'\n",
        encoding="utf-8",
    )
    assert reach_ins(module, pragmas=True) == [
        (2, ".conn of a store"),
        (3, ".db of a store"),
        (6, ".conn of a store"),
        (7, "a PRAGMA"),
    ]
