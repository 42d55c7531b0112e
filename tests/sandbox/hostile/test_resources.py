"""Resources: memory beyond --memory, disk beyond --disk, output without end."""
import pytest

MEMORY = "256m"
DISK = "32m"


@pytest.fixture(scope="module")
def attacker(sandboxes, victim):
    """Small limits, so that reaching them is quick."""
    return sandboxes(memory=MEMORY, disk=DISK)


@pytest.mark.parametrize("bomb", [
    "x = b'x' * (1 << 30)",
    "chunks = []\nwhile True:\n    chunks.append(b'y' * (16 << 20))",
    # /tmp is a tmpfs, charged to the sandbox's memory
    "with open('/tmp/fill', 'wb') as f:\n    while True:\n        f.write(b'z' * (16 << 20))",
], ids=["one-allocation", "growing-list", "tmpfs"])
def test_memory_beyond_the_limit_is_a_memory_error_and_the_kernel_is_restored(
        attacker, victim, bomb):
    kept = attacker.commit("kept_memory")
    o = attacker.exec(bomb, timeout=30)
    assert o.reply and o.error["type"] == "MemoryError", o.describe()
    assert "the sandbox ran out of memory (its limit was reached)" in o.message
    assert "it was restarted from the snapshot of cell" in o.message
    assert o.took < 30, o.describe()
    attacker.assert_usable("kept_memory", kept)
    # The memory is given back: nothing of the bomb is left, /tmp included.
    assert attacker.value("import os\nos.path.exists('/tmp/fill')") == "False"
    assert attacker.wait_for_no_leftovers() == []
    victim.assert_untouched()


def test_a_subprocess_killed_for_memory_is_reported(attacker, victim):
    """The out-of-memory killer ends the cell's subprocess, not the kernel: the cell sees only
    returncode -9, so the reply says what happened."""
    kept = attacker.commit("kept_sub_memory")
    o = attacker.exec("import subprocess\n"
                      "subprocess.run(['python3', '-c', 'x = b\"x\" * (1 << 30)']).returncode")
    assert o.reply and o.reply["ok"], o.describe()
    assert o.reply["result"] == "-9"  # what the cell sees
    assert o.reply["notice"] == (
        "the sandbox ran out of memory: its limit (256 MiB) was reached and the system killed 1 "
        "of its processes (a killed subprocess shows returncode -9, a shell exit status 137); "
        "the kernel and its variables are intact"), o.describe()
    attacker.assert_usable("kept_sub_memory", kept)
    victim.assert_untouched()


def test_a_full_disk_fails_the_write_and_keeps_the_committed_state(attacker, victim, cli):
    kept = attacker.commit("kept_disk")
    try:
        full_disk(attacker, cli, kept)
    finally:  # the module's next cases need the disk
        attacker.bash("rm -f /output/big /output/more")
    after = attacker.commit("after_disk")  # freed again, the disk takes new state
    cli("sandbox", "restart", attacker.id, check=0)
    assert attacker.value("after_disk") == repr(after)
    victim.assert_untouched()


def full_disk(attacker, cli, kept):
    o = attacker.exec("open('/output/big', 'wb').write(b'x' * (64 << 20))")
    assert o.reply and o.error["type"] == "OSError", o.describe()
    assert "No space left on device" in o.message and f"limited to {DISK}" in o.message
    assert "delete files under /output" in o.message
    # A value too big for the full disk runs, but is not saved, and the model is told.
    o = attacker.exec("big = b'q' * (16 << 20)")
    assert o.reply and o.reply["ok"], o.describe()
    assert "this cell's state was not saved" in o.reply["notice"], o.describe()
    assert "No space left on device" in o.reply["notice"]
    # bash sees the same limit.
    o = attacker.bash("dd if=/dev/zero of=/output/more bs=1M count=64")
    assert o.reply["exit_code"] != 0 and "No space left on device" in o.reply["stderr"]
    attacker.assert_usable("kept_disk", kept)
    # The last committed state is the one on disk: a restarted container brings it back.
    cli("sandbox", "restart", attacker.id, check=0)
    assert attacker.value("kept_disk, 'big' in dir()") == repr((kept, False))


FLOOD = "import sys\nwhile True:\n    sys.{stream}.write('flood ' * 20 + '\\n')"


def test_output_without_end_is_capped_and_the_reply_arrives(attacker, victim):
    kept = attacker.commit("kept_output")
    o = attacker.exec(FLOOD.format(stream="stdout"), timeout=3)
    assert o.reply and o.error["type"] == "TimeoutError", o.describe()
    assert o.took < 3 + 10, o.describe()
    assert 60_000 < len(o.reply["stdout"]) < 70_000  # max_output_bytes (64 KiB): head and tail
    assert o.reply["truncated"]["stdout"] > 1_000_000  # and how much was left out between
    attacker.assert_usable("kept_output", kept)
    victim.assert_untouched()


def test_output_without_end_is_cut_where_the_user_sees_it(attacker, cli):
    kept = attacker.commit("kept_stderr")
    p = cli("sandbox", "exec", attacker.id, "--timeout", "3", FLOOD.format(stream="stderr"))
    assert p.returncode == 1
    assert 60_000 < len(p.err) < 70_000, len(p.err)
    assert "[streaming stopped at max_output_bytes; the reply keeps head and tail]" in p.err
    assert "TimeoutError: cell exceeded its timeout of 3s" in p.err
    assert "[codeact] stderr was cut:" in p.err and "bytes omitted from the middle" in p.err
    attacker.assert_usable("kept_stderr", kept)


def test_a_script_without_end_of_output_is_capped_and_says_so(attacker):
    kept = attacker.commit("kept_yes")
    o = attacker.bash("yes flood", timeout=2)
    assert o.reply["timed_out"] is True, o.describe()
    assert 60_000 < len(o.reply["stdout"]) < 70_000
    assert "bytes omitted] ..." in o.reply["stdout"]
    attacker.assert_usable("kept_yes", kept)
