"""The agent-chain view: a chain of model calls and tool pauses shown as agents show them.

Top to bottom: the participant's request; the step list (one line per step begun: a
spinner while it runs, ``✓`` when done, ``■`` where the participant stopped), in which a
tool pause reads like "⠹ searching the web…" followed by a collapsed tool-call block
``▸ web_search {"query": ...}`` (``t`` expands its JSON arguments); then the text of the
running call, streamed into a `StreamView` (one per chain, restarted for each call, so a
chunk costs what it costs in a chat: O(1)), and at the end the final answer. While the chain
is held for mid-chain questions (`hold`/`resume`) the list ends in a "⏸" line saying that
the assistant waits for the participant.

`ChainView` is a player `Sink` for a chain's flattened schedule
(`ChainSchedule.to_recording`, what a study trial plays): a step-marker chunk begins a
step, other chunks go to the stream view, ``finish`` ends the answer, ``cancel`` marks the
running step stopped (``begin_step`` lists a step and restarts the stream view for a call,
``end_step`` ticks it off). The step list changes only at step boundaries and spinner
ticks, never per chunk.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Static

from uxlab.kinds.chain import ScheduledStep, step_marker
from uxlab.streams.recording import Chunk, End, ErrorEvent, Header, Recording
from uxlab.tui.chunk_pieces import ChunkPieces
from uxlab.tui.stream_view import PIECE_CHARS, StreamView

SPINNER_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_PLACEHOLDER = Recording(Header(id="chain-step"))
_MARKER = "step-marker"
"""The channel of a step marker queued behind a large chunk's pieces (never a stream's)."""
"""Stands for a call's stream when the step comes from a marker (the chunks follow)."""


def tool_call_line(tool: dict[str, Any] | None, width: int, expanded: bool = False) -> list[str]:
    """The collapsed (one line) or expanded (indented JSON) tool-call block."""
    if not tool:
        return []
    name = str(tool.get("name", "tool"))
    args = tool.get("arguments", {})
    if expanded:
        body = json.dumps(args, indent=2, ensure_ascii=False).split("\n")
        return [f"    ▾ {name}", *(f"      {line}" for line in body)]
    line = f"    ▸ {name} {json.dumps(args, ensure_ascii=False)}"
    return [line if len(line) <= width else line[: max(width - 1, 1)] + "…"]


