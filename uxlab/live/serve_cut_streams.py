"""What a forced exit of `uxlab serve` (a second Ctrl-C) says: one line with the number of
open streams it cut, where uvicorn would log a traceback for each."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Iterator


class CutStreams(logging.Filter):
    """Counts, instead of letting uvicorn log a traceback for each, the streams a forced
    exit (a second Ctrl-C) cancels mid-way."""

    def __init__(self) -> None:
        super().__init__()
        self.cut = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError):
            self.cut += 1
            return False
        return True


@contextlib.contextmanager
def cut_streams_said(who: str) -> Iterator[None]:
    """While uvicorn serves: one line at the end (`who` stopped at once, N streams cut)
    for the streams a forced exit cancelled, not a traceback per stream."""
    counted = CutStreams()
    logger = logging.getLogger("uvicorn.error")
    logger.addFilter(counted)
    try:
        yield
    finally:
        logger.removeFilter(counted)
        if counted.cut:
            print(
                f"uxlab serve: {who}stopped at once: {counted.cut} open stream(s) cut",
                file=sys.stderr,
                flush=True,
            )
