"""`codeact server` over HTTP as its clients use it: a real server process with a worker in it, a
real Temporal dev server and Docker, a local OpenAI-compatible server scripting the model.
Asserts what a client sees: answers, files, status codes, event streams that resume exactly."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest
import requests

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from scripted_model import python_turn  # noqa: E402
from server_process import CREATED, FAST_DURABLE, Client, ServerProcess, remove_created_sandboxes  # noqa: E402

KEY_A = "alice-key-0123456789abcdef"
KEY_B = "bob-key-0123456789abcdef00"


def text_turn(text):
    return {"content": text}


@pytest.fixture
def config(tmp_path):
    p = tmp_path / "app_conf.yml"
    # Sessions stay running (idle) between tests on the module's dev server: room for all of them.
    p.write_text(FAST_DURABLE + "server:\n  max_active_runs: 100\n  api_keys:\n    - {name: alice, key: %s}\n    - {name: bob, key: %s}\n"
                 % (KEY_A, KEY_B))
    return str(p)


@pytest.fixture
def queue():
    return f"srv-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def server(temporal, queue, config, model):
    s = ServerProcess(temporal, queue, config, model=model.model_flag).start()
    yield s
    s.stop()
    remove_created_sandboxes()


def test_health_answers_without_a_key_and_says_temporal_is_reachable(server):
    r = requests.get(server.url + "/health", timeout=10)
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok" and body["temporal_connected"] is True


def test_no_key_or_a_wrong_key_is_401_with_a_json_error(server):
    r = requests.get(server.url + "/v1/sessions", timeout=10)
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "Unauthenticated"
    r = requests.get(server.url + "/v1/sessions", headers={"Authorization": "Bearer nope-nope-nope-nope"}, timeout=10)
    assert r.status_code == 401
    assert KEY_A not in server.stderr() and KEY_B not in server.stderr()


def test_the_seed_client_posts_chat_then_downloads_each_file_and_the_sandbox_keeps_its_state(server, model):
    model.turns = [
        python_turn("c1", "import csv\nrows = [[1, 2], [3, 4]]\n"
                          "csv.writer(open('/output/table.csv', 'w', newline='')).writerows(rows)\nlen(rows)"),
        text_turn("I wrote /output/table.csv with 2 rows."),
        python_turn("c2", "sum(a + b for a, b in rows)"),
        text_turn("The sum is 10."),
    ]
    a = Client(server.url, KEY_A)
    r = a.post("/chat", {"task": "make a table"}, timeout=300)
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"message", "container_id", "file_paths", "workflow_id"}
    assert body["message"] == "I wrote /output/table.csv with 2 rows."
    assert "/output/table.csv" in body["file_paths"]
    for path in body["file_paths"]:
        f = a.get("/download_file", params={"container_id": body["container_id"], "file_path": path})
        assert f.status_code == 200, f.text
        assert f.content.replace(b"\r\n", b"\n") == b"1,2\n3,4\n"
        assert "attachment" in f.headers["Content-Disposition"]
        assert f.headers["Content-Type"].startswith("text/csv")
    # The same conversation: the variable of the first cell is still there.
    r = a.post("/chat", {"task": "sum it", "workflow_id": body["workflow_id"]}, timeout=300)
    assert r.status_code == 200, r.text
    assert r.json()["message"] == "The sum is 10."
    assert r.json()["workflow_id"] == body["workflow_id"]
    assert "10" in json.dumps(model.requests[-1]["messages"])


def test_chat_reports_a_failed_turn_as_an_error_at_once_and_the_conversation_goes_on(server, model):
    model.turns = [{"http_status": 400, "message": "this prompt is refused by the provider"}]
    a = Client(server.url, KEY_A)
    t0 = time.time()
    r = a.post("/chat", {"task": "first"}, timeout=300)
    assert r.status_code == 500, r.text
    error = r.json()["error"]
    assert "the agent failed" in error["message"] and "refused by the provider" in error["message"], error
    assert time.time() - t0 < 60, "an error, not a wait for the deadline"
    sid = error["message"].split('workflow_id "')[1].split('"')[0]
    CREATED.add(sid)
    model.turns = [text_turn("answered after all")]
    r = a.post("/chat", {"task": "again", "workflow_id": sid}, timeout=300)
    assert r.status_code == 200, r.text
    assert r.json()["message"] == "answered after all" and r.json()["workflow_id"] == sid


def test_chat_past_its_deadline_is_504_naming_the_conversation_which_goes_on(temporal, queue, model, tmp_path):
    config = tmp_path / "deadline.yml"
    config.write_text(FAST_DURABLE + "server:\n  chat_timeout_seconds: 3\n  max_active_runs: 100\n"
                      "  api_keys:\n    - {name: alice, key: %s}\n" % KEY_A)
    model.turns = [text_turn("a slow answer")]
    model.delays = {0: 12}
    s = ServerProcess(temporal, queue, str(config), model=model.model_flag).start()
    try:
        a = Client(s.url, KEY_A)
        t0 = time.time()
        r = a.post("/chat", {"task": "take your time"}, timeout=120)
        waited = time.time() - t0
        assert r.status_code == 504, r.text
        message = r.json()["error"]["message"]
        assert "no answer within 3 s" in message, message
        assert 3 <= waited < 11, f"answered after {waited:.1f} s: at its deadline, before the model"
        sid = message.split('workflow_id "')[1].split('"')[0]
        CREATED.add(sid)
        wait_answered(a, sid, "a slow answer", timeout=120)
    finally:
        s.stop()
        remove_created_sandboxes()


def test_two_chats_at_once_to_one_conversation_each_get_their_own_answer(server, model):
    # Both messages reach the conversation before either is answered; each POST /chat must
    # answer with the turn of its own message (found by the message's id, not by counting).
    model.turns = [text_turn("first answer"), text_turn("answer one"), text_turn("answer two"),
                   text_turn("answer three")]
    model.delays = {1: 2}  # the second turn is slow: the third message is queued behind it
    a = Client(server.url, KEY_A)
    r = a.post("/chat", {"task": "start"}, timeout=300)
    assert r.status_code == 200, r.text
    sid = r.json()["workflow_id"]
    results = {}

    def send(task):
        results[task] = Client(server.url, KEY_A).post("/chat", {"task": task, "workflow_id": sid}, timeout=300)

    threads = [threading.Thread(target=send, args=(t,)) for t in ("alpha", "beta")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(320)
    for task in ("alpha", "beta"):
        assert results[task].status_code == 200, results[task].text
    turns = a.get(f"/v1/sessions/{sid}").json()["turns"]
    answer_of = {t["task"]: t["output"] for t in turns}
    assert {results[t].json()["message"] for t in ("alpha", "beta")} == {"answer one", "answer two"}
    for task in ("alpha", "beta"):
        assert results[task].json()["message"] == answer_of[task], (task, turns)
    # A message sent over /v1 names the turn that will answer it.
    r = a.post(f"/v1/sessions/{sid}/messages", {"message": "gamma"})
    assert r.status_code == 202, r.text
    message_id = r.json()["message_id"]
    wait_answered(a, sid, "answer three")
    turns = a.get(f"/v1/sessions/{sid}").json()["turns"]
    assert [t["output"] for t in turns if t.get("message_id") == message_id] == ["answer three"], turns


def test_two_users_with_the_same_first_message_get_two_conversations(server, model):
    model.turns = [text_turn("hello")] * 4
    a, b = Client(server.url, KEY_A), Client(server.url, KEY_B)
    ra = a.post("/chat", {"task": "hi"}, timeout=300)
    rb = b.post("/chat", {"task": "hi"}, timeout=300)
    assert ra.status_code == 200 and rb.status_code == 200, (ra.text, rb.text)
    assert ra.json()["workflow_id"] != rb.json()["workflow_id"]


def test_another_principals_session_its_files_and_events_are_404(server, model):
    model.turns = [python_turn("c1", "open('/output/secret.txt', 'w').write('s3cret')"), text_turn("done")]
    a, b = Client(server.url, KEY_A), Client(server.url, KEY_B)
    r = a.post("/chat", {"task": "write a secret"}, timeout=300)
    assert r.status_code == 200, r.text
    sid = r.json()["workflow_id"]
    assert a.get(f"/v1/sessions/{sid}").status_code == 200
    for path in (f"/v1/sessions/{sid}", f"/v1/sessions/{sid}/files", f"/v1/sessions/{sid}/events",
                 f"/v1/sessions/{sid}/files/output/secret.txt", f"/v1/sessions/{sid}/variables"):
        rb = b.get(path, timeout=10)
        assert rb.status_code == 404, (path, rb.status_code, rb.text)
        assert "s3cret" not in rb.text
    rb = b.get("/download_file", params={"container_id": sid, "file_path": "/output/secret.txt"})
    assert rb.status_code == 404
    assert sid not in json.dumps(b.get("/v1/sessions").json())
    assert b.post(f"/v1/sessions/{sid}/messages", {"message": "hi"}).status_code == 404
    assert b.delete(f"/v1/sessions/{sid}").status_code == 404
    assert a.get(f"/v1/sessions/{sid}").status_code == 200  # still there


def test_downloads_outside_output_are_refused_traversal_absolute_and_symlink(server, model):
    model.turns = [python_turn("c1", "import os\nos.symlink('/etc/passwd', '/output/link')\n"
                                     "os.symlink('/persistent-storage', '/output/up')\n"
                                     "open('/output/ok.txt', 'w').write('fine')"),
                   text_turn("made links")]
    a = Client(server.url, KEY_A)
    r = a.post("/chat", {"task": "links"}, timeout=300)
    assert r.status_code == 200, r.text
    sid = r.json()["workflow_id"]
    assert a.get(f"/v1/sessions/{sid}/files/output/ok.txt").content == b"fine"
    for path in ("../../etc/passwd", "/etc/passwd", "/output/../../etc/passwd", "/output/link", "link",
                 "/output/up/.current/state"):
        f = a.get("/download_file", params={"container_id": sid, "file_path": path})
        assert f.status_code in (403, 404), (path, f.status_code, f.text)
        assert "root:" not in f.text
    f = a.get(f"/v1/sessions/{sid}/files/output/link")
    assert f.status_code in (403, 404) and "root:" not in f.text
    f = a.get(f"/v1/sessions/{sid}/files/output/%2e%2e/%2e%2e/etc/passwd")
    assert f.status_code in (403, 404) and "root:" not in f.text


def test_upload_then_the_next_cell_reads_it_and_ranges_give_206(server, model):
    model.turns = [text_turn("ready"),
                   python_turn("c1", "open('data.txt').read().upper()"), text_turn("read it")]
    a = Client(server.url, KEY_A)
    sid = start_session(a, "get ready")
    wait_for(lambda: a.get(f"/v1/sessions/{sid}").json().get("turns"), "the first turn")
    up = a.put(f"/v1/sessions/{sid}/files/output/data.txt", b"hello upload")
    assert up.status_code == 201, up.text
    assert up.json() == {"path": "/output/data.txt", "size": 12}
    part = a.get(f"/v1/sessions/{sid}/files/output/data.txt", headers={"Range": "bytes=6-11"})
    assert part.status_code == 206 and part.content == b"upload"
    assert part.headers["Content-Range"] == "bytes 6-11/12"
    assert a.get(f"/v1/sessions/{sid}/files/output/data.txt", headers={"Range": "bytes=50-"}).status_code == 416
    assert a.post(f"/v1/sessions/{sid}/messages", {"message": "read it"}).status_code == 202
    turns = wait_for(lambda: (lambda t: t if len(t) >= 2 else None)(a.get(f"/v1/sessions/{sid}").json()["turns"]),
                     "the second turn")
    assert turns[1]["output"] == "read it"
    assert "HELLO UPLOAD" in json.dumps(model.requests[-1]["messages"])
    names = [f["path"] for f in a.get(f"/v1/sessions/{sid}/files").json()["files"]]
    assert "/output/data.txt" in names


def test_malformed_requests_are_400_naming_the_field_and_big_bodies_413(server):
    a = Client(server.url, KEY_A)
    r = a.s.post(server.url + "/v1/runs", data="{not json", headers={"Content-Type": "application/json"}, timeout=10)
    assert r.status_code == 400 and r.json()["error"]["code"] == "InvalidArgument"
    r = a.post("/v1/runs", {"task": 5})
    assert r.status_code == 400 and "task" in r.json()["error"]["message"]
    r = a.post("/v1/runs", {"task": "x", "netwrok": True})
    assert r.status_code == 400 and "netwrok" in r.json()["error"]["message"]
    r = a.post("/v1/sessions", {"message": "x", "packages": ["pandas"]})
    assert r.status_code == 400 and "network" in r.json()["error"]["message"]
    r = a.post("/v1/runs", {"task": "x" * (2 << 20)})
    assert r.status_code == 413
    assert a.get("/v1/nothing").status_code == 404


def start_run(client, task):
    r = client.post("/v1/runs", {"task": task})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def start_session(client, message):
    r = client.post("/v1/sessions", {"message": message})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def wait_answered(client, sid, output, timeout=180):
    """Until one of the session's turns answered `output`."""
    wait_for(lambda: any(t.get("output") == output for t in client.get(f"/v1/sessions/{sid}").json()["turns"]),
             repr(output), timeout=timeout)


