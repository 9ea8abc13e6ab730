"""Key names in a study file: checked against what Textual receives from a terminal, aliases
normalised, keys that can never fire refused with file, line, key path and a suggestion; and
the configured abandonment key (Escape, and aliases of keys) stops a trial in the real app.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from helpers.pilot import wait_for
from helpers.studies import SLOW_MS, tiny_study
from test_chain_questions import study_file as chain_study_file
from test_run_tmux import Tmux, run_command
from textual._ansi_sequences import ANSI_SEQUENCES_KEYS
from textual._xterm_parser import XTermParser
from textual.binding import Binding
from textual.keys import _character_to_key
from textual.screen import Screen
from textual.widgets import Input

from uxlab.cli import main
from uxlab.store import Store
from uxlab.study import StudyError, load_study
from uxlab.study.keys import (
    APP_KEYS,
    NAMED_KEYS,
    QUESTION_KEYS,
    TEXT_ANSWER_KEYS,
    check_key,
    receivable,
)
from uxlab.tui.chain_view import ChainView
from uxlab.tui.flow_screens import ConsentScreen, InstructionsScreen
from uxlab.tui.questions import Slider
from uxlab.tui.stream_view import StreamView
from uxlab.tui.study_app import StudyApp
from uxlab.tui.trial_screen import TrialScreen

REPO = Path(__file__).resolve().parents[1]


def study_with_key(tmp_path: Path, key: str, **kw) -> Path:
    path = tiny_study(tmp_path, **kw)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('key = "escape"', f"key = {key!r}"), encoding="utf-8")
    return path


def parsed(data: str) -> list[str]:
    """The key names Textual's terminal parser reports for these bytes."""
    parser = XTermParser()
    return [e.key for e in [*parser.feed(data), *parser.feed("")] if hasattr(e, "key")]


# --- the key lists agree with the installed Textual ---------------------------------------


def test_named_keys_are_exactly_those_textual_reports_from_terminal_sequences():
    textual_keys = {
        k.value
        for v in ANSI_SEQUENCES_KEYS.values()
        if isinstance(v, tuple)
        for k in v
        if not k.value.startswith("<")
    }
    assert textual_keys == NAMED_KEYS


def test_the_parser_turns_bytes_into_the_names_the_check_accepts():
    # Escape alone, Ctrl+G, a letter, '/', F1 (xterm), Ctrl+Up (xterm), Alt+x (ESC x).
    keys = parsed("\x07a/\x1bOP\x1b[1;5A\x1bx")
    assert keys == ["ctrl+g", "a", "slash", "f1", "ctrl+up", "alt+x"]
    assert parsed("\x1b") == ["escape"]
    assert all(receivable(k) for k in [*keys, "escape"])
    for c in map(chr, range(0x21, 0x7F)):  # every printable ASCII key, as Textual names it
        assert check_key(c)[0] == _character_to_key(c)


def _bound_keys(*bindings) -> set[str]:
    out = set()
    for b in bindings:
        if isinstance(b, Binding):
            out.update(k.strip() for k in b.key.split(","))
    return out


def test_every_key_the_trial_screen_takes_first_is_refused():
    taken = _bound_keys(*StudyApp.BINDINGS, *Screen.BINDINGS, *TrialScreen.BINDINGS)
    taken |= set(StreamView()._bindings.key_to_bindings) | set(
        ChainView()._bindings.key_to_bindings
    )
    taken = {k for k in taken if receivable(k)}  # super+c (copy) never arrives anyway
    assert taken <= set(APP_KEYS)
    refused = set(APP_KEYS) | set(QUESTION_KEYS)
    assert _bound_keys(*Slider.BINDINGS) <= refused


# --- the check ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("escape", "escape"),
        ("esc", "escape"),
        ("Esc", "escape"),
        ("ctrl+[", "escape"),
        ("Ctrl-X", "ctrl+x"),
        ("shift+a", "A"),
        ("/", "slash"),
        ("ins", "insert"),
        ("F5", "f5"),
        ("alt+x", "alt+x"),
        ("backspace", "backspace"),
    ],
)
def test_aliases_are_normalised_to_the_name_textual_reports(raw, name):
    assert check_key(raw) == (name, None)


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("escpae", "not a key a terminal sends (did you mean 'escape'?)"),
        ("ctrl+c", "quits the study"),
        ("ctrl+q", "quits the study"),
        ("enter", "sends the prompt"),
        ("return", "sends the prompt"),
        ("t", "shows the answer's details"),
        ("up", "scrolls the answer"),
        ("tab", "moves the focus"),
        ("ctrl+shift+a", "extended keyboard protocol (kitty)"),
        ("ctrl+shift+a", "did you mean 'ctrl+a'?"),
        ("cmd+q", "never passes Super/Cmd keys"),
        ("stop", "e.g. 'escape'"),
    ],
)
def test_a_key_that_can_never_fire_says_why(raw, says):
    _, problem = check_key(raw)
    assert problem is not None and says in problem


def test_question_keys_clash_only_where_questions_share_the_screen_with_the_key():
    assert check_key("y") == ("y", None)
    _, problem = check_key("y", questions_live=True)
    assert problem is not None and "answers yes/no questions" in problem
    assert check_key("s", questions_live=True) == ("s", None)
    _, problem = check_key("s", questions_live=True, typing_live=True)
    assert problem is not None and "types or edits a free-text answer" in problem
    assert check_key("escape", questions_live=True, typing_live=True) == ("escape", None)


