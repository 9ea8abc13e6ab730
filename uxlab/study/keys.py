"""Key names in a study file, checked against the keys the participant's terminal can send.

The participant's client is a Textual app in a terminal; a key binding fires only when the
key name is exactly the one Textual reports (`escape`, not `esc`). `check_key` turns a
study file's key name into that name, accepting well-known aliases (`esc`, `Esc`, `ctrl-x`,
`pgup`, `shift+a`), and says why a key can never fire: a name no terminal sends (with a
did-you-mean), a key only terminals with an extended keyboard protocol send, or a key the
trial screen already takes (quitting, sending, scrolling the answer, answering questions).

The key lists mirror what Textual's terminal parser reports from a terminal without the
kitty keyboard protocol (tmux, xterm, the Linux console); a test checks them against the
installed Textual, so an upgrade that changes them fails there.
This module does not import Textual (domain code never does).
"""

from __future__ import annotations

import difflib
import re
import unicodedata

_NAVIGATION = ("up", "down", "left", "right", "home", "end", "insert", "delete")
_PAGES = ("pageup", "pagedown")

NAMED_KEYS: frozenset[str] = frozenset(
    [
        "escape",
        "enter",
        "space",
        "tab",
        "shift+tab",
        "backspace",
        "shift+escape",
        *_NAVIGATION,
        *_PAGES,
        *(f"shift+{k}" for k in (*_NAVIGATION, *_PAGES)),
        *(f"ctrl+{k}" for k in (*_NAVIGATION, *_PAGES)),
        *(f"ctrl+shift+{k}" for k in (*_NAVIGATION, *_PAGES)),
        *(f"f{i}" for i in range(1, 25)),
        *(f"ctrl+f{i}" for i in range(1, 25)),
        *(f"ctrl+{c}" for c in "abcdefgjklnopqrstuvwxyz"),
        *(f"ctrl+{d}" for d in "0123456789"),
        *(f"ctrl+shift+{d}" for d in "0123456789"),
        "ctrl+@",
        "ctrl+backslash",
        "ctrl+right_square_bracket",
        "ctrl+circumflex_accent",
        "ctrl+underscore",
    ]
)
"""Keys Textual reports by name from a terminal's escape sequences and control codes
(besides these: printable characters, and alt+ a letter or digit)."""

ALIASES: dict[str, str] = {
    "esc": "escape",
    "return": "enter",
    "ret": "enter",
    "spacebar": "space",
    "bs": "backspace",
    "del": "delete",
    "ins": "insert",
    "pgup": "pageup",
    "page_up": "pageup",
    "pgdn": "pagedown",
    "pgdown": "pagedown",
    "page_down": "pagedown",
    "backtab": "shift+tab",
    "ctrl+i": "tab",  # the terminal sends the same byte as Tab
    "ctrl+m": "enter",  # ... as Enter
    "ctrl+h": "backspace",  # ... as Backspace
    "ctrl+left_square_bracket": "escape",  # ... as Escape (Ctrl+[)
    "ctrl+space": "ctrl+@",
    "newline": "ctrl+j",
}
"""Names people write for a key, and the name Textual reports for it."""

_MODIFIERS = {"control": "ctrl", "ctl": "ctrl", "meta": "alt", "option": "alt", "opt": "alt"}

APP_KEYS: dict[str, str] = {
    "ctrl+c": "quits the study (Ctrl+C)",
    "ctrl+q": "quits the study (Ctrl+Q)",
    "enter": "sends the prompt and confirms each answer",
    "tab": "moves the focus between the screen's parts",
    "shift+tab": "moves the focus between the screen's parts",
    "t": "shows the answer's details (thinking, tools) on the trial screen",
    **{k: "scrolls the answer while it streams" for k in ("up", "down", "left", "right")},
    **{k: "scrolls the answer while it streams" for k in ("home", "end", *_PAGES)},
    "ctrl+pageup": "scrolls the answer while it streams",
    "ctrl+pagedown": "scrolls the answer while it streams",
}
"""Keys the trial screen takes before the abandonment key is looked at, and what for."""

QUESTION_KEYS: dict[str, str] = {
    **{k: "answers yes/no questions" for k in ("y", "n")},
    **{str(d): "picks an answer by number" for d in range(10)},
    **{k: "moves the answer marker" for k in ("h", "j", "k", "l", "H", "L")},
    "shift+left": "moves the slider marker",
    "shift+right": "moves the slider marker",
}
"""Keys the question widgets take: they clash with a key that is live while questions are
on screen (questions after a step, when the abandonment key still stops the trial)."""


TEXT_ANSWER_KEYS: frozenset[str] = frozenset(
    [
        *("backspace", "delete", "home", "end", "left", "right", "enter"),
        *("shift+home", "shift+end", "shift+left", "shift+right"),
        *("ctrl+left", "ctrl+right", "ctrl+shift+left", "ctrl+shift+right"),
        *(f"ctrl+{c}" for c in "acdekuvwx"),
    ]
)
"""Keys a free-text answer box takes (Textual's `Input`), besides every printable character."""


