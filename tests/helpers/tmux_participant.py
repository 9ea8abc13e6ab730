"""A scripted participant who takes a study in a real terminal: tmux, capture-pane, send-keys.

All knowledge of what the participant screens look like is in `Participant.keys_for`: it
reads the captured screen and says which keys a person would press. When a screen changes
(its wording, a new first screen), this is the one place to adapt.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from helpers.tmux import Tmux as BaseTmux
from helpers.tmux import ended_screen

ACCEPTABLE = "Was the wait before the answer started acceptable?"


class Tmux(BaseTmux):
    """A private tmux server whose pane runs a shell line in a given folder and environment."""

    def start_in(self, command: str, cwd: Path, env: dict[str, str]) -> None:
        """Run `command` (a shell line, as typed) in `cwd` with exactly `env` in an 80x24 pane.

        The pane stays after the command exits, so what it printed can be read.
        """
        subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", "new-session", "-d", "-s", "run",
             "-x", "80", "-y", "24", "-c", str(cwd), command],
            capture_output=True, text=True, check=True, env=env,
        )  # fmt: skip
        self.cmd("set-option", "-t", "run", "remain-on-exit", "on")

    def screen(self) -> str:
        """The visible screen and up to 200 lines above it (what was printed at exit)."""
        return self.cmd("capture-pane", "-p", "-J", "-S", "-200", "-t", "run")

    def wait_exit(self, deadline_s: float) -> str:
        """The screen once the command has exited (within `deadline_s`)."""
        return ended_screen(self, deadline_s)


@dataclass
class Participant:
    """Answers every screen like a person; gives up once and misses one attention check.

    - gives up (the abandon key) on the first main trial seen still waiting for its first
      token `patience_s` after it first saw it waiting; answers yes / 4 / "ok" elsewhere.
      Only a long wait qualifies, so the key arrives well before the first token even on a
      loaded machine (a give-up pressed as a short wait ends may land after the token);
    - answers the first `missed_checks` attention checks wrongly (yes where it asks for no),
      the others right (0: a careful participant; a large number: one who misses them all);
    - on the list of unfinished sessions (a database others used) starts a new participant.
    """

    missed_checks: int = 1
    patience_s: float = 0.8
    gave_up: bool = False
    attention_seen: int = 0
    log: list[str] = field(default_factory=list)
    """The screens acted on, for the failure message."""
    waiting_since: tuple[str, float] | None = None
    """(the trial's heading, when it was first seen waiting for its first token)."""

    def keys_for(self, screen: str) -> tuple[str, list[str]] | None:
        """(a name of the screen state, the keys to press) or None to wait and look again."""
        lines = [ln.rstrip() for ln in screen.splitlines()]
        head = next((ln.strip() for ln in lines if ln.strip()), "")
        asks = "1/2" if "1/2" in screen else "2/2" if "2/2" in screen else ""
        words = " ".join(screen.split())
        if "unfinished session" in words and "new participant, press n" in words:
            return "unfinished sessions", ["n"]
        if "Timing warnings" in screen:
            return "warnings", ["Enter"]
        if "Participant id:" in screen:
            return "participant id", ["Enter"]  # the suggested pseudonymous id
        if "Press a if you agree" in screen:
            return "consent", ["a"]
        if "Press Enter to begin" in screen or "Practice over" in screen:
            return head, ["Enter"]
        if "Take a short rest" in screen:  # every break alike but for its "Trial N of M done"
            return " ".join(ln.strip() for ln in lines if "done" in ln) or head, ["Enter"]
        if "Press Enter to send." in screen:
            return f"{head} send", ["Enter"]
        if "Press Enter for the next trial" in screen:
            return f"{head} next", ["Enter"]
        waiting = "Press Esc to stop waiting." in screen and _no_answer_yet(lines)
        if not waiting or (self.waiting_since and self.waiting_since[0] != head):
            self.waiting_since = None
        if "Press Esc to stop waiting." in screen:
            if not self.gave_up and head.startswith("Trial ") and waiting:
                now = time.monotonic()
                self.waiting_since = self.waiting_since or (head, now)
                if now - self.waiting_since[1] >= self.patience_s:
                    self.gave_up = True
                    return f"{head} give up", ["Escape"]
            return None
        if "Please answer 'No'" in screen and ACCEPTABLE in screen and asks != "2/2":
            # An attention check: its own screen, its text and its one question.
            self.attention_seen += 1
            miss = self.attention_seen <= self.missed_checks
            return f"{head} attention", ["y" if miss else "n", "Enter"]
        if ACCEPTABLE in screen:
            return f"{head} acceptable", ["y", "Enter"]
        if "How fast did the answer feel?" in screen:
            return f"{head} speed", ["4", "Enter"]
        if "Anything you noticed?" in screen:
            return "comments", ["o", "k", "Enter"]
        if "Press Enter to close" in screen:
            return "end", ["Enter"]
        return None

    def take(self, tmux: Tmux, deadline_s: float, stop_when: Callable[[str], bool] | None = None):
        """Answer screens until the program exits; returns the last screen."""
        give_up_at = time.monotonic() + deadline_s
        last = None
        while time.monotonic() < give_up_at:
            if tmux.pane_dead():
                return tmux.screen()
            screen = tmux.screen()
            if stop_when is not None and stop_when(screen):
                return screen
            action = self.keys_for(_visible(screen))
            if action is not None and action[0] != last:
                tmux.keys(*action[1])
                self.log.append(f"{action[0]!r} -> {action[1]}")
                last = action[0]
            time.sleep(0.05)
        raise AssertionError(
            "the participant did not finish in time; acted on:\n"
            + "\n".join(self.log[-15:])
            + f"\nthe screen:\n{tmux.screen()}"
        )


def _visible(screen: str, height: int = 24) -> str:
    """The last `height` lines: the app's screen, without scrollback."""
    return "\n".join(screen.rstrip("\n").splitlines()[-height:])


def _no_answer_yet(lines: list[str]) -> bool:
    """True while the waiting indicator ("●  ○  ○") shows: no token has arrived yet."""
    return any(ln.strip() and set(ln.strip()) <= set("●○ ") for ln in lines)
