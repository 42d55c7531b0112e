"""Kernel-provided names that outlive the kernel: the host's bridge.register and define requests
are kept in state/provided.json and made again at start-up, after the snapshot is restored. A
kernel restarted after a crash (its own, its container's, the machine's) so still has the host
functions, MCP tools and Python functions its cells call, whoever restarted it and whether or not
the host noticed (a cell sent right after a restart found `record` undefined). Identical requests
are kept once, where last made (so a later define of a name wins at start-up too). Main thread
only."""

import json
import os

from .atomic_files import read_json_quiet, write_atomic
from .log import log

KEPT_OPS = ("bridge.register", "define")


class ProvidedLog:
    def __init__(self, state_dir, fsync):
        self.path = os.path.join(state_dir, "provided.json")
        self.fsync = fsync
        self.entries = []  # [{"op", "fields"}], in the order last requested
        self.keys = set()  # json of each entry

    def wrap(self, op, handler):
        """handler(msg) -> reply, with the request kept once it succeeded and provided a name
        (a define of only __-prefixed names, such as a marker or an analysis helper, is not
        kept: the host sends those again when it needs them)."""
        def run(msg):
            reply = handler(msg)
            if reply.get("defined") or reply.get("registered"):
                self._keep(op, {k: v for k, v in msg.items() if k not in ("id", "op", "auth")})
            return reply
        return run

    def _keep(self, op, fields):
        entry = {"op": op, "fields": fields}
        key = self._key(entry)
        if key in self.keys:  # made again: it moves to the end, where a restart makes it last
            if self._key(self.entries[-1]) == key:
                return
            self.entries = [e for e in self.entries if self._key(e) != key]
        self.entries.append(entry)
        self.keys.add(key)
        try:
            write_atomic(self.path, json.dumps({"version": 1, "entries": self.entries}).encode(),
                         self.fsync)
        except OSError as e:  # a full disk: this kernel has them; a restarted one will not
            log("codeact-kernel: could not keep %s for restarts: %s" % (op, e))

    @staticmethod
    def _key(entry):
        return json.dumps(entry, sort_keys=True)

    def replay(self, handlers):
        """Makes the kept requests again (handlers: op -> handler(msg)); returns [{name, reason}]
        for those that failed, in the form of the hello's lost list."""
        kept = read_json_quiet(self.path)
        failed = []
        for entry in (kept or {}).get("entries") or []:
            op, fields = entry.get("op"), entry.get("fields")
            if op not in KEPT_OPS or not isinstance(fields, dict):
                continue
            try:
                handlers[op](dict(fields, op=op))
            except Exception as e:
                failed.append({"name": "<%s>" % op,
                               "reason": "made again at start-up, it failed: %s"
                               % (getattr(e, "message", e),)})
                continue
            key = self._key(entry)
            if key not in self.keys:
                self.entries.append(entry)
                self.keys.add(key)
        return failed
