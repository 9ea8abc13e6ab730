"""The chat message view: one prompt and one streamed answer, one chunk per update, O(1).

`StreamView` is a Line-API widget. Finished screen lines are kept (as text, made `Strip`s
only when drawn) and never touched again while the stream runs; an `append` re-wraps only
the last, unfinished line
(its cost depends on the chunk and the width, not on how long the answer already is). The
scroll stays anchored to the bottom unless the reader scrolls up. The lifecycle is explicit:

    start(prompt)  ->  append(text, channel)*  ->  finish(end, error) | cancel()

`start(prompt)` shows "You: <prompt>", then an "Assistant:" label over the answer and a
waiting indicator ("● ● ●") until the first chunk. Reasoning is shown as a
dimmed, collapsed "Thinking…" line and tool calls as a collapsed block; `t` expands both.
After `finish`, the answer is rendered once as Markdown (code blocks, lists, emphasis),
after the frame holding the last chunk has been painted, keeping the bottom anchored.

A width change (a resize, or a sibling's layout) re-wraps every line once, before the next
frame is drawn. The view is also a player `Sink` (`apply`, `finish`, `cancel`); a chunk
applied through `apply` is painted at once (`uxlab.tui.frame_request`), not on the
screen's next update tick.

A large chunk (more than `PIECE_CHARS` characters) is applied in bounded pieces, one per
event-loop turn, so keys (the abandon key) are handled between pieces instead of after the
whole chunk; later chunks and `finish` wait their turn behind it. Such a chunk counts as
shown when its *last* piece is fed (`on_chunk_fed`, which the paint probe uses), so its
shown time is the frame that completed it, while its handed time stays the player's.
`cancel` drops pieces not yet fed: they were never on screen. An answer longer than
`MARKDOWN_MAX_CHARS` stays plain wrapped text after `finish` (Markdown of 1 MB blocks the
loop for about half a second).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from rich.style import Style
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from uxlab.streams.recording import Chunk, End, ErrorEvent, Meta
from uxlab.tui.answer_strips import TextLine, build_strip, line_text, markdown_strips
from uxlab.tui.answer_text import (
    Block,
    details_header,
    error_message,
    pretty_json,
    wrap_overflow,
)
from uxlab.tui.chunk_pieces import ChunkPieces
from uxlab.tui.frame_request import FrameRequester

__all__ = ["MARKDOWN_MAX_CHARS", "PIECE_CHARS", "StreamView", "ViewStats", "wrap_overflow"]

StreamState = Literal["idle", "waiting", "streaming", "finished", "cancelled", "error"]

WAITING_FRAMES = ("●  ○  ○", "○  ●  ○", "○  ○  ●")
ANSWER_LABEL = "Assistant:"
"""The line over the answer, once a prompt was sent (as "You:" starts the prompt's)."""
PIECE_CHARS = 8192
"""A chunk longer than this is fed in pieces of this size, one per event-loop turn."""
MARKDOWN_MAX_CHARS = 100_000
"""Longer answers are not re-rendered as Markdown on `finish` (it would block the loop)."""
_CONTROL = {ord(c): None for c in map(chr, range(32)) if c not in "\n\t"}


@dataclass
class ViewStats:
    """Work done by the last `append` (for the O(1) test) and in total."""

    appends: int = 0
    rebuilds: int = 0
    last_wrapped_chars: int = 0
    """Characters re-wrapped by the last append (the unfinished line plus the new text)."""
    last_lines_built: int = 0
    """Strips built by the last append (finished lines plus the new last line)."""


class StreamView(ScrollView, can_focus=True):
    """One chat exchange: the prompt, then the streamed answer (see module docstring)."""

    fills_screen: ClassVar[bool] = False
    """The prompt box stays below a chat once the prompt is sent (`uxlab.tui.views`)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "stream-view--prompt",
        "stream-view--reasoning",
        "stream-view--tool",
        "stream-view--waiting",
        "stream-view--error",
        "stream-view--status",
        "stream-view--label",
    }

    DEFAULT_CSS = """
    StreamView {
        background: $surface;
        color: $foreground;
        overflow-x: hidden;
        overflow-y: scroll;
        scrollbar-size-vertical: 1;
        scrollbar-background: $surface;
        scrollbar-background-hover: $surface;
        scrollbar-background-active: $surface;
        scrollbar-corner-color: $surface;
    }
    StreamView > .stream-view--prompt { color: $accent; text-style: bold; }
    StreamView > .stream-view--reasoning { color: $text-muted; text-style: italic; }
    StreamView > .stream-view--tool { color: $text-muted; }
    StreamView > .stream-view--waiting { color: $accent; }
    StreamView > .stream-view--error { color: $error; text-style: bold; }
    StreamView > .stream-view--status { color: $text-muted; }
    StreamView > .stream-view--label { color: $text-muted; text-style: bold; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("t", "toggle_details", "Thinking/tools", show=False),
    ]

    def __init__(
        self,
        *,
        markdown_on_finish: bool = True,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.markdown_on_finish = markdown_on_finish
        self.expanded = False
        """Whether reasoning and tool blocks are shown in full."""
        self.state: StreamState = "idle"
        self.stats = ViewStats()
        self._blocks: list[Block] = []
        self._lines: list[Strip | TextLine] = []
        """Finished screen lines: never changed by `append`. Wrapped text is kept as
        (text, style) and made a `Strip` only when drawn (`_drawn`): a 1 MB answer's
        ~17,000 strips, each with its own caches, made the garbage collector stall the loop."""
        self._drawn: dict[int, tuple[Strip | TextLine, Strip]] = {}
        """Strips built for drawn finished lines: index -> (the line, its strip)."""
        self._live: list[Strip] = []
        """The lines that may still change: the unfinished last line or a status line."""
        self._tail = ""
        self._tail_style: Style | None = None
        self._open_start = 0
        self._next_tool_name: str | None = None
        self._tool_call_started = False
        self._width = 0
        self._markdown = False
        self._follow = True
        self._waiting_frame = 0
        self._waiting_timer: Any = None
        self._uxlab_style_cache: dict[str, Style] = {}
        self.frames = FrameRequester()
        """Paints each applied chunk's frame at once (`uxlab.tui.frame_request`)."""
        self.on_chunk_fed: Callable[[int], None] | None = None
        """Called with a non-empty chunk's index just before its last piece is fed."""
        self._backlog = ChunkPieces(self.feed_piece, self.finish, PIECE_CHARS)
        """Pieces of large chunks not yet fed (`uxlab.tui.chunk_pieces`)."""

    def on_unmount(self) -> None:
        self._backlog.drop()  # the screen is gone: nothing queued is fed to it

    # -- public lifecycle ----------------------------------------------------------------
    def start(self, prompt: str | None = None, waiting: bool = True) -> None:
        """Clear the view and show `prompt`; with `waiting`, show "● ● ●" until text comes."""
        self._stop_waiting()
        self._backlog.drop()
        self._blocks = []
        self._markdown = False
        self._follow = True
        self.state = "idle"
        if prompt:
            self._blocks.append(Block("prompt", [prompt], closed=True))
        self._rebuild()
        if waiting:
            self.state = "waiting"
            self._waiting_frame = 0
            self._live = [self._waiting_strip()]
            self._waiting_timer = self.set_interval(0.25, self.tick_waiting)
            self._after_change(len(self._lines))

    def append(self, text: str, channel: str = "content") -> None:
        """Show one more piece of output now; only the last line is re-wrapped."""
        stats = self.stats
        stats.appends += 1
        stats.last_wrapped_chars = 0
        stats.last_lines_built = 0
        if self.state in ("finished", "cancelled", "error"):
            return
        first_changed = len(self._lines)
        if self.state == "waiting":
            self._stop_waiting()
            self._live = []
        self.state = "streaming"
        text = text.translate(_CONTROL).replace("\t", "    ")
        kind = channel if channel in ("content", "reasoning", "tool") else "content"
        block = prev = self._blocks[-1] if self._blocks else None
        new_call = kind == "tool" and self._tool_call_started
        if block is None or block.closed or block.kind != kind or new_call:
            if block is not None and not block.closed:
                self._close_block(block)
            block = Block(kind)
            if kind == "tool":
                block.name, self._next_tool_name = self._next_tool_name, None
                self._tool_call_started = False
            self._blocks.append(block)
            self._open_block(block, prev)
        block.parts.append(text)
        self._feed(block, text)
        self._after_change(first_changed)

    def finish(self, end: End | None = None, error: ErrorEvent | None = None) -> None:
        """The stream is over: close it, show an error if there was one, then Markdown."""
        if self.state in ("finished", "cancelled", "error"):
            return
        if self._backlog:  # after the last piece of a large chunk
            self._backlog.finish_after(end, error)
            return
        self._stop_waiting()
        first_changed = len(self._lines)
        self._close_open_block()
        if error is not None:
            block = Block("error", [error_message(error.error)], closed=True)
            self._blocks.append(block)
            self._render_closed(block, None)
            self.state = "error"
        else:
            self.state = "finished"
        self._after_change(first_changed)
        content_chars = sum(len(b.text) for b in self._blocks if b.kind == "content")
        if self.markdown_on_finish and 0 < content_chars <= MARKDOWN_MAX_CHARS:
            # After the frame with the last chunk is painted, so its timing is untouched.
            self.call_after_refresh(self._swap_to_markdown)

    def cancel(self) -> None:
        """The reader stopped the stream: keep what was shown and say it was stopped."""
        self._backlog.drop()  # pieces not fed yet were never on screen
        if self.state in ("finished", "cancelled", "error", "idle"):
            return
        self._stop_waiting()
        first_changed = len(self._lines)
        self._close_open_block()
        block = Block("status", ["■ Stopped"], closed=True)
        self._blocks.append(block)
        self._render_closed(block, None)
        self.state = "cancelled"
        self._after_change(first_changed)

    # -- Sink protocol (uxlab.player) ----------------------------------------------------
    def apply(self, index: int, chunk: Chunk) -> None:
        """Player sink: show chunk `index` now, and paint its frame now.

        A chunk longer than `PIECE_CHARS` (or one arriving behind such a chunk) is queued
        and fed in pieces across event-loop turns (see the module docstring).
        """
        self._backlog.offer(chunk.text, chunk.channel, index)

    @property
    def backlog_chars(self) -> int:
        """Characters handed to `apply` but not fed to the screen yet."""
        return self._backlog.chars

    def feed_piece(self, text: str, channel: str, index: int | None) -> None:
        """Show one piece now and paint its frame; `index` on a chunk's last piece (then
        `on_chunk_fed` is told first). The queue of pieces calls this; so does a view that
        holds a stream view."""
        if text and index is not None and self.on_chunk_fed is not None:
            self.on_chunk_fed(index)  # first: the frame may be painted before we return
        self.append(text, channel)
        if text:
            self.frames.request(self)

    def feed_one_piece(self) -> None:
        """Feed one queued piece now, as the next loop turn would."""
        self._backlog.feed_one()

    def apply_meta(self, meta: Meta) -> None:
        """Player sink (optional): a tool call's start (and name) arrives as a meta event;
        its arguments then open a block of their own, never added to the call before."""
        if meta.data.get("kind") == "tool_call":
            name = meta.data.get("name")
            self._next_tool_name = str(name) if name else None
            self._tool_call_started = True

    # -- reading back --------------------------------------------------------------------
    @property
    def line_count(self) -> int:
        return len(self._lines) + len(self._live)

    @property
    def finished_lines(self) -> tuple[Strip | TextLine, ...]:
        """The cached finished lines (identity is stable while streaming)."""
        return tuple(self._lines)

    @property
    def drawn_strip_count(self) -> int:
        """How many finished lines hold a built strip now: only drawn ones, at most about
        four screens' worth (the rest stay plain text)."""
        return len(self._drawn)

    @property
    def shows_markdown(self) -> bool:
        """True once the finished answer is drawn as Markdown (swapped in after its last frame)."""
        return self._markdown

    @property
    def wrap_width(self) -> int:
        """The width the lines are wrapped to, as of the last draw (0 before the first)."""
        return self._width

    def lines_text(self) -> list[str]:
        """Plain text of every line, finished and live (for tests and debugging)."""
        return [line_text(line).rstrip() for line in (*self._lines, *self._live)]

    def answer_text(self) -> str:
        """All content text received so far."""
        return "".join(b.text for b in self._blocks if b.kind == "content")

    @property
    def following(self) -> bool:
        """True while the view stays scrolled to the newest line."""
        return self._follow

    def action_toggle_details(self) -> None:
        """Expand or collapse reasoning and tool blocks."""
        self.expanded = not self.expanded
        self._rebuild()

    def hold(self) -> None:
        """A single stream has no steps to be held after (`uxlab.tui.views.TrialView`)."""

    def resume(self) -> None:
        """A single stream has no steps to be held after (`uxlab.tui.views.TrialView`)."""

    # -- Textual hooks -------------------------------------------------------------------
    def on_resize(self) -> None:
        if self._wrap_width() != self._width:
            self._rebuild()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        old = dict(self._uxlab_style_cache)
        self._uxlab_style_cache.clear()
        if not self.is_mounted or not self._blocks:
            return
        # Focus and hover re-apply styles too: rebuild only when a colour really changed.
        self._base_style  # noqa: B018  (fills the cache)
        for kind in old:
            if kind:
                self._style(kind)
        if self._uxlab_style_cache != old:
            self._rebuild()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._follow = new_value >= self.max_scroll_y

    def render_lines(self, crop: Region) -> list[Strip]:
        # The layout may have changed the width after the lines were built (the questions
        # replace the input box, whose side margin narrowed the view). Textual draws that
        # frame before the Resize message arrives, so re-wrap here, once per width change
        # (never per chunk), instead of drawing a frame of lines 2 cells too narrow.
        if self._wrap_width() != self._width:
            self._rebuild()
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        index = y + self.scroll_offset.y
        n_done = len(self._lines)
        if index < n_done:
            line = self._lines[index]
            if isinstance(line, Strip):
                strip = line
            else:
                drawn = self._drawn.get(index)
                if drawn is None or drawn[0] is not line:
                    if len(self._drawn) > 4 * max(24, self.size.height):
                        self._drawn.clear()
                    drawn = (line, self._build_strip(*line))
                    self._drawn[index] = drawn
                strip = drawn[1]
        elif index - n_done < len(self._live):
            strip = self._live[index - n_done]
        else:
            return Strip.blank(self._width, self._base_style)
        # Lines are built at the wrap width with the base style: nothing to do per frame.
        if strip.cell_length == self._width:
            return strip
        return strip.crop_extend(0, self._width, None)

    # -- internals -----------------------------------------------------------------------
    def _wrap_width(self) -> int:
        return max(1, self.scrollable_content_region.width or self.size.width or 80)

    @property
    def _base_style(self) -> Style:
        style = self._uxlab_style_cache.get("")
        if style is None:
            style = self.rich_style if self.is_mounted else Style()
            self._uxlab_style_cache[""] = style
        return style

    def _style(self, kind: str) -> Style:
        style = self._uxlab_style_cache.get(kind)
        if style is None:
            if self.is_mounted:
                style = self.get_component_rich_style(f"stream-view--{kind}", partial=True)
            else:
                style = Style()
            self._uxlab_style_cache[kind] = style
        return style

    def _line(self, text: str, style: Style | None = None) -> TextLine:
        """A finished line of text, made a `Strip` when drawn (see `_lines`)."""
        self.stats.last_lines_built += 1
        return (text, style)

    def _strip(self, text: str, style: Style | None = None) -> Strip:
        """A live screen line: padded to the width with the base style baked in."""
        self.stats.last_lines_built += 1
        return self._build_strip(text, style)

    def _build_strip(self, text: str, style: Style | None) -> Strip:
        return build_strip(text, style, self._base_style, self._width)

    def _open_block(self, block: Block, prev: Block | None) -> None:
        if prev is not None and prev.kind != "prompt":
            self._lines.append(self._line(""))
        self._open_start = len(self._lines)
        if block.kind == "content":
            self._tail, self._tail_style = "", None
            self._live = [self._strip("")]
        elif self.expanded:
            header = details_header(block, open_=True)
            self._lines.append(self._line(header, self._style(block.kind)))
            self._tail, self._tail_style = "", self._style(block.kind)
            self._live = [self._strip("", self._tail_style)]
        else:
            self._live = [self._strip(details_header(block, open_=False), self._style(block.kind))]

    def _feed(self, block: Block, text: str) -> None:
        """Add `text` to the open block's lines: O(len(text) + width)."""
        if block.kind != "content" and not self.expanded:
            return  # collapsed: its one summary line does not change until it closes
        style = self._tail_style
        pieces = text.split("\n")
        for n, piece in enumerate(pieces):
            if n > 0:
                self._lines.append(self._line(self._tail, style))
                self._tail = ""
            tail = self._tail + piece
            self.stats.last_wrapped_chars += len(tail)
            done, self._tail = wrap_overflow(tail, self._width)
            self._lines.extend(self._line(line, style) for line in done)
        self._live = [self._strip(self._tail, style)]

    def _close_block(self, block: Block) -> None:
        block.closed = True
        if block.kind == "content" or self.expanded:
            if self._tail:
                self._lines.append(self._line(self._tail, self._tail_style))
            if block.kind == "tool" and self.expanded:
                # Once, when it closes: the raw JSON becomes indented JSON.
                style = self._style("tool")
                del self._lines[self._open_start + 1 :]
                for line in pretty_json(block.text).split("\n"):
                    self._lines.append(self._line(line[: self._width], style))
        else:
            header = details_header(block, open_=False)
            self._lines.append(self._line(header, self._style(block.kind)))
        self._tail, self._tail_style, self._live = "", None, []

    def _close_open_block(self) -> None:
        if self._blocks and not self._blocks[-1].closed:
            self._close_block(self._blocks[-1])
        self._live = []

    def _render_closed(self, block: Block, prev: Block | None) -> None:
        """Render a whole closed block into finished lines (rebuilds and status lines)."""
        if block.kind == "prompt":
            style = self._style("prompt")
            done, tail = wrap_overflow("You: " + block.text.strip(), self._width)
            self._lines.extend(self._line(line, style) for line in [*done, tail])
            self._lines.append(self._line(""))
            self._lines.append(self._line(ANSWER_LABEL, self._style("label")))
        elif block.kind in ("error", "status"):
            if self._lines:  # a blank line between the answer and the status
                self._lines.append(self._line(""))
            done, tail = wrap_overflow(block.text, self._width)
            style = self._style(block.kind)
            self._lines.extend(self._line(line, style) for line in [*done, tail])
        elif block.kind == "content" and self._markdown:
            if prev is not None and prev.kind != "prompt":
                self._lines.append(self._line(""))
            self._lines.extend(self._markdown_strips(block.text))
        else:
            self._open_block(block, prev)
            self._feed(block, block.text)
            self._close_block(block)

    def _markdown_strips(self, text: str) -> list[Strip]:
        return markdown_strips(self.app.console, text, self._width, self._base_style)

    def _rebuild(self) -> None:
        """Re-render every block at the current width (resize, expand, Markdown): O(n)."""
        self.stats.rebuilds += 1
        self._width = self._wrap_width()
        self._lines, self._live, self._tail = [], [], ""
        self._drawn.clear()
        prev = None
        for block in self._blocks:
            if block.closed:
                self._render_closed(block, prev)
            else:
                self._open_block(block, prev)
                self._feed(block, block.text)
            prev = block
        if self.state == "waiting":
            self._live = [self._waiting_strip()]
        self._after_change(0)
        self.refresh()  # fewer lines than before (Markdown, a restart): no stale lines below

    def _swap_to_markdown(self) -> None:
        if self.state in ("finished", "error") and not self._markdown:
            self._markdown = True
            self._rebuild()

    def _after_change(self, first_changed: int) -> None:
        """Resize the virtual canvas, keep the bottom anchored, repaint changed lines."""
        total = self.line_count
        size = Size(self._width, total)
        if size != self.virtual_size:
            # The scrollbar is always there (`overflow-y: scroll`; its track has the view's
            # colour, so only a thumb shows, once the answer overflows): a scrollbar that
            # appeared with the first line past the bottom needed a screen layout, which
            # delayed that one chunk by 5-17 ms (a list item or a code block, wherever the
            # answer first overflowed).
            scrollbar_needed = self.styles.overflow_y == "scroll" or (
                total > self.scrollable_content_region.height
            )
            if self.is_mounted and scrollbar_needed == self.show_vertical_scrollbar:
                # No layout: the region is unchanged, only the scrollbar moves. A full
                # screen layout here costs ~10 ms per new line and delays the next token.
                self.set_reactive(Widget.virtual_size, size)
                self._scroll_update(size)
            else:
                self.virtual_size = size
        max_y = self.max_scroll_y
        if (self._follow and max_y > self.scroll_y) or self.scroll_y > max_y:
            self.scroll_to(y=max_y, animate=False, force=True, immediate=True)
            self._follow = self._follow or self.scroll_y >= max_y
        count = max(1, total - first_changed)
        self.refresh_lines(first_changed, count)

    # -- waiting indicator ---------------------------------------------------------------
    def _waiting_strip(self) -> Strip:
        return self._strip(WAITING_FRAMES[self._waiting_frame % 3], self._style("waiting"))

    def tick_waiting(self) -> None:
        """Move the waiting indicator one frame on (its timer does every 250 ms)."""
        if self.state != "waiting":
            return
        self._waiting_frame += 1
        self._live = [self._waiting_strip()]
        self.refresh_lines(len(self._lines), 1)

    def hold_waiting(self, frame: int = 0) -> None:
        """Stop the waiting indicator's timer and show its frame `frame` (a still picture,
        for screenshots); the dots stay until text comes."""
        self._stop_waiting()
        if self.state == "waiting":
            self._waiting_frame = frame
            self._live = [self._waiting_strip()]
            self.refresh()

    def _stop_waiting(self) -> None:
        if self._waiting_timer is not None:
            self._waiting_timer.stop()
            self._waiting_timer = None
