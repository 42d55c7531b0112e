"""Small-file writes that are all-or-nothing: a temporary file renamed into place (fsynced when
asked), and the quiet helpers around them."""

import json
import os
import threading

from . import forks


def write_all(fd, data, fsync):
    """Writes every byte of data to fd (fsynced when asked)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    if fsync:
        os.fsync(fd)


def write_atomic(path, data, fsync):
    forks.leave_if_clone()  # a clone of the kernel never writes the kernel's files
    tmp = "%s.tmp-%d-%d" % (path, os.getpid(), threading.get_ident())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        write_all(fd, data, fsync)
    except BaseException:
        os.close(fd)
        unlink_quiet(tmp)
        raise
    os.close(fd)
    os.replace(tmp, path)


def fsync_dir(path):
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def unlink_quiet(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def read_json_quiet(path):
    """The JSON object in `path`, or None when it is missing or unreadable."""
    try:
        with open(path, "rb") as f:
            value = json.loads(f.read())
        return value if isinstance(value, dict) else None
    except (OSError, ValueError):
        return None
