"""A terminal left raw by a killed program, put back to line mode before an app starts.

Textual saves the terminal's modes when an app starts and puts them back when it stops. A
session ended by kill -9 (or a crash of the machine's terminal handling) never puts them
back: the shell is left without echo or line editing. The session resumed in that shell
would save that raw state and, at its clean end, restore it again, so the participant's
terminal stays unusable until someone types `reset` blind. `cook_raw_terminal` gives a
terminal found without line input or echo the line discipline a shell prompt needs (the
flags of `stty sane` that matter there), before the app saves it.
"""

from __future__ import annotations

import termios

LINE_FLAGS = termios.ICANON | termios.ECHO | termios.ECHOE | termios.ECHOK | termios.ISIG
INPUT_FLAGS = termios.ICRNL | termios.BRKINT
OUTPUT_FLAGS = termios.OPOST | termios.ONLCR
EXTENDED_FLAGS = termios.IEXTEN


def cook_raw_terminal(fd: int) -> bool:
    """Give terminal `fd` line input, echo, signals and newline translation when it has no
    line input or no echo (a raw mode left behind); returns whether it changed anything.
    A descriptor that is not a terminal, or one already in line mode, is left alone."""
    try:
        attrs = termios.tcgetattr(fd)
    except (termios.error, OSError):
        return False  # not a terminal (a pipe, a file, a closed descriptor)
    lflag = attrs[3]
    if lflag & termios.ICANON and lflag & termios.ECHO:
        return False
    attrs[0] |= INPUT_FLAGS
    attrs[1] |= OUTPUT_FLAGS
    attrs[3] = lflag | LINE_FLAGS | EXTENDED_FLAGS
    try:
        termios.tcsetattr(fd, termios.TCSANOW, attrs)
    except (termios.error, OSError):
        return False
    return True
