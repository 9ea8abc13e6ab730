"""A tiny live study run in the terminal app (Pilot, 80x24) against `uxlab serve` in a
thread: the participant types the prompt (or sends the given one), the live answer is
re-timed to the trial's profile, and the store and export keep violations and arrivals.
Also the study-file checks of `[stimuli] live`."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from helpers.pilot import asking, wait_for
from helpers.recordings import word_stream
from live_servers import serve_in_thread

from uxlab.cli import main
from uxlab.live.serve import Pick, ServeConfig, build_app, corpus_picker
from uxlab.shaping import Profile, shape
from uxlab.store import Store
from uxlab.store.verify import verify_db
from uxlab.streams.recording import Recording
from uxlab.study import load_study
from uxlab.study.spec import StudyError
from uxlab.tui.flow_screens import ConsentScreen, EndScreen, InstructionsScreen, TextScreen
from uxlab.tui.study_app import StudyApp
from uxlab.tui.trial_screen import TrialScreen

REPO = Path(__file__).resolve().parents[1]
WORDS = ["Beams", " sweep", " the", " bay", "."]
SERVED_TTFT_MS = 300.0

LIVE_STUDY = """
[study]
id = "live-tiny"
title = "Live tiny"
seed = 7

[texts]
consent = "Agree?"
instructions = "Send, watch, answer."

[stimuli]
live = {{ api = "openai", url = "{url}", model = "served", {prompts} }}

[profile]
itl = "constant:5"

[factors]
ttft_ms = [{levels}]

[design]
repeats = 1
order = "fixed"

[[questions]]
id = "acceptable"
type = "yesno"
text = "Acceptable?"

[abandon]
timeout_s = 20
"""


def live_study(tmp_path: Path, url: str, prompts: str, levels: str = "50, 2000") -> Path:
    path = tmp_path / "live.toml"
    path.write_text(LIVE_STUDY.format(url=url, prompts=prompts, levels=levels), encoding="utf-8")
    return path


def beams() -> Recording:
    return word_stream(WORDS, rid="beams", prompt="x")


@pytest.fixture
def served():
    """A model server of its own for each test (with one per module, a request of the test
    before still on its way under a loaded full run could land in the next test's `asked`)."""
    profile = Profile.from_table({"ttft": f"constant:{SERVED_TTFT_MS:g}", "itl": "constant:5"})
    config = ServeConfig([beams()], lambda r, s: shape(r, profile, seed=s))
    pick = corpus_picker(config)
    asked: list[str | None] = []

    def picker(index: int, prompt: str | None) -> Pick:  # keeps what the model was asked
        asked.append(prompt)
        return pick(index, prompt)

    config.picker = picker
    with serve_in_thread(build_app(config)) as base:
        yield base + "/v1", asked


async def run_session(tmp_path: Path, study_path: Path, typed: list[str] | None) -> Path:
    study = load_study(study_path)
    db = tmp_path / "results.sqlite"
    app = StudyApp(study, Store.open(db), participant="P-LIVE1")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ConsentScreen))
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, InstructionsScreen))
        await pilot.press("enter")
        n = 0
        while not isinstance(app.screen, EndScreen):
            await wait_for(
                pilot, lambda: isinstance(app.screen, (TrialScreen, TextScreen, EndScreen))
            )
            screen = app.screen
            if isinstance(screen, TextScreen):
                await pilot.press("enter")
                await wait_for(pilot, lambda s=screen: app.screen is not s)
                continue
            if not isinstance(screen, TrialScreen):
                break
            run = screen.run
            if typed is not None:
                await pilot.press("enter")  # nothing typed yet: not sent
                assert run.phase == "ready"
                await pilot.press(*typed[n], "enter")
            else:
                await pilot.press("enter")
            n += 1
            await wait_for(pilot, lambda r=run: r.phase in ("over", "answered"))
            await wait_for(pilot, lambda: asking(app))
            await pilot.press("y", "enter")
            await wait_for(pilot, lambda s=screen: app.screen is not s)
        await pilot.press("enter")
    assert app.return_value.outcome == "completed"
    return db


