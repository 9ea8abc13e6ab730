"""The question-type registry: every type has a terminal widget and a simulated answer, and
the keys the simulated participant presses give that answer through the real widget."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_questions import answer

from uxlab.simulate.observers import Cues, Observer, PopulationTruth
from uxlab.simulate.scripted import answer_keys
from uxlab.study.loading.questions import QUESTION_KEYS
from uxlab.study.loading.reader import StudyReader
from uxlab.study.questions import REGISTRY
from uxlab.study.spec import QUESTION_TYPES, Question
from uxlab.tui.questions import WIDGETS, question_help, question_view


def example(name: str) -> Question:
    """A question of type `name` read from its type's example keys, as the loader reads it."""
    reader = StudyReader(Path("study.toml"))
    fields = REGISTRY[name].parse(reader, dict(REGISTRY[name].example), "[[questions]][0]")
    return Question(id="q", type=name, text="How was it?", **fields)


def test_every_registered_type_has_a_widget_and_its_keys_in_the_study_file():
    assert set(WIDGETS) == set(REGISTRY) == set(QUESTION_TYPES)
    for name, qt in REGISTRY.items():
        assert set(qt.keys) <= set(QUESTION_KEYS), name
        assert set(qt.example) <= set(qt.keys), name
        assert question_help(question_view(example(name))), name


@pytest.mark.parametrize("name", list(REGISTRY))
async def test_a_simulated_answer_is_keyed_into_the_widget_stored_and_exported(name):
    qt = REGISTRY[name]
    q = example(name)
    rng = np.random.default_rng(7)
    observer = Observer.draw(PopulationTruth(), rng)
    cues = Cues(ttft_ms=900.0, median_gap_ms=30.0, gap_cv=0.2, end_ms=3000.0)
    value = observer.answer(q, cues, rng)
    keys, shown = answer_keys(q, value)
    (given,) = await answer(q, *keys)
    assert given.value == shown
    stored = qt.normalise(q, given.value)
    assert qt.matches(q, stored, stored)
    cell = qt.export_value(stored)
    assert cell is not None
