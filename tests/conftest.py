"""Fixtures shared by many test modules: a PostgreSQL cluster the tests start themselves
(`helpers.postgres`) and `db`, a fresh study database of each backend; and the order of the
run (`helpers.waiting_spread`: the tests that mostly wait spread through it)."""

import os

pytest_plugins = ["helpers.postgres", "helpers.waiting_spread"]

# Subprocesses (`uxlab` started by many tests) may write their bytecode cache even where the
# environment forbids it, so only the first start compiles numpy, pandas, scipy, matplotlib
# and textual: see docs/contributing/testing.md.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
