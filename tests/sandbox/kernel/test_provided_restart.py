"""What the host provided (bridge.register, define) is there again in a kernel restarted after a
crash, without the host sending it again: a cell the host sends right after a restart it did not
notice can still call its functions (provided.py)."""
import os
import uuid


def test_functions_the_host_provided_are_made_again_after_a_crash(kernel, client):
    client.ok("bridge.register", functions=[
        {"name": "record", "signature": "def record(text: str) -> Any", "doc": "Record it."}])
    client.ok("define", source="def double(v):\n    return 2 * v")
    client.run("kept = double(21)")
    kernel.restart()  # SIGKILL, as a crash
    c = kernel.client()
    assert c.ok("hello")["lost"] == []
    calls = []

    def host(name, args, kwargs):
        calls.append((name, kwargs))
        return "recorded"

    r = c.request("execute", on_bridge=host, code="(record(text='x'), double(kept))")
    assert r["ok"] and r["status"] == "ok", r
    assert r["result"] == "('recorded', 84)"
    assert calls == [("record", {"text": "x"})]
    # Still the host's, not the user's: not listed, not in the snapshot.
    assert {v["name"] for v in c.ok("vars")["variables"]} == {"kept"}


def test_the_last_definition_of_a_name_is_the_one_a_restart_keeps(kernel, client):
    for version in ("v1", "v2", "v1"):
        client.ok("define", source=f"def base():\n    return {version!r}")
    kernel.restart()
    assert kernel.client().run("base()")["result"] == "'v1'"


def test_a_definition_that_fails_at_start_up_is_reported_lost(kernel, client):
    flag = f"/tmp/codeact-provided-test-{uuid.uuid4().hex}"  # the kernel's user can see /tmp
    client.ok("define", source=f"import os\nif os.path.exists({flag!r}):\n"
                               "    raise ImportError('gone')\ndef f():\n    return 1")
    open(flag, "w").close()
    try:
        kernel.restart()
        lost = kernel.client().ok("hello")["lost"]
    finally:
        os.unlink(flag)
    assert lost == [{"name": "<define>", "reason": lost[0]["reason"]}]
    assert "made again at start-up, it failed" in lost[0]["reason"] and "gone" in lost[0]["reason"]
