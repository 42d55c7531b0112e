"""Ownership epochs: fencing a sandbox whose state other hosts can reach (shared storage).

Each placement of a sandbox on a host takes the next epoch: the host creates the file <n> (its
content: the host's id) in the sandbox's owner directory, which lives outside the sandbox's own
storage and is mounted read-only at CODEACT_OWNER_DIR, and starts the container with
CODEACT_EPOCH=n. Epochs are taken one after the other (n + 1 is created only after n), so this
kernel owns the sandbox while <n + 1> does not exist. It checks at start-up, before every commit
(at its start, before its checkpoint record and before the manifest that commits it) and every
CODEACT_OWNER_CHECK_SECONDS (default 1; 0 = only those); once a newer placement exists (the
sandbox was moved to another host while this one was cut off) it exits with status 76
(EXIT_FENCED) without committing, so it can never overwrite the new owner's state, and its
container stops. The check looks the next epoch up by name (on NFS, mount with
lookupcache=positive so a new file is seen at once). Without CODEACT_EPOCH (local volumes)
nothing is checked.
"""
import os
import threading

from .log import log
from .privileges import EXIT_FENCED


class Ownership:
    def __init__(self, owner_dir, epoch_text, check_seconds_text):
        self.dir = owner_dir
        self.epoch = int(epoch_text) if epoch_text and epoch_text.strip() else None
        self.check_seconds = float(check_seconds_text) if check_seconds_text else 1.0

    def newer(self):
        """(n, host) of the newest placement after this one, or None."""
        if self.epoch is None or not os.path.exists(os.path.join(self.dir, str(self.epoch + 1))):
            return None
        try:
            newest = max(int(n) for n in os.listdir(self.dir) if n.isdigit())
            with open(os.path.join(self.dir, str(newest))) as f:
                return newest, f.read().strip() or "?"
        except (OSError, ValueError):
            return self.epoch + 1, "?"

    def check(self, when):
        """Exits with EXIT_FENCED when a newer placement exists; `when` says what was about to
        happen (the kernel's log, the container's)."""
        newer = self.newer()
        if newer is None:
            return
        log("codeact-kernel: %s refused: the sandbox was placed on host %s (epoch %d; this "
            "container has epoch %d); exiting with status %d so that this host never overwrites "
            "its state" % (when, newer[1], newer[0], self.epoch, EXIT_FENCED))
        os._exit(EXIT_FENCED)

    def watch(self):
        """Checks every check_seconds on a daemon thread (an idle kernel goes too)."""
        if self.epoch is None or self.check_seconds <= 0:
            return

        def loop():
            wait = threading.Event()
            while True:
                self.check("running on")
                wait.wait(self.check_seconds)

        threading.Thread(target=loop, name="codeact-ownership", daemon=True).start()
