"""The kernel's channel to the host: a cell runs inside the kernel process, so it can close the
kernel's descriptors or write bytes of its own on the host's connection."""

# Writes `data` on every socket the kernel process holds (the host's connection among them).
FORGE = """import os, stat
for fd in range(3, 65536):
    try:
        if stat.S_ISSOCK(os.fstat(fd).st_mode):
            os.write(fd, {data!r})
    except OSError:
        pass
"""


def test_a_cell_closing_every_descriptor_is_reported_and_the_kernel_restored(attacker, victim):
    kept = attacker.commit("kept_closerange")
    o = attacker.exec("import os\nos.closerange(0, 65536)")
    assert o.reply and o.error["type"] == "KernelDied", o.describe()
    assert "the kernel lost its connection socket (a cell closed the kernel's file " \
           "descriptors)" in o.message
    assert "it was restarted from the snapshot of cell" in o.message
    attacker.assert_usable("kept_closerange", kept)
    victim.assert_untouched()


def test_garbage_on_the_hosts_connection_is_refused_and_the_sandbox_keeps_working(attacker,
                                                                                    victim):
    kept = attacker.commit("kept_garbage")
    o = attacker.exec(FORGE.format(data=b"\x00\x00\x00\x10garbage garbage!"))
    assert o.proc.returncode != 0 and o.reply is None, o.describe()
    assert f'sandbox "{attacker.id}"' in o.message and "not valid JSON" in o.message
    attacker.assert_usable("kept_garbage", kept)
    victim.assert_untouched()


def test_a_forged_giant_frame_length_is_refused_unread(attacker, victim):
    kept = attacker.commit("kept_giant")
    o = attacker.exec(FORGE.format(data=b"\xff\xff\xff\xff"))
    assert o.proc.returncode != 0, o.describe()
    assert "the kernel sent a frame of 4294967295 bytes (limit" in o.message
    assert o.took < 10, o.describe()
    attacker.assert_usable("kept_giant", kept)
    victim.assert_untouched()


def test_a_frame_cut_short_cannot_hold_the_caller_past_the_timeout(attacker, victim):
    kept = attacker.commit("kept_partial")
    o = attacker.exec(FORGE.format(data=b"\x00\x00\x10\x00partial") + "import time\n"
                      "time.sleep(1)", timeout=2)
    assert o.reply and o.error["type"] == "TimeoutError", o.describe()
    assert o.reply["kernel_restarted"] is True
    assert "it was restarted from the snapshot of cell" in o.message
    assert o.took < 2 + 5 + 10, o.describe()
    attacker.assert_usable("kept_partial", kept)
    victim.assert_untouched()
