"""The wire protocol's mechanics (documented in the package docstring): frames, one Connection
per client socket, the listening socket, and the reply envelope every operation goes through."""

import json
import os
import socket
import struct
import threading
import time

from .atomic_files import unlink_quiet
from .log import log

PROTOCOL_VERSION = 1
MAX_FRAME_BYTES = 1 << 30
_LEN = struct.Struct(">I")


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


class Connection:
    """One client. serve() reads frames until EOF and hands each request to on_request(conn,
    msg) and each bridge result to on_bridge_result(conn, msg); on_close(conn) runs at the end.
    send() may be called from any thread."""

    def __init__(self, sock, on_request, on_bridge_result, on_close):
        self.sock = sock
        self.on_request = on_request
        self.on_bridge_result = on_bridge_result
        self.on_close = on_close
        self.send_lock = threading.Lock()
        self.alive = True

    def send_with_payload(self, obj, key, payload):
        """Sends obj plus obj[key] = payload (ASCII bytes, e.g. base64) without building the
        payload into a JSON string first: one copy of a big file instead of four."""
        head = encode(obj)
        head = head[:-1] + (b',' if len(head) > 2 else b'') + encode(key) + b':"'
        tail = b'"}'
        try:
            with self.send_lock:
                self.sock.sendall(_LEN.pack(len(head) + len(payload) + len(tail)) + head)
                self.sock.sendall(payload)
                self.sock.sendall(tail)
            return True
        except OSError:
            self.alive = False
            return False

    def send(self, obj):
        data = encode(obj)
        try:
            with self.send_lock:
                if len(data) < 65536:
                    self.sock.sendall(_LEN.pack(len(data)) + data)
                else:
                    self.sock.sendall(_LEN.pack(len(data)))
                    self.sock.sendall(data)
            return True
        except OSError:
            self.alive = False
            return False

    def _recv_exact(self, n):
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = self.sock.recv_into(view[got:], n - got)
            if k == 0:
                return None
            got += k
        return buf

    def serve(self):
        try:
            while True:
                head = self._recv_exact(4)
                if head is None:
                    break
                (length,) = _LEN.unpack(head)
                if length > MAX_FRAME_BYTES:
                    self.send(error_reply(None, "InvalidArgument",
                                          "frame of %d bytes exceeds the limit of %d"
                                          % (length, MAX_FRAME_BYTES)))
                    break
                body = self._recv_exact(length)
                if body is None:
                    break
                try:
                    msg = json.loads(body)
                except ValueError as e:
                    self.send(error_reply(None, "InvalidArgument", "frame is not JSON: %s" % e))
                    continue
                if not isinstance(msg, dict):
                    self.send(error_reply(None, "InvalidArgument", "frame is not a JSON object"))
                    continue
                if msg.get("type") == "bridge_result":
                    self.on_bridge_result(self, msg)
                    continue
                self.on_request(self, msg)
        except OSError:
            pass
        finally:
            self.alive = False
            self.on_close(self)
            try:
                self.sock.close()
            except OSError:
                pass


class Listener:
    """The listening unix socket (mode 0666, a stale one replaced) and its accept thread, which
    serves every connection on a thread of its own."""

    def __init__(self, path, on_request, on_bridge_result, on_close):
        self.path = path
        self.handlers = (on_request, on_bridge_result, on_close)
        self.sock = None

    def listen(self):
        d = os.path.dirname(self.path)
        if d:
            os.makedirs(d, exist_ok=True)
        unlink_quiet(self.path)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(self.path)
        os.chmod(self.path, 0o666)
        s.listen(64)
        self.sock = s
        threading.Thread(target=self._accept_loop, name="codeact-accept", daemon=True).start()

    def _accept_loop(self):
        while True:
            try:
                sock, _ = self.sock.accept()
            except OSError:
                if self.sock is None or self.sock.fileno() < 0:
                    return
                time.sleep(0.01)
                continue
            conn = Connection(sock, *self.handlers)
            threading.Thread(target=conn.serve, name="codeact-conn", daemon=True).start()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
        unlink_quiet(self.path)

