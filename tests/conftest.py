"""Fixtures shared by many test modules: a PostgreSQL cluster the tests start themselves
(`helpers.postgres`) and `db`, a fresh study database of each backend."""

pytest_plugins = ["helpers.postgres"]
