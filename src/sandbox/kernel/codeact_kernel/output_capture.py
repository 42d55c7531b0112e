"""Output capture: file descriptors 1 and 2 are pipes the kernel reads, so everything a cell
writes (print, C code, subprocesses) reaches that cell's capture: the head and tail of each
stream within a byte cap, optionally streamed to the host as it comes. Outside cells, output goes
to the container log."""

import io
import os
import sys
import threading
import time

from .descriptors import move_high

DEFAULT_MAX_OUTPUT = 65536  # bytes per stream, head and tail halves kept


class Capped:
    """Keeps the first and last halves of `limit` bytes of a stream and counts the rest."""

    def __init__(self, limit):
        self.head_cap = limit // 2
        self.tail_cap = limit - self.head_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data):
        self.total += len(data)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data and self.tail_cap > 0:
            self.tail += data
            if len(self.tail) > 2 * self.tail_cap + 65536:
                del self.tail[: len(self.tail) - self.tail_cap]

    def text(self):
        """Returns (text, omitted_bytes)."""
        tail = bytes(self.tail[-self.tail_cap:]) if self.tail_cap > 0 else b""
        omitted = self.total - len(self.head) - len(tail)
        head = self.head.decode("utf-8", "replace")
        if omitted <= 0:
            return (bytes(self.head) + tail).decode("utf-8", "replace"), 0
        sep = "" if head.endswith("\n") or not head else "\n"
        return "%s%s... [%d bytes omitted] ...\n%s" % (
            head, sep, omitted, tail.decode("utf-8", "replace")), omitted


class CellOutput:
    """Where fds 1 and 2 go while one cell runs; optionally streamed to the host."""

    def __init__(self, limit, stream_to=None):
        self.limit = limit
        self.bufs = {"stdout": Capped(limit), "stderr": Capped(limit)}
        self.stream_to = stream_to  # (connection, request id) or None
        self.pending = {"stdout": bytearray(), "stderr": bytearray()}
        self.streamed = {"stdout": 0, "stderr": 0}
        self.decoders = None
        if stream_to is not None:
            import codecs

            self.decoders = {n: codecs.getincrementaldecoder("utf-8")("replace")
                             for n in self.bufs}
        self.send_lock = threading.Lock()
        self.closed = False
        self.frames_last_flush = 0
        self.last_flush = 0.0

    def add(self, name, data):  # REQUIRES: router lock held
        self.bufs[name].add(data)
        if self.stream_to is not None:
            left = self.limit - self.streamed[name]
            if left > 0:
                chunk = data[:left]
                self.pending[name] += chunk
                self.streamed[name] += len(chunk)
                if len(data) > left:
                    self.pending[name] += (
                        b"\n... [streaming stopped at max_output_bytes; the reply keeps "
                        b"head and tail] ...\n")
                    self.streamed[name] = self.limit

    def has_pending(self):
        return bool(self.pending["stdout"] or self.pending["stderr"])

    def flush_stream(self, router, final=False):
        """Sends pending text as stream frames. Frames never follow the reply."""
        with self.send_lock:
            if self.closed:
                return
            with router.lock:
                chunks = []
                for name in ("stdout", "stderr"):
                    if self.pending[name]:
                        chunks.append((name, bytes(self.pending[name])))
                        self.pending[name].clear()
            if final:
                self.closed = True
            conn, rid = self.stream_to
            sent = 0
            for name, data in chunks:
                text = self.decoders[name].decode(data, final)
                if text:
                    conn.send({"id": rid, "type": "stream", "name": name, "text": text})
                    sent += 1
            self.frames_last_flush = sent
            self.last_flush = time.monotonic()


