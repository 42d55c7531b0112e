"""After a crash, hello says what the restore could not bring back ("lost"): every name the
snapshot recorded as not persisted (a socket, a generator), with the reason, and every value
that failed to load."""

import os


def test_hello_lists_unpersisted_names_and_restore_failures_as_lost(kernel, client):
    mod = os.path.join(kernel.workspace, "python", "fleeting_mod.py")
    with open(mod, "w") as f:
        f.write("class Gadget:\n    pass\n")
    r = client.run("import socket\nfrom fleeting_mod import Gadget\n"
                   "conn = socket.socket()\ngen = (i for i in range(3))\n"
                   "gadget = Gadget()\nkept = [1, 2]")
    assert {d["name"] for d in r["not_persisted"]} == {"conn", "gen"}
    kernel.kill9()
    os.unlink(mod)
    kernel.start()
    c = kernel.client()
    h = c.ok("hello")
    lost = {d["name"]: d["reason"] for d in h["lost"]}
    assert set(lost) == {"conn", "gen", "Gadget", "gadget"}
    assert lost["conn"].startswith("was not persisted") and "socket" in lost["conn"]
    assert lost["gen"].startswith("was not persisted") and "generator" in lost["gen"]
    assert "ModuleNotFoundError" in lost["gadget"] and "fleeting_mod" in lost["gadget"]
    assert "kept" in h["restored"] and "kept" not in lost
    assert c.run("kept")["result"] == "[1, 2]"
    # Once a cell saved the state again, the names lost before are no longer in the snapshot;
    # with the module back, the values that failed to load come back: nothing is lost.
    c.run("kept.append(3)")
    kernel.kill9()
    with open(mod, "w") as f:
        f.write("class Gadget:\n    pass\n")
    kernel.start()
    c = kernel.client()
    assert c.ok("hello")["lost"] == []
    assert c.run("(type(gadget) is Gadget, kept)")["result"] == "(True, [1, 2, 3])"