def test_every_key_a_free_text_answer_takes_is_refused_while_one_is_on_screen():
    bound = {k for k in _bound_keys(*Input.BINDINGS) if receivable(k)}
    assert bound <= TEXT_ANSWER_KEYS | set(APP_KEYS)


def test_study_check_names_file_line_key_path_and_suggestion(tmp_path, capsys):
    path = study_with_key(tmp_path, "ecsape")
    line = next(i for i, s in enumerate(path.read_text().splitlines(), 1) if s.startswith("key ="))
    with pytest.raises(StudyError) as info:
        load_study(path)
    assert info.value.line == line and info.value.key == "[abandon].key"
    assert main(["study", "check", str(path)]) != 0
    err = capsys.readouterr().err
    assert f"{path}:{line}: [abandon].key: 'ecsape': " in err
    assert "did you mean 'escape'?" in err


def test_a_quit_key_is_refused_when_the_study_loads(tmp_path):
    with pytest.raises(StudyError, match=r":\d+: \[abandon\]\.key: 'ctrl\+c' quits the study"):
        load_study(study_with_key(tmp_path, "ctrl+c"))


def test_an_alias_loads_as_textual_names_it_and_study_check_shows_that(tmp_path, capsys):
    path = study_with_key(tmp_path, "esc")
    assert load_study(path).abandon.key == "escape"
    assert main(["study", "check", str(path)]) == 0
    assert "give up with escape" in capsys.readouterr().out


def test_every_shipped_study_names_keys_that_fire():
    for path in sorted((REPO / "studies").glob("*.toml")):
        study = load_study(path)
        assert check_key(study.abandon.key) == (study.abandon.key, None), path.name


# --- through the real app -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("configured", "pressed"), [("escape", "escape"), ("esc", "escape"), ("Ctrl-G", "ctrl+g")]
)
async def test_the_configured_key_gives_up_through_the_real_app(tmp_path, configured, pressed):
    """Pilot presses the key Textual reports for the terminal's bytes: the give-up is stored."""
    path = study_with_key(tmp_path, configured, levels=f"{SLOW_MS:g}", practice=0)
    study = load_study(path)
    store = Store.open(tmp_path / "results.sqlite")
    app = StudyApp(study, store, participant="P-KEY01")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ConsentScreen))
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, InstructionsScreen))
        assert re.search(r"\*\*(Esc|Ctrl\+g)\*\* stops waiting", app.screen.body)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TrialScreen))
        screen = app.screen
        await pilot.press("enter", pressed)
        await wait_for(pilot, lambda: screen.awaiting_next)
        assert screen.run.outcome == "abandoned"
        await pilot.press("enter")
        await wait_for(pilot, lambda: 0 in app.session.committed)
        await pilot.press("ctrl+q", "ctrl+q")
    store.close()
    store = Store.open(tmp_path / "results.sqlite")
    try:
        rows = store.db.conn.execute("SELECT outcome, t_abandon_ms FROM trials").fetchall()
    finally:
        store.close()
    assert rows[0][0] == "abandoned" and 0 <= rows[0][1] < SLOW_MS


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_an_aliased_key_gives_up_in_a_real_terminal(tmp_path):
    """`key = "esc"` in tmux: the Escape byte goes through Textual's parser to the binding."""
    path = study_with_key(tmp_path, "esc", levels=f"{SLOW_MS:g}", practice=0, attention=False)
    db = tmp_path / "tmux.sqlite"
    tmux = Tmux()
    try:
        tmux.start(run_command(path, db))

        def until(marker: str) -> None:
            deadline = time.monotonic() + 30
            while marker not in tmux.screen():
                assert time.monotonic() < deadline, f"no {marker!r} on:\n{tmux.screen()}"
                time.sleep(0.05)

        for marker, key in [
            ("Timing warnings", "Enter"),  # inside tmux, for the researcher
            ("Press a if you agree", "a"),
            ("Press Enter to begin", "Enter"),
            ("Press Enter to send.", "Enter"),
            ("to stop waiting", "Escape"),
        ]:
            until(marker)
            tmux.keys(key)
        until("You stopped this answer")
        tmux.keys("Enter")
        until("Trial 2 of 2")
        tmux.keys("C-q", "C-q")
        with sqlite3.connect(db) as conn:
            got = conn.execute("SELECT trial_index, outcome FROM trials").fetchall()
        assert got[0] == (0, "abandoned")
    finally:
        tmux.kill_server()


def test_a_chain_study_asking_mid_chain_refuses_a_key_its_questions_take(tmp_path):
    path = chain_study_file(tmp_path)  # a yes/no question after steps 2 and 4
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('key = "escape"', 'key = "n"'), encoding="utf-8")
    with pytest.raises(StudyError, match=r"\[abandon\]\.key: 'n' answers yes/no questions"):
        load_study(path)
    path.write_text(text.replace('key = "escape"', 'key = "s"'), encoding="utf-8")
    assert load_study(path).abandon.key == "s"  # no free-text question on screen
