"""Fixtures shared by many test modules: a PostgreSQL cluster the tests start themselves
(`helpers.postgres`) and `db`, a fresh study database of each backend; and the order of the
run (`helpers.waiting_spread`: the tests that mostly wait spread through it)."""

import os
import sys
from pathlib import Path

import pytest

pytest_plugins = ["helpers.postgres", "helpers.waiting_spread"]

# Subprocesses (`uxlab` started by many tests) may write their bytecode cache even where the
# environment forbids it, so only the first start compiles numpy, pandas, scipy, matplotlib
# and textual: see docs/contributing/testing.md.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

TESTS = Path(__file__).resolve().parent


def pytest_configure(config: pytest.Config) -> None:
    """In the run's first process, before any test worker starts: the test modules' rewritten
    bytecode (pytest's assertion rewriting), cached once. Where the environment forbids
    writing bytecode (`sys.dont_write_bytecode`, as some CI images set it) pytest caches
    none, and each of the four workers parses and rewrites every test module while it
    collects (what that costs: docs/contributing/testing.md). Uses pytest's own rewriting;
    skipped if its internals move."""
    if os.environ.get("PYTEST_XDIST_WORKER") or not sys.dont_write_bytecode:
        return  # a worker (the first process cached them), or pytest caches them itself
    try:
        from _pytest.assertion import assertstate_key
        from _pytest.assertion.rewrite import PYC_TAIL, _rewrite_test, _write_pyc, get_cache_dir
    except ImportError:
        return
    state = config.stash.get(assertstate_key, None)
    if state is None:  # assertions not rewritten (--assert=plain)
        return
    for fn in sorted(TESTS.rglob("test_*.py")):
        pyc = get_cache_dir(fn) / (fn.name[:-3] + PYC_TAIL)
        if pyc.exists() and pyc.stat().st_mtime >= fn.stat().st_mtime:
            continue
        try:
            source_hash, co = _rewrite_test(fn, config)
        except SyntaxError:
            continue  # collecting it names the error
        pyc.parent.mkdir(exist_ok=True)
        _write_pyc(state, co, source_hash, pyc)
