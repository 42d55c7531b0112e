"""execution.get: whether an execute committed, asked of a kernel restarted after a crash (the
host asks before it reports the cell as lost, so a committed cell is never run twice)."""
import pytest

CELL = "counter = globals().get('counter', 0) + 1\nprint('ran')\ncounter"


def test_a_cell_that_committed_before_the_crash_is_found_with_its_reply(kernel):
    kernel.restart(CODEACT_TEST_CRASH_AFTER_COMMIT="1")
    c = kernel.client()
    with pytest.raises(EOFError):  # died after the manifest named the execution, before replying
        c.run(CELL, execution_id="committed-1")
    kernel.proc.wait(5)
    kernel.restart()
    got = kernel.client().ok("execution.get", execution_id="committed-1")
    assert got["found"] is True
    assert got["reply"]["result"] == "1" and got["reply"]["stdout"] == "ran\n"
    assert got["reply"]["execution_id"] == "committed-1" and got["reply"]["status"] == "ok"


def test_a_cell_cut_short_before_its_commit_is_not_found(kernel):
    kernel.restart(CODEACT_TEST_CRASH_BEFORE_COMMIT="1")
    c = kernel.client()
    with pytest.raises(EOFError):
        c.run(CELL, execution_id="lost-1")
    kernel.proc.wait(5)
    kernel.restart()
    c = kernel.client()
    got = c.ok("execution.get", execution_id="lost-1")
    assert got["found"] is False and got["reply"] is None
    # Run again, it runs (from the state before it) and is then found.
    assert c.run(CELL, execution_id="lost-1")["result"] == "1"
    assert c.ok("execution.get", execution_id="lost-1")["found"] is True


def test_an_unknown_or_missing_execution_id(client):
    assert client.ok("execution.get", execution_id="never-ran")["found"] is False
    reply = client.request("execution.get")
    assert reply["ok"] is False and reply["error"]["type"] == "InvalidArgument"
    assert "execution.get needs an execution_id" in reply["error"]["message"]
