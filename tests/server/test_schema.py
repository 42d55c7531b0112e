"""The API against its own OpenAPI document, fuzzed by schemathesis: every operation the document
lists is called with generated requests (valid and invalid), and every answer must be no server
error (5xx), have a status the document lists, the content type it names and a body its schema
accepts. A real `codeact server` with its worker, Temporal dev server and Docker; the model
always answers with text.

Left out: `POST /chat` (it waits for the model's answer, up to its deadline; the API suite tests
it) and the event streams (they do not end; the API suite reads them). `CODEACT_SCHEMA_EXAMPLES`
sets the examples per operation (default 8)."""
import os
import subprocess
import sys
import uuid

import pytest
import requests

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from dev_server import DevServer  # noqa: E402
from scripted_model import ScriptedModel  # noqa: E402
from server_process import BIN, FAST_DURABLE, ServerProcess  # noqa: E402

KEY = "schema-key-0123456789abcdef"
SCHEMATHESIS = os.path.join(os.path.dirname(sys.executable), "schemathesis")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("schema")
    (tmp / "temporal").mkdir()
    temporal = DevServer(tmp / "temporal")
    address = temporal.start()
    model = ScriptedModel([{"content": "ok"}] * 200)
    config = tmp / "app_conf.yml"
    config.write_text(FAST_DURABLE + "server:\n  max_active_runs: 1000\n  rate_per_minute: 100000\n"
                      "  chat_timeout_seconds: 30\n  api_keys:\n    - {name: fuzz, key: %s}\n" % KEY)
    s = ServerProcess(address, f"schema-{uuid.uuid4().hex[:8]}", str(config),
                      model=model.model_flag).start()
    yield s
    ids = delete_everything_it_made(s)
    s.stop()  # after the activities in flight: a sandbox start may still create a container
    for rid in ids:
        subprocess.run([os.path.abspath(BIN), "sandbox", "rm", rid, "--volume"], capture_output=True,
                       timeout=120)
    model.close()
    temporal.stop()


def delete_everything_it_made(server):
    h = {"Authorization": f"Bearer {KEY}"}
    ids = []
    for kind in ("sessions", "runs"):
        r = requests.get(f"{server.url}/v1/{kind}", headers=h, timeout=60)
        if r.ok:
            ids += [(kind, x["id"]) for x in r.json().get(kind, [])]
    for kind, rid in ids:
        requests.delete(f"{server.url}/v1/{kind}/{rid}?volume=true", headers=h, timeout=120)
    return [rid for _, rid in ids]


def test_every_operation_answers_as_its_openapi_document_says(server, tmp_path):
    examples = os.environ.get("CODEACT_SCHEMA_EXAMPLES", "8")
    cmd = [SCHEMATHESIS, "run", server.url + "/openapi.json",
           "-H", f"Authorization: Bearer {KEY}",
           "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,"
                       "response_schema_conformance",
           "--exclude-path", "/chat",
           "--exclude-path-regex", "/events$",
           "--max-examples", examples,
           "--request-timeout", "60",
           "--seed", "12345",
           "--no-color"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1500, cwd=tmp_path)
    print(r.stdout[-20000:])
    assert r.returncode == 0, (r.stdout[-20000:] + r.stderr[-5000:] + "\n--- server log ---\n" +
                               server.stderr()[-5000:])
    # It really ran: the operations were tested, not all skipped.
    assert "passed" in r.stdout, r.stdout[-3000:]