async def test_participant_types_the_prompt_and_violations_are_stored(tmp_path, served):
    url, asked = served
    path = live_study(tmp_path, url, 'prompt_from = "participant"')
    before = len(asked)
    db = await run_session(tmp_path, path, typed=["hello beams", "again"])
    assert asked[before:] == ["hello beams", "again"]  # the typed prompts, in trial order

    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT trial_index, outcome, timings FROM trials ORDER BY trial_index"
    ).fetchall()
    assert [r[1] for r in rows] == ["completed", "completed"]
    fast, slow = (json.loads(r[2]) for r in rows)  # fixed order: ttft 50 ms, then 2 s
    # The model needs >= 300 ms for its first chunk: the 50 ms schedule is violated on
    # every chunk, the 2 s schedule on none.
    assert fast["violations_n"] == len(WORDS) and fast["violation_max_ms"] >= 250
    # The 2 s schedule is kept unless the machine was so loaded that the model's chunks
    # arrived after it: then exactly those chunks count, with their lateness.
    slow_chunks = [
        json.loads(data)
        for (data,) in conn.execute(
            "SELECT data FROM events WHERE trial_index = 1 AND kind = 'chunk' ORDER BY seq"
        )
    ]
    late = [c["arrival_ms"] - c["due_ms"] for c in slow_chunks if c["arrival_ms"] > c["due_ms"]]
    assert len(slow_chunks) == len(WORDS) and slow["violations_n"] == len(late)
    assert slow["violation_max_ms"] == pytest.approx(max(late, default=0), abs=1e-3)
    events = [
        (kind, json.loads(data))
        for kind, data in conn.execute(
            "SELECT kind, data FROM events WHERE trial_index = 0 ORDER BY seq"
        )
    ]
    arrivals = [d for k, d in events if k == "arrival" and d["event"] == "chunk"]
    chunks = [d for k, d in events if k == "chunk"]
    assert len(arrivals) == len(chunks) == len(WORDS)
    for c in chunks:
        assert c["handed_ms"] >= c["arrival_ms"] - 1e-6 and c["handed_ms"] >= c["due_ms"] - 1e-6
        assert c["violation_ms"] == pytest.approx(max(c["arrival_ms"] - c["due_ms"], 0), abs=1e-3)
    keys = [d["key"] for k, d in events if k == "key"]
    assert "char" in keys and "h" not in keys  # typed text is kept only as the prompt
    request = next(d for k, d in events if k == "live_request")
    assert request["prompt"] == "hello beams" and request["status"] == 200
    assert request["request_sent_ms"] >= 0  # the send key press comes first
    assert request["model"] == "served" and request["api_key_env"] is None  # only a name
    conn.close()

    out = tmp_path / "export"
    assert main(["export", str(db), "-o", str(out)]) == 0
    table = pd.read_csv(out / "trials.csv")
    cols = list(table.columns)
    assert cols.index("violations_n") == cols.index("scheduled_end_ms") + 1
    assert table["violations_n"].tolist() == [len(WORDS), slow["violations_n"]]
    assert (table["shown_first_ms"] >= SERVED_TTFT_MS).all()
    exported = pd.read_csv(out / "events.csv")
    assert (exported["kind"] == "arrival").sum() >= 2 * len(WORDS)

    # verify: what uxlab drew of a live trial is rebuilt (each chunk's due time from the
    # profile and seed; shown = max(due, arrival, the chunk before)); the text is the model's
    report = verify_db(db, path)
    assert report.ok and report.n_event_live == 2, [m.line() for m in report.mismatches]
    last = len(WORDS) - 1
    conn = sqlite3.connect(db)
    with conn:  # a consistent forgery of the last chunk's due and shown time
        due, shown = conn.execute(
            "SELECT json_extract(data, '$.due_ms'), json_extract(data, '$.scheduled_ms') "
            "FROM events WHERE trial_index = 1 AND kind = 'chunk' "
            "AND json_extract(data, '$.index') = ?",
            (last,),
        ).fetchone()
        conn.execute(  # shown = max(due, arrival, the chunk before) still holds
            "UPDATE events SET data = json_set(data, '$.due_ms', ?, '$.scheduled_ms', ?) "
            "WHERE trial_index = 1 AND kind = 'chunk' AND json_extract(data, '$.index') = ?",
            (due + 30, max(shown, due + 30), last),
        )
    conn.close()
    (line,) = [m.line() for m in verify_db(db, path).mismatches]
    assert line.startswith(
        f"P-LIVE1 trial 1: events: chunk {last} due_ms: stored {round(due + 30, 3)}, "
        f"rebuilt {round(due, 3)}; changed since it was committed (audit entry "
    )  # the events' digest in the audit log says they changed too
    assert re.search(r"\): events \(the \d+ stored differ from those committed\)$", line)


async def test_given_prompts_are_sent_as_written(tmp_path, served):
    url, asked = served
    path = live_study(tmp_path, url, 'prompts = ["What do lighthouses do?"]', levels="2000")
    before = len(asked)
    await run_session(tmp_path, path, typed=None)
    assert asked[before:] == ["What do lighthouses do?"]


@pytest.mark.parametrize(
    ("prompts", "profile", "message"),
    [
        ('api_key = "sk-123", prompts = ["x"]', "", r"\[stimuli\].live.api_key: keys never go"),
        ('prompts = ["x"], prompt_from = "participant"', "", r"live.prompts: not used with"),
        ("", "", r"\[stimuli\].live.prompts: missing"),
        ('prompts = ["x"]', 'itl = "recorded"', r"\[profile\]: itl 'recorded' keeps recorded"),
    ],
)
def test_bad_live_studies_name_the_key_and_the_fix(tmp_path, prompts, profile, message):
    path = live_study(tmp_path, "http://127.0.0.1:9/v1", prompts)
    text = path.read_text(encoding="utf-8")
    if profile:
        text = text.replace('itl = "constant:5"', profile)
    path.write_text(text.replace("{ api", "{ api").replace(",  }", " }"), encoding="utf-8")
    with pytest.raises(StudyError, match=message):
        load_study(path)


def test_the_shipped_live_study_checks():
    study = load_study(REPO / "studies" / "live-openai.toml")
    assert (
        study.kind.name == "live" and study.kind.stimuli.endpoint.url == "http://127.0.0.1:8765/v1"
    )
    assert study.kind.stimuli.endpoint.api_key_env == "UXLAB_LIVE_KEY"
    assert len(study.kind.stimuli.prompts) == 3
