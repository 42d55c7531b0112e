"""Processes: fork bombs, a kernel that exits or kills itself, processes left behind, a cell
stuck in C with SIGINT ignored."""
import ast

FORK_BOMB = "import os\nwhile True:\n    os.fork()"


def test_python_fork_bomb_ends_with_the_process_limit_and_frees_every_slot(attacker, victim):
    kept = attacker.commit("kept_fork")
    for _ in range(2):  # a second bomb gets the whole limit again
        o = attacker.exec(FORK_BOMB, timeout=20)
        assert o.reply and o.reply["ok"] is False, o.describe()
        assert o.error["type"] == "BlockingIOError", o.describe()
        assert "used up the sandbox's process limit (256)" in o.reply["notice"], o.describe()
        # (none killed when every clone had ended at its own refused fork)
        assert "forked processes were killed" in o.reply["notice"] or \
            "none of its forked processes was left running" in o.reply["notice"], o.describe()
        assert o.took < 20, o.describe()
    # Nothing of the bombs is left, not even a zombie holding one of the 256 slots.
    assert attacker.wait_for_no_leftovers() == []
    assert attacker.bash("echo fine").reply["stdout"] == "fine\n"
    attacker.assert_usable("kept_fork", kept)
    victim.assert_untouched()


def test_python_fork_bomb_that_ignores_refused_forks_is_stopped_by_the_timeout(attacker, victim):
    kept = attacker.commit("kept_stubborn")
    o = attacker.exec("import os\nwhile True:\n    try:\n        os.fork()\n"
                      "    except OSError:\n        pass", timeout=3)
    assert o.reply and o.reply["ok"] is False, o.describe()
    # Which limit gives first depends on the machine: the processes or their memory.
    said = o.reply["notice"] or ""
    assert ("used up the sandbox's process limit" in said and o.reply["timed_out"]) or \
        ("ran out of memory" in said and o.error["type"] == "MemoryError"), o.describe()
    assert o.took < 3 + 5 + 15, o.describe()
    assert attacker.wait_for_no_leftovers() == []
    attacker.assert_usable("kept_stubborn", kept)
    victim.assert_untouched()


def test_bash_fork_bomb_is_killed_with_its_script(attacker, victim):
    kept = attacker.commit("kept_bash_bomb")
    o = attacker.bash("bomb() { bomb | bomb & }; bomb; sleep 100", timeout=3)
    assert o.reply["timed_out"] is True and o.reply["exit_code"] == 137, o.describe()
    assert o.took < 15, o.describe()
    assert attacker.wait_for_no_leftovers() == []
    assert attacker.bash("echo fine").reply["stdout"] == "fine\n"
    attacker.assert_usable("kept_bash_bomb", kept)
    victim.assert_untouched()


def test_processes_a_script_leaves_behind_end_with_it(attacker):
    kept = attacker.commit("kept_bg_bash")
    o = attacker.bash("setsid sleep 1000 & nohup sleep 1001 >/dev/null 2>&1 & (sleep 1002 &)\n"
                      "echo started")
    assert o.reply["exit_code"] == 0 and o.reply["stdout"] == "started\n", o.describe()
    assert attacker.wait_for_no_leftovers() == []
    attacker.assert_usable("kept_bg_bash", kept)


def test_processes_a_python_cell_leaves_running_are_named_in_its_reply(attacker):
    """A model may start a server on purpose: what a cell leaves running keeps running, and the
    reply says which processes those are, so the model is never unaware of them."""
    kept = attacker.commit("kept_bg_python")
    o = attacker.exec("import os, signal, subprocess\n"
                      "server = subprocess.Popen(['sleep', '1003'], start_new_session=True)\n"
                      # a daemon: its parent exits, it is the sandbox init's now
                      "daemon = int(subprocess.run(['bash', '-c', 'sleep 1004 >/dev/null 2>&1 "
                      "& echo $!'], capture_output=True).stdout)\n"
                      "server.pid, daemon")
    try:
        assert o.reply and o.reply["ok"], o.describe()
        server, daemon = ast.literal_eval(o.reply["result"])
        # The daemon's command line is the one it had when the cell ended: maybe still its
        # shell's, if it had not exec'd sleep yet.
        notice = o.reply["notice"]
        assert notice.startswith(f"the cell left 2 processes running: pid {server} (sleep 1003), "
                                 f"pid {daemon} ("), o.describe()
        assert notice.endswith("; they keep running until they end or are killed "
                               "(os.kill(pid, signal.SIGKILL))"), o.describe()
        assert {(server, "sleep 1003"), (daemon, "sleep 1004")} <= \
            {(pid, cmd) for pid, _, cmd in attacker.leftovers()}
        # Named once: a later cell did not start them.
        assert attacker.exec("1 + 1").reply["notice"] is None
    finally:
        attacker.exec("server.kill(); server.wait()\nos.kill(daemon, signal.SIGKILL)")
    assert attacker.wait_for_no_leftovers() == []
    attacker.assert_usable("kept_bg_python", kept)


def test_os_exit_is_reported_with_its_status_and_the_kernel_restored(attacker, victim):
    kept = attacker.commit("kept_exit")
    o = attacker.exec("import os\nlost = 1\nos._exit(3)")
    assert o.reply and o.error["type"] == "KernelDied", o.describe()
    assert "the kernel exited with status 3" in o.message
    assert "it was restarted from the snapshot of cell" in o.message
    assert o.reply["kernel_restarted"] is True
    attacker.assert_usable("kept_exit", kept)
    assert attacker.value("'lost' in dir()") == "False"  # the dying cell's changes are gone
    victim.assert_untouched()


def test_a_kernel_that_sigkills_itself_is_reported_and_restored(attacker, victim):
    kept = attacker.commit("kept_sigkill")
    o = attacker.exec("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    assert o.reply and o.error["type"] == "KernelDied", o.describe()
    assert "the kernel was killed (SIGKILL)" in o.message
    assert "it was restarted from the snapshot of cell" in o.message
    attacker.assert_usable("kept_sigkill", kept)
    victim.assert_untouched()


def test_a_c_level_sleep_ignoring_sigint_is_killed_at_the_timeout(attacker, victim):
    kept = attacker.commit("kept_csleep")
    o = attacker.exec("import ctypes, signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                      "ctypes.CDLL(None).sleep(1000)", timeout=2)
    assert o.reply and o.error["type"] == "TimeoutError", o.describe()
    assert "did not stop within its timeout of 2s and the kernel was killed" in o.message
    assert "it was restarted from the snapshot of cell" in o.message
    assert o.reply["timed_out"] is True and o.reply["kernel_restarted"] is True
    assert o.took < 2 + 5 + 10, o.describe()  # the timeout, the kill grace, the restart
    attacker.assert_usable("kept_csleep", kept)
    victim.assert_untouched()
