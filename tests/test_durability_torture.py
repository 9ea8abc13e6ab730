"""A study day's processes killed at exact points lose no committed answer (a few rounds of
`benchmarks/durability_torture.py`, which runs hundreds of kills at random points).

Real processes on one SQLite file: two `uxlab simulate` participants' programs; a real
`uxlab host` (browser mode) with one tab over a WebSocket, whose program is the real app on
a pseudo-terminal (`python -m uxlab.cli.remote_participant`); a process holding the
database open twice as the host does and storing paint reports through `PaintWriter`; and
`uxlab export` / `verify` / `report` running meanwhile. Each writer is killed (SIGKILL,
SIGHUP, SIGINT or SIGTERM) once it has logged a drawn number of commits, then started
again (the host: one of its programs, then the host itself); after each round the checks of
the benchmark run (integrity, every logged commit and paint stored, sessions consistent,
verify and export pass). Kills wait on the writers' side files, never on time.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).resolve().parents[1] / "benchmarks" / "durability_torture.py"


def _torture_module():
    spec = importlib.util.spec_from_file_location("durability_torture", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_killed_writers_and_live_readers_lose_no_committed_answer(tmp_path):
    torture = _torture_module()
    config = torture.Config(
        tmp_path, rounds=2, seed=11, sims=2, ptys=0, hosts=1, web_tabs=1, jitter_s=0.0, max_lines=6,
        reader_kill_share=0.0, log=False, reader_runs_per_round=3,
    )  # fmt: skip
    tally = torture.Torture(config).run()
    assert not tally.violations, "\n".join(tally.violations)
    kills = sum(tally.kills.values())
    assert kills >= 2 * 4  # every round: both simulators, the paint host, the web host
    assert tally.commits_checked > 0 and tally.paints_checked > 0 and tally.starts_checked > 0
    ran = {run.split(":")[0] for run in tally.reader_runs}
    assert ran == {"export", "verify", "report"}, tally.reader_runs  # every kind met the writers


@pytest.mark.slow
def test_a_postgresql_outage_each_round_loses_nothing_and_makes_no_second_identity(tmp_path):
    """The study database on PostgreSQL, its server stopped at once in every round while
    participants' programs (the real app on a pseudo-terminal) and a simulator write, and
    killed meanwhile: nothing logged as committed is lost, and no participant's program
    ends up under another id than the one it was started with."""
    torture = _torture_module()
    config = torture.Config(
        tmp_path, rounds=2, seed=13, sims=1, ptys=2, hosts=0, web_tabs=0, jitter_s=0.0,
        max_lines=6, reader_kill_share=0.0, log=False, postgres=True, outages=True,
        reader_runs_per_round=3,
    )  # fmt: skip
    run = torture.Torture(config)
    try:
        tally = run.run()
    finally:
        run.close()
    assert not tally.violations, "\n".join(tally.violations)
    assert tally.outages == 2 and tally.commits_checked > 0 and tally.starts_checked > 0
    # Each round stops writers mid-study: killed at their drawn commit, or, when the outage
    # comes first (when is a matter of the machine's speed), stopped by it with its one line.
    writers_met_it = sum(v for k, v in tally.outage_refusals.items() if not k.startswith("reader"))
    assert sum(tally.kills.values()) + writers_met_it >= 2, (tally.kills, tally.outage_refusals)
