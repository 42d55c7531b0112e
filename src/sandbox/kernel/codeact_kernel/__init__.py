"""codeact sandbox kernel: the long-lived Python process inside every sandbox container.

This docstring is the kernel's reference: invocation, wire protocol, on-disk format. The modules
of the package, one idea each:
    kernel.py          start-up, wiring of the parts, which op runs where, shutdown
    protocol.py        frames, connections, the reply envelope
    cells.py           execute and define: running user code, its errors, figures, files
    namespace.py       the user namespace: vars, get, clear, bridge.register
    state_store.py     the snapshot: pickling, manifest, commit, restore
    shared_objects.py  which names share objects (so they are pickled together)
    array_chunks.py    big numpy arrays in the snapshot as content-addressed chunks
    output_capture.py  fds 1 and 2 routed to the running cell (head + tail caps, streaming)
    bridge.py          calls from sandboxed code to host functions
    watchdog.py        cell timeouts (SIGINT to the main thread)
    file_ops.py        files.list/read/write, confined to the workspace
    process_ops.py     bash and install (subprocesses, run-once records)
    values.py          how values appear in replies (repr, JSON, type names)
    atomic_files.py    durable small-file writes
    log.py             the kernel's own log (the container log)

It keeps one namespace alive across cells, snapshots it to the sandbox's volume after every
cell (before the reply leaves), and serves the host over a unix socket. Standard library only,
plus cloudpickle (imported lazily, only when a non-trivial value is saved).

Invocation (the package directory, or -m with its parent on sys.path)
    python3 /opt/codeact/codeact_kernel [--socket PATH] [--workspace DIR] [--sandbox-id ID]
    Environment: CODEACT_SOCKET (default /run/codeact/kernel.sock), CODEACT_SANDBOX_ID (required
    without --sandbox-id), CODEACT_STORAGE (default /persistent-storage; workspace =
    $CODEACT_STORAGE/$ID), CODEACT_DURABILITY = fsync (default) | rename,
    CODEACT_PERSISTENCE = 1 (default) | 0 (no state written, nothing restored),
    CODEACT_STATE_CHUNK_BYTES = chunk size of big arrays in the snapshot (default 16777216;
    0 = arrays pickled whole, the version 1 way), CODEACT_SLOW_SAVE_SECONDS = how long a save
    takes before the reply gets a notice about it (default 1).
    Start: create workspace/{state,output,python}; point $CODEACT_STORAGE/.current at $ID (how
    /output reaches the volume; failure tolerated); put workspace/python (pip --target) on
    sys.path; chdir to workspace/output; restore state; bind the socket (mode 0666); print
    "codeact-kernel ready" on stderr.

Wire protocol (version 1)
    Unix stream socket; several connections at once. Frame = 4-byte big-endian unsigned length +
    UTF-8 JSON object. Request {"id": int, "op": str, ...}. Final answer on the same connection:
        {"id", "type": "reply", "ok": true, ...fields}
        {"id", "type": "reply", "ok": false, "error": {"type", "message"}}   (failed operation;
            type is a canonical code: InvalidArgument, NotFound, FailedPrecondition,
            PermissionDenied, Unimplemented, DataLoss, Internal)
    A cell that raises is NOT a failed operation: ok is true, "status" is "error", "error" is set.
    Frames with a missing/invalid JSON body get a reply with "id": null. Text is UTF-8; bytes a
    process wrote that are not UTF-8 are replaced (U+FFFD).
    Events before the reply, same id: {"type": "stream", "name": "stdout"|"stderr", "text"}
    (execute with "stream": true; at most 20 frames/s, coalesced, at most max_output_bytes per
    stream) and bridge calls (below). Ops touching the namespace (execute, vars, get, clear,
    define, bridge.register, shutdown) run one at a time on the main thread, in arrival order;
    hello answers at once; bash, install and files.* run on their own threads.

    hello   -> kernel_version, protocol: 1, python_version, pid, sandbox_id, cell (last
               committed cell), restored: [names], restore_errors: [{name, reason}], persistence
    execute {code, execution_id?, timeout? (s, 0 = none), persist? = true, variables? {name: json},
             max_output_bytes? = 65536 (per stream), stream? = false}
            -> status "ok"|"error", stdout, stderr, result (repr of a final expression, <= 8 KB,
               null for None), error null | {type, message, traceback} (kernel frames removed,
               user code shows as File "<cell N>"), outputs [{type: "image/png", path}] (open
               matplotlib figures, saved and closed), files [output paths created or modified
               since the previous cell, figures included, not counting bash/files.write/install],
               not_persisted [{name, reason}] (every name currently not in the snapshot),
               duration_ms, execution_id, cell, truncated {stdout?, stderr?: omitted bytes},
               replayed, timed_out; persist_error (only when writing the snapshot failed);
               snapshot_ms (time spent saving the state after the cell: pickling, chunk and
               object files, the manifest; 0.0 when it was not saved); notice (only when that
               save took CODEACT_SLOW_SAVE_SECONDS or more), naming the values that took the
               time, slowest first: "saving the state took 9.1 s: arr (2.0 GiB ndarray)
               rewritten" (or "...: 16.0 MiB of it written", "... checked, unchanged").
               A known execution_id returns the recorded reply with replayed: true, running
               nothing. Timeout: the main thread gets SIGINT (again every second until the cell
               ends); the cell reports TimeoutError "cell exceeded its timeout of Ns".
               Output: head and tail halves of max_output_bytes kept, with a line
               "... [N bytes omitted] ..." between. Output is captured at the file-descriptor
               level, so subprocesses and C extensions are captured too.
    bash    {script, timeout?, cwd?, max_output_bytes?, execution_id?} -> exit_code (128+signal
               when killed), stdout, stderr, timed_out, duration_ms, truncated, replayed.
               /bin/bash -c in its own process group; the group is killed on timeout. cwd
               defaults to the output dir and is confined like files. With an execution_id the
               script runs once: a known id returns the recorded reply (replayed: true), and a
               request with the id of a script still running waits for it and gets its reply.
               Records are files under state/once/ (the last MAX_EXECUTION_RECORDS kept); a
               script cut short by a kernel crash has no record and runs again.
    vars    -> variables [{name, type, kind data|function|class|module, persisted, reason?,
               size?, preview}] (user names: no _-prefixed, kernel-provided or builtin names)
    get     {name} -> name, value_type (qualified type name; not "type", which the envelope
               uses), repr (<= 64 KB), value (JSON or null); NotFound if absent
    clear   -> cleared [names]; empties namespace and snapshot (execution records kept)
    files.list {path?} -> root, files [{path, size, mtime}] (recursive, regular files, sorted)
    files.read {path} -> path, size, data_b64
    files.write {path, data_b64, make_dirs? = true} -> path, size (tmp + rename)
               Paths: relative -> output dir, /output/... -> output dir; the real path must lie in
               the workspace, else PermissionDenied. Paths are reported as seen in the sandbox
               (/output/... inside the output dir).
    install {packages, timeout?} -> status, stdout, stderr, installed, duration_ms[, hint]
               Names validated (InvalidArgument); pip --target workspace/python, argument list.
    bridge.register {functions: [{name, signature: "def f(a: int) -> Any", doc}]} -> registered
    define  {source} -> defined [names] (kernel-provided: not listed, not persisted)
    shutdown -> reply, commit, exit 0

    Bridge call, kernel -> host, on the connection of the running execute:
        {"id": <request id>, "type": "bridge_call", "call_id": int, "name", "args", "kwargs"}
    host -> kernel: {"type": "bridge_result", "call_id", "ok": true, "value"} or
        {"type": "bridge_result", "call_id", "ok": false, "error": {"type", "message"}}
    The stub returns value or raises ToolError (a RuntimeError, available as a builtin).
    Positional-or-keyword arguments travel as kwargs; arguments left at their default are omitted.

Persistence (workspace/state)
    manifest.json is the single commit point: {"version": 2, "cell", "entries": {name: {kind,
    file: "objects/<name>.<cell>.pkl" | "objects/<first name>+<n>.<cell>.pkl" | null, module,
    qualname?, type, sha256, size, shared?: true, chunks?: [sha256]}}, "executions":
    {execution_id: "executions/<hash>.json"}, "not_persisted": {name: reason}}.
    file is null for references: modules (module = real name, so `import numpy as np` restores
    np) and functions/classes importable as module + qualname (`from os.path import join`).
    Object files are cloudpickle (protocol 5); cell-defined functions and classes by value.
    Names whose values share objects (b = a; d = {'k': a}; an attribute, a list element, a
    function default, a class attribute) are a group: one object file holding {name: value}
    (their entries say shared: true and carry the file's sha256 and size), so the pickle's memo
    keeps them one object after a restore. The sharing is found by a walk of what the values
    hold (shared_objects.py), at most 100000 objects per commit (past that, only top-level
    identity is kept); what each saved name reached is remembered (in memory, from its last
    save or restore), so a new name sharing an object with an untouched name joins its group.
    A group is rewritten whole when any member is a candidate, and splits when the sharing ends.
    A numpy.ndarray (not a subclass, no object dtype) bigger than one chunk is stored as chunks
    (array_chunks.py): files state/chunks/<sha256> of CODEACT_STATE_CHUNK_BYTES each, the pickle
    keeping only a header (dtype, shape, order, chunk hashes); chunks lists the distinct chunk
    files an entry uses and size counts them. A chunk on disk is never written again (a
    one-element change writes one chunk); chunks no entry references are deleted after the
    commit. Version 1 manifests (one file per name, no groups, no chunks) restore as they are;
    a name is written in the new format when it is next saved. (A kernel older than version 2
    finds a version 2 manifest unreadable and moves the state aside, see below.)
    After every execute (failed and timed-out ones too), before the reply: new chunk and object
    files and the execution record (tmp + rename each), then the manifest (tmp, fsync if
    durability=fsync, rename, fsync of the directories). Only candidates are pickled: new names, rebound names,
    names the cell's code mentions, and names mentioned by user functions/classes the cell
    reaches (and names touched by persist=false cells or define since the last commit).
    Unchanged bytes (sha256) are not rewritten; untouched names are not even pickled. Functions
    keep resolving globals from the live namespace after a restore. Names starting with "_" are
    not persisted.
    Restore order: references, data, functions, classes (a group ranks as its last member);
    each failure is a restore_error (for every name of a group whose file failed) and does not
    stop the others. A manifest that cannot be read is moved aside (*.unreadable-<t>).
    A name whose restore failed keeps its entry (a later restart may succeed) until the name is
    bound again or state is cleared.
    Test hooks: CODEACT_TEST_CRASH_BEFORE_COMMIT=1 / CODEACT_TEST_CRASH_AFTER_COMMIT=1 exit with
    status 137 just before / just after the manifest rename (after: before the reply is sent).
"""
