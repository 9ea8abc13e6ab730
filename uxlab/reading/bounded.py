"""Bounded reads: a file over its limit is refused before it is read, text must be UTF-8."""

from __future__ import annotations

import os
from pathlib import Path

from uxlab.reading.located import InputProblem

_PIECE_BYTES = 1 << 20
"""What one read asks for past the size the file had (a read allocates all it asks for)."""


def read_bounded_bytes(path: str | Path, max_bytes: int, what: str = "file") -> bytes:
    """The bytes of `path`, or InputProblem when it is larger than `max_bytes` (not read).

    Plain `os` calls, no file object: `uxlab inspect` reads thousands of small files, and a
    buffered file object costs more to make than such a file takes to read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise InputProblem(
                None, f"the {what} is {size:,} bytes, over the limit of {max_bytes:,} bytes"
            )
        data = os.read(fd, size + 1)  # a buffer the size of the file, not of the limit
        if len(data) != size:  # it grew meanwhile, or a short read: on to the end, in the limit
            while len(data) <= max_bytes and (
                more := os.read(fd, min(max_bytes + 1 - len(data), _PIECE_BYTES))
            ):
                data += more
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise InputProblem(None, f"the {what} is over the limit of {max_bytes:,} bytes")
    return data


def read_bounded_text(path: str | Path, max_bytes: int, what: str = "file") -> str:
    """The UTF-8 text of `path` within `max_bytes`; InputProblem when too big or not UTF-8."""
    return utf8_text(read_bounded_bytes(path, max_bytes, what))


def utf8_text(data: bytes) -> str:
    """`data` decoded as UTF-8; InputProblem naming the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputProblem(None, f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
