"""The journal of one execution's bridge calls, so that a cell re-run after a crash (its earlier,
uncommitted run rolled back) never makes a host call twice.

One file per execution id, state/calls/<sha256(id)[:40]>.jsonl, one JSON line per event,
appended and fsynced (when the store fsyncs) before the call leaves and after its answer came:
    {"seq": k, "state": "sent", "name": f, "digest": <sha256 of name, args, kwargs>}
    {"seq": k, "state": "done", "ok": true, "value": v} | {..., "ok": false, "error": {...}}
    {"seq": k, "state": "unsent"}      the call could not be sent (the host connection closed)
k counts the execution's bridge calls from 1 in the order the cell makes them. A re-run's call k
with the same name and arguments as the recorded call k gets the recorded answer without a call
to the host; one that was sent but never answered raises PossiblyAppliedError (it may have run
on the host: the cell decides, codeact never re-sends it). A call that differs from the recorded
one (the re-run took another path) and every later call are made afresh. A torn last line (a
crash mid-write) is ignored. The journal is dropped when the execution's reply is committed (a
committed execution is never run again); journals of executions that never committed are
pruned, oldest first, beyond MAX_JOURNALS."""

import hashlib
import json
import os
import threading

from . import forks
from .atomic_files import fsync_dir, unlink_quiet, write_all

MAX_JOURNALS = 1000


def call_digest(name, args, kwargs):
    text = json.dumps([name, args, kwargs], sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class CallJournal:
    """The bridge calls of one execution: what an earlier run recorded, and the appends of this
    run. Thread-safe (a cell may call from several threads; numbers follow call order)."""

    def __init__(self, calls_dir, exec_id, fsync):
        self.dir = calls_dir
        self.fsync = fsync
        self.path = os.path.join(calls_dir, hashlib.sha256(
            exec_id.encode("utf-8", "surrogatepass")).hexdigest()[:40] + ".jsonl")
        self.lock = threading.Lock()
        self.next_seq = 0
        self.recorded = {}  # seq -> {"digest", "name", "answer": done line or None}
        self.diverged = False  # GUARDED_BY(lock): a call differed from the record
        self.opened = False  # GUARDED_BY(lock): this run appended a line
        self._load()

    def _load(self):
        try:
            with open(self.path, "rb") as f:
                lines = f.read().split(b"\n")
        except OSError:
            return
        for raw in lines:
            try:
                e = json.loads(raw)
                seq = int(e["seq"])
                state = e["state"]
            except (ValueError, KeyError, TypeError):
                continue
            if state == "sent":
                self.recorded[seq] = {"digest": e.get("digest"), "name": e.get("name"),
                                      "answer": None}
            elif state == "done" and seq in self.recorded:
                self.recorded[seq]["answer"] = e
            elif state == "unsent":
                self.recorded.pop(seq, None)

    def begin(self, name, args, kwargs):
        """Numbers the next call. Returns (seq, recorded): recorded is None when the call is to
        be sent (after begin wrote its "sent" line), {"answer": line} with the recorded answer,
        or {"answer": None} when a previous run sent it and never got an answer."""
        digest = call_digest(name, args, kwargs)
        with self.lock:
            self.next_seq += 1
            seq = self.next_seq
            old = None if self.diverged else self.recorded.get(seq)
            if old is not None and old["digest"] == digest:
                return seq, {"answer": old["answer"]}
            if old is not None:
                self.diverged = True
            self._append({"seq": seq, "state": "sent", "name": name, "digest": digest})
            return seq, None

    def answered(self, seq, msg):
        """Records the host's answer (a bridge_result frame) to call seq."""
        line = {"seq": seq, "state": "done", "ok": bool(msg.get("ok"))}
        if line["ok"]:
            line["value"] = msg.get("value")
        else:
            line["error"] = msg.get("error") or {}
        with self.lock:
            self._append(line)

    def unsent(self, seq):
        with self.lock:
            self._append({"seq": seq, "state": "unsent"})

    def _append(self, entry):
        # Opened for each line, so that no descriptor of the kernel's sits among a cell's
        # (which may close or reuse low numbers).
        forks.leave_if_clone()  # a clone of the kernel never writes the kernel's files
        data = (json.dumps(entry, separators=(",", ":"), ensure_ascii=False) + "\n").encode(
            "utf-8", "surrogatepass")
        first = not self.opened
        if first:
            if not os.path.isdir(self.dir):
                os.makedirs(self.dir, exist_ok=True)
                fsync_dir(os.path.dirname(self.dir))
            self.opened = True
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        try:
            write_all(fd, data, self.fsync)
        finally:
            os.close(fd)
        if first:
            if self.fsync:
                fsync_dir(self.dir)
            _prune(self.dir, keep=self.path)

    def drop(self):
        """The execution's reply is committed (it never runs again): the journal goes."""
        with self.lock:
            unlink_quiet(self.path)


def _prune(calls_dir, keep):
    try:
        names = [os.path.join(calls_dir, n) for n in os.listdir(calls_dir)
                 if n.endswith(".jsonl")]
    except OSError:
        return
    if len(names) <= MAX_JOURNALS:
        return

    def mtime(p):
        try:
            return os.stat(p).st_mtime
        except OSError:
            return 0.0
    names.sort(key=mtime)
    for p in names[:len(names) - MAX_JOURNALS]:
        if p != keep:
            unlink_quiet(p)
