"""Ownership epochs: fencing a sandbox whose state other hosts can reach (shared storage).

Each placement of a sandbox on a host takes the next epoch: the host writes the file
<storage>/.owner/<n> (its content: the host's id) and starts the container with CODEACT_EPOCH=n.
This kernel owns the sandbox while no file of a greater n exists. It checks at start-up, before
every commit and every second in between; once a newer placement exists (the sandbox was moved
to another host while this one was cut off) it exits with status 76 (EXIT_FENCED) without
committing, so it can never overwrite the new owner's state, and its container stops. Without
CODEACT_EPOCH (local volumes) nothing is checked.
"""
import os
import threading

from .log import log
from .privileges import EXIT_FENCED

CHECK_SECONDS = 1.0


class Ownership:
    def __init__(self, storage, epoch_text):
        self.dir = os.path.join(storage, ".owner")
        self.epoch = int(epoch_text) if epoch_text and epoch_text.strip() else None

    def newer(self):
        """(n, host) of the newest placement after this one, or None."""
        if self.epoch is None:
            return None
        try:
            names = os.listdir(self.dir)
        except OSError:
            return None
        newest = max((int(n) for n in names if n.isdigit()), default=0)
        if newest <= self.epoch:
            return None
        try:
            with open(os.path.join(self.dir, str(newest))) as f:
                host = f.read().strip()
        except OSError:
            host = "?"
        return newest, host

    def check(self, when):
        """Exits with EXIT_FENCED when a newer placement exists; `when` says what was about to
        happen (the kernel's log, the container's)."""
        newer = self.newer()
        if newer is None:
            return
        log("codeact-kernel: %s refused: the sandbox was placed on host %s (epoch %d; this "
            "container has epoch %d); exiting with status %d so that this host never overwrites "
            "its state" % (when, newer[1] or "?", newer[0], self.epoch, EXIT_FENCED))
        os._exit(EXIT_FENCED)

    def watch(self):
        """Checks every CHECK_SECONDS on a daemon thread (an idle kernel goes too)."""
        if self.epoch is None:
            return

        def loop():
            while True:
                self.check("running on")
                threading.Event().wait(CHECK_SECONDS)

        threading.Thread(target=loop, name="codeact-ownership", daemon=True).start()
