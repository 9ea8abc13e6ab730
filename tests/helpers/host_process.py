"""`python -m uxlab host ...` as a real process with its output collected line by line: the
part the SSH and browser host helpers share. `wait_line` polls with a generous deadline (a
hang becomes a failure, not a timing claim); `stop()` sends Ctrl+C (SIGINT)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path


class CollectedHost:
    """A `uxlab host` process; every line it prints is kept in `lines`."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "uxlab", "host", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_line(self, needle: str, deadline_s: float = 60.0, after: int = 0) -> str:
        """The first line (from index `after`) containing `needle`, waiting for it."""
        give_up = time.monotonic() + deadline_s
        while time.monotonic() < give_up:
            for line in self.lines[after:]:
                if needle in line:
                    return line
            if self.proc.poll() is not None and not self._reader.is_alive():
                raise AssertionError(f"the host ended; its output:\n{self.output()}")
            time.sleep(0.05)
        raise AssertionError(f"no line with {needle!r}; the host's output:\n{self.output()}")

    def stop(self) -> int:
        """Ctrl+C: the host hangs up open sessions and exits; returns its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            status = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(
                f"the host did not stop within 60 s of Ctrl+C; its output:\n{self.output()}"
            ) from None
        self._reader.join(timeout=5)
        return status
