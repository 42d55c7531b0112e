"""What the chaos suite kills, each the way a crash would (SIGKILL, `docker kill`), and what it
starts again. Each kill returns whether it hit something (a target that was not running is a
miss, not a kill)."""
import os
import signal
import subprocess


def kill_process(proc):
    """SIGKILL to a subprocess.Popen that still runs."""
    if proc is None or proc.poll() is not None:
        return False
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return True


def container_name(sandbox_id):
    return f"codeact-{sandbox_id}"


def _container_pid(sandbox_id):
    p = subprocess.run(["docker", "inspect", "-f", "{{.State.Running}} {{.State.Pid}}",
                        container_name(sandbox_id)], capture_output=True, text=True)
    running, _, pid = p.stdout.strip().partition(" ")
    return int(pid) if p.returncode == 0 and running == "true" and pid.isdigit() else None


def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def kill_kernel(sandbox_id):
    """SIGKILL to the sandbox's kernel process (found from the host: the container's init is its
    parent), leaving the container's init to report it."""
    init = _container_pid(sandbox_id)
    if init is None:
        return False
    for pid in [init] + _children(init):
        if "codeact_kernel" in _cmdline(pid) and pid != init:
            try:
                os.kill(pid, signal.SIGKILL)
                return True
            except OSError:
                return False
    return False


def kill_container(sandbox_id):
    if _container_pid(sandbox_id) is None:
        return False
    return subprocess.run(["docker", "kill", container_name(sandbox_id)],
                          capture_output=True).returncode == 0


def running_containers(prefix):
    p = subprocess.run(["docker", "ps", "-q", "--filter", f"name=^{container_name(prefix)}"],
                       capture_output=True, text=True)
    return p.stdout.split()


def volumes(prefix):
    p = subprocess.run(["docker", "volume", "ls", "-q", "--filter", f"name=^workflow-{prefix}"],
                       capture_output=True, text=True)
    return sorted(p.stdout.split())
