"""Cell timeouts: a thread that interrupts the main thread (SIGINT) when a cell passes its
timeout, then again every second until the cell ends."""

import signal
import threading
import time


class Watchdog:
    """Interrupts the main thread (SIGINT) when a cell passes its timeout, then every second."""

    def __init__(self, main_ident):
        self.main_ident = main_ident
        self.cond = threading.Condition()
        self.deadline = None  # GUARDED_BY(cond)
        self.fired = False  # GUARDED_BY(cond)
        self.thread = None

    def arm(self, timeout):
        with self.cond:
            self.fired = False
            self.deadline = time.monotonic() + timeout
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="codeact-watchdog",
                                               daemon=True)
                self.thread.start()
            self.cond.notify()

    def disarm(self):
        with self.cond:
            self.deadline = None
            fired = self.fired
            self.fired = False
            return fired

    def _run(self):
        with self.cond:
            while True:
                if self.deadline is None:
                    self.cond.wait()
                    continue
                left = self.deadline - time.monotonic()
                if left > 0:
                    self.cond.wait(left)
                    continue
                self.fired = True
                self.deadline = time.monotonic() + 1.0
                try:
                    signal.pthread_kill(self.main_ident, signal.SIGINT)
                except OSError:
                    pass
