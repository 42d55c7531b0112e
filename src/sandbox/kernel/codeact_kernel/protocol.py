"""The wire protocol's mechanics (documented in the package docstring): frames, connections, the
listening socket, authentication of each connection, and the reply envelope every operation goes
through.

One thread (the Server's) does all socket I/O: it accepts, reads and parses frames, answers auth
and hands requests on. No thread or process is created per connection or per request, so the
kernel keeps answering when a cell's fork bomb has used up the sandbox's process limit. Replies
and events are sent by whichever thread produced them (Connection.send is thread-safe)."""

import json
import os
import select
import socket
import struct
import threading
import time

from . import forks
from .atomic_files import unlink_quiet
from .descriptors import HIGH_FD_BASE, Identity, move_high, move_socket_high
from .log import log

PROTOCOL_VERSION = 2
MAX_FRAME_BYTES = 1 << 30
_LEN = struct.Struct(">I")
_RECV_BYTES = 256 * 1024
_CHECK_INTERVAL = 1.0  # seconds between checks that the listening socket is still ours
# A client that stops reading its replies: a send stalled this long fails (the connection is
# dropped); the server thread never waits at all, so such a client cannot stop it serving.
_SEND_STALL_S = 30


class OpError(Exception):
    """A failed operation: becomes {"ok": false, "error": {type, message}}."""

    def __init__(self, type_, message):
        super().__init__(message)
        self.type = type_
        self.message = message


def encode(obj):
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from user data
        return text.encode("utf-8", "replace")


def error_reply(rid, type_, message):
    return {"id": rid, "type": "reply", "ok": False, "error": {"type": type_, "message": message}}


def answer(conn, rid, handler, *args):
    """Runs handler(*args) and sends its result as the reply to request rid: the fields it
    returns plus the envelope, or the failure (OpError as given, anything else as Internal).
    A bytes "data_b64" field is spliced into the frame without a JSON copy."""
    try:
        reply = dict(handler(*args))
        reply.update(id=rid, type="reply", ok=True)  # envelope keys always win
        payload = reply.pop("data_b64", None)
        if isinstance(payload, bytes):
            conn.send_with_payload(reply, "data_b64", payload)
            return reply
        if payload is not None:
            reply["data_b64"] = payload
    except OpError as e:
        reply = error_reply(rid, e.type, e.message)
    except Exception as e:
        import traceback

        log("codeact-kernel: internal error: " + "".join(traceback.format_exception(e)))
        reply = error_reply(rid, "Internal", "%s: %s" % (type(e).__name__, e))
    conn.send(reply)
    return reply


