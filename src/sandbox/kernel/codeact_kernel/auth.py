"""Authentication of the kernel to the host, on every connection (protocol 2).

The container's environment carries CODEACT_KERNEL_TOKEN (64 hex digits, random per container).
The kernel takes it out of its environment at start (os.environ, posix.environ and the process's
original environment block, so neither cells, their subprocesses nor /proc/<kernel>/environ show
it) and answers an "auth" frame with HMAC-SHA256(token, "codeact-kernel-auth\\0" + sandbox id +
"\\0" + nonce): only the kernel of that sandbox can, so a host that reached the wrong socket
knows before it sends anything that matters. The kernel refuses (and closes) a connection that
names another sandbox, so a request pipelined behind the auth frame is never read."""

import os
import re

from .protocol import error_reply

TOKEN_ENV = "CODEACT_KERNEL_TOKEN"
MAC_CONTEXT = b"codeact-kernel-auth\0"
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


class BadToken(ValueError):
    pass


def take_token():
    """The token from the environment, removed from it; None when there is none. Raises
    BadToken when it is set but not 64 hex digits."""
    token = os.environ.pop(TOKEN_ENV, None)
    try:
        import posix

        posix.environ.pop(TOKEN_ENV.encode(), None)
    except (ImportError, AttributeError):
        pass
    if token is None:
        return None
    _scrub_environment_block(TOKEN_ENV)
    if not _HEX64.fullmatch(token):
        raise BadToken("%s must be 64 hex digits (got %d characters)" % (TOKEN_ENV, len(token)))
    return token.lower()


def _scrub_environment_block(name):
    """Overwrites name's value in the environment block the process started with (what
    /proc/self/environ shows; unsetenv only drops libc's pointer to it). Best effort."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        env_start, env_end = int(fields[47]), int(fields[48])  # fields 50 and 51 of stat
        with open("/proc/self/environ", "rb") as f:
            block = f.read()
        if len(block) > env_end - env_start:
            return
        import ctypes

        key = name.encode() + b"="
        pos = 0
        while pos < len(block):
            end = block.find(b"\0", pos)
            end = len(block) if end < 0 else end
            if block.startswith(key, pos):
                start = pos + len(key)
                ctypes.memset(env_start + start, 0, end - start)
            pos = end + 1
    except (OSError, ValueError, IndexError):
        pass


class Authenticator:
    """Answers "auth" frames for one sandbox. Thread-safe (immutable)."""

    def __init__(self, sandbox_id, token):
        self.sandbox_id = sandbox_id
        self.key = bytes.fromhex(token) if token else None

    @property
    def required(self):
        return self.key is not None

    def answer(self, msg):
        """(accepted, reply frame) for an auth request. Not accepted: close the connection."""
        rid = msg.get("id")
        asked = msg.get("sandbox_id")
        if asked != self.sandbox_id:
            return False, error_reply(
                rid, "PermissionDenied", "this is the kernel of sandbox \"%s\", not \"%s\""
                % (self.sandbox_id, asked if isinstance(asked, str) else repr(asked)))
        if self.key is None:
            return True, {"id": rid, "type": "reply", "ok": True, "mac": None}
        nonce = msg.get("nonce")
        if not isinstance(nonce, str) or not _HEX64.fullmatch(nonce):
            return False, error_reply(rid, "InvalidArgument",
                                      "auth needs a \"nonce\" of 64 hex digits")
        import hashlib
        import hmac

        mac = hmac.new(self.key, MAC_CONTEXT + self.sandbox_id.encode() + b"\0" + nonce.encode(),
                       hashlib.sha256).hexdigest()
        return True, {"id": rid, "type": "reply", "ok": True, "mac": mac}

    def refusal(self, msg):
        """The reply to a first frame that is not auth, when auth is required."""
        rid = msg.get("id") if isinstance(msg, dict) else None
        return error_reply(rid, "PermissionDenied",
                           "the first frame on a connection to this kernel must be "
                           "{\"op\": \"auth\", \"sandbox_id\", \"nonce\"}")