def _char_key(char: str) -> str:
    """The name Textual gives a printable character (`/` -> `slash`, `a` -> `a`)."""
    if char.isalnum():
        return char
    if char == " ":
        return "space"
    try:
        name = unicodedata.name(char).lower().replace("-", "_").replace(" ", "_")
    except ValueError:
        return char
    return _CHAR_NAME_REPLACEMENTS.get(name, name)


_CHAR_NAME_REPLACEMENTS = {
    "solidus": "slash",
    "reverse_solidus": "backslash",
    "commercial_at": "at",
    "hyphen_minus": "minus",
    "plus_sign": "plus",
    "low_line": "underscore",
}
CHARACTER_KEYS: frozenset[str] = frozenset(
    _char_key(chr(c)) for c in range(0x21, 0x7F) if not chr(c).isalnum()
)
"""The names of the printable ASCII punctuation keys (`slash`, `question_mark`, ...)."""


def _is_character_key(name: str) -> bool:
    if len(name) == 1:
        return name.isprintable() and not name.isspace()
    if name.startswith("alt+"):
        rest = name[4:].removeprefix("shift+")
        return len(rest) == 1 and rest.isalnum() and (rest.islower() or rest.isdigit())
    return name in CHARACTER_KEYS


def receivable(name: str) -> bool:
    """Whether a terminal (without extended keyboard protocols) can deliver this key name."""
    return name in NAMED_KEYS or _is_character_key(name)


def normalise_key(raw: str) -> str:
    """A key as a study file may write it, in Textual's spelling (not yet checked)."""
    text = raw.strip() or raw
    if len(text) == 1:
        return _char_key(text)
    if text.lower() in ALIASES:
        return ALIASES[text.lower()]
    *mods, base = re.split(r"[+-](?=.)", text)  # "ctrl-x", "ctrl+x", "ctrl+-"
    mods = [_MODIFIERS.get(m.lower(), m.lower()) for m in mods]
    if len(base) == 1:
        if mods == ["shift"] and base.isalpha():
            return base.upper()  # Textual reports Shift+A as "A"
        base = base.lower() if mods else base
        base = base if base.isalnum() else _char_key(base)
    else:
        base = ALIASES.get(base.lower(), base.lower())
    if all(m in _MOD_ORDER for m in mods):
        mods = sorted(set(mods), key=_MOD_ORDER.index)
    name = "+".join([*mods, base])
    return ALIASES.get(name, name)


_MOD_ORDER = ["ctrl", "alt", "shift"]


def check_key(
    raw: str, *, questions_live: bool = False, typing_live: bool = False
) -> tuple[str, str | None]:
    """(Textual's name for the key, why it can never fire or None when it can).

    `questions_live`: the key is live while questions are on screen, so it must not be one
    the question widgets take; `typing_live`: one of them is a free-text box, which takes
    every printable character and its editing keys too.
    """
    name = normalise_key(raw)
    shown = repr(raw) if name == raw else f"{raw!r} ({name!r})"
    if not receivable(name):
        *mods, base = name.split("+") if len(name) > 1 else ["", name]
        if any(m in ("super", "cmd", "command", "hyper", "win") for m in mods):
            why = "the terminal never passes Super/Cmd keys to a program"
        elif mods and all(m in _MOD_ORDER for m in mods) and (receivable(base) or base == "plus"):
            why = (
                "the terminal sends this combination only with an extended keyboard "
                "protocol (kitty), which tmux and most terminals do not speak"
            )
            fewer = [m for m in mods if m != "shift"] or [m for m in mods if m != "alt"]
            simpler = "+".join([*fewer, base])
            if fewer != mods and receivable(simpler) and simpler not in APP_KEYS:
                return name, f"{shown}: {why} (did you mean {simpler!r}?)"
            return name, f"{shown}: {why}" + _EXAMPLES
        else:
            why = "not a key a terminal sends"
        return name, f"{shown}: {why}" + _suggest(name)
    if name in APP_KEYS:
        return name, f"{shown} {APP_KEYS[name]}, so it never reaches the study" + _pick()
    if questions_live and name in QUESTION_KEYS:
        return name, (
            f"{shown} {QUESTION_KEYS[name]}, and questions are on screen while this key "
            "must stop the answer" + _pick()
        )
    typed = _is_character_key(name) and not name.startswith("alt+")
    if typing_live and (typed or name in TEXT_ANSWER_KEYS):
        return name, (
            f"{shown} types or edits a free-text answer, and a free-text question is on "
            "screen while this key must stop the answer" + _pick()
        )
    return name, None


def _pick() -> str:
    return " (pick another, e.g. 'escape')"


def _suggest(name: str) -> str:
    choices = sorted(NAMED_KEYS | set(ALIASES))
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    if close:
        right = ALIASES.get(close[0], close[0])
        return f" (did you mean {right!r}?)"
    return _EXAMPLES


_EXAMPLES = " (e.g. 'escape', 'backspace', 'ctrl+x', 'f1', or a single character like 's')"
