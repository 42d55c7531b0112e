"""What the kernel tells the host so that its messages are true (issue #17 §4): which cell was
running when a request had to wait, and what a restore could not bring back."""

import time


def test_an_execute_behind_a_running_one_is_told_so_then_told_when_it_starts(kernel):
    first = kernel.client()
    first.send({"id": 1, "op": "execute", "code": "import time\ntime.sleep(0.6)",
                "execution_id": "slow-one"})
    time.sleep(0.2)
    second = kernel.client()
    r = second.run("'mine'")
    queued, started = second.events
    assert queued["type"] == "queued" and queued["id"] == r["id"]
    assert queued["running"]["cell"] == 1 and queued["running"]["execution_id"] == "slow-one"
    assert 100 <= queued["running"]["running_ms"] <= 1000, queued
    assert started == {"id": r["id"], "type": "started", "cell": 2}
    assert r["cell"] == 2 and r["result"] == "'mine'"
    assert first.recv()["cell"] == 1


def test_a_cell_that_runs_at_once_gets_no_events(client):
    client.run("1")
    assert client.events == []
    r = client.run("2", stream=True)
    assert client.events == [] and r["result"] == "2"


def test_ops_other_than_execute_are_not_announced(kernel):
    first = kernel.client()
    first.send({"id": 1, "op": "execute", "code": "import time\ntime.sleep(0.4)"})
    time.sleep(0.1)
    second = kernel.client()
    second.ok("vars")
    assert second.events == []
    first.recv()


def test_hello_after_a_restart_lists_what_was_lost(kernel, client):
    r = client.run("gen = (i for i in range(3))\nimport threading\nlock = threading.Lock()\n"
                   "kept = [1, 2]")
    assert {d["name"] for d in r["not_persisted"]} == {"gen", "lock"}
    kernel.restart()
    h = kernel.client().ok("hello")
    lost = {d["name"]: d["reason"] for d in h["lost"]}
    assert set(lost) == {"gen", "lock"}
    assert lost["gen"].startswith("was not persisted: ") and "generator" in lost["gen"]
    assert "kept" in h["restored"] and "threading" in h["restored"]


def test_hello_lists_values_whose_restore_failed(kernel, client):
    client.run("class Fragile:\n    def __setstate__(self, state):\n"
               "        raise ValueError('cannot come back')\nf = Fragile()\nf.a = 1\nok = 1")
    kernel.restart()
    h = kernel.client().ok("hello")
    lost = {d["name"]: d["reason"] for d in h["lost"]}
    assert lost == {"f": "ValueError: cannot come back"}, lost
    assert "ok" in h["restored"]


