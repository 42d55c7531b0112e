"""Attempts on the host and on another sandbox: /proc/1/root, the Docker socket, another
sandbox's files and socket, the network when the sandbox has none."""
import ast

# Runs `attempt()` in the sandbox: ("ok", what it got) or (exception type, message), and the time.
TRY = """import time
def _try(attempt):
    t0 = time.monotonic()
    try:
        got = ("ok", repr(attempt())[:300])
    except Exception as e:
        got = (type(e).__name__, str(e))
    return got + (round(time.monotonic() - t0, 2),)
"""


def attempt(sandbox, expression):
    """(outcome, detail, seconds) of evaluating expression in the sandbox."""
    return ast.literal_eval(sandbox.value(TRY + f"_try(lambda: {expression})"))


def test_the_hosts_root_through_proc_1_is_denied(attacker, victim):
    kept = attacker.commit("kept_proc1")
    for expression in ("open('/proc/1/root/etc/hostname').read()",
                       "__import__('os').listdir('/proc/1/root')",
                       "__import__('os').listdir('/proc/1/cwd')",
                       "open('/proc/1/environ').read()"):
        outcome, detail, _ = attempt(attacker, expression)
        assert outcome == "PermissionError", (expression, outcome, detail)
    attacker.assert_usable("kept_proc1", kept)
    victim.assert_untouched()


def test_the_docker_socket_is_not_there(attacker):
    for path in ("/var/run/docker.sock", "/run/docker.sock"):
        outcome, detail, _ = attempt(
            attacker, f"__import__('socket').socket(1).connect({path!r})")  # 1: AF_UNIX
        assert outcome == "FileNotFoundError", (path, outcome, detail)
    # No unix socket on the whole file system but the sandbox's own kernel socket.
    found = attacker.bash("find / -xdev -type s 2>/dev/null; find /run /tmp /persistent-storage "
                          "/output -type s 2>/dev/null").reply["stdout"].split()
    assert set(found) == {"/run/codeact/kernel.sock"}, found


def test_another_sandboxs_files_and_socket_are_out_of_reach(attacker, victim):
    kept = attacker.commit("kept_neighbour")
    outcome, detail, _ = attempt(attacker,
                                 f"__import__('os').listdir('/persistent-storage/{victim.id}')")
    assert outcome == "FileNotFoundError", (outcome, detail)
    # The volume holds only the attacker's own workspace (and ext4's lost+found).
    listing = ast.literal_eval(attacker.value("sorted(__import__('os').listdir("
                                              "'/persistent-storage'))"))
    assert victim.id not in listing and attacker.id in listing, listing
    # Nothing the sandbox can read names the victim: mounts, unix sockets, cgroups, /run.
    o = attacker.bash(f"grep -rls {victim.id} /proc/self/mounts /proc/self/mountinfo "
                      f"/proc/net/unix /proc/self/cgroup /run /output /persistent-storage /tmp "
                      f"2>/dev/null; ls -A /run/codeact")
    assert o.reply["stdout"] == "kernel.sock\n", o.describe()
    # The kernel socket there is the attacker's own: a cell on it runs in the attacker.
    o = attacker.exec("import socket\ns = socket.socket(socket.AF_UNIX)\n"
                      "s.connect('/run/codeact/kernel.sock')\ns.close()\nkept_neighbour")
    assert o.reply and o.reply["result"] == repr(kept), o.describe()
    victim.assert_untouched()


def test_no_network_fails_fast_with_a_clear_error(attacker, victim):
    outcome, detail, took = attempt(
        attacker, "__import__('socket').create_connection(('1.1.1.1', 53), timeout=10)")
    assert outcome == "OSError" and "Network is unreachable" in detail, (outcome, detail)
    assert took < 2
    outcome, detail, took = attempt(attacker, "__import__('socket').getaddrinfo('pypi.org', 443)")
    assert outcome == "gaierror", (outcome, detail)
    assert took < 5
    # The victim's address is not reachable either: the sandbox has only a loopback interface.
    assert attacker.value("__import__('socket').if_nameindex()") == "[(1, 'lo')]"
    victim.assert_untouched()
