"""A Docker engine of a test's own, a "host" (the chaos suite kills it; many-host tests start
several): its own `dockerd` with its own data root, exec root, socket, pidfile and config file,
in a network namespace of its own. An engine started in the machine's own namespace deletes the
main engine's docker0 bridge when it stops, after which every networked container and image build
of the main engine fails; in its own namespace it cannot. Only the standard library; needs root.

    engine = PrivateEngine(workdir, "chaos")   # namespace codeact-chaos-<pid>
    host = engine.start()                      # "unix://<workdir>/engine/docker.sock"
    engine.copy_image("codeact-sandbox:...")   # from the main engine (docker save | load)
    engine.kill()                              # SIGKILL, as a crash; containers it ran stop
    engine.start()                             # again, on the same data root
    engine.stop()                              # SIGTERM, then the namespace and files go
"""
import errno
import json
import os
import shutil
import signal
import subprocess
import time


def main_env():
    """The environment for a program that must use the machine's own engine, whatever
    DOCKER_HOST says."""
    return {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}


def main_docker(*args, run=subprocess.run, **kw):
    """The docker CLI against the machine's own engine."""
    return run(["docker", *args], env=main_env(), **kw)


class PrivateEngine:
    def __init__(self, workdir, name):
        self.dir = os.path.join(str(workdir), "engine")
        self.netns = f"codeact-{name}-{os.getpid()}"
        self.socket = os.path.join(self.dir, "docker.sock")
        self.host = "unix://" + self.socket
        self.log_path = os.path.join(self.dir, "dockerd.log")
        self.proc = None
        self.starts = 0

    def _config(self):
        """The engine's own config file: the system one (/etc/docker/daemon.json) sets the data
        root, so the engine must not read it. The storage driver is the main engine's (a nested
        machine may need fuse-overlayfs); the containerd namespace is the engine's own."""
        cfg = {"data-root": os.path.join(self.dir, "data"),
               "exec-root": os.path.join(self.dir, "exec"),
               "pidfile": os.path.join(self.dir, "dockerd.pid"),
               "hosts": [self.host],
               "bridge": "none", "iptables": False, "ip6tables": False, "ip-masq": False,
               "containerd-namespace": self.netns, "containerd-plugins-namespace":
               self.netns + "-plugins",
               "log-driver": "json-file", "log-opts": {"max-size": "10m", "max-file": "2"}}
        driver = main_docker("info", "-f", "{{.Driver}}", capture_output=True,
                             text=True).stdout.strip()
        if driver:
            cfg["storage-driver"] = driver
        path = os.path.join(self.dir, "daemon.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    def start(self, timeout=90, tries=3):
        """Starts dockerd (again: same data root, so its containers, volumes and images are
        still there) and waits until it answers. Returns DOCKER_HOST for it. A dockerd that
        gives up on its containerd (which it waits for only so long: a loaded machine) is
        started again, up to `tries` times."""
        os.makedirs(self.dir, exist_ok=True)
        if not os.path.exists(f"/var/run/netns/{self.netns}"):
            subprocess.run(["ip", "netns", "add", self.netns], check=True)
        config = os.path.join(self.dir, "daemon.json")
        if not os.path.exists(config):
            config = self._config()
        self._unmount(only_dead=True)
        deadline = time.monotonic() + timeout
        for attempt in range(1, tries + 1):
            self.starts += 1
            log = open(self.log_path, "ab")
            self.proc = subprocess.Popen(
                ["nsenter", f"--net=/var/run/netns/{self.netns}", "dockerd", "--config-file",
                 config], stdout=log, stderr=log, start_new_session=True)
            while self.proc.poll() is None and time.monotonic() < deadline:
                if self.docker("version", "-f", "{{.Server.Version}}").returncode == 0:
                    return self.host
                time.sleep(0.2)
            if self.proc.poll() is None or attempt == tries:
                break
            self._kill_leftovers()
        raise RuntimeError(f"the private Docker engine did not start:\n{self.log_tail()}")

    def docker(self, *args, **kw):
        """The docker CLI against this engine."""
        return subprocess.run(["docker", "-H", self.host, *args], capture_output=True, text=True,
                              **kw)

    def copy_image(self, image):
        """Loads `image` from the main engine (docker save | docker load), unless it has it."""
        if self.docker("image", "inspect", image).returncode == 0:
            return
        save = main_docker("save", image, run=subprocess.Popen, stdout=subprocess.PIPE)
        load = subprocess.run(["docker", "-H", self.host, "load", "-q"], stdin=save.stdout,
                              capture_output=True, text=True)
        save.stdout.close()
        if save.wait() != 0 or load.returncode != 0:
            raise RuntimeError(f"could not copy {image} to the private engine: {load.stderr}")

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        """SIGKILL to dockerd, as a crash. Returns whether it was running."""
        if not self.running():
            return False
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        return True

    def stop(self):
        """Stops the engine (SIGTERM: it stops its containers), its leftover processes, and
        removes its namespace and files."""
        if self.running():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        self._kill_leftovers()
        subprocess.run(["ip", "netns", "delete", self.netns], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)

    def _kill_leftovers(self):
        """What a dead dockerd may leave: its containerd, the shims of its containers and the
        fuse-overlayfs processes serving their file systems, then those file systems' mounts."""
        subprocess.run(["pkill", "-KILL", "-f", self.dir + "/"], capture_output=True)
        self._unmount(only_dead=False)

    def _unmount(self, only_dead):
        """Unmounts (lazily) the mounts under the engine's directory; with `only_dead`, those
        whose fuse-overlayfs process is gone ("transport endpoint is not connected"): the
        engine cannot start a container whose root file system is one, as on a host it would
        not be there after a reboot. Notes each dead one in the engine's log."""
        for line in reversed(open("/proc/mounts").read().splitlines()):
            mount_point = line.split()[1]
            if not mount_point.startswith(self.dir + "/"):
                continue
            try:
                os.stat(mount_point)
                dead = False
            except OSError as e:
                dead = e.errno == errno.ENOTCONN
            if dead or not only_dead:
                subprocess.run(["umount", "-l", mount_point], capture_output=True)
            if dead:
                with open(self.log_path, "a") as log:
                    log.write(f"[private_engine] unmounted dead {mount_point}\n")

    def log_tail(self, n=3000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except OSError:
            return ""
