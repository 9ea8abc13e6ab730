"""Removing an API key from everything a server sent back, in any form it was echoed.

Servers echo keys (a 401 body quoting the `Authorization` header, a proxy's error page). The
key can come back JSON-escaped (`sk-proj\\/...`, `\\u0073\\u006b...`, escaped twice inside a
string of JSON), percent-encoded (once or twice: `%2F`, `%252F`), as HTML character
references (`&#x2F;`, `&#47;`, every character as `&#NN;`, named ones such as `&sol;`, and
those escaped again as `&amp;#x2F;`, as error pages write them), or cut into pieces by the
stream's events. `KeyScrubber` finds the key after decoding those forms: it matches every
run of at least `min_fragment` consecutive characters of the key, each character raw or in
any of those encodings, so a key split in two (each part at least that long) is removed
from each event on its own, and `scrub_pieces` removes a key of any length that only
appears when consecutive pieces are joined: all the text of a response in arrival order
(reasoning, content, tool arguments, error messages), the data of consecutive events.

`ChannelGuard` keeps a key off a screen that shows the text piece by piece, across the
channels it arrives on (reasoning, then content, then an error that is never shown).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from html.entities import html5
from typing import Any

REDACTED = "[redacted]"
MIN_KEY_CHARS = 4
"""Shorter keys are not scrubbed (they would match ordinary text)."""


def _named_references() -> dict[str, list[str]]:
    """HTML's named character references by the character they stand for (`/`: `sol`)."""
    out: dict[str, list[str]] = {}
    for name, char in html5.items():
        if len(char) == 1:
            out.setdefault(char, []).append(name.rstrip(";"))
    return out


_NAMED = _named_references()


def _char_pattern(ch: str) -> str:
    """A regex for one character of the key: raw, JSON `\\uXXXX` (any number of
    backslashes, any hex case), `%XX` (or `%25XX`, encoded twice), `\\/` for a slash, or an
    HTML character reference: `&#NN;`, `&#xHH;` (leading zeros, any case, the `;` optional,
    `&amp;` before it any number of times) or a named one (`&sol;`)."""
    code = ord(ch)
    forms = [re.escape(ch)]
    if code < 0x10000:
        forms.append(r"\\+u(?i:" + f"{code:04x})")
    if code < 0x80:
        forms.append("%(?:25)*(?i:" + f"{code:02x})")
    if ch == "/":
        forms.append(r"\\+/")
    refs = [f"#0*{code}", f"#[xX]0*(?i:{code:x})"]
    refs += [re.escape(name) for name in sorted(set(_NAMED.get(ch, [])))]
    forms.append("&(?:amp;)*(?:" + "|".join(refs) + ");?")
    return "(?:" + "|".join(forms) + ")"


_ESCAPE = re.compile(r"\\+u([0-9a-fA-F]{4})|\\+(/)|%(?:25)*([0-9a-fA-F]{2})")


def _unescape(m: re.Match[str]) -> str:
    """One JSON `\\uXXXX` / `\\/` or `%XX` escape decoded (for the quick pre-check)."""
    if m.group(2):
        return "/"
    return chr(int(m.group(1) or m.group(3), 16))


def decoded_view(text: str) -> str:
    """`text` with JSON, URL and HTML escapes undone, nested ones too (for the quick
    pre-check: the spans themselves are found on the text as written)."""
    for _ in range(4):
        before = text
        if "\\u" in text or "\\/" in text or "%" in text:
            text = _ESCAPE.sub(_unescape, text)
        if "&" in text:
            text = html.unescape(text)
        if text == before:
            break
    return text


class KeyScrubber:
    """`scrub(text)`: `text` with every echo of the key replaced by `[redacted]`."""

    def __init__(self, key: str | None, min_fragment: int = 12):
        self.key = key if key and len(key) >= MIN_KEY_CHARS else None
        self._pattern: re.Pattern[str] | None = None
        self._windows: tuple[str, ...] = ()
        if self.key is None:
            return
        key = self.key
        width = min(min_fragment, len(key)) if len(key) >= 2 * min_fragment else len(key)
        starts = range(len(key) - width + 1)
        self._windows = tuple(dict.fromkeys(key[i : i + width] for i in starts))
        chars = [_char_pattern(ch) for ch in key]
        windows = {"".join(chars[i : i + width]) for i in starts}
        # A lookahead finds every window, overlapping ones too; their union is redacted.
        self._pattern = re.compile("(?=(" + "|".join(sorted(windows)) + "))")

    def __call__(self, text: str) -> str:
        return self.scrub(text)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The (start, end) ranges of `text` that hold the key or a long enough part of it."""
        if self._pattern is None or not text:
            return []
        view = decoded_view(text)
        if not any(w in view for w in self._windows):
            return []  # the common case, decided by substring searches on the decoded text
        merged: list[tuple[int, int]] = []
        for m in self._pattern.finditer(text):
            start, end = m.start(1), m.end(1)
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        return merged

    def scrub(self, text: str) -> str:
        """`text` with each run of the key (or a long part of it) replaced by `[redacted]`."""
        spans = self.spans(text)
        if not spans:
            return text
        out, last = [], 0
        for start, end in spans:
            out.append(text[last:start])
            out.append(REDACTED)
            last = end
        out.append(text[last:])
        return "".join(out)

    def found_in(self, text: str) -> bool:
        """Whether `text` holds the key or a long part of it, in any form."""
        return bool(self.spans(text))

    def scrub_pieces(self, pieces: Sequence[str]) -> list[str]:
        """`pieces` with the key removed where it runs across them when joined: the first
        piece a run touches gets `[redacted]` in its place, the others lose their part."""
        pieces = list(pieces)
        joined = "".join(pieces)
        spans = self.spans(joined)
        if not spans:
            return pieces
        out: list[str] = []
        offset = 0
        for piece in pieces:
            lo, hi = offset, offset + len(piece)
            offset = hi
            kept, last = [], lo
            for start, end in spans:
                if end <= lo or start >= hi:
                    continue
                kept.append(joined[last : max(start, lo)])
                if start >= lo:
                    kept.append(REDACTED)
                last = min(end, hi)
            kept.append(joined[last:hi])
            out.append("".join(kept))
        return out


def _ordered(value: dict[Any, Any]) -> list[Any]:
    """A dict's keys with `message` first: what a server says comes before its codes."""
    return sorted(value, key=lambda k: k != "message")


