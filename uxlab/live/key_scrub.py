"""Removing an API key from everything a server sent back, in any form it was echoed.

Servers echo keys (a 401 body quoting the `Authorization` header, a proxy's error page). The
key can come back JSON-escaped (`sk-proj\\/...`, `\\u0073\\u006b...`, escaped twice inside a
string of JSON), percent-encoded, or cut into pieces by the stream's events. `KeyScrubber`
finds the key after decoding those forms: it matches every run of at least `min_fragment`
consecutive characters of the key, each character raw or in any of those encodings, so a
key split in two (each part at least that long) is removed from each event on its own, and
`scrub_pieces` removes a key that only appears when consecutive pieces are joined (the chunk
texts of a stream, the data of consecutive events).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

REDACTED = "[redacted]"
MIN_KEY_CHARS = 4
"""Shorter keys are not scrubbed (they would match ordinary text)."""


def _char_pattern(ch: str) -> str:
    """A regex for one character of the key: raw, JSON `\\uXXXX` (any number of
    backslashes, any hex case), `%XX`, or `\\/` for a slash."""
    code = ord(ch)
    forms = [re.escape(ch)]
    if code < 0x10000:
        forms.append(r"\\+u(?i:" + f"{code:04x})")
    if code < 0x80:
        forms.append("%(?i:" + f"{code:02x})")
    if ch == "/":
        forms.append(r"\\+/")
    return "(?:" + "|".join(forms) + ")"


_ESCAPE = re.compile(r"\\+u([0-9a-fA-F]{4})|\\+(/)|%([0-9a-fA-F]{2})")


def _unescape(m: re.Match[str]) -> str:
    """One JSON `\\uXXXX` / `\\/` or `%XX` escape decoded (for the quick pre-check)."""
    if m.group(2):
        return "/"
    return chr(int(m.group(1) or m.group(3), 16))


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
        encoded = "\\u" in text or "\\/" in text or "%" in text
        view = _ESCAPE.sub(_unescape, text) if encoded else text
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


class KeyStreamGuard:
    """Text shown piece by piece (a live answer on the participant's screen) that never shows
    the key, even one character per event: the end of a piece that, with what was shown
    just before, spells the first `min_hold` or more characters of the key is held back until
    a later piece shows it is not the key (or the stream ends: `flush`); the key itself, once
    its pieces meet, is shown as `[redacted]`. Ordinary text is never held."""

    def __init__(self, scrub: KeyScrubber, min_hold: int = 3):
        self.scrub = scrub
        self.key = scrub.key
        self.min_hold = min_hold
        self._held = ""
        self._shown_tail = ""

    def feed(self, text: str) -> str:
        """What of `text` (and of the held text before it) can be shown now."""
        key = self.key
        if key is None:
            return text
        buf = self._held + text
        joined = self._shown_tail + buf
        hold = 0
        if key[0] in joined[-len(key) :]:
            for m in range(min(len(key) - 1, len(joined)), self.min_hold - 1, -1):
                if joined.endswith(key[:m]):
                    hold = min(m, len(buf))
                    break
        release, self._held = buf[: len(buf) - hold], buf[len(buf) - hold :]
        return self._show(release)

    def _show(self, release: str) -> str:
        """`release` with the runs of the key in it (with what was shown before) redacted."""
        shown = len(self._shown_tail)
        joined = self._shown_tail + release
        spans = self.scrub.spans(joined)
        if spans:
            out, last = [], shown
            for start, end in spans:
                if end <= shown:
                    continue
                out.append(joined[last : max(start, shown)])
                out.append(REDACTED)
                last = end
            out.append(joined[last:])
            release = "".join(out)
        if self.key is not None:
            self._shown_tail = (self._shown_tail + release)[-len(self.key) :]
        return release

    def flush(self) -> str:
        """The held text at the end of the stream (it was not the key)."""
        held, self._held = self._held, ""
        return self._show(held)