class OutputRouter:
    """Owns file descriptors 1 and 2 (pipes read by a thread) so that everything a cell writes,
    including subprocesses and C code, reaches the cell's capture; otherwise the container log."""

    def __init__(self, log_fd):
        self.log_fd = log_fd
        self.lock = threading.Lock()  # guards capture and the reads of the pipes
        self.capture = None
        self.names = {}  # read end -> stream name
        self.keep = {}  # 1/2 -> private copy of the pipe's write end, to repair fd 1/2
        self.ino = {}
        for fd, name in ((1, "stdout"), (2, "stderr")):
            r, w = os.pipe()  # both ends non-inheritable; dup2 makes fd 1/2 inheritable
            r, w = move_high(r), move_high(w)
            os.dup2(w, fd)
            os.set_blocking(r, False)
            self.names[r] = name
            self.keep[fd] = w
            self.ino[fd] = os.fstat(w).st_ino
        self.stdout = self._text_stream(1)
        self.stderr = self._text_stream(2)
        sys.stdout, sys.stderr = self.stdout, self.stderr
        sys.__stdout__, sys.__stderr__ = self.stdout, self.stderr
        import select

        self.poller = select.poll()  # for non-blocking drains by the main thread
        for r in self.names:
            self.poller.register(r, select.POLLIN)
        self.streamer_cond = threading.Condition()
        # Both threads start now: a cell at the sandbox's process limit could not start them.
        threading.Thread(target=self._pump, name="codeact-output", daemon=True).start()
        threading.Thread(target=self._stream_loop, name="codeact-stream", daemon=True).start()

    @staticmethod
    def _text_stream(fd):
        raw = io.FileIO(fd, "w", closefd=False)
        return io.TextIOWrapper(io.BufferedWriter(raw, 65536), encoding="utf-8",
                                errors="backslashreplace", line_buffering=True)

    def _read_available(self, fd):  # REQUIRES: self.lock held. Returns False at EOF.
        while True:
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not data:
                return False
            self._route(self.names[fd], data)

    def _route(self, name, data):  # REQUIRES: self.lock held
        cap = self.capture
        if cap is not None:
            cap.add(name, data)
            if cap.stream_to is not None:
                with self.streamer_cond:
                    self.streamer_cond.notify()
        else:
            try:
                os.write(self.log_fd, data)
            except OSError:
                pass

    def _pump(self):
        import select

        poller = select.poll()
        for fd in self.names:
            poller.register(fd, select.POLLIN)
        while True:
            try:
                ready = poller.poll()
            except InterruptedError:
                continue
            for fd, _ in ready:
                with self.lock:
                    if not self._read_available(fd):
                        poller.unregister(fd)

    def _drain(self):  # REQUIRES: self.lock held
        for fd, _ in self.poller.poll(0):
            self._read_available(fd)

    def start(self, capture):
        self.flush_python()
        with self.lock:
            self._drain()
            self.capture = capture

    def stop(self):
        """Ends the capture: everything written before this call belongs to the cell."""
        self.flush_python()
        with self.lock:
            self._drain()
            cap, self.capture = self.capture, None
        if cap is not None and cap.stream_to is not None:
            cap.flush_stream(self, final=True)
        return cap

    def fds(self):
        """The router's own descriptors (not 1 and 2), which a forked clone closes."""
        return list(self.names) + list(self.keep.values())

    def repair(self):
        """Undoes what a previous cell may have done to fds 1/2 or sys.stdout/stderr."""
        for fd, w in self.keep.items():
            try:
                intact = os.fstat(fd).st_ino == self.ino[fd]
            except OSError:
                intact = False
            if not intact:
                os.dup2(w, fd)
        if self.stdout.closed:
            self.stdout = self._text_stream(1)
        if self.stderr.closed:
            self.stderr = self._text_stream(2)
        sys.stdout, sys.stderr = self.stdout, self.stderr

    def flush_python(self):
        for stream in (sys.stdout, sys.stderr, self.stdout, self.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        sys.stdout, sys.stderr = self.stdout, self.stderr

    def _stream_loop(self):
        while True:
            with self.streamer_cond:
                while True:
                    cap = self.capture
                    if cap is not None and cap.stream_to is not None and cap.has_pending():
                        break
                    self.streamer_cond.wait()
            # At most 20 frames per second in all: wait 50 ms per frame sent last time.
            wait = cap.last_flush + 0.05 * max(cap.frames_last_flush, 1) - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            cap.flush_stream(self)
