"""A terminal left raw by a killed session is put back to line mode before the next app
saves it (so that app's clean end restores a usable terminal), on a real pseudo-terminal;
a terminal already in line mode, and a descriptor that is no terminal, are left alone."""

from __future__ import annotations

import os
import termios
import tty

from uxlab.tui.terminal_modes import cook_raw_terminal


def _line_mode(fd: int) -> bool:
    attrs = termios.tcgetattr(fd)
    return bool(attrs[3] & termios.ICANON and attrs[3] & termios.ECHO and attrs[0] & termios.ICRNL)


def test_a_raw_terminal_gets_line_input_echo_and_newlines_back():
    master, slave = os.openpty()
    try:
        tty.setraw(slave)  # what a Textual app leaves behind when killed with -9
        assert not _line_mode(slave)
        assert cook_raw_terminal(slave)
        assert _line_mode(slave)
        attrs = termios.tcgetattr(slave)
        assert attrs[3] & termios.ISIG  # Ctrl+C reaches the shell's next program again
        assert attrs[1] & termios.OPOST and attrs[1] & termios.ONLCR
    finally:
        os.close(master)
        os.close(slave)


def test_a_terminal_in_line_mode_and_a_pipe_are_left_alone():
    master, slave = os.openpty()
    read, write = os.pipe()
    try:
        attrs = termios.tcgetattr(slave)
        attrs[3] &= ~termios.ECHOE  # a setting of the user's own, kept as it is
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
        assert _line_mode(slave)
        assert not cook_raw_terminal(slave)
        assert termios.tcgetattr(slave) == attrs
        assert not cook_raw_terminal(read)
    finally:
        for fd in (master, slave, read, write):
            os.close(fd)
