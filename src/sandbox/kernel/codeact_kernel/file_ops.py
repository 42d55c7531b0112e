"""The sandbox's workspace ($CODEACT_STORAGE/<id>: state/, output/, python/) and the file ops
on it: files.list, files.read, files.write. Every path is confined to the workspace (symlinks
resolved first); paths are reported as the sandbox sees them (/output/...)."""

import os

from .atomic_files import write_atomic
from .protocol import OpError

READ_FILE_LIMIT = 64 << 20  # base64 in one frame, inside a container of a few hundred MB


class Workspace:
    """Paths of one sandbox's workspace; the file ops are safe on any thread."""

    def __init__(self, workspace, fsync):
        os.makedirs(workspace, exist_ok=True)
        self.root = os.path.realpath(workspace)
        self.state_dir = os.path.join(self.root, "state")
        self.output_dir = os.path.join(self.root, "output")
        self.python_dir = os.path.join(self.root, "python")
        self.fsync = fsync

    def create(self):
        for d in (self.state_dir, self.output_dir, self.python_dir):
            os.makedirs(d, exist_ok=True)

    def display(self, real):
        out = self.output_dir
        if real == out:
            return "/output"
        if real.startswith(out + os.sep):
            return "/output/" + real[len(out) + 1:]
        return real

    def resolve(self, path, what="path"):
        if not isinstance(path, str) or not path:
            raise OpError("InvalidArgument", "%s must be a non-empty string" % what)
        if "\x00" in path:
            raise OpError("InvalidArgument", "%s contains a NUL byte" % what)
        if path == "/output" or path.startswith("/output/"):
            mapped = self.output_dir + path[len("/output"):]
        elif os.path.isabs(path):
            mapped = path
        else:
            mapped = os.path.join(self.output_dir, path)
        real = os.path.realpath(mapped)
        ws = self.root
        if real != ws and not real.startswith(ws + os.sep):
            raise OpError("PermissionDenied",
                          "%s %r resolves to %s, outside the sandbox workspace; allowed: /output "
                          "and %s" % (what, path, real, ws))
        return real

    def op_files_list(self, msg):
        path = msg.get("path")
        root = self.resolve(path) if path not in (None, "") else self.output_dir
        files = []
        if os.path.isfile(root):
            s = os.stat(root)
            files.append({"path": self.display(root), "size": s.st_size, "mtime": s.st_mtime})
        elif not os.path.isdir(root):
            raise OpError("NotFound", "%s does not exist" % self.display(root))
        else:
            for d, dirs, fnames in os.walk(root):
                for fn in fnames:
                    p = os.path.join(d, fn)
                    try:
                        s = os.lstat(p)
                    except OSError:
                        continue
                    if not os.path.isfile(p) or os.path.islink(p):
                        continue
                    files.append({"path": self.display(p), "size": s.st_size,
                                  "mtime": s.st_mtime})
        files.sort(key=lambda f: f["path"])
        return {"root": self.display(root), "files": files}

    def op_files_read(self, msg):
        import base64

        real = self.resolve(msg.get("path"))
        if os.path.isdir(real):
            raise OpError("InvalidArgument", "%s is a directory" % self.display(real))
        try:
            size = os.path.getsize(real)
            if size > READ_FILE_LIMIT:
                raise OpError("ResourceExhausted",
                              "%s is %d bytes; files.read returns at most %d bytes in one reply; "
                              "copy bigger files out of the sandbox's volume instead"
                              % (self.display(real), size, READ_FILE_LIMIT))
            with open(real, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise OpError("NotFound", "%s does not exist" % self.display(real))
        except PermissionError as e:
            raise OpError("PermissionDenied", "%s: %s" % (self.display(real), e.strerror))
        size = len(data)
        return {"path": self.display(real), "size": size,
                "data_b64": base64.b64encode(data)}  # bytes: spliced into the frame

    def op_files_write(self, msg):
        import base64
        import binascii

        real = self.resolve(msg.get("path"))
        b64 = msg.get("data_b64")
        if not isinstance(b64, str):
            raise OpError("InvalidArgument", "files.write needs a string field \"data_b64\"")
        try:
            data = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError) as e:
            raise OpError("InvalidArgument", "data_b64 is not valid base64: %s" % e)
        if os.path.isdir(real):
            raise OpError("InvalidArgument", "%s is a directory" % self.display(real))
        parent = os.path.dirname(real)
        if not os.path.isdir(parent):
            if msg.get("make_dirs", True) is False:
                raise OpError("NotFound", "directory %s does not exist (make_dirs is false)"
                              % self.display(parent))
            os.makedirs(parent, exist_ok=True)
        try:
            write_atomic(real, data, self.fsync)
        except PermissionError as e:
            raise OpError("PermissionDenied", "%s: %s" % (self.display(real), e.strerror))
        return {"path": self.display(real), "size": len(data)}
