"""The kernel's own log: one line per message on the container log (a private copy of the
original stderr, so messages never land in a cell's captured output)."""

import os

_fd = 2


def set_fd(fd):
    global _fd
    _fd = fd


def fd():
    return _fd


def log(msg):
    try:
        os.write(_fd, (msg.rstrip("\n") + "\n").encode("utf-8", "replace"))
    except OSError:
        pass