def bind_listener(path):
    """The listening unix socket at path (a stale one replaced), mode 0666."""
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    unlink_quiet(path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    os.chmod(path, 0o666)
    s.listen(64)
    return s


class Connection:
    """One client. send() may be called from any thread; everything else is the Server's."""

    server_thread = None  # ident of the Server's thread (set when it starts)

    def __init__(self, sock, authed):
        self.sock = sock
        self.fd = sock.fileno()
        # A descriptor below HIGH_FD_BASE may be closed and reused by a cell: check before
        # every write that it is still this socket (up there, nothing a cell opens lands).
        self.identity = Identity(self.fd) if self.fd < HIGH_FD_BASE else None
        self.send_lock = threading.Lock()
        self.alive = True
        self.authed = authed
        self.buf = bytearray()  # received bytes not yet parsed into frames
        self.body = None  # (bytearray, memoryview, bytes received) of a big frame in progress

    def send_with_payload(self, obj, key, payload):
        """Sends obj plus obj[key] = payload (ASCII bytes, e.g. base64) without building the
        payload into a JSON string first: one copy of a big file instead of four."""
        head = encode(obj)
        head = head[:-1] + (b',' if len(head) > 2 else b'') + encode(key) + b':"'
        tail = b'"}'
        return self._send_parts(
            [_LEN.pack(len(head) + len(payload) + len(tail)) + head, payload, tail])

    def send(self, obj):
        data = encode(obj)
        if len(data) < 65536:
            return self._send_parts([_LEN.pack(len(data)) + data])
        return self._send_parts([_LEN.pack(len(data)), data])

    def _send_parts(self, parts):
        forks.leave_if_clone()  # a clone of the kernel never writes a frame
        with self.send_lock:
            if not self.alive or (self.identity is not None and not self.identity.intact()):
                self.alive = False
                return False
            try:
                if threading.get_ident() == Connection.server_thread:
                    for part in parts:
                        view = memoryview(part)
                        while view:
                            view = view[self.sock.send(view, socket.MSG_DONTWAIT):]
                else:
                    for part in parts:
                        self.sock.sendall(part)
                return True
            except OSError:  # a full buffer on the server thread: the client does not read
                self.alive = False
                try:
                    self.sock.shutdown(socket.SHUT_RDWR)  # the server sees EOF and drops it
                except OSError:
                    pass
                return False

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes a sender blocked on this socket
        except OSError:
            pass
        with self.send_lock:
            self.alive = False
            try:
                self.sock.close()
            except OSError:
                pass


class Server:
    """Owns the listening socket and every connection; one thread serves them all.
    on_request(conn, msg) gets each request (an authenticated frame with an "op"),
    on_bridge_result(conn, msg) each bridge_result frame, on_close(conn) each closed connection;
    all run on the server thread and must not block. on_lost(reason) runs once when the
    listening socket or the epoll descriptor is gone (a cell closed them); the thread then
    stops."""

    def __init__(self, listener, authenticator, on_request, on_bridge_result, on_close,
                 on_lost):
        listener = move_socket_high(listener)
        listener.setblocking(False)
        self.listener = listener
        self.listener_fd = listener.fileno()
        self.listener_identity = Identity(self.listener_fd)
        self.auth = authenticator
        self.on_request = on_request
        self.on_bridge_result = on_bridge_result
        self.on_close = on_close
        self.on_lost = on_lost
        ep = select.epoll()
        fd = move_high(os.dup(ep.fileno()))
        ep.close()
        self.epoll = select.epoll.fromfd(fd)
        self.epoll_identity = Identity(fd)
        self.connections = {}  # fd -> Connection; server thread only (read by forks hook)
        self.lost = None
        self.thread = None

    def kernel_fds(self):
        """Descriptors a forked clone must close."""
        return [self.listener_fd, self.epoll.fileno()] + list(self.connections)

    def listener_intact(self):
        return self.listener_identity.intact()

    def start(self):
        self.epoll.register(self.listener_fd, select.EPOLLIN)
        self.thread = threading.Thread(target=self._run, name="codeact-server", daemon=True)
        self.thread.start()

    def _run(self):
        Connection.server_thread = threading.get_ident()
        next_check = time.monotonic() + _CHECK_INTERVAL
        while True:
            try:
                events = self.epoll.poll(_CHECK_INTERVAL)
            except InterruptedError:
                continue
            except (OSError, ValueError) as e:
                return self._lose("the kernel's epoll descriptor was closed (%s)" % e)
            for fd, _ in events:
                if fd == self.listener_fd:
                    self._accept()
                else:
                    conn = self.connections.get(fd)
                    if conn is not None:
                        self._read(conn)
            now = time.monotonic()
            if now >= next_check:
                next_check = now + _CHECK_INTERVAL
                if not self.listener_intact():
                    return self._lose("the kernel's listening socket was closed")
                if not self.epoll_identity.intact():
                    return self._lose("the kernel's epoll descriptor was closed")

    def _lose(self, reason):
        self.lost = reason
        self.on_lost(reason)

    def _accept(self):
        while True:
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                if not self.listener_intact():
                    return
                log("codeact-kernel: accept failed: %s" % e)
                return
            sock.setblocking(True)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                            struct.pack("ll", _SEND_STALL_S, 0))
            sock = move_socket_high(sock)
            conn = Connection(sock, authed=not self.auth.required)
            try:
                self.epoll.register(conn.fd, select.EPOLLIN)
            except OSError:
                conn.close()
                continue
            self.connections[conn.fd] = conn

    def _read(self, conn):
        try:
            if conn.body is not None:
                buf, view, got = conn.body
                n = conn.sock.recv_into(view[got:], len(buf) - got, socket.MSG_DONTWAIT)
                data = None
            else:
                data = conn.sock.recv(_RECV_BYTES, socket.MSG_DONTWAIT)
                n = len(data)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            n = 0
        if n == 0:
            return self._drop(conn)
        if data is None:
            got += n
            if got < len(buf):
                conn.body = (buf, view, got)
                return
            conn.body = None
            view.release()
            if not self._frame(conn, buf):
                return
        else:
            conn.buf += data
        self._frames(conn)

    def _frames(self, conn):
        """Handles every complete frame in conn.buf; starts a big-frame read for a long one."""
        buf = conn.buf
        pos = 0
        while conn.alive and len(buf) - pos >= 4:
            (length,) = _LEN.unpack_from(buf, pos)
            if length > MAX_FRAME_BYTES:
                conn.send(error_reply(None, "InvalidArgument",
                                      "frame of %d bytes exceeds the limit of %d"
                                      % (length, MAX_FRAME_BYTES)))
                return self._drop(conn)
            if len(buf) - pos - 4 < length:
                if length > _RECV_BYTES:  # receive the rest straight into its own buffer
                    body = bytearray(length)
                    have = len(buf) - pos - 4
                    body[:have] = buf[pos + 4:]
                    conn.body = (body, memoryview(body), have)
                    pos = len(buf)
                break
            body = bytes(buf[pos + 4:pos + 4 + length])
            pos += 4 + length
            if not self._frame(conn, body):
                return
        if conn.alive:
            del buf[:pos]

    def _frame(self, conn, body):
        """Handles one frame. False when the connection was closed because of it."""
        try:
            msg = json.loads(body)
        except ValueError as e:
            msg = None
            problem = "frame is not JSON: %s" % e
        else:
            problem = None if isinstance(msg, dict) else "frame is not a JSON object"
        if msg is not None and msg.get("op") == "auth" and problem is None:
            accepted, reply = self.auth.answer(msg)
            conn.send(reply)
            if not accepted:
                self._drop(conn)  # nothing else sent on it is read, let alone run
                return False
            conn.authed = True
            return True
        if not conn.authed:
            conn.send(self.auth.refusal(msg))
            self._drop(conn)
            return False
        if problem is not None:
            conn.send(error_reply(None, "InvalidArgument", problem))
        elif msg.get("type") == "bridge_result":
            self.on_bridge_result(conn, msg)
        else:
            self.on_request(conn, msg)
        return True

    def _drop(self, conn):
        if self.connections.pop(conn.fd, None) is None:
            return
        try:
            self.epoll.unregister(conn.fd)
        except (OSError, ValueError):
            pass
        conn.buf = bytearray()
        conn.body = None
        self.on_close(conn)
        conn.close()

    def close(self, path):
        """Stops listening (the path is removed); the connections stay until the process ends."""
        try:
            self.listener.close()
        except OSError:
            pass
        unlink_quiet(path)