def collect_until_end(client, path, last=None, timeout=240):
    return client.events(path, last_event_id=last, timeout=timeout, until=lambda e: e[1] == "end")


def test_run_events_stream_every_step_and_resume_after_a_disconnect_without_gap_or_duplicate(server, model):
    model.turns = [python_turn("c1", "print('line one')\nx = 41"),
                   python_turn("c2", "print(x + 1)"),
                   text_turn("The answer is 42.")]
    a = Client(server.url, KEY_A)
    rid = start_run(a, "compute")
    events = collect_until_end(a, f"/v1/runs/{rid}/events")
    types = [t for _, t, _ in events]
    assert types[0] == "user_message" and events[0][2]["text"] == "compute"
    assert types.count("cell") == 2 and types.count("cell_result") == 2
    results = [d for _, t, d in events if t == "cell_result"]
    assert "line one" in results[0]["text"] and "42" in results[1]["text"]
    assert [d for _, t, d in events if t == "final"][0]["text"] == "The answer is 42."
    assert types[-1] == "end" and events[-1][2]["status"] == "completed"
    ids = [i for i, _, _ in events]
    assert len(ids) == len(set(ids)) and all(ids)
    # A client that dropped after event k and reconnects gets exactly the rest.
    for k in (0, len(events) // 2, len(events) - 2):
        rest = collect_until_end(a, f"/v1/runs/{rid}/events", last=ids[k])
        assert [i for i, _, _ in rest] == ids[k + 1:], k
    got = a.get(f"/v1/runs/{rid}").json()
    assert got["status"] == "completed" and got["output"] == "The answer is 42."


def test_server_sigkilled_mid_turn_and_restarted_the_turn_finishes_and_a_new_client_sees_all_of_it(
        temporal, queue, config, model):
    model.turns = [python_turn("c1", "import time\ntime.sleep(4)\nprint('slept')"), text_turn("woke up")]
    first = ServerProcess(temporal, queue, config, model=model.model_flag).start()
    a = Client(first.url, KEY_A)
    sid = start_session(a, "sleep a bit")
    seen = a.events(f"/v1/sessions/{sid}/events", until=lambda e: e[1] == "cell", timeout=120)
    first.kill()  # the worker in it dies mid-cell
    second = ServerProcess(temporal, queue, config, model=model.model_flag).start()
    try:
        b = Client(second.url, KEY_A)
        events = b.events(f"/v1/sessions/{sid}/events", last_event_id=seen[-1][0],
                          until=lambda e: e[1] == "final", timeout=240)
        types = [t for _, t, _ in events]
        assert "cell_result" in types and events[-1][2]["text"] == "woke up"
        assert not set(i for i, _, _ in events) & set(i for i, _, _ in seen)
        everything = b.events(f"/v1/sessions/{sid}/events", until=lambda e: e[1] == "final", timeout=60)
        assert [i for i, _, _ in everything] == [i for i, _, _ in seen] + [i for i, _, _ in events] or \
            [t for _, t, _ in everything if t != "status"] == [t for _, t, _ in seen + events if t != "status"]
        # The cell ran once: its output is there once.
        results = [d for _, t, d in everything if t == "cell_result"]
        assert len(results) == 1 and "slept" in results[0]["text"]
    finally:
        second.stop()
        remove_created_sandboxes()


def test_sigterm_closes_streams_with_a_shutdown_event_and_exits_cleanly(temporal, queue, config, model):
    model.turns = [text_turn("hi")]
    s = ServerProcess(temporal, queue, config, model=model.model_flag).start()
    a = Client(s.url, KEY_A)
    sid = a.post("/v1/sessions", {}).json()["id"]
    import threading
    got = []
    t = threading.Thread(target=lambda: got.extend(a.events(f"/v1/sessions/{sid}/events", timeout=60)))
    t.start()
    time.sleep(2)
    assert s.stop(timeout=60) == 0
    t.join(30)
    assert got and got[-1][1] == "shutdown", got


def test_limits_concurrent_runs_and_rate_are_429_with_retry_after(temporal, queue, tmp_path):
    cfg = tmp_path / "limits.yml"
    cfg.write_text(FAST_DURABLE + "server:\n  api_keys: [%s]\n  max_active_runs: 2\n  rate_per_minute: 20\n" % KEY_A)
    s = ServerProcess(temporal, queue, str(cfg), model="openai:none", no_worker=True).start()
    try:
        a = Client(s.url, KEY_A)
        assert a.post("/v1/sessions", {}).status_code == 201
        assert a.post("/v1/sessions", {}).status_code == 201
        r = a.post("/v1/sessions", {})
        assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1, r.text
        codes = [a.get("/v1/sessions").status_code for _ in range(25)]
        assert 429 in codes
        limited = a.get("/v1/sessions")
        assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
    finally:
        s.stop()
        remove_created_sandboxes()


def test_a_public_listen_address_without_keys_refuses_to_start(temporal, queue, tmp_path):
    cfg = tmp_path / "nokeys.yml"
    cfg.write_text(FAST_DURABLE)
    s = ServerProcess(temporal, queue, str(cfg), no_worker=True, listen="0.0.0.0:0",
                      env={"CODEACT_API_KEYS": ""})
    s.proc = subprocess.run(s.args, capture_output=True, text=True, timeout=60, env=s.env)
    assert s.proc.returncode != 0
    assert "API key" in s.proc.stderr


def test_without_keys_only_loopback_and_cross_site_writes_are_refused(temporal, queue, tmp_path):
    cfg = tmp_path / "nokeys.yml"
    cfg.write_text(FAST_DURABLE)
    s = ServerProcess(temporal, queue, str(cfg), no_worker=True, env={"CODEACT_API_KEYS": ""}).start()
    try:
        # (stderr is read by a thread of its own: the warning may come a moment after the URL.)
        wait_for(lambda: "only this machine" in s.stderr() or "loopback" in s.stderr(), "the loopback warning",
                 timeout=15)
        me = requests.get(s.url + "/v1/me", timeout=10).json()
        assert me["principal"] == "local" and me["csrf_token"]
        # A form post from another site (a "simple" request) is refused; so is a foreign Origin.
        r = requests.post(s.url + "/v1/sessions", data="message=hi",
                          headers={"Content-Type": "application/x-www-form-urlencoded"}, timeout=10)
        assert r.status_code == 403
        r = requests.post(s.url + "/v1/sessions", json={}, headers={"Origin": "http://evil.example"}, timeout=10)
        assert r.status_code == 403
        r = requests.post(s.url + "/v1/sessions", json={}, headers={"X-CSRF-Token": me["csrf_token"]}, timeout=10)
        assert r.status_code == 201, r.text
    finally:
        s.stop()


def test_openapi_document_lists_every_endpoint_and_docs_page_renders_it(server):
    doc = requests.get(server.url + "/openapi.json", timeout=10).json()
    assert doc["openapi"].startswith("3.1")
    for path in ("/health", "/chat", "/download_file", "/v1/sessions", "/v1/sessions/{id}",
                 "/v1/sessions/{id}/events", "/v1/runs/{id}/files/{path}", "/v1/sessions/{id}/messages"):
        assert path in doc["paths"], path
    page = requests.get(server.url + "/docs", timeout=10)
    assert page.status_code == 200 and "/v1/sessions/{id}/events" in page.text
    assert "<script" not in page.text


def wait_for(fn, what, timeout=240):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def test_browser_login_sets_an_httponly_cookie_and_cookie_writes_need_the_csrf_token(server):
    s = requests.Session()
    r = s.post(server.url + "/v1/login", json={"api_key": "wrong-wrong-wrong-wrong"}, timeout=10)
    assert r.status_code == 401
    r = s.post(server.url + "/v1/login", json={"api_key": KEY_A}, timeout=10)
    assert r.status_code == 200, r.text
    cookie = r.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and KEY_A not in cookie
    csrf = r.json()["csrf_token"]
    me = s.get(server.url + "/v1/me", timeout=10).json()
    assert me["principal"] == "alice" and me["auth"] == "cookie" and me["csrf_token"] == csrf
    assert s.get(server.url + "/v1/sessions", timeout=10).status_code == 200
    assert s.post(server.url + "/v1/sessions", json={}, timeout=10).status_code == 403
    r = s.post(server.url + "/v1/sessions", json={}, headers={"X-CSRF-Token": csrf}, timeout=10)
    assert r.status_code == 201, r.text
    from server_process import CREATED
    CREATED.add(r.json()["id"])
    assert s.post(server.url + "/v1/logout", headers={"X-CSRF-Token": csrf}, timeout=10).status_code == 204
    assert s.get(server.url + "/v1/sessions", timeout=10).status_code == 401


def test_a_cell_printing_a_line_a_second_streams_its_lines_before_its_result(server, model):
    model.turns = [python_turn("c1", "import time\nfor i in range(4):\n    print('tick', i, flush=True)\n"
                                     "    time.sleep(1)"),
                   text_turn("ticked")]
    a = Client(server.url, KEY_A)
    rid = start_run(a, "tick")
    times = []
    events = a.events(f"/v1/runs/{rid}/events", until=lambda e: e[1] == "end", timeout=240, arrivals=times)
    arrived = list(zip(times, events))
    outputs = [(t, d) for t, (_, kind, d) in arrived if kind == "cell_output"]
    result_at = [t for t, (_, kind, _) in arrived if kind == "cell_result"][0]
    text = "".join(d["text"] for _, d in outputs)
    assert text.count("tick") == 4, arrived
    assert outputs[0][0] < result_at - 2, "the first line came with the result, not while the cell ran"
    assert all(d["tool_call_id"] == "c1" and d["stream"] == "stdout" for _, d in outputs)


def test_cancel_stops_the_running_cell_and_the_session_goes_on_with_its_state(server, model):
    model.turns = [python_turn("c1", "x = 5"),
                   python_turn("c2", "y = 1\nimport time\nprint('sleeping', flush=True)\ntime.sleep(300)")]
    a = Client(server.url, KEY_A)
    sid = start_session(a, "slow")
    a.events(f"/v1/sessions/{sid}/events", until=lambda e: e[1] == "cell_output", timeout=180)
    started = time.time()
    r = a.post(f"/v1/sessions/{sid}/cancel", {})
    assert r.status_code == 202 and r.json()["accepted"] is True, r.text
    events = a.events(f"/v1/sessions/{sid}/events", until=lambda e: e[1] == "turn_cancelled", timeout=120)
    assert events[-1][1] == "turn_cancelled", [t for _, t, _ in events]
    assert time.time() - started < 60, "the cell was not interrupted: it ran on"
    got = a.get(f"/v1/sessions/{sid}").json()
    assert got["status"] == "idle", got
    assert got["turns"][0]["error"] == "the turn was cancelled", got
    # Nothing runs now: a second cancel is refused, not sent.
    r = a.post(f"/v1/sessions/{sid}/cancel", {})
    assert r.status_code == 202 and r.json()["accepted"] is False, r.text
    # The next request has one assistant message (the cancel note): it gets turns[1].
    model.turns[1:] = [python_turn("c3", "print(x * 2, 'y' in globals())"), text_turn("ten")]
    r = a.post(f"/v1/sessions/{sid}/messages", {"message": "go on"})
    assert r.status_code == 202, r.text
    turns = wait_for(lambda: (lambda t: t if len(t) == 2 and t[1].get("output") else None)(
        a.get(f"/v1/sessions/{sid}").json()["turns"]), "the next turn", timeout=180)
    assert turns[1]["output"] == "ten"
    # The model read the cancelled message, answered by a note that it was cancelled.
    asked = [m for r in model.requests for m in r["messages"]
             if any(u.get("content") == "go on" for u in r["messages"])]
    assert any(m.get("role") == "user" and m.get("content") == "slow" for m in asked), asked
    assert any(m.get("role") == "assistant" and "cancelled" in str(m.get("content")) for m in asked), asked
    results = [d for _, t, d in a.events(f"/v1/sessions/{sid}/events",
                                          until=lambda e: e[1] == "final" and e[2].get("text") == "ten",
                                          timeout=60) if t == "cell_result" and d["tool_call_id"] == "c3"]
    # The finished cell's variable is kept; the interrupted cell is rolled back like any failed one.
    assert "10 False" in results[0]["text"], results


PNG_1x1 = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


def test_a_cells_image_file_is_in_its_cell_result_and_downloads_as_a_png(server, model):
    model.turns = [python_turn("c1", "import base64\nopen('/output/plot.png', 'wb').write("
                                     f"base64.b64decode('{PNG_1x1}'))\nopen('/output/data.csv', 'w').write('a,b')"),
                   text_turn("drawn")]
    a = Client(server.url, KEY_A)
    rid = start_run(a, "draw")
    events = collect_until_end(a, f"/v1/runs/{rid}/events")
    result = [d for _, t, d in events if t == "cell_result"][0]
    assert result["images"] == ["/output/plot.png"], result
    assert sorted(result["files"]) == ["/output/data.csv", "/output/plot.png"], result
    r = a.get(f"/v1/runs/{rid}/files/plot.png?inline=1")
    assert r.status_code == 200 and r.headers["Content-Type"] == "image/png"
    assert r.content.startswith(b"\x89PNG")


def test_a_deleted_session_is_gone_from_the_list_answers_404_and_its_container_is_removed(server, model):
    model.turns = [python_turn("c1", "1"), text_turn("done")]
    a = Client(server.url, KEY_A)
    sid = start_session(a, "hello")
    wait_answered(a, sid, "done")
    r = a.s.delete(f"{server.url}/v1/sessions/{sid}?volume=true", timeout=120)
    assert r.status_code == 204, r.text
    assert a.get(f"/v1/sessions/{sid}").status_code == 404
    assert sid not in [s["id"] for s in a.get("/v1/sessions").json()["sessions"]]
    assert subprocess.run(["docker", "inspect", f"codeact-{sid}"], capture_output=True).returncode != 0
    # Temporal forgets it too (in the background), so a restarted server does not list it either.
    from dev_server import DEFAULT_BINARY
    wait_for(lambda: subprocess.run([DEFAULT_BINARY, "workflow", "describe", "-w", sid, "--address", server.temporal],
                                    capture_output=True).returncode != 0, "Temporal to delete it", timeout=60)


def test_a_session_started_again_streams_its_earlier_runs_events_too_and_resumes_across_them(server, model):
    model.turns = [text_turn("first answer"), text_turn("second answer")]
    a = Client(server.url, KEY_A)
    sid = start_session(a, "one")
    wait_answered(a, sid, "first answer")
    r = a.post(f"/v1/sessions/{sid}/stop", {})
    assert r.status_code == 202 and r.json()["accepted"] is True, r.text
    wait_for(lambda: a.get(f"/v1/sessions/{sid}").json()["status"] not in ("idle", "running"), "the stop")
    # The next message (maybe while the stopped run still finishes: it is not lost) starts the
    # session's workflow again: a second run, nobody watching yet.
    r = a.post(f"/v1/sessions/{sid}/messages", {"message": "two"})
    assert r.status_code == 202, r.text
    wait_for(lambda: len([t for t in a.get(f"/v1/sessions/{sid}").json()["turns"] if t.get("output")]) == 2,
             "the second answer", timeout=180)
    last = lambda e: e[1] == "final" and e[2].get("text") == "second answer"  # noqa: E731
    events = a.events(f"/v1/sessions/{sid}/events", until=last, timeout=60)
    assert [d["text"] for _, t, d in events if t == "user_message"] == ["one", "two"], events
    assert [d["text"] for _, t, d in events if t == "final"] == ["first answer", "second answer"], events
    ids = [i for i, _, _ in events]
    assert len(ids) == len(set(ids)) and len({i.split(".")[0] for i in ids}) == 2, ids
    # A client that saw only the first run's first event gets the rest of both runs, once.
    rest = a.events(f"/v1/sessions/{sid}/events", last_event_id=ids[0], until=last, timeout=60)
    assert [i for i, _, _ in rest] == ids[1:]


def test_a_session_deleted_while_its_sandbox_starts_leaves_no_container_or_volume(server, model):
    model.turns = [text_turn("hello")] * 3
    a = Client(server.url, KEY_A)
    sids = []
    # At once after the start (the sandbox start just began), and once its container exists.
    for wait_for_container in (False, True, False):
        sid = start_session(a, "hi")
        sids.append(sid)
        if wait_for_container:
            wait_for(lambda: subprocess.run(["docker", "inspect", f"codeact-{sid}"], capture_output=True).returncode == 0,
                     "the container", timeout=120)
        r = a.s.delete(f"{server.url}/v1/sessions/{sid}?volume=true", timeout=120)
        assert r.status_code == 204, r.text
    # The starts went on in the worker after the DELETEs. What they made is removed again: a
    # container by the worker once it sees the workflow gone, what is left (the volume) by the
    # server's sweep 5 s and 30 s after the DELETE.
    def leftovers():
        volumes = subprocess.run(["docker", "volume", "ls", "-q"], capture_output=True, text=True).stdout.split()
        return [f"the container of {sid}" for sid in sids
                if subprocess.run(["docker", "inspect", f"codeact-{sid}"], capture_output=True).returncode == 0] + \
               [f"the volume of {sid}" for sid in sids if f"workflow-{sid}" in volumes]
    deadline = time.time() + 45
    left = leftovers()
    while left and time.time() < deadline:
        time.sleep(1)
        left = leftovers()
    assert not left, f"{left} stayed 45 s after the DELETE"


def test_a_watched_session_streams_every_turn_live_across_its_continue_as_new(server, model):
    # A chat continues as new after 20 turns: a page watching it goes on seeing every turn
    # as it is answered (the 20th turn's files, then turns 21 and 22 of the new run), once each.
    turns = 22
    model.turns = [text_turn(f"answer {i}") for i in range(turns)]
    a = Client(server.url, KEY_A)
    r = a.post("/chat", {"task": "message 0"}, timeout=300)
    assert r.status_code == 200, r.text
    sid = r.json()["workflow_id"]
    events = []

    def watch():
        Client(server.url, KEY_A).events(
            f"/v1/sessions/{sid}/events", timeout=240,
            until=lambda e: events.append(e) or len([1 for _, t, _ in events if t == "files"]) == turns)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    wait_for(lambda: any(t == "final" for _, t, _ in events), "the stream to start", timeout=60)
    seen_before = {d.get("text") for _, t, d in events if t == "final"}
    assert seen_before == {"answer 0"}, events
    for i in range(1, turns):
        r = a.post("/chat", {"task": f"message {i}", "workflow_id": sid}, timeout=300)
        assert r.status_code == 200 and r.json()["message"] == f"answer {i}", r.text
        # Each answer is on the live stream soon after POST /chat returned it.
        wait_for(lambda: any(t == "final" and d.get("text") == f"answer {i}" for _, t, d in events),
                 f"answer {i} on the stream", timeout=30)
    watcher.join(60)
    finals = [d["text"] for _, t, d in events if t == "final"]
    assert finals == [f"answer {i}" for i in range(turns)], finals
    assert len([1 for _, t, _ in events if t == "files"]) == turns, "every turn's files event, the 20th's too"
    ids = [i for i, _, _ in events]
    assert len(ids) == len(set(ids)), "no event twice"
    assert len({i.split(".")[0] for i in ids}) == 2, "two workflow runs"


def test_a_session_forked_at_a_turn_starts_with_the_turns_before_it_and_their_sandbox_state(server, model):
    model.turns = [
        python_turn("c1", "x = 1"), text_turn("one"),
        python_turn("c2", "x += 1\nx"), text_turn("two"),
    ]
    a = Client(server.url, KEY_A)
    sid = start_session(a, "set x")
    wait_answered(a, sid, "one")
    r = a.post(f"/v1/sessions/{sid}/messages", {"message": "add one"})
    assert r.status_code == 202, r.text
    wait_answered(a, sid, "two")
    r = a.post(f"/v1/sessions/{sid}/fork", {"turn": 2})
    assert r.status_code == 201, r.text
    forked = r.json()
    fid = forked["id"]
    assert fid != sid and r.headers["Location"] == f"/v1/sessions/{fid}"
    assert forked["forked_from"]["session"] == sid and forked["forked_from"]["turn"] == 2
    assert [t["task"] for t in forked["turns"]] == ["set x"]
    # Turn 2 asked again in the fork (the model scripted by turn answers as before): its sandbox
    # went on from x == 1, so x is 2 again, not 3 as from the source's state.
    r = a.post(f"/v1/sessions/{fid}/messages", {"message": "add one"})
    assert r.status_code == 202, r.text
    wait_answered(a, fid, "two")
    turns = a.get(f"/v1/sessions/{fid}").json()["turns"]
    assert [t["output"] for t in turns] == ["one", "two"]
    variables = a.get(f"/v1/sessions/{fid}/variables").json()
    assert any(v["name"] == "x" and v["preview"] == "2" for v in variables["variables"]), variables
    source = a.get(f"/v1/sessions/{sid}/variables").json()
    assert any(v["name"] == "x" and v["preview"] == "2" for v in source["variables"]), source
    # Errors: a turn that does not exist, a field that does not, another principal's session.
    r = a.post(f"/v1/sessions/{sid}/fork", {"turn": 7})
    assert r.status_code == 400 and "turn 7 does not exist" in r.json()["error"]["message"]
    r = a.post(f"/v1/sessions/{sid}/fork", {"at": 1})
    assert r.status_code == 400
    b = Client(server.url, KEY_B)
    assert b.post(f"/v1/sessions/{sid}/fork", {"turn": 1}).status_code == 404
