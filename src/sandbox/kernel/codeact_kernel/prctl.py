"""prctl(2), which the standard library does not expose, through ctypes (loaded on first use:
ctypes costs milliseconds to import)."""

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36

_libc_prctl = None


def prctl(option, arg):
    """Raises OSError when the call fails."""
    global _libc_prctl
    if _libc_prctl is None:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.prctl
        fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                       ctypes.c_ulong]
        fn.restype = ctypes.c_int
        _libc_prctl = (fn, ctypes)
    fn, ctypes = _libc_prctl
    if fn(option, arg, 0, 0, 0) != 0:
        import os

        err = ctypes.get_errno()
        raise OSError(err, "prctl(%d, %d): %s" % (option, arg, os.strerror(err)))
