"""Trial kinds as plug-ins: every registered kind provides every part, and a new kind
(a toy one, `helpers.toy_kind`, defined here in the tests) takes a study from its file
through the session, the store, the export, `uxlab verify` and the terminal screen having
touched nothing but its own module, one view and the two registries."""

from __future__ import annotations

import csv
import inspect
import json
from pathlib import Path

import pytest
from helpers import toy_kind
from helpers.pilot import OneScreen, trial_screen, wait_for

import trial_table_spec as spec
from uxlab import kinds
from uxlab.kinds import TrialKind
from uxlab.simulate import simulate_cohort
from uxlab.store import Store
from uxlab.store.export import export_db
from uxlab.store.verify import verify_db
from uxlab.store.verify_report import format_report
from uxlab.study import StudyError, load_study, parse_study
from uxlab.tui import views

REPO = Path(__file__).resolve().parents[1]
PARTS = ("read", "schedule", "fingerprint", "begin", "check_chunks")
"""The methods a kind must write itself (the base class has no version of them)."""
CLASS_PARTS = {
    "name": str,
    "label": str,
    "noun": str,
    "view": str,
    "keys": tuple,
    "sections": dict,
    "factors": tuple,
    "columns": tuple,
    "judged": bool,
    "learnt": bool,
    "asks_after_steps": bool,
    "reads_prompt": bool,
}


@pytest.fixture
def echo():
    toy_kind.register()
    yield toy_kind.EchoKind
    toy_kind.unregister()


@pytest.mark.parametrize("name", sorted(kinds.REGISTRY))
def test_every_kind_provides_every_part(name):
    kind = kinds.REGISTRY[name]
    assert kind.name == name
    for part, kind_of_value in CLASS_PARTS.items():
        assert isinstance(getattr(kind, part), kind_of_value), f"{name}: {part}"
    assert not inspect.isabstract(kind), f"{name} leaves {sorted(kind.__abstractmethods__)}"
    for part in PARTS:
        assert part in vars(kind), f"{name}: no {part} of its own"
    assert kind.view in views.VIEWS, f"{name}: its view {kind.view!r} is not registered"
    assert all(isinstance(c, spec.Column) for c in kind.columns)
    assert kind.label in kinds.labels()
    for key in kind.keys:
        assert kinds.owner_of_key(key) is kind, f"{name}: [stimuli].{key} has two owners"


def test_the_kinds_columns_are_the_optional_groups_of_contract_2():
    groups = [k.columns for k in kinds.REGISTRY.values() if k.columns]
    assert groups == list(spec.OPTIONAL_GROUPS)


@pytest.mark.parametrize(
    ("study", "name"),
    [("quickstart", "recorded"), ("live-openai", "live"), ("agent-chain", "chain")],
)
def test_each_shipped_study_is_read_by_its_kind(study, name):
    loaded = load_study(REPO / "studies" / f"{study}.toml")
    assert loaded.kind.name == name and isinstance(loaded.kind, TrialKind)


def test_an_attention_check_plays_as_a_recorded_trial_in_any_kind():
    study = load_study(REPO / "studies" / "agent-chain.toml")
    assert kinds.for_trial(study.kind, attention=True).name == "recorded"
    assert kinds.for_trial(study.kind, attention=False) is study.kind


def test_another_kinds_key_section_or_factor_is_refused_in_its_words(tmp_path):
    path = REPO / "studies" / "quickstart.toml"
    text = path.read_text(encoding="utf-8")
    with pytest.raises(StudyError, match=r'\[stimuli\]\.chains: only with kind = "chain"'):
        parse_study(text.replace("[stimuli]", '[stimuli]\nchains = "x"'), path)
    with pytest.raises(StudyError, match=r"\[chain\]: only in a chain study"):
        parse_study(text + "\n[chain]\nask_after_steps = [1]\n", path)
    with pytest.raises(StudyError, match=r"'pause_ms' is a chain factor: use it with"):
        parse_study(text.replace("[factors]", "[factors]\npause_ms = [100]"), path)


def test_a_new_kind_is_its_module_one_view_and_the_registries(echo, tmp_path):
    path = tmp_path / "echo.toml"
    path.write_text(toy_kind.TOY_STUDY, encoding="utf-8")
    study = load_study(path)
    assert isinstance(study.kind, echo) and study.kind.words_per_chunk == 2
    assert [r.id for r in study.corpus.recordings] == ["echo-1", "echo-2"]

    db = tmp_path / "echo.sqlite"
    store = Store.open(db, durable=False)
    done = simulate_cohort(study, store, 2, seed=5)
    store.close()
    assert [d.n_trials for d in done] == [2, 2]

    out = export_db(db, tmp_path / "export")
    with out["trials"].open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["echo_words"] for r in rows} == {"5", "6"}  # the kind's own column
    at = list(rows[0]).index("scheduled_end_ms")
    assert list(rows[0])[at + 1] == "echo_words"  # where contract 2's optional groups go
    with out["events"].open(encoding="utf-8") as fh:
        echoes = [json.loads(e["data"]) for e in csv.DictReader(fh) if e["kind"] == "echo"]
    assert sorted(e["words"] for e in echoes) == [5, 5, 6, 6]

    report = verify_db(db, path)
    assert report.ok, format_report(report)
    assert report.n_event_trials == 4 and report.n_chunk_events > 0


async def test_a_new_kinds_trials_play_in_its_own_view(echo, tmp_path):
    path = tmp_path / "echo.toml"
    path.write_text(toy_kind.TOY_STUDY, encoding="utf-8")
    study = load_study(path)
    store = Store.open(tmp_path / "echo.sqlite")
    app = OneScreen(trial_screen, study, store)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen.query_one("#chat"), toy_kind.EchoView)
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen.run.phase in ("over", "answered"))
        view = screen.query_one("#chat", toy_kind.EchoView)
        assert view.answer_text().split() == screen.run.prompt.split()  # echoed word for word
    store.close()


def test_the_toy_kind_leaves_the_built_in_registries_as_they_were(echo):
    assert "echo" in kinds.REGISTRY and "echo" in views.VIEWS
    toy_kind.unregister()
    assert "echo" not in kinds.REGISTRY and "echo" not in views.VIEWS
    toy_kind.register()  # the fixture takes it out again
    with pytest.raises(ValueError, match="built-in"):
        kinds.unregister("chain")
