"""Ctrl+C stops either study host, also when it was started with SIGINT ignored.

A shell without job control starts a background job (`uxlab host ... &`, a script, CI)
with SIGINT and SIGQUIT ignored, and the child inherits that. The SSH host used to rely on
Python's default KeyboardInterrupt, so such a host ignored Ctrl+C (`kill -INT`) and never
hung up its sessions; both hosts now handle SIGINT themselves.
"""

from __future__ import annotations

import signal
from contextlib import contextmanager

import pytest
from helpers.browser import WebHost
from helpers.ssh import HostProcess
from helpers.studies import tiny_study

from uxlab.store import Store
from uxlab.store.invitations import create_invitations


@contextmanager
def sigint_ignored_for_children():
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)  # inherited across exec
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.parametrize("kind", ["ssh", "browser"])
def test_ctrl_c_stops_a_host_started_with_sigint_ignored(tmp_path, kind):
    study = tiny_study(tmp_path, levels="20", itl=2, attention=False)
    db = tmp_path / "host.sqlite"
    with Store.open(db) as store:
        create_invitations(store, "tiny", 1)
    with sigint_ignored_for_children():
        host = HostProcess(study, db) if kind == "ssh" else WebHost(study, db)
    assert host.stop() == 0
