"""codeact sandbox kernel: the long-lived Python process inside every sandbox container.

This docstring is the kernel's reference: invocation, wire protocol, on-disk format. The modules
of the package, one idea each:
    kernel.py          start-up, wiring of the parts, which op runs where, going down
    privileges.py      the start-up as root: socket as its directory's owner, init, the drop
    protocol.py        frames, connections (one server thread), the reply envelope
    auth.py            the token and the auth frame
    cells.py           execute and define: running user code, its errors, figures, files
    namespace.py       the user namespace: vars, get, clear, bridge.register
    state_store.py     the snapshot: pickling, manifest, commit, restore
    checkpoints.py     the checkpoint log: a record per commit, retention, what it references
    output_tree.py     the /output files a checkpoint keeps (content-addressed blobs)
    time_travel.py     checkpoints, rewind, checkpoints.export/release/import (a fork)
    shared_objects.py  which names share objects (so they are pickled together)
    array_chunks.py    big numpy arrays in the snapshot as content-addressed chunks
    output_capture.py  fds 1 and 2 routed to the running cell (head + tail caps, streaming)
    bridge.py          calls from sandboxed code to host functions
    call_journal.py    an execution's bridge calls, so a re-run after a crash repeats none
    watchdog.py        cell timeouts (SIGINT to the main thread)
    file_ops.py        files.list/read/write, confined to the workspace
    process_ops.py     bash and install, through the supervisor
    run_once.py        ops that run once per execution id (bash, install, files.write, clear)
    supervisor.py      the helper process that ends a script's whole process tree with it
    forks.py           clones of the kernel (os.fork in a cell); cleanup at the process limit;
                       what a cell left running
    cgroups.py         the sandbox's cgroups: where they are, the memory limit and its OOM kills
    process_tree.py    processes from /proc; stopping and killing a set that keeps forking
    descriptors.py     the kernel's descriptors above 1024, and the check that they are intact
    workers.py         the fixed thread pools
    values.py          how values appear in replies (repr, JSON, type names)
    atomic_files.py    durable small-file writes
    ownership.py       ownership epochs on shared storage: a kernel whose sandbox was placed
                       on another host exits instead of committing (fencing)
    prctl.py, log.py   prctl(2) through ctypes; the kernel's own log (the container log)

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
    takes before the reply gets a notice about it (default 1),
    CODEACT_KERNEL_TOKEN (64 hex digits; when set, every connection must authenticate first),
    CODEACT_EPOCH (digits: this container's ownership epoch on shared storage, ownership.py;
    unset = no fencing), CODEACT_OWNER_DIR (the placements, read-only; default
    /run/codeact-owner), CODEACT_OWNER_CHECK_SECONDS (default 1; 0 = at start-up and commits
    only).
    Start: take CODEACT_KERNEL_TOKEN out of the environment (os.environ, posix.environ, the
    process's environment block); started as uid 0 (the container: User 0:0, only CAP_SETUID,
    CAP_SETGID and CAP_SETPCAP, no-new-privileges, no docker init, /run/codeact a host-owned
    directory the sandbox user cannot write):
      1. become (effective) the owner of the socket's directory, replace a stale socket, bind
         it (mode 0666), listen; back to euid 0;
      2. fork: the parent stays pid 1 as init: it closes the socket, forwards SIGTERM, SIGINT,
         SIGHUP and SIGQUIT to the kernel, reaps every child and exits with the kernel's status
         (exit code, or 128 + signal), saying so on stderr when it is not 0;
      3. both empty the capability bounding set (PR_CAPBSET_DROP, what CAP_SETPCAP is for),
         become uid/gid 1000 for good (setgroups([]), setresgid, setresuid) and check it (ids,
         no groups, CapEff/CapPrm/CapAmb/CapInh/CapBnd 0) or exit 70 with the reason on
         stderr; the kernel makes itself dumpable again (its /proc stays its own), init stays
         undumpable.
    Started as another user, the kernel binds the socket itself. Then (as uid 1000): create
    workspace/{state,output,python}; point $CODEACT_STORAGE/.current at $ID (how /output
    reaches the volume; failure tolerated); put workspace/python (pip --target) on sys.path;
    chdir to workspace/output; start every thread (server, output, stream, watchdog, pools) and
    the process supervisor; restore state; serve; print "codeact-kernel ready" on stderr.
    Exit statuses: 0 after shutdown; 75 (EX_TEMPFAIL) when a cell closed the kernel's listening
    socket (see Descriptors); 76 when a newer placement owns the sandbox (ownership.py: at
    start-up, before a commit, or while idle; nothing is committed); 2 for bad arguments or
    environment; 70 when privileges could not be dropped; otherwise whatever a cell did
    (os._exit) or the signal that killed it.

Wire protocol (version 2)
    Unix stream socket; several connections at once. Frame = 4-byte big-endian unsigned length +
    UTF-8 JSON object. Request {"id": int, "op": str, ...}. Final answer on the same connection:
        {"id", "type": "reply", "ok": true, ...fields}
        {"id", "type": "reply", "ok": false, "error": {"type", "message"}}   (failed operation;
            type is a canonical code: InvalidArgument, NotFound, FailedPrecondition,
            PermissionDenied, ResourceExhausted, Unimplemented, Unavailable, DataLoss, Internal)
    A cell that raises is NOT a failed operation: ok is true, "status" is "error", "error" is set.
    Frames with a missing/invalid JSON body get a reply with "id": null. Text is UTF-8; bytes a
    process wrote that are not UTF-8 are replaced (U+FFFD).
    Authentication (new in 2). With a token, the FIRST frame on every connection must be
        {"id", "op": "auth", "sandbox_id", "nonce": <64 hex digits>}
    answered {"id", "type": "reply", "ok": true, "mac": hex HMAC-SHA256(key = the token's 32
    bytes, msg = "codeact-kernel-auth\0" + sandbox_id + "\0" + nonce)}; the host checks the mac
    before trusting anything else on the connection. A sandbox_id other than the kernel's gets
    PermissionDenied "this is the kernel of sandbox "B", not "A"" and the connection is closed
    without reading anything else sent on it (the host pipelines the auth frame with its first
    request: that request never runs); a bad nonce gets InvalidArgument and the close; any other
    frame first gets PermissionDenied and the close. Without a token auth is optional, answers
    "mac": null, and still refuses another sandbox's id.
    Events before the reply, same id: {"type": "stream", "name": "stdout"|"stderr", "text"}
    (execute with "stream": true; at most 20 frames/s, coalesced, at most max_output_bytes per
    stream), bridge calls (below), and for an execute that arrives while another execute runs
    (e.g. one whose client gave up), first {"type": "queued", "running": {"cell", "execution_id"
    (or null), "running_ms"}} about the one running, then {"type": "started", "cell": M} when it
    starts (a cell that runs at once gets neither). Ops touching the namespace (execute,
    execution.get, vars, get, clear, define, bridge.register, shutdown) run one at a time on the
    main thread, in arrival order; hello answers at once; bash and install run on a pool of 4
    threads, files.* on a pool of 2 (queued when all are busy). One server thread does all
    socket I/O: no thread or process is created per connection or request, so a sandbox at its
    process limit is still answered.

    hello   -> kernel_version, protocol: 2, python_version, pid, sandbox_id, cell (last
               committed cell), restored: [names], lost: [{name, reason}] (names the snapshot
               had that did not come back: "was not persisted: <why>" for values the manifest
               recorded as unpicklable, the error for failed restores), restore_errors (the
               same list, its protocol 1 name), persistence
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
               killed_processes and notice (only when the cell used up the sandbox's process
               limit: see Processes); left_running [{pid, command}] and notice (only when the
               cell left processes running: see Processes); oom_kills and notice (only when
               processes were killed for memory while the cell ran: see Processes);
               snapshot_ms (time spent saving the state after the cell: pickling, chunk and
               object files, the manifest; 0.0 when it was not saved);
               notice also when that save took CODEACT_SLOW_SAVE_SECONDS or more, naming the
               values that took the time, slowest first: "saving the state took 9.1 s: arr
               (2.0 GiB ndarray) rewritten" (or "...: 16.0 MiB of it written", "... checked,
               unchanged"). Several notices in one reply are joined with "; ".
               A known execution_id returns the recorded reply with replayed: true, running
               nothing. Timeout: the main thread gets SIGINT (again every second until the cell
               ends); the cell reports TimeoutError "cell exceeded its timeout of Ns".
               Output: head and tail halves of max_output_bytes kept, with a line
               "... [N bytes omitted] ..." between. Output is captured at the file-descriptor
               level, so subprocesses and C extensions are captured too.
    execution.get {execution_id} -> found, reply (the recorded reply of that execute, or null):
               whether it committed. A host whose kernel died or was killed mid-execute asks
               the restarted kernel, so a cell that committed just before the crash is
               reported with its reply, not as lost (and is not run again by the model).
               DataLoss when it committed but its recorded reply is unreadable.
    bash    {script, timeout?, cwd?, max_output_bytes?, execution_id?} -> exit_code (128+signal
               when killed), stdout, stderr, timed_out, duration_ms, truncated, replayed,
               killed_processes (only when some were killed), oom_kills and notice (only when
               processes were killed for memory while it ran: see Processes). /bin/bash -c
               under a supervisor (supervisor.py) that is a child subreaper: when the script
               ends or times out, every process it left (background, setsid, double-forked) is
               stopped and killed, so the reply comes when nothing of the script is left.
               Timeout: exit_code 137, timed_out true. No process slot to start it:
               ResourceExhausted "no free process slots in the sandbox (pids limit); a process
               is forking without end". The script gets the kernel's environment and cwd
               (default the output dir, confined like files). With an execution_id the script
               runs once (Run once, below).
    vars    -> variables [{name, type, kind data|function|class|module, persisted, reason?,
               size?, preview}] (user names: no _-prefixed, kernel-provided or builtin names)
    get     {name} -> name, value_type (qualified type name; not "type", which the envelope
               uses), repr (<= 64 KB), value (JSON or null); NotFound if absent
    clear   {execution_id?} -> cleared [names], replayed; empties namespace and snapshot
               (execution records kept)
    files.list {path?} -> root, files [{path, size, mtime}] (recursive, regular files, sorted)
    files.read {path} -> path, size, data_b64
    files.write {path, data_b64, make_dirs? = true, execution_id?} -> path, size, replayed
               (tmp + rename)
               Paths: relative -> output dir, /output/... -> output dir; the real path must lie in
               the workspace, else PermissionDenied. Paths are reported as seen in the sandbox
               (/output/... inside the output dir).
    install {packages, timeout?, execution_id?} -> status, stdout, stderr, installed,
               duration_ms, replayed[, hint]
               Names validated (InvalidArgument); pip --target workspace/python, argument list,
               under the supervisor like bash.
    Run once: bash, clear, files.write and install with an execution_id run once per (op, id)
               (run_once.py): a known id returns the recorded reply (replayed: true), one still
               running is waited for and its reply returned. Records are files under
               state/once/ (the last MAX_EXECUTION_RECORDS kept); an op cut short by a kernel
               crash has no record and runs again.
    checkpoints {} -> checkpoints [{n, cell, execution_id, time, changed, files_changed,
               not_persisted, added_bytes, current, forked_from?}], current, keep_last, budget
    rewind {to, execution_id?} -> checkpoint, previous, restored, restore_errors,
               files_restored, files_removed, files_left (run once per id)
    checkpoints.export {at, name} -> path, checkpoint, files_left;
    checkpoints.release {name}; checkpoints.import {path, execution_id?} -> checkpoint, restored,
               restore_errors, files, source, source_checkpoint (run once per id)
               See time_travel.py and the Checkpoints paragraph below.
    bridge.register {functions: [{name, signature: "def f(a: int) -> Any", doc}]} -> registered
    define  {source} -> defined [names] (kernel-provided: not listed, not persisted)
               bridge.register and define requests that succeeded and provided a name (not
               only __-prefixed ones) are kept in state/provided.json (provided.py) and made
               again when a kernel starts, after the restore: a kernel restarted after a crash
               has the host's functions without being sent them again. A request made again
               moves to the end (the last define of a name wins). One that fails at start-up is
               listed in hello's lost as "<define>" or "<bridge.register>". The file is in the
               sandbox's own volume: a cell can change it, as it can anything the kernel runs
               at start-up (.pth files under the workspace's python dir), for its own sandbox
               only.
    shutdown -> reply, commit, exit 0

    Bridge call, kernel -> host, on the connection of the running execute:
        {"id": <request id>, "type": "bridge_call", "call_id": int, "name", "args", "kwargs"}
    host -> kernel: {"type": "bridge_result", "call_id", "ok": true, "value"} or
        {"type": "bridge_result", "call_id", "ok": false, "error": {"type", "message"}}
    The stub returns value or raises ToolError (a RuntimeError, available as a builtin).
    Positional-or-keyword arguments travel as kwargs; arguments left at their default are omitted.
    Exactly once: in an execute with an execution_id, call k (counted from 1 in call order) is
    journaled in state/calls/ (call_journal.py) before it is sent and when answered; a re-run of
    that execution (after a crash rolled its first run back) gets the recorded answer of each
    call it makes again with the same name and arguments, without a bridge_call; a call sent but
    never answered raises PossiblyAppliedError (a ToolError, type "PossiblyApplied", a builtin),
    as does a call whose host connection closed while it ran. Calls differing from the record,
    and every call after one, are sent. The journal goes when the execution's reply commits.

Processes
    A fork of the kernel by user code (a "clone": os.fork, multiprocessing, a fork bomb) gets,
    in the at-fork hook, none of the kernel's descriptors (socket, connections, pipes, epoll,
    supervisor) and the process name "clone-<kernel pid>"; a clone whose cell code ends and
    returns into the kernel exits at once (status 0): it never commits a snapshot or writes a
    frame. When the sandbox's process limit refused a fork during a cell (the pids cgroup's
    pids.events "max" counter rose; where no pids cgroup is visible: the cell failed with
    BlockingIOError or "can't start new thread"), the kernel kills what the cell left running
    when it ends: clones born during the cell and every process born during it under the
    kernel or its init (not the supervisor's), stopping them all first so a fork bomb cannot
    outrun it; the reply gets killed_processes: N and notice "the cell's processes used up the
    sandbox's process limit (256); its N forked processes were killed" (N = 0: "...; none of its
    forked processes was left running"). Clones of the bomb that ended by themselves are reaped
    too (a zombie holds a process slot). From the first refusal on, os.fork() in the kernel
    fails at once for the rest of the cell (BlockingIOError "Resource temporarily unavailable
    (the sandbox's process limit was reached during this cell)"), so the bomb's loop in the
    kernel ends then, however busy the machine. Threads the kernel needs all exist from the
    start (see Wire protocol), so the next request is answered.
    Otherwise processes a cell started are left running (a model may start a server on purpose),
    and the reply names those still running when it ends, the same set the clean-up would kill,
    oldest first: left_running [{pid, command}] (the command line; "a fork of the kernel" for a
    clone) and notice "the cell left 1 process running: pid 57 (sleep 1000); it keeps running
    until it ends or is killed (os.kill(57, signal.SIGKILL))" (at most 5 listed, then "N more").
    Each is named once, by the cell that started it.
    Memory: when the sandbox's memory cgroup (memory.events of v2, memory.oom_control of v1)
    counts out-of-memory kills during a cell that the kernel survived (a subprocess, a clone, a
    bash job's process) or during a bash script, the reply gets oom_kills: N and notice "the
    sandbox ran out of memory: its limit (256 MiB) was reached and the system killed N of its
    processes (a killed subprocess shows returncode -9, a shell exit status 137); the kernel
    and its variables are intact". (When the kernel itself is killed, the host reports a
    MemoryError.)

Descriptors
    The kernel keeps its own long-lived descriptors (listening socket, connections, epoll,
    internal pipes, the supervisor's socket, the log) at 1024 and above (raising the soft
    RLIMIT_NOFILE within the hard one), out of reach of a cell's os.closerange(3, 1024). After
    every op the main thread checks that the listening socket is still the one it made (and the
    server thread checks it, and its epoll descriptor, every second): when a cell closed it, the
    kernel interrupts the running cell (SIGINT every second), commits what it can and exits with
    status 75, so the container stops and the host restarts it from the snapshot.

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
    Checkpoints: every commit (a cell, a clear, the final commit of a kernel going down) first
    writes state/checkpoints/<n>.json (n from 1 in commit order: the entries and not_persisted
    the manifest is about to hold, a reference to the tree of /output, state/trees/<sha256>.json
    = {path: {sha256, size, mtime_ns, ino}} with contents in state/blobs/<sha256> (shared by the
    checkpoints whose tree is the same), and a summary), then the manifest, which names it
    ("checkpoint": n, "last_checkpoint"). So every commit writes the manifest. Object files are
    never rewritten in place and chunks and blobs are content-addressed: a record references the
    files of unchanged values, and a file goes only when neither the manifest nor a kept record
    references it. Retention: CODEACT_CHECKPOINTS (all | N), CODEACT_CHECKPOINT_BUDGET (bytes
    the records other than the current one may hold on their own); the current one is kept.
    A commit that meets a full disk drops the older half of the other records and is tried
    again, until it fits or none is left (StateStore.commit; the reply's notice names them).
    At start-up records above last_checkpoint (a commit that did not finish) are deleted and an
    unreadable one is moved aside (reported in lost); state/exports/ is emptied.
    Test hooks: CODEACT_TEST_CRASH_BEFORE_COMMIT=1 / CODEACT_TEST_CRASH_AFTER_COMMIT=1 exit with
    status 137 just before / just after the manifest rename (after: before the reply is sent).
"""
