"""A fixed pool of threads, all started with the kernel: ops that run off the main thread never
need a new thread (which a sandbox at its process limit could not create)."""

import queue
import threading

from .log import log


class WorkerPool:
    def __init__(self, name, size):
        self.jobs = queue.SimpleQueue()
        self.threads = [threading.Thread(target=self._work, name="%s-%d" % (name, i), daemon=True)
                        for i in range(size)]

    def start(self):
        for t in self.threads:
            t.start()

    def submit(self, fn, *args):
        self.jobs.put((fn, args))

    def _work(self):
        while True:
            fn, args = self.jobs.get()
            try:
                fn(*args)
            except BaseException as e:  # fn reports its own errors; this is a last resort
                log("codeact-kernel: %s failed: %s: %s" % (fn, type(e).__name__, e))
