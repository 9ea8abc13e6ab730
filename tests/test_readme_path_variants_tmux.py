"""README's path with 3 participants on one database, one of them excluded, in tmux.

Each participant takes the quickstart through the real terminal client in an 80x24 pane with
README's command, typed as README types it (`uv run uxlab run studies/quickstart.toml`),
one after the other on the same database: the first leaves at trial 4 and comes back last
with the printed `resume:` command, so the others meet the list of unfinished sessions and
start a new participant there; one of them misses every attention check. Then
the `export:` and `report:` commands printed at the end are run exactly as printed (the
study is the quickstart shortened by `test_readme_path_tmux.short_quickstart`). Asserts
a report is written; its first section counts the participants analysed and in the data,
names the excluded participant with the rule and the option that changes it; no
"below" / "above" verdict against published figures appears (fewer than 8 participants);
and nothing prints a traceback.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess

import pytest
from helpers.tmux import need_tmux
from helpers.tmux_participant import Participant, Tmux
from test_readme_path_tmux import (
    REPO,
    SEND,
    SEND_4,
    newcomer_env,
    printed_command,
    short_quickstart,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("uv") is None, reason="README's commands need uv"),
]

README_RUN = "uv run uxlab run studies/quickstart.toml"
MISSES_ALL = 99
"""`missed_checks` of the participant who answers every attention check wrongly."""


@pytest.fixture
def tmux():
    need_tmux()
    t = Tmux()
    yield t
    t.kill_server()


def verdicts_in(report_md: str) -> list[str]:
    """The verdicts in the published-figures table (its `figure lies` column), lower-cased."""
    found: list[str] = []
    for block in report_md.split("\n\n"):
        rows = [ln for ln in block.splitlines() if ln.startswith("|")]
        if not rows:
            continue
        header = [c.strip().lower() for c in rows[0].strip("|").split("|")]
        if "figure lies" not in header:
            continue
        k = header.index("figure lies")
        for row in rows[2:]:
            cells = [c.strip() for c in row.strip("|").split("|")]
            if k < len(cells):
                found.append(cells[k].lower())
    return found


def test_participants_one_after_another_one_excluded_then_export_and_report(tmux, tmp_path):
    n_people = 3  # the report of 1 kept participant: test_report_small_samples (n = 2)
    lab = tmp_path / "lab"
    short_quickstart(lab)
    shutil.copytree(REPO / "replays" / "chat", lab / "replays" / "chat")
    env = newcomer_env()

    # The first participant leaves at trial 4 (Ctrl+Q) and comes back last with the printed
    # `resume:` command; meanwhile the next ones run README's command on the same database,
    # see the first one's unfinished session listed and start a new participant (`n`). The
    # second participant misses every check; the others answer every check right.
    people = [Participant(missed_checks=MISSES_ALL if k == 1 else 0) for k in range(n_people)]
    tmux.start_in(README_RUN, lab, env)
    people[0].take(tmux, deadline_s=300, stop_when=lambda s: SEND_4 in s and SEND in s)
    tmux.keys("C-q", "C-q")
    paused = tmux.wait_exit(deadline_s=30)
    assert "Traceback" not in paused, paused
    resume = printed_command(paused, "resume")
    assert resume.startswith(f"{README_RUN} --participant P-"), resume
    for participant in people[1:]:
        tmux.fresh()  # a new server: the old one may still be going away
        tmux.start_in(README_RUN, lab, env)  # the same command for everyone, as README says
        done = participant.take(tmux, deadline_s=600)
        assert "Traceback" not in done, done
        assert "completed the study" in done, done
        assert any("unfinished sessions" in a for a in participant.log), participant.log
    tmux.fresh()
    tmux.start_in(resume, lab, env)  # as printed: straight back to the paused session
    final = people[0].take(tmux, deadline_s=600)
    assert "Traceback" not in final, final
    assert "completed the study" in final, final
    assert all(p.gave_up for p in people), [p.log for p in people]
    assert people[1].attention_seen >= 1, people[1].log

    db = lab / "results" / "quickstart.sqlite"
    with sqlite3.connect(db) as conn:
        sessions = conn.execute("SELECT participant, state FROM sessions").fetchall()
        resumed = conn.execute("SELECT SUM(resumed_count) FROM sessions").fetchone()[0]
        missed = conn.execute(
            "SELECT s.participant, SUM(t.attention_ok = 0), COUNT(*) FROM trials t "
            "JOIN sessions s USING (session_id) WHERE t.attention GROUP BY s.participant"
        ).fetchall()
    assert len(sessions) == n_people, sessions  # each person is one new participant
    assert {state for _, state in sessions} == {"completed"}, sessions
    assert resumed == 1, "only the first participant left and came back"
    careless = [pid for pid, n_missed, n_checks in missed if n_missed == n_checks]
    assert len(careless) == 1, missed  # exactly one missed every check ...
    assert [pid for pid, n_missed, _ in missed if n_missed] == careless, missed  # ... only one

    export, report = printed_command(final, "export"), printed_command(final, "report")
    assert export == "uv run uxlab export results/quickstart.sqlite"  # runs as typed
    assert report == "uv run uxlab report results/quickstart.sqlite"
    for line in (export, report):
        done = subprocess.run(
            line, shell=True, cwd=lab, env=env, capture_output=True, text=True, timeout=600
        )
        assert "Traceback" not in done.stdout + done.stderr, done.stderr
        assert done.returncode in (0, 1), f"{line}: {done.returncode}\n{done.stderr}"
        if line == export:
            assert (lab / "results" / "quickstart-export" / "trials.csv").is_file()
    written = lab / "results" / "quickstart-report"
    assert (written / "report.html").is_file()
    report_md = (written / "report.md").read_text()
    assert "Traceback" not in report_md

    sections = report_md.split("\n## ")
    support = sections[1]  # the first section after the title
    assert support.startswith("What this sample can support"), support[:200]
    n_kept = n_people - 1
    counts = re.search(
        r"(\d+) participant\(s\) and \d+ trials analysed \(of (\d+) participant\(s\)", support
    )
    assert counts, support[:600]
    assert (int(counts[1]), int(counts[2])) == (n_kept, n_people), support[:600]
    assert f"NOT supported with {n_kept}" in support, support[:2000]
    after = support.split("Participants left out, by rule (and the option that changes it):", 1)
    assert len(after) == 2, support[:2000]
    bullets = after[1].strip().split("\n\n", 1)[0].splitlines()  # the list under that line
    assert len(bullets) == 1 and careless[0] in bullets[0], bullets  # one rule, one person
    assert "attention checks 0% passed" in bullets[0], bullets
    assert "1 participant(s)" in bullets[0] and "--min-attention" in bullets[0], bullets
    assert not [pid for pid, _ in sessions if pid != careless[0] and pid in after[1]], after[1]

    verdicts = verdicts_in(report_md)
    assert any(v.startswith("not enough data") for v in verdicts), verdicts  # table is there
    assert not [v for v in verdicts if v.split(" ")[0] in ("below", "above", "inside")], verdicts
    summary = sections[2]
    assert summary.startswith("Summary"), summary[:200]
    assert not re.search(r"\b\d+ (below|above)\b", summary), summary  # no counted verdicts