class ChainSteps(Static):
    """The step list: what has been done, what is running (see module docstring)."""

    DEFAULT_CSS = """
    ChainSteps { height: auto; padding: 0 1; color: $text-muted; }
    """
    MAX_LINES: ClassVar[int] = 9
    """The most lines shown; older steps scroll away as in an agent's log."""

    def __init__(self, *, show_times: bool = False, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.show_times = show_times
        self.expanded = False
        self.frame = 0
        self._steps: list[ScheduledStep] = []
        self._state: list[str] = []  # running | done | stopped
        self.note: str | None = None
        """A last line under the steps (the chain held for questions)."""

    def clear(self) -> None:
        self._steps, self._state, self.note = [], [], None
        self.redraw()

    def begin(self, step: ScheduledStep) -> None:
        self._steps.append(step)
        self._state.append("running")
        self.redraw()

    def end(self, step: ScheduledStep) -> None:
        self._set(step, "done")

    def stop(self) -> None:
        if self._state and self._state[-1] == "running":
            self._state[-1] = "stopped"
            self.redraw()

    @property
    def running(self) -> bool:
        return bool(self._state) and self._state[-1] == "running"

    @property
    def states(self) -> tuple[str, ...]:
        """Each step's state so far, in order: running, done or stopped."""
        return tuple(self._state)

    def tick(self) -> None:
        self.frame += 1
        if self.running:
            self.redraw()

    def _set(self, step: ScheduledStep, state: str) -> None:
        for i, s in enumerate(self._steps):
            if s.position == step.position:
                self._state[i] = state
        self.redraw()

    def redraw(self) -> None:
        """Rebuild the list (at step boundaries and spinner ticks; O(steps)).

        Older steps scroll away whole (a "… n earlier steps" line says so), never cutting a
        step from its tool call; once the final answer streams, the work done folds into one
        summary line, as agent UIs do, so the answer has the room (`t` unfolds it).
        """
        width = max((self.size.width or 78) - 2, 10)
        blocks: list[list[tuple[str, str]]] = []
        answering = any(s.kind == "answer" for s in self._steps)
        for step, state in zip(self._steps, self._state, strict=True):
            if step.kind == "answer":
                continue
            mark = {"running": SPINNER_FRAMES[self.frame % 10], "done": "✓", "stopped": "■"}[state]
            line = f"{mark} {step.label}"
            if self.show_times and state == "done":
                line += f"  {step.duration_ms / 1000:.1f} s"
            block = [(line, "bold" if state == "running" else "")]
            block += [(x, "dim") for x in tool_call_line(step.tool, width, self.expanded)]
            blocks.append(block)
        lines: list[tuple[str, str]] = []
        if answering and blocks and not self.expanded:
            lines.append((self.summary(), ""))
        else:
            room = self.MAX_LINES - (1 if self.note else 0)
            kept = len(blocks)
            if sum(len(b) for b in blocks) > room:  # keep the newest that fit below "…"
                kept = 0
                while sum(len(b) for b in blocks[-kept - 1 :]) <= room - 1:
                    kept += 1
            if kept < len(blocks):  # "… 3 earlier steps" takes the first line
                n = len(blocks) - kept
                lines.append((f"… {n} earlier step{'s' if n > 1 else ''}", "dim"))
            for block in blocks[len(blocks) - kept :] if kept else []:
                lines.extend(block)
            if kept == 0 and blocks:  # one block taller than the room: its first lines
                lines = blocks[-1][: max(room, 1)]
        if self.note:
            lines.append((self.note, "bold"))
        text = Text()
        for n, (line, style) in enumerate(lines):
            text.append(("\n" if n else "") + line, style=style)
        self.update(text)
        self.display = bool(lines)  # a plain answer (n_steps = 1): no empty line above it

    def summary(self) -> str:
        """The folded work log: `✓ 9 steps: 5 model calls, 4 tool calls  (t: show)`."""
        work = [s for s in self._steps if s.kind != "answer"]
        calls = sum(s.kind == "call" for s in work)
        tools = sum(s.kind == "pause" for s in work)
        parts = [f"{calls} model call{'s' if calls != 1 else ''}"]
        if tools:
            parts.append(f"{tools} tool call{'s' if tools != 1 else ''}")
        n = len(work)
        return f"✓ {n} step{'s' if n != 1 else ''}: {', '.join(parts)}  (t: show)"

    def lines_text(self) -> list[str]:
        """Plain text of the step list (tests)."""
        return str(self.render()).splitlines()


class ChainView(Vertical, can_focus=True):
    """A chain as agents show it; a player `Sink` for a chain's flattened schedule."""

    fills_screen: ClassVar[bool] = True
    """An agent at work: once the prompt is sent, the steps and answer need the room."""

    DEFAULT_CSS = """
    ChainView { height: 1fr; }
    ChainView > #chain-prompt { height: auto; padding: 0 1; color: $accent; text-style: bold; }
    ChainView > #chain-stream { height: 1fr; margin-top: 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("t", "toggle_details", "Tool calls", show=False),
    ]

    def __init__(
        self,
        *,
        show_times: bool = False,
        spinner_interval_s: float = 0.1,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.show_times = show_times
        self.spinner_interval_s = spinner_interval_s
        self.state = "idle"
        self.current: ScheduledStep | None = None
        self._timer: Any = None
        self._backlog = ChunkPieces(self._feed_piece, self._finish_now, PIECE_CHARS)
        """Pieces of large chunks (a tool result pasting a file) not yet fed, and the step
        markers and chunks queued behind them, in order (`uxlab.tui.chunk_pieces`)."""
        self._queued_markers: dict[int, Chunk] = {}

    def compose(self) -> ComposeResult:
        yield Static("", id="chain-prompt")
        yield ChainSteps(show_times=self.show_times, id="chain-steps")
        yield StreamView(markdown_on_finish=False, id="chain-stream")

    def on_unmount(self) -> None:
        self._backlog.drop()  # the screen is gone: nothing queued is fed to it

    @property
    def steps_view(self) -> ChainSteps:
        return self.query_one(ChainSteps)

    @property
    def stream(self) -> StreamView:
        return self.query_one("#chain-stream", StreamView)

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, prompt: str | None = None, waiting: bool = True) -> None:
        """Clear the view and show the request (as `StreamView.start`); steps follow.

        Without a prompt (a trial before its send) the view is just cleared.
        """
        self.query_one("#chain-prompt", Static).update(
            Text("You: " + prompt.strip()) if prompt else ""
        )
        self.steps_view.clear()
        self._backlog.drop()
        self._queued_markers.clear()
        self.stream.start(None, waiting=False)
        self.current = None
        self.state = "running" if prompt else "idle"
        if prompt and self._timer is None:
            self._timer = self.set_interval(self.spinner_interval_s, self.steps_view.tick)

    # -- player Sink (a chain's flattened schedule) -----------------------------------------
    def apply(self, index: int, chunk: Chunk) -> None:
        """A step marker begins a step (ending the one before); other chunks stream.

        A chunk longer than `PIECE_CHARS` is fed in pieces, one per event-loop turn, as in
        `StreamView.apply` (keys, the abandon key, are handled in between); the chunks and
        step markers behind it wait their turn, so the order is kept.
        """
        if step_marker(chunk) is not None:
            self._queued_markers[index] = chunk
            self._backlog.offer("", _MARKER, index)
        else:
            self._backlog.offer(chunk.text, chunk.channel, index)

    @property
    def on_chunk_fed(self) -> Callable[[int], None] | None:
        """Called with a non-empty chunk's index just before its last piece is fed (the
        stream view's: the paint probe's shown time is that piece's frame)."""
        return self.stream.on_chunk_fed

    @on_chunk_fed.setter
    def on_chunk_fed(self, fed: Callable[[int], None] | None) -> None:
        self.stream.on_chunk_fed = fed

    @property
    def backlog_chars(self) -> int:
        """Characters handed to `apply` but not fed to the screen yet."""
        return self._backlog.chars

    def _feed_piece(self, text: str, channel: str, index: int | None) -> None:
        if channel == _MARKER and index is not None:
            self._begin_marked_step(self._queued_markers.pop(index))
        else:
            self.stream.feed_piece(text, channel, index)

    def _begin_marked_step(self, chunk: Chunk) -> None:
        marker = step_marker(chunk)
        assert marker is not None
        if self.current is not None:
            self.end_step(self.current)
        t_ms = chunk.t_ms or 0.0
        step = ScheduledStep(
            index=marker.position,
            position=marker.position,
            kind=marker.kind,
            label=marker.label,
            start_ms=t_ms,
            end_ms=t_ms,
            tool=marker.tool,
        )
        if step.kind != "pause":
            step = dataclasses.replace(step, schedule=_PLACEHOLDER)
        self.begin_step(step)

    def finish(self, end: End | None = None, error: ErrorEvent | None = None) -> None:
        """The answer (and the chain) is over (after the last queued piece, if any)."""
        if self._backlog:
            self._backlog.finish_after(end, error)
            return
        self._finish_now(end, error)

    def _finish_now(self, end: End | None, error: ErrorEvent | None) -> None:
        self.stream.finish(end, error)
        if self.current is not None:
            self.end_step(self.current)

    # -- steps -------------------------------------------------------------------------------
    def begin_step(self, step: ScheduledStep) -> StreamView | None:
        """A step starts: list it; a call gets the stream view (restarted, waiting)."""
        self.current = step
        self.steps_view.begin(step)
        if step.schedule is None:
            return None
        stream = self.stream
        stream.markdown_on_finish = step.kind == "answer"
        stream.start(None, waiting=True)
        stream.refresh()  # the restart shortens the view: repaint it whole, no stale lines
        return stream

    def end_step(self, step: ScheduledStep) -> None:
        self.current = None
        self.steps_view.end(step)
        if step.kind == "answer":
            self.state = "finished"
            self._stop_timer()

    def cancel(self) -> None:
        """The participant gave up: the running step is marked stopped, its stream too.
        Pieces and steps not fed yet were never on screen: they are dropped."""
        self._backlog.drop()
        self._queued_markers.clear()
        if self.state != "running":
            return
        self.state = "cancelled"
        if self.steps_view.note:  # given up while the chain was held for questions
            self.steps_view.note = "■ Stopped"
            self.steps_view.redraw()
        self.steps_view.stop()
        if self.current is not None and self.current.kind != "pause":
            self.stream.cancel()
        self._stop_timer()

    def hold(self) -> None:
        """The chain is held for mid-chain questions: the step just played is ticked off."""
        if self.current is not None:
            self.end_step(self.current)
        self.steps_view.note = "⏸ Waiting for your answer below"
        self.steps_view.redraw()

    def resume(self) -> None:
        """The questions are answered: the chain goes on (its next step follows)."""
        self.steps_view.note = None
        self.steps_view.redraw()

    def action_toggle_details(self) -> None:
        """Expand or collapse the tool calls' JSON arguments."""
        steps = self.steps_view
        steps.expanded = not steps.expanded
        steps.redraw()

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
