"""The sandbox's cgroups as the container shows them (v1 or v2): where a controller's files are,
and the memory limit with its count of processes the out-of-memory killer ended."""

import os


def controller_dirs(controller):
    """Where this process's cgroup of `controller` ("pids", "memory") may be: its own path under
    the v1 and v2 mounts, then the mount roots (a container sees its own cgroup there)."""
    own_v1 = own_v2 = None
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if controller in controllers.split(","):
                    own_v1 = path
                elif controllers == "":
                    own_v2 = path
    except (OSError, ValueError):
        pass
    dirs = []
    if own_v1 and own_v1 != "/":
        dirs.append("/sys/fs/cgroup/%s%s" % (controller, own_v1))
    if own_v2 and own_v2 != "/":
        dirs.append("/sys/fs/cgroup" + own_v2)
    dirs += ["/sys/fs/cgroup/" + controller, "/sys/fs/cgroup"]
    return dirs


def read_counter(data, key):
    """The value of `key` in a flat-keyed cgroup file ("key value" lines), or None."""
    for line in data.split(b"\n"):
        k, _, value = line.partition(b" ")
        if k == key:
            try:
                return int(value)
            except ValueError:
                return None
    return None


# v2: memory.events and memory.max ("max": none); v1: memory.oom_control (oom_kill since Linux
# 4.13) and memory.limit_in_bytes (a page-rounded huge number: none).
_MEMORY_FILES = (("memory.events", "memory.max"), ("memory.oom_control", "memory.limit_in_bytes"))
_NO_LIMIT = 1 << 60


class MemoryLimit:
    """The sandbox's memory limit (bytes or None) and oom_kills(): how many processes of the
    sandbox the out-of-memory killer ended so far (None where no memory cgroup is visible).
    The file is opened at each read: nothing is kept open that a cell could close."""

    def __init__(self, dirs=None):
        self.events_path = None
        self.limit = None
        for d in dirs if dirs is not None else controller_dirs("memory"):
            for events, limit in _MEMORY_FILES:
                path = os.path.join(d, events)
                if read_counter(_read(path) or b"", b"oom_kill") is None:
                    continue
                self.events_path = path
                text = (_read(os.path.join(d, limit)) or b"").strip()
                if text.isdigit() and int(text) < _NO_LIMIT:
                    self.limit = int(text)
                return

    def oom_kills(self):
        if self.events_path is None:
            return None
        data = _read(self.events_path)
        return None if data is None else read_counter(data, b"oom_kill")

    def ran_out_text(self, kills):
        """The notice for a cell during which the out-of-memory killer ended `kills` processes
        (the kernel lived: it answers)."""
        limit = " (%s)" % _size(self.limit) if self.limit else ""
        return ("the sandbox ran out of memory: its limit%s was reached and the system killed %d "
                "of its processes (a killed subprocess shows returncode -9, a shell exit status "
                "137); the kernel and its variables are intact" % (limit, kills))


def _read(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)


def _size(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            value = n / (1 << shift)
            return ("%d %s" if value == int(value) else "%.1f %s") % (value, unit)
    return "%d bytes" % n
