"""Cell timeouts: a thread that interrupts the main thread (SIGINT) when a cell passes its
timeout, then again every second until the cell ends. Started with the kernel (a cell at the
sandbox's process limit could not start a thread)."""

import signal
import threading
import time


class Watchdog:
    """arm()/disarm() from the main thread; interrupt_always() from any thread."""

    def __init__(self, main_ident):
        self.main_ident = main_ident
        self.cond = threading.Condition()
        self.deadline = None  # GUARDED_BY(cond)
        self.fired = False  # GUARDED_BY(cond)
        self.always = False  # GUARDED_BY(cond): interrupt every second, armed or not
        self.on_timeout = None  # GUARDED_BY(cond)
        self.thread = threading.Thread(target=self._run, name="codeact-watchdog", daemon=True)

    def start(self):
        self.thread.start()

    def arm(self, timeout, on_timeout=None):
        """on_timeout() runs on the watchdog's thread when the timeout passes, right after the
        first interrupt; it must be quick (a few system calls)."""
        with self.cond:
            self.fired = False
            self.on_timeout = on_timeout
            self.deadline = time.monotonic() + timeout
            self.cond.notify()

    def disarm(self):
        with self.cond:
            self.deadline = None
            self.on_timeout = None
            fired = self.fired
            self.fired = False
            return fired

    def interrupt_always(self):
        """From now on, interrupts the main thread every second (the kernel is going down and
        wants the running cell to end; the SIGINT handler only raises inside user code)."""
        with self.cond:
            self.always = True
            self.cond.notify()

    def _run(self):
        with self.cond:
            while True:
                if self.always:
                    self._interrupt()
                    self.cond.wait(1.0)
                    continue
                if self.deadline is None:
                    self.cond.wait()
                    continue
                left = self.deadline - time.monotonic()
                if left > 0:
                    self.cond.wait(left)
                    continue
                first = not self.fired
                self.fired = True
                self.deadline = time.monotonic() + 1.0
                self._interrupt()
                if first and self.on_timeout is not None:
                    try:
                        self.on_timeout()
                    except Exception:
                        pass

    def _interrupt(self):
        try:
            signal.pthread_kill(self.main_ident, signal.SIGINT)
        except OSError:
            pass