def text_leaves(value: Any) -> list[str]:
    """Every string in a JSON value (an error), in order, each object's `message` first."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for k in _ordered(value) for t in text_leaves(value[k])]
    if isinstance(value, list):
        return [t for v in value for t in text_leaves(v)]
    return []


def with_text_leaves(value: Any, leaves: list[str]) -> Any:
    """`value` with its strings (in `text_leaves` order) replaced by `leaves`."""
    it = iter(leaves)

    def put(v: Any) -> Any:
        if isinstance(v, str):
            return next(it)
        if isinstance(v, dict):
            new = {k: put(v[k]) for k in _ordered(v)}
            return {k: new[k] for k in v}  # the original key order
        if isinstance(v, list):
            return [put(x) for x in v]
        return v

    return put(value)


Piece = tuple[str | None, str]
"""A piece of text and the channel it arrived on (None: never shown, e.g. an error's text)."""


class ChannelGuard:
    """Text shown piece by piece, on several channels (a live answer's reasoning and content
    on the participant's screen), that never shows the key, even one character per event or
    split across channels: all the text is one stream in arrival order. The end of that
    stream which, with what was shown just before, spells the first `min_hold` or more
    characters of the key is held back until a later piece shows it is not the key (or the
    stream ends: `flush`); the key itself, once its pieces meet, is shown as `[redacted]` in
    the channel its first shown character came on. A piece on channel None (an error's
    text, never shown) takes part in the stream, so a key completed there takes its start
    off the screen too. Ordinary text is never held."""

    def __init__(self, scrub: KeyScrubber, min_hold: int = 3):
        self.scrub = scrub
        self.key = scrub.key
        self.min_hold = min_hold
        self._held: list[Piece] = []
        self._shown_tail = ""

    def feed(self, channel: str | None, text: str) -> list[Piece]:
        """What of `text` (and of the text held before it) can be shown now, by channel."""
        if self.key is None:
            return [(channel, text)] if text else []
        key = self.key
        self._held.append((channel, text))
        buf = "".join(t for _, t in self._held)
        joined = self._shown_tail + buf
        hold = 0
        if key[0] in joined[-len(key) :]:
            for m in range(min(len(key) - 1, len(joined)), self.min_hold - 1, -1):
                if joined.endswith(key[:m]):
                    hold = min(m, len(buf))
                    break
        release, self._held = _split_pieces(self._held, len(buf) - hold)
        return self._show(release)

    def flush(self) -> list[Piece]:
        """The held text at the end of the stream (it was not the key)."""
        held, self._held = self._held, []
        return self._show(held)

    def _show(self, release: list[Piece]) -> list[Piece]:
        """`release` with the runs of the key in it (with what was shown before) redacted."""
        shown = len(self._shown_tail)
        text = "".join(t for _, t in release)
        spans = [(a, b) for a, b in self.scrub.spans(self._shown_tail + text) if b > shown]
        out: list[Piece] = []
        if not spans:
            out = [(c, t) for c, t in release if t]
        else:
            owners = [c for c, t in release for _ in t]
            starts = {max(a, shown) - shown for a, _ in spans}
            inside = [any(a <= shown + i < b for a, b in spans) for i in range(len(text))]
            for i, ch in enumerate(text):
                piece = REDACTED if i in starts else ("" if inside[i] else ch)
                if not piece:
                    continue
                if out and out[-1][0] == owners[i]:
                    out[-1] = (owners[i], out[-1][1] + piece)
                else:
                    out.append((owners[i], piece))
        if self.key is not None:
            self._shown_tail = (self._shown_tail + "".join(t for _, t in out))[-len(self.key) :]
        return out


def _split_pieces(pieces: list[Piece], n: int) -> tuple[list[Piece], list[Piece]]:
    """The first `n` characters of `pieces`, and the rest, each keeping its channel."""
    first: list[Piece] = []
    rest: list[Piece] = []
    for channel, text in pieces:
        if n >= len(text):
            first.append((channel, text))
            n -= len(text)
        elif n > 0:
            first.append((channel, text[:n]))
            rest.append((channel, text[n:]))
            n = 0
        else:
            rest.append((channel, text))
    return first, rest


class KeyStreamGuard:
    """`ChannelGuard` on one channel: `feed(text)` returns the text to show now."""

    def __init__(self, scrub: KeyScrubber, min_hold: int = 3):
        self._guard = ChannelGuard(scrub, min_hold)
        self.key = scrub.key

    def feed(self, text: str) -> str:
        """What of `text` (and of the held text before it) can be shown now."""
        return "".join(t for _, t in self._guard.feed("", text))

    def flush(self) -> str:
        """The held text at the end of the stream (it was not the key)."""
        return "".join(t for _, t in self._guard.flush())
