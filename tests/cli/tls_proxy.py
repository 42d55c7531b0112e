"""Debian's nginx in front of a server, and the certificates it needs, for the proxy tests
(tests/cli/test_temporal_tls.py: a TLS-terminating gRPC proxy before a Temporal dev server;
tests/server/test_reverse_proxy.py: `codeact server` behind docs/examples/nginx-codeact.conf).
Only the standard library, `openssl` and `nginx` (scripts/deps/server.apt).

    certs = Certs(tmp_path)                  # a CA, a server cert for 127.0.0.1/localhost, a
                                             # client cert, and a second CA nobody trusts
    port = free_port()
    proxy = Nginx(tmp_path / "nginx", server_block, port).start()   # server_block: nginx's
    ...                                                             # `server { ... }` text
    proxy.stop()

nginx runs in the foreground (`daemon off`) with its own config, pid file, logs and temp paths
under its directory, listening on a free port of 127.0.0.1."""
import os
import shutil
import socket
import subprocess
import time

NGINX = os.environ.get("CODEACT_NGINX", "/usr/sbin/nginx")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


class Certs:
    """PEM files in `directory`: ca.crt (the CA), server.crt/server.key (signed by it, for
    127.0.0.1 and localhost), client.crt/client.key (signed by it, for mTLS), other-ca.crt (a CA
    that signed nothing here: a client trusting only it rejects the server)."""

    def __init__(self, directory):
        self.dir = str(directory)
        os.makedirs(self.dir, exist_ok=True)
        self._ca("ca", "codeact test CA")
        self._ca("other-ca", "codeact untrusted CA")
        self._leaf("server", "127.0.0.1", "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                          "extendedKeyUsage=serverAuth\n")
        self._leaf("client", "codeact test client", "extendedKeyUsage=clientAuth\n")
        self.ca = self.path("ca.crt")
        self.other_ca = self.path("other-ca.crt")
        self.server_cert, self.server_key = self.path("server.crt"), self.path("server.key")
        self.client_cert, self.client_key = self.path("client.crt"), self.path("client.key")

    def path(self, name):
        return os.path.join(self.dir, name)

    def _ca(self, name, subject):
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={subject}",
                 "-keyout", f"{name}.key", "-out", f"{name}.crt", cwd=self.dir)

    def _leaf(self, name, subject, extensions):
        with open(self.path(f"{name}.ext"), "w") as f:
            f.write(extensions)
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={subject}", "-keyout", f"{name}.key",
                 "-out", f"{name}.csr", cwd=self.dir)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.crt", cwd=self.dir)


class Nginx:
    """nginx with `server_block` (`server { listen 127.0.0.1:PORT ...; }` text) inside an http
    block whose logs and temp paths are in `directory`."""

    def __init__(self, directory, server_block, port):
        self.dir = str(directory)
        os.makedirs(self.dir, exist_ok=True)
        self.port = port
        self.address = f"127.0.0.1:{self.port}"
        self.proc = None
        temp = "\n".join(f"  {kind}_temp_path {self.dir}/{kind}_temp;"
                         for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        self.conf = os.path.join(self.dir, "nginx.conf")
        with open(self.conf, "w") as f:
            f.write(f"""worker_processes 1;
{"user root;" if os.getuid() == 0 else ""}
pid {self.dir}/nginx.pid;
error_log {self.dir}/error.log info;
events {{ worker_connections 256; }}
http {{
  access_log {self.dir}/access.log;
{temp}
{server_block}
}}
""")

    def start(self, timeout=15):
        if not shutil.which(NGINX):
            raise RuntimeError(f"{NGINX} is missing (Debian package nginx, scripts/deps/server.apt)")
        self.proc = subprocess.Popen([NGINX, "-p", self.dir, "-e", os.path.join(self.dir, "error.log"),
                                      "-c", self.conf, "-g", "daemon off;"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited ({self.proc.returncode}): {self.proc.stderr.read()}"
                                   f"{self.error_log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"nginx does not listen on {self.address} after {timeout}s: {self.error_log()}")

    def error_log(self):
        try:
            with open(os.path.join(self.dir, "error.log")) as f:
                return f.read()
        except OSError:
            return ""

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: nginx's fast shutdown
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
