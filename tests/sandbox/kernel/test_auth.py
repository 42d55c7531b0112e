"""Every connection authenticates the kernel (protocol 2, issue #17 §1): only the kernel of the
sandbox the host meant answers with the right MAC, a kernel of another sandbox refuses without
reading or running what was pipelined behind the auth frame, and the token stays out of reach of
cells and their processes."""

import os
import time

import pytest

from conftest import Client, expected_mac, new_token


@pytest.fixture
def token():
    return new_token()


@pytest.fixture
def guarded(kernel_factory, token):
    return kernel_factory(token=token)


def raw(kernel):
    c = Client(kernel.socket, timeout=10)
    kernel.clients.append(c)
    return c


def test_auth_answers_with_the_mac_of_the_nonce(guarded, token):
    c = raw(guarded)
    nonce = os.urandom(32).hex()
    r = c.request("auth", sandbox_id="sbx-test", nonce=nonce)
    assert r["ok"] is True
    assert r["mac"] == expected_mac(token, "sbx-test", nonce)
    assert c.run("1 + 1")["result"] == "2"
    # Another nonce, another MAC: the answer cannot be replayed.
    other = os.urandom(32).hex()
    assert c.request("auth", sandbox_id="sbx-test", nonce=other)["mac"] == \
        expected_mac(token, "sbx-test", other)


def test_another_sandboxs_kernel_refuses_and_never_runs_the_pipelined_request(guarded):
    c = raw(guarded)
    marker = os.path.join(guarded.output, "must-not-exist")
    # As the host does: the auth frame and the first request in one write.
    c.send_together(
        {"id": 1, "op": "auth", "sandbox_id": "sbx-other", "nonce": os.urandom(32).hex()},
        {"id": 2, "op": "execute", "code": "open(%r, 'w').close()" % marker})
    r = c.recv()
    assert r["id"] == 1 and r["ok"] is False
    assert r["error"] == {"type": "PermissionDenied",
                          "message": "this is the kernel of sandbox \"sbx-test\", not "
                                     "\"sbx-other\""}
    with pytest.raises(EOFError):
        c.recv()  # closed, nothing else answered
    time.sleep(0.3)
    ok = guarded.client()
    assert ok.run("import os\nos.path.exists(%r)" % marker)["result"] == "False"
    assert not os.path.exists(marker)


def test_a_request_before_auth_is_refused_and_not_run(guarded):
    c = raw(guarded)
    marker = os.path.join(guarded.output, "must-not-exist")
    c.send({"id": 7, "op": "execute", "code": "open(%r, 'w').close()" % marker})
    r = c.recv()
    assert r["id"] == 7 and r["ok"] is False and r["error"]["type"] == "PermissionDenied"
    assert "must be" in r["error"]["message"] and "auth" in r["error"]["message"]
    with pytest.raises(EOFError):
        c.recv()
    time.sleep(0.2)
    assert not os.path.exists(marker)
    for op in ("hello", "files.list"):  # not even hello before auth
        c = raw(guarded)
        r = c.request(op)
        assert r["ok"] is False and r["error"]["type"] == "PermissionDenied", r


def test_a_malformed_nonce_is_refused(guarded):
    c = raw(guarded)
    r = c.request("auth", sandbox_id="sbx-test", nonce="short")
    assert r["ok"] is False and r["error"]["type"] == "InvalidArgument"
    with pytest.raises(EOFError):
        c.recv()


def test_the_token_is_not_visible_to_cells_or_their_processes(guarded, token):
    c = guarded.client()
    r = c.run("import os, posix, subprocess\n"
              "env = subprocess.run(['env'], capture_output=True, text=True).stdout\n"
              "with open('/proc/self/environ', 'rb') as f:\n"
              "    block = f.read()\n"
              "(%r in str(dict(os.environ)), %r in str(posix.environ), %r in env, "
              "%r.encode() in block, 'CODEACT_KERNEL_TOKEN' in os.environ)"
              % (token, token, token, token))
    assert r["result"] == "(False, False, False, False, False)", r
    b = c.ok("bash", script="env; cat /proc/$PPID/environ 2>/dev/null | tr '\\0' '\\n'")
    assert token not in b["stdout"]


def test_without_a_token_auth_is_optional_and_has_no_mac(kernel):
    c = raw(kernel)
    assert c.run("1")["result"] == "1"  # no auth needed
    r = c.request("auth", sandbox_id="sbx-test", nonce=os.urandom(32).hex())
    assert r["ok"] is True and r["mac"] is None
    # The sandbox id is still checked.
    c2 = raw(kernel)
    r = c2.request("auth", sandbox_id="elsewhere", nonce=os.urandom(32).hex())
    assert r["ok"] is False and r["error"]["type"] == "PermissionDenied"
    with pytest.raises(EOFError):
        c2.recv()


def test_a_malformed_token_stops_the_kernel_with_a_message(kernel_factory):
    k = kernel_factory(start=False, token="not-hex")
    with pytest.raises(RuntimeError) as e:
        k.start()
    assert "CODEACT_KERNEL_TOKEN must be 64 hex digits" in str(e.value)
