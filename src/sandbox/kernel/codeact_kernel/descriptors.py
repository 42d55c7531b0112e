"""The kernel's own long-lived file descriptors (listening socket, connections, epoll, internal
pipes) live at 1024 and above, where a cell's os.closerange(3, 1024) or a library that closes
"all" low descriptors does not reach them; and the check that tells when a cell closed (or
replaced) one anyway."""

import fcntl
import os
import resource
import stat

HIGH_FD_BASE = 1024
_WANTED_LIMIT = 2048  # room above HIGH_FD_BASE for the kernel's descriptors


def make_room():
    """Raises the soft RLIMIT_NOFILE (within the hard limit) so there is room above
    HIGH_FD_BASE. Returns True when there is."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < _WANTED_LIMIT:
        target = _WANTED_LIMIT if hard == resource.RLIM_INFINITY else min(hard, _WANTED_LIMIT)
        if target > soft:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
                soft = target
            except (OSError, ValueError):
                pass
    return soft == resource.RLIM_INFINITY or soft > HIGH_FD_BASE + 16


def move_high(fd):
    """A close-on-exec duplicate of fd at HIGH_FD_BASE or above (fd itself is closed), or fd
    unchanged when there is no room up there."""
    if fd >= HIGH_FD_BASE:
        return fd
    try:
        high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, HIGH_FD_BASE)
    except OSError:
        return fd
    os.close(fd)
    return high


def move_socket_high(sock):
    """The same socket object's descriptor moved up (a new socket object around it)."""
    import socket

    if sock.fileno() >= HIGH_FD_BASE:
        return sock
    timeout = sock.gettimeout()
    fd = move_high(sock.detach())
    moved = socket.socket(fileno=fd)
    moved.settimeout(timeout)
    return moved


class Identity:
    """What a descriptor was when the kernel made it; intact() is False once the number was
    closed, or reopened as something else."""

    def __init__(self, fd):
        st = os.fstat(fd)
        self.fd = fd
        self.dev_ino = (st.st_dev, st.st_ino)
        self.fmt = stat.S_IFMT(st.st_mode)

    def intact(self):
        try:
            st = os.fstat(self.fd)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self.dev_ino and stat.S_IFMT(st.st_mode) == self.fmt
