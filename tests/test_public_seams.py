"""Tests use the product's public seams: no test reads a private attribute of a product object
or imports a private name from a shipped package; nor does one product module import
another's private name.

A private name here is one the product itself defines with one leading underscore: a method
or an attribute set on `self`/`cls` in a class of a shipped package, or a module-level
function or variable (`module._helper`). A test that reads one (`fit._result`) breaks when
the product's insides change, not its behaviour; give the object a public property or
method, or test what it does. Names the tests define themselves (their own helpers'
`self._proc`, ...) and private attributes of other libraries (Textual's, argparse's) are not
checked: a read of a name that only a dependency defines cannot be told apart statically.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = (
    "uxlab",
    "analysis",
    "trial_table_spec",
    "psychometric_function",
    "pricing",
    "number_text",
)
RECEIVERS = ("self", "cls")

_LEAVING_THE_CLI = "moving out of uxlab.cli (issue 35, a thin CLI); the test follows it"
ALLOWED: dict[str, str] = {
    # test file:private name -> why the test still reads it
    "test_serve_upstream.py:_config": _LEAVING_THE_CLI,
    "test_secrets.py:_log_exchange": _LEAVING_THE_CLI,
    "test_out_option.py:_subparsers": _LEAVING_THE_CLI,
    "test_report_unbounded_interval.py:_print_summary": _LEAVING_THE_CLI,
    "test_report_honest_wording.py:_print_summary": _LEAVING_THE_CLI,
    "test_report_honest_wording.py:_upper": _LEAVING_THE_CLI,
    "test_invitations.py:_remote_app_class": _LEAVING_THE_CLI,
}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined_privates(files: list[Path], module_level: bool = True) -> set[str]:
    """Private names the files define: methods and self/cls attributes of classes, and (with
    `module_level`) module-level functions, classes and variables."""
    names: set[str] = set()
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                names.update(
                    f.name
                    for f in node.body
                    if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                )
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id in RECEIVERS
            ):
                names.add(node.attr)
        if not module_level:
            continue
        for stmt in tree.body:  # module-level functions, classes, variables (`_CACHE = ...`)
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(stmt.name)
            targets = stmt.targets if isinstance(stmt, ast.Assign) else []
            if isinstance(stmt, ast.AnnAssign):
                targets = [stmt.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return {n for n in names if _is_private(n)}


def _private_reads(path: Path, product: set[str]) -> list[tuple[int, str]]:
    """(line, name) of every `x._name` in a test file where `_name` is a product private
    and `x` is not the test's own `self`/`cls`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or node.attr not in product:
            continue
        if isinstance(node.value, ast.Name) and node.value.id in RECEIVERS:
            continue
        found.append((node.lineno, node.attr))
    return found


def _private_imports(path: Path) -> list[tuple[int, str]]:
    """(line, name) of every private name a test file imports from a shipped package."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [
        (node.lineno, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in SHIPPED
        for alias in node.names
        if _is_private(alias.name)
    ]


def test_no_test_imports_a_private_name_of_the_product() -> None:
    found = [
        f"tests/{path.relative_to(ROOT / 'tests')}:{line}: {name}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for line, name in _private_imports(path)
        if f"{path.name}:{name}" not in ALLOWED
    ]
    assert not found, "tests import private names of the product:\n" + "\n".join(found)


def test_no_test_reads_a_private_attribute_of_a_product_object() -> None:
    product_files = [p for pkg in SHIPPED for p in sorted((ROOT / pkg).rglob("*.py"))]
    test_files = sorted((ROOT / "tests").rglob("*.py"))
    own = _defined_privates(test_files, module_level=False)  # the tests' helper classes'
    product = _defined_privates(product_files) - own
    assert "_threshold_table" in product, "the scan no longer finds the product's privates"
    reads = [
        f"tests/{path.relative_to(ROOT / 'tests')}:{line}: .{name}"
        for path in test_files
        for line, name in _private_reads(path, product)
        if f"{path.name}:{name}" not in ALLOWED
    ]
    assert not reads, "tests read private attributes of product objects:\n" + "\n".join(reads)


def test_the_check_finds_a_private_read(tmp_path: Path) -> None:
    """The scan itself can fail: a read of a product private is found, the test's own
    `self._x` and a name the product does not define are not."""
    test = tmp_path / "test_x.py"
    test.write_text(
        "def test(fit, helper):\n"
        "    fit._threshold_table(0.5)\n"
        "    helper._made_up_name\n"
        "class Helper:\n"
        "    def go(self):\n"
        "        return self._threshold_table\n",
        encoding="utf-8",
    )
    assert _private_reads(test, {"_threshold_table"}) == [(2, "_threshold_table")]
    test.write_text("from uxlab.store.audit import chain_value, _hidden\n", encoding="utf-8")
    assert _private_imports(test) == [(1, "_hidden")]


def test_no_product_module_imports_another_modules_private_name() -> None:
    """A name one shipped module imports from another is part of that module's interface:
    it is named as such (no leading underscore), so a change to it shows as one."""
    found = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for pkg in SHIPPED
        for path in sorted((ROOT / pkg).rglob("*.py"))
        for line, name in _private_imports(path)
    ]
    assert not found, "product modules import private names:\n" + "\n".join(found)
